//! `kill -9` while indexing, at many moments: the previous index must stay fully usable.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use walkrag_engine::Index;

use crate::{corpus, stderr, walkrag};

/// Opens the index and checks it is one complete version: all `old` or all `new` documents.
fn assert_whole(dir: &Path, old: usize, new: usize) -> usize {
    let index = Index::open(&dir.join(".walkrag")).expect("the index opens after a kill");
    let docs = index.documents().len();
    assert!(
        docs == old || docs == new,
        "{docs} documents: neither version"
    );
    let version = if docs == old { "one" } else { "two" };
    assert!(index
        .documents()
        .iter()
        .all(|d| d.doc.text.contains(&format!("version {version}"))));
    docs
}

#[test]
fn killing_the_indexer_at_any_moment_leaves_the_previous_index_usable() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("corpus.jsonl"), corpus(20, "one")).unwrap();
    let out = walkrag(dir, &["index", "corpus.jsonl"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // Version two changes every record, so a finished run re-embeds them all.
    std::fs::write(dir.join("corpus.jsonl"), corpus(300, "two")).unwrap();
    let mut killed_while_writing = 0;
    let delays_ms = [20, 100, 250, 500, 1000, 2000];
    // First two rounds wait for the write phase itself; the rest kill after fixed delays.
    for (round, delay) in [None, None]
        .into_iter()
        .chain(delays_ms.iter().map(|&d| Some(d)))
        .enumerate()
    {
        let mut child = Command::new(env!("CARGO_BIN_EXE_walkrag"))
            .args(["index", "corpus.jsonl"])
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        match delay {
            Some(ms) => std::thread::sleep(Duration::from_millis(ms)),
            // Wait for the new generation's temporary directory to appear, then kill.
            None => {
                let deadline = started + Duration::from_secs(60);
                while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
                    let writing = std::fs::read_dir(dir.join(".walkrag"))
                        .unwrap()
                        .flatten()
                        .any(|e| e.file_name().to_string_lossy().ends_with(".tmp"));
                    if writing {
                        killed_while_writing += 1;
                        break;
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        }
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        let docs = assert_whole(dir, 20, 300);
        let out = walkrag(
            dir,
            &["search", "lighthouse on the coast", "-k", "3", "--json"],
        );
        assert!(
            out.status.success(),
            "round {round}: search after a kill: {}",
            stderr(&out)
        );
        if docs == 300 {
            break;
        }
    }
    // Whatever happened, a run to the end completes and leaves no temporary directories.
    let out = walkrag(dir, &["index", "corpus.jsonl"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(assert_whole(dir, 20, 300), 300);
    let leftovers: Vec<_> = std::fs::read_dir(dir.join(".walkrag"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    eprintln!("killed while writing the new generation: {killed_while_writing} time(s)");
}
