//! `index`, `search`, `outline` and `show` with `--store postgres://…` (and `WALKRAG_STORE`)
//! against a real PostgreSQL with pgvector on 127.0.0.1: `$WALKRAG_TEST_POSTGRES`
//! (scripts/test.sh sets it), else the server `scripts/postgres.sh start` starts or finds.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{stderr, stdout, walkrag};

const REPORT: &str = "# Harbour Report\n\nThe harbour of Tallin handled more ships.\n\n## Traffic\n\nShip calls rose to 4,100.\n\n### Ferries\n\nFerries to Helsinki sailed every hour.\n\n## Finance\n\nProfit was 9 million euros.\n";

/// The test server's URL (asked for once per test binary).
fn server() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(url) = std::env::var("WALKRAG_TEST_POSTGRES") {
            if !url.is_empty() {
                return url;
            }
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/postgres.sh");
        let out = Command::new(script)
            .arg("start")
            .output()
            .expect("scripts/postgres.sh runs");
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out).lines().last().expect("a URL").to_string()
    })
    .clone()
}

/// The server's URL with pgvector installed in `public`, once (two tests creating it at the
/// same moment would collide).
fn server_with_pgvector() -> String {
    static READY: OnceLock<String> = OnceLock::new();
    READY
        .get_or_init(|| {
            let url = server();
            sql(&url, "CREATE EXTENSION IF NOT EXISTS vector");
            url
        })
        .clone()
}

/// Runs `statements` on the server at `url`.
fn sql(url: &str, statements: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("the test server answers");
        tokio::spawn(connection);
        client
            .batch_execute(statements)
            .await
            .unwrap_or_else(|e| panic!("{statements}: {e}"));
    });
}

/// The URL of a new, empty schema `name` on the test server (pgvector installed in `public`).
fn fresh_schema(name: &str) -> String {
    let base = server_with_pgvector();
    sql(
        &base,
        &format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"),
    );
    let separator = if base.contains('?') { '&' } else { '?' };
    format!("{base}{separator}options=-csearch_path%3D{name}%2Cpublic")
}

/// The first column of the first row of `query`, a count.
fn count(url: &str, query: &str) -> i64 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("the test server answers");
        tokio::spawn(connection);
        client
            .query_one(query, &[])
            .await
            .unwrap_or_else(|e| panic!("{query}: {e}"))
            .get(0)
    })
}

fn password(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let userinfo = rest.split_once('@').map_or("", |(u, _)| u);
    userinfo.split_once(':').map_or("", |(_, p)| p)
}

