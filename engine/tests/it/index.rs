//! Building, searching, updating and reopening indexes of real files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use walkrag_core::{EmbedError, Embedder, Embeddings};
use walkrag_engine::chunk::embedding_text;
use walkrag_engine::{
    update, AnnParams, Format, Index, IndexError, Item, Quiet, SkipReason, Summary, UpdateOptions,
};

use crate::fixtures::{self, embedder};

fn build(index: &Path, paths: &[PathBuf], options: &UpdateOptions) -> Summary {
    update(index, paths, embedder(), "minilm", options, &Quiet).expect("update succeeds")
}

/// Indexes `root` with the default options.
fn build_default(index: &Path, root: &Path) -> Summary {
    build(index, &[root.to_path_buf()], &UpdateOptions::default())
}

fn top_hit<'a>(index: &'a Index, query: &str) -> walkrag_engine::ChunkRef<'a> {
    let q = embedder().embed_one(query).unwrap();
    index.chunk(index.search(&q, 1)[0].row)
}

#[test]
fn good_and_bad_files_index_with_one_warning_each() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("docs");
    fixtures::good_tree(&root);
    fixtures::bad_tree(&root);
    let index_dir = tmp.path().join("index");
    let summary = build_default(&index_dir, &root);

    // report, almanac, bees.pdf, 3 corpus records, llms.txt, readme.txt, and the good record of
    // mixed.jsonl.
    assert_eq!(summary.documents, 9, "{summary:#?}");
    let reasons: BTreeMap<SkipReason, usize> = summary.skipped_by_reason();
    let expected = BTreeMap::from([
        (SkipReason::Binary, 1),
        (SkipReason::Empty, 1),
        (SkipReason::NotUtf8, 1),
        // broken.pdf, notpdf.pdf, mixed.jsonl lines 2 and 3
        (SkipReason::Malformed, 4),
        (SkipReason::DuplicateId, 1),
        (SkipReason::Unreadable, 1),
    ]);
    assert_eq!(reasons, expected, "{:#?}", summary.skipped);
    let messages: Vec<String> = summary.skipped.iter().map(|s| s.to_string()).collect();
    let find = |needle: &str| {
        messages
            .iter()
            .find(|m| m.contains(needle))
            .cloned()
            .unwrap_or_default()
    };
    assert!(
        find("latin1.md").contains("latin1.md:1: skipped (not UTF-8)"),
        "{messages:#?}"
    );
    assert!(find("mixed.jsonl:2").contains("bad JSON"), "{messages:#?}");
    assert!(
        find("mixed.jsonl:3").contains("no \"text\""),
        "{messages:#?}"
    );
    assert!(
        find("mixed.jsonl:4").contains("duplicate id"),
        "{messages:#?}"
    );
    assert!(find("dangling.md").contains("unreadable"), "{messages:#?}");
    assert_eq!(
        summary.other_files, 1,
        "image.png is counted, not warned about"
    );

    let index = Index::open(&index_dir).unwrap();
    let ids: Vec<&str> = index
        .documents()
        .iter()
        .map(|d| d.doc.id.0.as_str())
        .collect();
    assert!(
        !ids.iter()
            .any(|id| id.contains("secret") || id.contains("skip") || id.contains("hidden")),
        "{ids:?}"
    );
    assert!(
        ids.contains(&"p2") && ids.contains(&"m1"),
        "jsonl records keep their ids: {ids:?}"
    );

    // Every chunk fits the embedder, lies inside its section's body, and cites its source.
    let max = embedder().max_tokens();
    for row in 0..index.len() {
        let c = index.chunk(row);
        let body = &c.section().body;
        assert!(body.start <= c.chunk.range.start && c.chunk.range.end <= body.end);
        let text = embedding_text(c.doc, c.chunk, usize::MAX);
        assert!(
            embedder().count_tokens(&text).unwrap() <= max,
            "{} is too long",
            c.id()
        );
        assert_eq!(c.chunk.page.is_some(), c.doc.format == Format::Pdf);
    }
}

