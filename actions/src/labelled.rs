//! The labelled request sets of `docs/data/actions`, for tests that check a rule on every
//! request written so far.

use std::path::PathBuf;

use serde_json::Value;

/// Where the request sets and their spec are: `docs/data/actions`, or the folder
/// `WALKRAG_LABELLED_SETS` names (a copy taken before a new blind set was written, so that a
/// rule can be checked without reading the set it is to be tried on).
pub(crate) fn data_dir() -> PathBuf {
    std::env::var_os("WALKRAG_LABELLED_SETS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/data/actions"),
        PathBuf::from,
    )
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
