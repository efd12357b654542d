//! The test server, a fresh schema per test, the embedder and the input files.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use walkrag_embed::SentenceEmbedder;

pub fn embedder() -> &'static SentenceEmbedder {
    static MODEL: OnceLock<SentenceEmbedder> = OnceLock::new();
    MODEL.get_or_init(|| {
        SentenceEmbedder::load("minilm")
            .expect("minilm is installed (scripts/fetch-models.sh minilm)")
    })
}

/// The server's URL, with pgvector installed in its `public` schema.
fn server() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let url = match std::env::var("WALKRAG_TEST_POSTGRES") {
            Ok(url) if !url.is_empty() => url,
            _ => {
                let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/postgres.sh");
                let out = Command::new(&script)
                    .arg("start")
                    .output()
                    .expect("scripts/postgres.sh runs");
                assert!(
                    out.status.success(),
                    "scripts/postgres.sh start failed:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                String::from_utf8(out.stdout)
                    .expect("a URL")
                    .lines()
                    .last()
                    .expect("scripts/postgres.sh prints the URL")
                    .to_string()
            }
        };
        sql(&url, "CREATE EXTENSION IF NOT EXISTS vector");
        url
    })
}

/// Runs `statements` (one transaction) as the server's superuser.
pub fn admin_sql(statements: &str) {
    sql(server(), statements)
}

/// The number `query` counts, asked as the server's superuser.
pub fn admin_count(query: &str) -> i64 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(server(), tokio_postgres::NoTls)
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

/// The server's URL for another user and database.
pub fn url_as(user: &str, password: &str, database: &str) -> String {
    let url = server();
    let (_, rest) = url.split_once('@').expect("a URL with a user");
    let (host, _) = rest.split_once('/').expect("a URL with a database");
    format!("postgres://{user}:{password}@{host}/{database}")
}

/// Runs `statements` on the server at `url`.
fn sql(url: &str, statements: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
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

/// The URL of a new, empty schema named after the test (then `public`, for pgvector's type).
pub fn fresh_schema(test: &str) -> String {
    let base = server();
    let schema = format!("walkrag_test_{test}");
    sql(
        base,
        &format!("DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"),
    );
    let separator = if base.contains('?') { '&' } else { '?' };
    format!("{base}{separator}options=-csearch_path%3D{schema}%2Cpublic")
}

/// The server's password, to check that no message shows it.
pub fn password() -> String {
    let url = server();
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let userinfo = rest.split_once('@').map(|(u, _)| u).unwrap_or("");
    userinfo
        .split_once(':')
        .map(|(_, p)| p.to_string())
        .unwrap_or_default()
}

pub const REPORT: &str = "\
# Northwind Annual Report 2025

Northwind builds wind turbines for small farms and villages.

## Results

The year closed with record deliveries.

### Revenue

Revenue rose 12% to 48 million euros, driven by the new K7 turbine.

### Costs

Steel prices fell, so material costs dropped by 5%.

## Board

The board met eleven times. The chair is Ana Ruiz.
";

pub const CORPUS: &str = r#"{"id": "p1", "title": "Lake Bled", "text": "Lake Bled is a glacial lake in the Julian Alps in Slovenia, with a church on a small island."}
{"id": "p2", "title": "Ljubljana", "text": "Ljubljana is the capital and largest city of Slovenia, crossed by the Ljubljanica river."}
{"id": "p3", "title": "Mount Triglav", "text": "Triglav is the highest mountain of Slovenia and appears on its coat of arms."}
"#;

pub const NOTES: &str =
    "Beekeeping notes. The queen lays up to two thousand eggs a day in spring; \
worker bees dance to show where the flowers are.";

/// A folder with `files` (name, text) written in it.
pub fn folder(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path().join("docs");
    std::fs::create_dir(&root).expect("a folder");
    for (name, text) in files {
        std::fs::write(root.join(name), text).expect("a file");
    }
    (dir, root)
}