#[test]
fn index_search_outline_show_through_a_postgres_store() {
    let url = fresh_schema("walkrag_test_cli");
    let secret = password(&url).to_string();
    assert!(!secret.is_empty());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("docs")).unwrap();
    std::fs::write(dir.join("docs/report.md"), REPORT).unwrap();
    std::fs::write(dir.join("docs/corpus.jsonl"), crate::corpus(5, "one")).unwrap();

    let out = walkrag(dir, &["index", "docs", "--store", &url, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(summary["documents"], 6);
    assert_eq!(summary["embedded"], summary["chunks"]);
    assert!(!dir.join(".walkrag").exists(), "no folder index is written");
    let out = walkrag(dir, &["index", "docs", "--store", &url]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("up to date: postgres://"), "{text}");
    assert!(!text.contains(&secret), "{text}");

    // The URL from the environment, as a team would set it once.
    let out = Command::new(env!("CARGO_BIN_EXE_walkrag"))
        .args([
            "search",
            "How often do ferries sail to Helsinki?",
            "-k",
            "3",
            "--json",
        ])
        .current_dir(dir)
        .env("WALKRAG_STORE", &url)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let hits: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(hits.len(), 3);
    let top = &hits[0];
    assert_eq!(top["rank"], 1);
    assert_eq!(top["doc_id"], "docs/report.md");
    assert_eq!(
        top["section_path"],
        serde_json::json!(["Harbour Report", "Traffic", "Ferries"])
    );

    let out = walkrag(dir, &["outline", "docs/report.md", "--store", &url]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Traffic — Ship calls rose to 4,100."),
        "{}",
        stdout(&out)
    );
    let chunk_id = top["chunk_id"].as_str().unwrap();
    let out = walkrag(dir, &["show", chunk_id, "--store", &url]);
    assert!(
        stdout(&out).contains("Ferries to Helsinki sailed every hour."),
        "{}",
        stdout(&out)
    );
    let section_id = chunk_id.split('.').next().unwrap();
    let out = walkrag(dir, &["show", section_id, "--json", "--store", &url]);
    let shown: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(shown["kind"], "section");
    assert!(shown["text"].as_str().unwrap().starts_with("### Ferries"));

    let out = walkrag(dir, &["show", "deadbeef", "--store", &url]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no document, section or chunk"));
    assert!(!stderr(&out).contains(&secret), "{}", stderr(&out));

    // Neither `--help` nor debug logs show the URL's password.
    let out = Command::new(env!("CARGO_BIN_EXE_walkrag"))
        .args(["search", "--help"])
        .env("WALKRAG_STORE", &url)
        .output()
        .unwrap();
    assert!(stdout(&out).contains("--store <URL>"), "{}", stdout(&out));
    assert!(!stdout(&out).contains(&secret), "{}", stdout(&out));
    let out = Command::new(env!("CARGO_BIN_EXE_walkrag"))
        .args(["index", "docs", "--store", &url, "--rebuild"])
        .current_dir(dir)
        .env("RUST_LOG", "debug")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains(":***@"), "{}", stderr(&out));
    assert!(!stderr(&out).contains(&secret), "{}", stderr(&out));

    // An empty schema has no index yet; a server that is not there is named, password hidden.
    let empty = fresh_schema("walkrag_test_cli_empty");
    let out = walkrag(dir, &["search", "ferries", "--store", &empty]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no index at postgres://"),
        "{}",
        stderr(&out)
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gone = format!("postgres://walkrag:sekrit-pw@127.0.0.1:{port}/walkrag");
    let out = walkrag(dir, &["search", "ferries", "--store", &gone]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot reach the database"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("sekrit-pw"), "{}", stderr(&out));
}

/// Checks that every document is whole: at one version, with chunks, each chunk's text a
/// part of its own document's text. Returns the documents at version two and in all.
fn assert_documents_whole(url: &str) -> (i64, i64) {
    let documents = count(url, "SELECT count(*) FROM walkrag_documents");
    let two = count(
        url,
        "SELECT count(*) FROM walkrag_documents WHERE document->>'text' LIKE '%version two%'",
    );
    let one = count(
        url,
        "SELECT count(*) FROM walkrag_documents WHERE document->>'text' LIKE '%version one%'",
    );
    assert_eq!(one + two, documents, "a document at neither version");
    let without_chunks = count(
        url,
        "SELECT count(*) FROM walkrag_documents d
         WHERE NOT EXISTS (SELECT 1 FROM walkrag_chunks c WHERE c.doc_id = d.id)",
    );
    assert_eq!(without_chunks, 0, "a document without its chunks");
    let foreign = count(
        url,
        "SELECT count(*) FROM walkrag_chunks c JOIN walkrag_documents d ON d.id = c.doc_id
         WHERE strpos(d.document->>'text', c.text) = 0",
    );
    assert_eq!(foreign, 0, "a chunk of another version of its document");
    (two, documents)
}

#[test]
fn killing_the_indexer_leaves_every_document_at_one_version() {
    let url = fresh_schema("walkrag_test_cli_kill");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("corpus.jsonl"), crate::corpus(20, "one")).unwrap();
    let out = walkrag(dir, &["index", "corpus.jsonl", "--store", &url]);
    assert!(out.status.success(), "{}", stderr(&out));

    // Version two changes every record and adds more: a finished run writes 300 documents.
    std::fs::write(dir.join("corpus.jsonl"), crate::corpus(300, "two")).unwrap();
    let mut killed_while_writing = 0;
    for round in 0..4 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_walkrag"))
            .args(["index", "corpus.jsonl", "--store", &url])
            .current_dir(dir)
            .env_remove("WALKRAG_STORE")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill once this run has written some documents of version two (or after a while).
        let before = assert_documents_whole(&url).0;
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
            let two = count(
                &url,
                "SELECT count(*) FROM walkrag_documents WHERE document->>'text' LIKE '%version two%'",
            );
            if two > before {
                killed_while_writing += 1;
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        let (two, documents) = assert_documents_whole(&url);
        let out = walkrag(dir, &["search", "lighthouse on the coast", "--store", &url]);
        assert!(out.status.success(), "round {round}: {}", stderr(&out));
        if two == 300 && documents == 300 {
            break;
        }
    }
    // The killed writers' lock went with their connections: a run to the end completes.
    let out = walkrag(dir, &["index", "corpus.jsonl", "--store", &url, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(assert_documents_whole(&url), (300, 300));
    eprintln!("killed while writing: {killed_while_writing} time(s)");
}

/// The answer line of `ask --json`, without its timing.
fn answer_line(out: &std::process::Output) -> Value {
    let mut answer: Value = stdout(out)
        .lines()
        .last()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .expect("an answer line");
    answer["elapsed_ms"] = Value::Null;
    answer
}

#[test]
fn ask_and_eval_read_a_postgres_store_as_they_read_the_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("docs")).unwrap();
    std::fs::write(dir.join("docs/report.md"), REPORT).unwrap();
    let url = fresh_schema("ask_eval");
    for target in [["--store", url.as_str()], ["--index", "folder"]] {
        let out = walkrag(dir, &["index", "docs", target[0], target[1]]);
        assert!(out.status.success(), "{}", stderr(&out));
    }

    let ask = |target: [&str; 2]| {
        let question = "How often did ferries sail to Helsinki?";
        let model = "local:smollm2-135m";
        let args = [
            "ask",
            question,
            "--strategy",
            "walk",
            "--model",
            model,
            "--json",
        ];
        let out = walkrag(dir, &[&args[..], &target[..]].concat());
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
        answer_line(&out)
    };
    let from_postgres = ask(["--store", &url]);
    assert_eq!(from_postgres, ask(["--index", "folder"]));
    assert!(!from_postgres["ranked"].as_array().unwrap().is_empty());

    let questions = r#"{"id": "q1", "question": "How often did ferries sail to Helsinki?", "answer": "every hour", "supporting_ids": ["docs/report.md"]}
{"id": "q2", "question": "What was the profit?", "answer": "9 million euros", "supporting_ids": ["docs/report.md"]}
"#;
    std::fs::write(dir.join("questions.jsonl"), questions).unwrap();
    let eval = |out_dir: &str, target: [&str; 2]| {
        let args = [
            "eval",
            "--corpus",
            "docs",
            "--questions",
            "questions.jsonl",
            "--strategies",
            "single",
            "--model",
            "local:smollm2-135m",
            "--out",
            out_dir,
        ];
        let out = walkrag(dir, &[&args[..], &target[..]].concat());
        assert!(out.status.success(), "{}", stderr(&out));
        let summary: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(out_dir).join("summary.json")).unwrap(),
        )
        .unwrap();
        summary["strategies"]["single"]["recall@5"].clone()
    };
    let recall = eval("eval-pg", ["--store", &url]);
    assert_eq!(recall, eval("eval-folder", ["--index", "folder"]));

    // The actions strategy keeps its operation catalogue beside a folder index.
    let out = walkrag(
        dir,
        &["ask", "add a pet", "--strategy", "actions", "--store", &url],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("needs a folder index"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_mistyped_store_url_is_named_without_its_password() {
    let tmp = tempfile::tempdir().unwrap();
    for url in [
        "postgres:/walkrag:sekrit-pw-1@127.0.0.1:5432/walkrag",
        "postgress://walkrag:sekrit-pw-1@127.0.0.1:5432/walkrag",
        "postgresql:walkrag:sekrit-pw-1@127.0.0.1/walkrag",
        "walkrag:sekrit-pw-1@127.0.0.1/walkrag",
    ] {
        let out = walkrag(tmp.path(), &["search", "x", "--store", url]);
        assert_eq!(out.status.code(), Some(2), "{url}");
        let message = stderr(&out);
        assert!(
            message.contains("--store takes a postgres:// URL"),
            "{message}"
        );
        assert!(!message.contains("sekrit"), "{url}: {message}");
        assert!(message.contains("***"), "{message}");
    }
}

#[test]
fn serve_sees_documents_indexed_into_the_store_while_it_runs() {
    let url = fresh_schema("walkrag_test_cli_serve");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("corpus.jsonl"), crate::corpus(4, "one")).unwrap();
    let out = walkrag(dir, &["index", "corpus.jsonl", "--store", &url]);
    assert!(out.status.success(), "{}", stderr(&out));

    let mut child = Command::new(env!("CARGO_BIN_EXE_walkrag"))
        .args([
            "serve",
            "--model",
            "local:smollm2-135m",
            "--addr",
            "127.0.0.1:0",
        ])
        .args(["--store", &url])
        .current_dir(dir)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stderr.take().unwrap()));
    let address = loop {
        let line = lines
            .next()
            .expect("serve prints where it listens")
            .unwrap();
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::new();
    let top = || -> Value {
        runtime.block_on(async {
            client
                .post(format!("{address}/v1/search"))
                .json(&serde_json::json!({"query": "Who keeps the Orlen lighthouse?", "k": 1}))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()["hits"][0]
                .clone()
        })
    };
    assert_ne!(top()["doc_id"], "orlen");

    std::fs::write(
        dir.join("more.jsonl"),
        r#"{"id": "orlen", "title": "Orlen lighthouse", "text": "The Orlen lighthouse is kept by Mara Voss, who has lit it every night since 1998."}"#,
    )
    .unwrap();
    let out = walkrag(dir, &["index", "more.jsonl", "--store", &url]);
    assert!(out.status.success(), "{}", stderr(&out));
    let started = Instant::now();
    let mut found = Value::Null;
    while started.elapsed() < Duration::from_secs(30) {
        found = top();
        if found["doc_id"] == "orlen" {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(found["doc_id"], "orlen", "{found}");
}
