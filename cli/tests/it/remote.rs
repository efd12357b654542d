//! `--embedder openai:MODEL` end to end, against a fake embeddings server on 127.0.0.1: the
//! index records the server, another embedder is refused, every fault either is retried or
//! fails the run with a message naming the server while the previous index still loads and
//! searches, and a re-run embeds only what the failed one had not.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use walkrag_embed::testing::{FakeEmbeddingServer, Fault};
use walkrag_engine::Index;

use crate::{corpus, stderr, stdout};

const KEY: &str = "sk-cli-test-secret-4242";

/// `walkrag ARGS` in `dir`, embedding through `server`.
fn walkrag_with(server: &FakeEmbeddingServer, dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_walkrag"))
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .env_remove("WALKRAG_STORE")
        .env_remove("OPENAI_BASE_URL")
        .env("WALKRAG_EMBED_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", KEY)
        .output()
        .expect("walkrag runs")
}

/// Indexes corpus.jsonl with the server in small batches, each request tried at most twice.
fn index(server: &FakeEmbeddingServer, dir: &Path, extra: &[&str]) -> Output {
    index_retrying(server, dir, "1", extra)
}

fn index_retrying(
    server: &FakeEmbeddingServer,
    dir: &Path,
    retries: &str,
    extra: &[&str],
) -> Output {
    let mut args = vec![
        "index",
        "corpus.jsonl",
        "--embedder",
        "openai:fake-model",
        "--embed-batch",
        "16",
        "--embed-retries",
        retries,
        "--json",
    ];
    args.extend_from_slice(extra);
    walkrag_with(server, dir, &args)
}

/// The index holds exactly the documents of `version`, and a search through the server works.
fn assert_usable(server: &FakeEmbeddingServer, dir: &Path, records: usize, version: &str) {
    let index = Index::open(&dir.join(".walkrag")).expect("the index opens");
    assert_eq!(index.documents().len(), records);
    assert!(index
        .documents()
        .iter()
        .all(|d| d.doc.text.contains(&format!("version {version}"))));
    let out = walkrag_with(
        server,
        dir,
        &["search", "lighthouse number 5", "-k", "3", "--json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 3, "{}", stdout(&out));
}

fn summary(out: &Output) -> Value {
    serde_json::from_str(stdout(out).trim()).expect("one JSON summary")
}

#[test]
fn a_server_built_index_is_checked_survives_faults_and_resumes() {
    let server = FakeEmbeddingServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("corpus.jsonl"), corpus(40, "one")).unwrap();
    let out = index(&server, dir, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(summary(&out)["embedded"], 40);
    assert_eq!(
        server.authorizations().last().map(String::as_str),
        Some(format!("Bearer {KEY}").as_str())
    );
    let manifest = Index::open(&dir.join(".walkrag"))
        .unwrap()
        .manifest()
        .clone();
    assert_eq!(manifest.embedder.spec, "openai:fake-model");
    assert_eq!(
        manifest.embedder.id,
        format!("openai:fake-model@{} (dim 64)", server.host())
    );
    assert_usable(&server, dir, 40, "one");

    // Querying with another embedder is refused, naming the one that built the index.
    let out = walkrag_with(
        &server,
        dir,
        &["search", "lighthouse", "--embedder", "minilm"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!(
            "built with embedder openai:fake-model@{}",
            server.host()
        )),
        "{}",
        stderr(&out)
    );

    // Version two: 300 records, embedded 256 chunks per call. Each fault that does not pass
    // fails the run with a clear message and leaves version one as it was.
    std::fs::write(dir.join("corpus.jsonl"), corpus(300, "two")).unwrap();
    let lasting: [(Fault, &[&str], &str); 5] = [
        (
            Fault::ServerError,
            &[],
            "HTTP 500 (internal error); gave up after 2 attempts",
        ),
        (Fault::Drop, &[], "dropped the connection"),
        (
            Fault::WrongDimension,
            &[],
            "63 values where the model gave 64",
        ),
        (
            Fault::Slow(std::time::Duration::from_secs(3)),
            &["--embed-timeout", "0.3"],
            "did not answer within 0.3 s",
        ),
        (Fault::EchoKey, &[], "HTTP 401"),
    ];
    for (fault, extra, message) in lasting {
        // The connection probe passes; the fault starts with the first batch.
        let first = server.requests() + 1;
        let kept = fault.clone();
        server.set_schedule(move |n| {
            if n >= first {
                kept.clone()
            } else {
                Fault::None
            }
        });
        let out = index(&server, dir, extra);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{fault:?}: {err}");
        assert!(err.contains(&server.host()), "{fault:?}: {err}");
        assert!(err.contains(message), "{fault:?}: {err}");
        assert!(
            !err.contains(KEY) && !stdout(&out).contains(KEY),
            "{fault:?}: {err}"
        );
        server.set_schedule(|_| Fault::None);
        assert_usable(&server, dir, 40, "one");
    }

    // A 500 after the first call of 256 chunks: the run fails, and the next one embeds only
    // the 44 chunks the failed run had not.
    let first_failing = server.requests() + 1 + 256 / 16;
    server.set_schedule(move |n| {
        if n >= first_failing {
            Fault::ServerError
        } else {
            Fault::None
        }
    });
    let out = index(&server, dir, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    server.set_schedule(|_| Fault::None);
    assert_usable(&server, dir, 40, "one");
    let before = server.texts_embedded();
    let out = index(&server, dir, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let done = summary(&out);
    assert_eq!(done["embedded"], 300);
    assert_eq!(done["resumed"], 256);
    assert_eq!(
        server.texts_embedded() - before,
        1 + 44,
        "the probe and the chunks the failed run left"
    );
    assert!(!dir.join(".walkrag/partial.vectors").exists());
    assert_usable(&server, dir, 300, "two");

    // Passing faults: a 429 (Retry-After: 1), a 500 and a dropped connection, each once (one
    // request may meet two of them: three retries).
    std::fs::write(dir.join("corpus.jsonl"), corpus(60, "three")).unwrap();
    let start = server.requests() + 1;
    server.set_schedule(move |n| match n.checked_sub(start) {
        Some(0) => Fault::TooMany { retry_after: 1 },
        Some(2) => Fault::ServerError,
        Some(4) => Fault::Drop,
        _ => Fault::None,
    });
    let out = index_retrying(&server, dir, "3", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(summary(&out)["embedded"], 60);
    assert!(stderr(&out).contains("retrying"), "{}", stderr(&out));
    server.set_schedule(|_| Fault::None);
    assert_usable(&server, dir, 60, "three");
}
