//! End-to-end tests of the `walkrag` binary with the real MiniLM model.

mod actions;
mod ask_eval;
mod bench;
mod crash;
mod docs;
mod index;
mod remote;
mod serve;
mod store;

use std::path::Path;
use std::process::{Command, Output};

/// Runs `walkrag ARGS` in `dir`.
pub fn walkrag(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walkrag"))
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .env_remove("WALKRAG_STORE")
        .output()
        .expect("walkrag runs")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A corpus of `n` short records whose text depends on `version`.
pub fn corpus(n: usize, version: &str) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{{\"id\": \"r{i}\", \"title\": \"Record {i}\", \"text\": \"Record {i} of version {version} describes lighthouse number {} on the coast of region {}.\"}}\n",
                i * 37 % 101,
                i % 17
            )
        })
        .collect()
}
