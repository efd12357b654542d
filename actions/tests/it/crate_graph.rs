//! walkrag-actions stays a small library: it links no model runtime (its strategy talks to
//! models and embedders through the walker's and core's traits), so it is tested with fakes
//! and the CLI pulls in only what it uses.

use std::collections::{HashMap, HashSet};
use std::process::Command;

use serde_json::Value;

/// Packages walkrag-actions must never reach through its normal dependencies.
const FORBIDDEN: [&str; 7] = [
    "candle-core",
    "candle-nn",
    "candle-transformers",
    "tokenizers",
    "walkrag-embed",
    "walkrag-models",
    "walkrag-openai",
];

#[test]
fn actions_depend_on_no_model_runtime() {
    let output = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1"])
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
    // Normal (not dev or build) dependency edges, by package id.
    let edges: HashMap<&str, Vec<&str>> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| {
            let deps = node["deps"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|dep| {
                    dep["dep_kinds"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|kind| kind["kind"].is_null())
                })
                .map(|dep| dep["pkg"].as_str().unwrap())
                .collect();
            (node["id"].as_str().unwrap(), deps)
        })
        .collect();
    let root = names
        .iter()
        .find(|(_, name)| **name == "walkrag-actions")
        .map(|(id, _)| *id)
        .expect("walkrag-actions is in the workspace");

    let mut reached = HashSet::new();
    let mut stack = vec![root];
    while let Some(id) = stack.pop() {
        if reached.insert(id) {
            stack.extend(edges.get(id).into_iter().flatten());
        }
    }
    let bad: Vec<&str> = reached
        .iter()
        .map(|id| names[id])
        .filter(|name| FORBIDDEN.contains(name))
        .collect();
    assert!(bad.is_empty(), "walkrag-actions reaches {bad:?}");
    for expected in ["reqwest", "walkrag-walker", "walkrag-core"] {
        assert!(
            reached.iter().any(|id| names[id] == expected),
            "sanity: the walk found {expected}"
        );
    }
}