#[test]
fn markdown_sections_pdf_pages_and_records_are_found_by_search() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("docs");
    fixtures::good_tree(&root);
    let index_dir = tmp.path().join("index");
    build_default(&index_dir, &root);
    let index = Index::open(&index_dir).unwrap();
    index.check_embedder(embedder()).unwrap();

    let hit = top_hit(&index, "How much did revenue grow?");
    assert_eq!(
        hit.section().path,
        ["Northwind Annual Report 2025", "Results", "Revenue"]
    );
    assert!(hit.text().contains("48 million euros"));

    let hit = top_hit(&index, "How many eggs does the queen bee lay?");
    assert!(hit.doc.id.0.ends_with("bees.pdf"));
    assert_eq!(hit.chunk.page, Some(2));
    assert_eq!(hit.section().path, ["Page 2"]);

    let hit = top_hit(&index, "What is the capital of Slovenia?");
    assert_eq!(hit.doc.id.0, "p2");
    assert_eq!(hit.doc.metadata["year"], 1144);

    // A long section becomes several overlapping chunks, none across the section boundary.
    let almanac = index
        .documents()
        .iter()
        .find(|d| d.doc.id.0.ends_with("almanac.md"))
        .unwrap();
    let planting: Vec<_> = almanac
        .chunks
        .iter()
        .filter(|c| almanac.doc.sections[c.section as usize].title() == "Planting calendar")
        .collect();
    assert!(planting.len() >= 4, "{} chunks", planting.len());
    for w in planting.windows(2) {
        assert!(
            w[1].range.start < w[0].range.end,
            "consecutive chunks overlap"
        );
        assert_eq!(w[1].index, w[0].index + 1);
    }
    let hit = top_hit(&index, "Which garden tools are listed?");
    assert_eq!(hit.section().title(), "Tools");

    // Ids typed back resolve to what they name.
    let section_id = hit.section().id.to_string();
    assert!(matches!(
        index.resolve(&section_id),
        Some(Item::Section { .. })
    ));
    assert!(
        matches!(index.resolve(&hit.id().to_string()), Some(Item::Chunk(c)) if c.row == hit.row)
    );
    assert!(matches!(index.resolve("p1"), Some(Item::Document(_))));
    assert!(index.resolve("00000000").is_none());
}

#[test]
fn re_indexing_embeds_only_what_changed_and_drops_what_is_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("docs");
    fixtures::good_tree(&root);
    let index_dir = tmp.path().join("index");
    let paths = [root.clone()];
    let first = build(&index_dir, &paths, &UpdateOptions::default());
    assert_eq!((first.added, first.embedded), (8, first.chunks));
    let before = Index::open(&index_dir).unwrap();
    let report = before
        .documents()
        .iter()
        .find(|d| d.doc.title.starts_with("Northwind"))
        .unwrap();
    let outlook_id = report
        .doc
        .sections
        .iter()
        .find(|s| s.title() == "Outlook")
        .unwrap()
        .id;
    let report_chunks = report.chunks.len();
    drop(before);

    // Nothing changed: nothing embedded, nothing written.
    let again = build(&index_dir, &paths, &UpdateOptions::default());
    assert_eq!(
        (again.embedded, again.unchanged, again.written),
        (0, 8, false)
    );

    // Edit the report's text, change one corpus record, delete the PDF, add a file.
    fixtures::write(
        &root,
        "report.md",
        fixtures::REPORT.replace("eleven times", "twelve times"),
    );
    fixtures::write(
        &root,
        "corpus.jsonl",
        fixtures::CORPUS.replace("glacial lake", "glacial lake of emerald water"),
    );
    std::fs::remove_file(root.join("bees.pdf")).unwrap();
    fixtures::write(&root, "new.md", "# Weather\n\nIt rained on Tuesday.\n");
    let third = build(&index_dir, &paths, &UpdateOptions::default());
    assert_eq!(
        (third.added, third.changed, third.removed, third.unchanged),
        (1, 2, 1, 5),
        "{third:#?}"
    );
    assert_eq!(
        third.embedded,
        report_chunks + 1 + 1,
        "only the report, record p1 and new.md are embedded"
    );
    let after = Index::open(&index_dir).unwrap();
    assert_eq!(after.documents().len(), 8);
    assert!(after
        .documents()
        .iter()
        .all(|d| !d.doc.id.0.ends_with("bees.pdf")));
    let report = after
        .documents()
        .iter()
        .find(|d| d.doc.title.starts_with("Northwind"))
        .unwrap();
    assert!(report.doc.text.contains("twelve times"));
    assert_eq!(
        report
            .doc
            .sections
            .iter()
            .find(|s| s.title() == "Outlook")
            .unwrap()
            .id,
        outlook_id,
        "editing another section's text keeps section ids"
    );
    assert_eq!(
        top_hit(&after, "When did it rain?").doc.id.0,
        format!("{}/new.md", fixtures_name(&root))
    );

    // Indexing another path keeps what came from the first.
    let other = tmp.path().join("other");
    fixtures::write(&other, "x.md", "# X\n\nAn extra note about zebras.\n");
    let fourth = build(&index_dir, &[other], &UpdateOptions::default());
    assert_eq!((fourth.added, fourth.removed, fourth.embedded), (1, 0, 1));
    assert_eq!(Index::open(&index_dir).unwrap().documents().len(), 9);
}

fn fixtures_name(root: &Path) -> String {
    walkrag_engine::ingest::path_name(root)
}

