//! The labelled request sets of `docs/data/actions`, for tests that check a rule on every
//! request written so far.

use std::path::PathBuf;

use serde_json::Value;

/// Where the request sets and their spec are.
pub(crate) fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/data/actions")
}

/// Every request of every `discourse-*.jsonl` set, with its file's name.
pub(crate) fn requests() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for set in std::fs::read_dir(data_dir()).unwrap() {
        let path = set.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(file.starts_with("discourse-") && file.ends_with(".jsonl")) {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            out.push((file.clone(), serde_json::from_str(line).unwrap()));
        }
    }
    out
}
