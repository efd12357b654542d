//! Dependencies point one way: the crates that hold walkrag's logic never link a model runtime
//! or an HTTP client, and the index and the walker never link a database client, so their
//! tests stay fast and they stay usable with any backend and any store.

use std::collections::{HashMap, HashSet};
use std::process::Command;

use serde_json::Value;

/// Crates that must stay free of heavy runtimes, and the packages they must never reach.
const LIGHT_CRATES: [&str; 3] = ["walkrag-core", "walkrag-walker", "walkrag-serve"];
const HEAVY: [&str; 4] = [
    "candle-core",
    "candle-transformers",
    "reqwest",
    "tokenizers",
];

/// Crates that reach an index only through the `Store` trait, and the database clients that
/// stay in `walkrag-pgstore`.
const DATABASE_FREE: [&str; 4] = [
    "walkrag-core",
    "walkrag-engine",
    "walkrag-walker",
    "walkrag-serve",
];
const DATABASE: [&str; 3] = ["tokio-postgres", "pgvector", "walkrag-pgstore"];

#[test]
fn light_crates_do_not_depend_on_model_runtimes_or_http() {
    let output = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--filter-platform"])
        .arg(current_target())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let meta: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");

    let names: HashMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    // Only normal (non-dev, non-build) dependencies count: tests may use real components.
    let edges: HashMap<&str, Vec<&str>> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let deps = n["deps"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| {
                    d["dep_kinds"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|k| k["kind"].is_null())
                })
                .map(|d| d["pkg"].as_str().unwrap())
                .collect();
            (n["id"].as_str().unwrap(), deps)
        })
        .collect();

    let rules = LIGHT_CRATES
        .iter()
        .map(|&krate| (krate, &HEAVY[..]))
        .chain(DATABASE_FREE.iter().map(|&krate| (krate, &DATABASE[..])));
    for (krate, forbidden) in rules {
        let root = names
            .iter()
            .find(|(_, n)| **n == krate)
            .map(|(id, _)| *id)
            .expect("crate in workspace");
        let mut seen = HashSet::new();
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            let name = names[id];
            assert!(
                !forbidden.contains(&name),
                "{krate} depends on {name}: it must stay light (see ARCHITECTURE.md)"
            );
            stack.extend(edges.get(id).into_iter().flatten());
        }
    }
}

fn current_target() -> String {
    let out = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_string()
}