#[test]
fn a_file_that_becomes_unreadable_keeps_its_previous_version() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("docs");
    fixtures::write(&root, "a.md", "# A\n\nApples are red.\n");
    fixtures::write(&root, "b.md", "# B\n\nBananas are yellow.\n");
    let index_dir = tmp.path().join("index");
    build_default(&index_dir, &root);
    fixtures::write(&root, "b.md", b"# B\n\nBananas are \xff yellow.\n");
    let summary = build_default(&index_dir, &root);
    assert_eq!(
        (summary.kept_after_error, summary.removed, summary.documents),
        (1, 0, 2)
    );
    assert_eq!(summary.skipped[0].reason, SkipReason::NotUtf8);
    let index = Index::open(&index_dir).unwrap();
    assert!(top_hit(&index, "yellow fruit")
        .text()
        .contains("Bananas are yellow"));
}

#[test]
fn large_indexes_get_a_graph_that_survives_reopening() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("docs");
    let corpus: String = (0..300)
        .map(|i| format!("{{\"id\": \"n{i}\", \"title\": \"Note {i}\", \"text\": \"Note number {i} is about item {} in crate {}.\"}}\n", i * 7 % 31, i % 13))
        .collect();
    fixtures::write(&root, "notes.jsonl", corpus);
    let index_dir = tmp.path().join("index");
    let options = UpdateOptions {
        ann: AnnParams {
            exact_below: 100,
            ..AnnParams::default()
        },
        ..Default::default()
    };
    let summary = build(&index_dir, &[root], &options);
    assert_eq!((summary.search.as_str(), summary.chunks), ("hnsw", 300));
    let index = Index::open(&index_dir).unwrap();
    assert!(index.has_graph());
    let q = embedder()
        .embed_one("Note number 123 is about item")
        .unwrap();
    let approx: Vec<usize> = index.search(&q, 10).iter().map(|h| h.row).collect();
    let exact = index.search_with(
        &q,
        10,
        &walkrag_engine::SearchOptions {
            exact: true,
            ..Default::default()
        },
    );
    let exact: Vec<usize> = exact.iter().map(|h| h.row).collect();
    let overlap = approx.iter().filter(|r| exact.contains(r)).count();
    assert!(overlap >= 9, "HNSW found {overlap} of the exact top 10");
    // Filters apply inside the graph search.
    let keep = |c: walkrag_engine::ChunkRef<'_>| c.doc.id.0.ends_with('7');
    let filtered = index.search_with(
        &q,
        5,
        &walkrag_engine::SearchOptions {
            keep: Some(&keep),
            ..Default::default()
        },
    );
    assert_eq!(filtered.len(), 5);
    assert!(filtered
        .iter()
        .all(|h| index.chunk(h.row).doc.id.0.ends_with('7')));
}

/// Another model, as far as the index can tell: only its id differs.
struct OtherModel;

impl Embedder for OtherModel {
    fn id(&self) -> &str {
        "other-model@0123456789ab"
    }
    fn dim(&self) -> usize {
        embedder().dim()
    }
    fn max_tokens(&self) -> usize {
        embedder().max_tokens()
    }
    fn count_tokens(&self, text: &str) -> Result<usize, EmbedError> {
        embedder().count_tokens(text)
    }
    fn token_spans(&self, text: &str) -> Result<Vec<std::ops::Range<usize>>, EmbedError> {
        embedder().token_spans(text)
    }
    fn embed(&self, texts: &[&str]) -> Result<Embeddings, EmbedError> {
        embedder().embed(texts)
    }
}

#[test]
fn another_embedder_is_refused_with_advice_and_damage_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("docs");
    fixtures::write(&root, "a.md", "# A\n\nApples are red.\n");
    let index_dir = tmp.path().join("index");
    build_default(&index_dir, &root);
    let index = Index::open(&index_dir).unwrap();
    let err = index.check_embedder(&OtherModel).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, IndexError::EmbedderMismatch { .. }));
    assert!(
        message.contains("other-model@") && message.contains("--embedder minilm"),
        "{message}"
    );
    let err = update(
        &index_dir,
        std::slice::from_ref(&root),
        &OtherModel,
        "other",
        &UpdateOptions::default(),
        &Quiet,
    );
    assert!(matches!(err, Err(IndexError::EmbedderMismatch { .. })));
    // --rebuild replaces the index with the other model's.
    let rebuilt = update(
        &index_dir,
        &[root],
        &OtherModel,
        "other",
        &UpdateOptions {
            rebuild: true,
            ..Default::default()
        },
        &Quiet,
    )
    .unwrap();
    assert_eq!(rebuilt.embedded, 1);
    let index = Index::open(&index_dir).unwrap();
    assert_eq!(index.manifest().embedder.spec, "other");

    // A truncated vectors file is reported, not read as garbage.
    let vectors = index.generation().join("vectors.f32");
    let bytes = std::fs::read(&vectors).unwrap();
    std::fs::write(&vectors, &bytes[..bytes.len() - 4]).unwrap();
    let err = Index::open(&index_dir).err().expect("damage is detected");
    assert!(matches!(err, IndexError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("vectors.f32"), "{err}");
    assert!(matches!(
        Index::open(&tmp.path().join("none")),
        Err(IndexError::NotFound(_))
    ));
}
