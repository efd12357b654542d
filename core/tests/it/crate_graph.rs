//! Dependencies point one way: the crates that hold walkrag's logic never link a model runtime
//! or an HTTP client, and the index and the walker never link a database client, so their
//! tests stay fast and they stay usable with any backend and any store. Inside the walker,
//! the strategies depend on the rest of the crate, never the reverse.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
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

/// Inside the walker, imports flow one way: the strategies use the reader, the search-side
/// helpers and the trace, and nothing outside `walker/src/strategies/` imports a strategy,
/// whether by its path (`crate::strategies::…`, `super::strategies`) or by a name the crate
/// root re-exports from there (`crate::Walk`). The crate root only declares and re-exports.
#[test]
fn nothing_in_the_walker_imports_a_strategy_but_the_strategies() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../walker/src");
    let lib = fs::read_to_string(src.join("lib.rs")).expect("walker/src/lib.rs");
    let strategy_names = reexported_from(&lib, "strategies");
    assert!(
        strategy_names.iter().any(|n| n == "Walk"),
        "lib.rs re-exports the strategies: {strategy_names:?}"
    );
    let mut offences = Vec::new();
    for file in rust_files(&src) {
        let relative = file.strip_prefix(&src).unwrap();
        if relative.starts_with("strategies") || relative == Path::new("lib.rs") {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap();
        let code = code_of(&text);
        let mut found: Vec<(usize, String)> = code
            .match_indices("strategies::")
            .map(|(at, _)| (at, "strategies::".to_string()))
            .collect();
        found.extend(
            crate_paths(&code)
                .into_iter()
                .filter(|(_, name)| strategy_names.contains(name))
                .map(|(at, name)| (at, format!("crate::{name}"))),
        );
        for (at, what) in found {
            let number = code[..at].lines().count().max(1);
            offences.push(format!("{}:{number}: {what}", relative.display()));
        }
    }
    assert!(
        offences.is_empty(),
        "files outside walker/src/strategies/ import a strategy (strategies may use the rest, \
         never the reverse):\n{}",
        offences.join("\n")
    );
}

/// The names `lib` re-exports from its module `module` (`pub use module::…::{A, B};`).
fn reexported_from(lib: &str, module: &str) -> Vec<String> {
    let prefix = format!("pub use {module}::");
    let mut names = Vec::new();
    let mut rest = lib;
    while let Some(at) = rest.find(&prefix) {
        let tail = &rest[at + prefix.len()..];
        let end = tail.find(';').expect("a use ends with ;");
        let path = &tail[..end];
        let list = match path.find('{') {
            Some(open) => &path[open + 1..path.rfind('}').unwrap_or(path.len())],
            None => path.rsplit("::").next().unwrap_or(path),
        };
        for name in list.split(',') {
            let name = name.trim().rsplit("::").next().unwrap_or("").trim();
            if !name.is_empty() && name != "self" {
                names.push(name.to_string());
            }
        }
        rest = &tail[end..];
    }
    names
}

/// The first segment of each path after `crate::` in `code`, with its offset: `crate::a::b`
/// gives `a`, `crate::{a, b::c}` gives `a` and `b` (and the names of nested groups).
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let tail = &code[at + "crate::".len()..];
        let Some(group) = tail.strip_prefix('{') else {
            names.push((at, ident(tail)));
            continue;
        };
        let mut depth = 1;
        let mut start = 0;
        for (i, c) in group.char_indices() {
            match c {
                '{' | ',' | '}' => {
                    let name = ident(&group[start..i]);
                    if !name.is_empty() {
                        names.push((at, name));
                    }
                    start = i + 1;
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    names
}

/// `text` without its comment lines (doc links included), line breaks kept.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|line| {
            if line.trim_start().starts_with("//") {
                ""
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `.rs` file under `dir`, in a stable order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("a readable folder") {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}
