//! `index`, `search`, `outline` and `show` through the binary: the INTERFACE.md contract.

use serde_json::Value;

use crate::{stderr, stdout, walkrag};

const REPORT: &str = "# Harbour Report\n\nThe harbour of Tallin handled more ships.\n\n## Traffic\n\nShip calls rose to 4,100.\n\n### Ferries\n\nFerries to Helsinki sailed every hour.\n\n## Finance\n\nProfit was 9 million euros.\n";

#[test]
fn index_search_outline_show_follow_the_contract() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("docs")).unwrap();
    std::fs::write(dir.join("docs/report.md"), REPORT).unwrap();
    std::fs::write(dir.join("docs/corpus.jsonl"), crate::corpus(5, "one")).unwrap();
    std::fs::write(dir.join("docs/bad.jsonl"), "{oops\n").unwrap();

    let out = walkrag(dir, &["index", "docs", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(summary["documents"], 6);
    assert_eq!(summary["skipped"].as_array().unwrap().len(), 1);
    assert!(
        stderr(&out).contains("warning: docs/bad.jsonl:1: skipped (malformed)"),
        "{}",
        stderr(&out)
    );
    assert!(
        dir.join(".walkrag/CURRENT").exists(),
        "the default index directory is ./.walkrag"
    );

    let out = walkrag(
        dir,
        &[
            "search",
            "How often do ferries sail to Helsinki?",
            "-k",
            "3",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let hits: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(hits.len(), 3);
    let top = &hits[0];
    for field in [
        "rank",
        "score",
        "chunk_id",
        "doc_id",
        "title",
        "section_id",
        "section_path",
        "text",
    ] {
        assert!(
            top.get(field).is_some(),
            "search --json lacks {field}: {top}"
        );
    }
    assert_eq!(top["rank"], 1);
    assert_eq!(top["doc_id"], "docs/report.md");
    assert_eq!(
        top["section_path"],
        serde_json::json!(["Harbour Report", "Traffic", "Ferries"])
    );
    assert!(top["score"].as_f64().unwrap() >= hits[1]["score"].as_f64().unwrap());
    let record = walkrag(dir, &["search", "lighthouse record", "--json", "-k", "1"]);
    let record: Value = serde_json::from_str(stdout(&record).lines().next().unwrap()).unwrap();
    assert!(
        record["doc_id"].as_str().unwrap().starts_with('r'),
        "a corpus record's doc_id is its id"
    );

    let out = walkrag(dir, &["outline", "docs/report.md"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("Traffic — Ship calls rose to 4,100."),
        "{text}"
    );
    assert!(text.contains("▸ [") && text.contains("Ferries"), "{text}");

    let chunk_id = top["chunk_id"].as_str().unwrap();
    let out = walkrag(dir, &["show", chunk_id]);
    assert!(
        stdout(&out).contains("Ferries to Helsinki sailed every hour."),
        "{}",
        stdout(&out)
    );
    let section_id = chunk_id.split('.').next().unwrap();
    let out = walkrag(dir, &["show", section_id, "--json"]);
    let shown: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(shown["kind"], "section");
    assert!(shown["text"].as_str().unwrap().starts_with("### Ferries"));
    let out = walkrag(dir, &["show", "docs/report.md"]);
    assert!(stdout(&out).contains("Profit was 9 million euros."));

    let out = walkrag(dir, &["show", "deadbeef"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no document, section or chunk"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn missing_index_and_empty_input_exit_with_clear_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = walkrag(dir, &["search", "anything"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no index at .walkrag: build one with `walkrag index PATH"),
        "{}",
        stderr(&out)
    );

    std::fs::write(dir.join("empty.md"), "\n").unwrap();
    let out = walkrag(dir, &["index", "empty.md", "nothing-here.md"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "an index without documents exits 1"
    );
    let err = stderr(&out);
    assert!(
        err.contains("empty.md: skipped (empty)")
            && err.contains("nothing-here.md: skipped (missing)"),
        "{err}"
    );
}
