//! The store's contract on a real server: index, search, resolve, re-index, delete, the
//! embedder check, an unreachable server, two writers at once.

use std::path::PathBuf;

use std::sync::Arc;
use walkrag_core::{EmbedError, Embedder, Embeddings};

use walkrag_engine::{
    ChunkRef, FolderStore, Index, IndexedDoc, Passage, Quiet, Resolved, SearchOptions, Store,
    StoreError, StoreSearch, Summary, UpdateOptions,
};
use walkrag_pgstore::PgStore;

use crate::server::{
    admin_sql, embedder, folder, fresh_schema, password, url_as, CORPUS, NOTES, REPORT,
};

fn index(store: &dyn Store, paths: &[PathBuf]) -> Summary {
    store
        .update(
            paths,
            embedder(),
            "minilm",
            &UpdateOptions::default(),
            &Quiet,
        )
        .expect("update succeeds")
}

fn search(store: &dyn Store, query: &str, k: usize, exact: bool) -> Vec<Passage> {
    let query = embedder().embed_one(query).expect("embeds");
    let options = StoreSearch {
        exact,
        ..Default::default()
    };
    store.search(&query, k, &options).expect("search succeeds")
}

fn chunk_ids(hits: &[Passage]) -> Vec<String> {
    hits.iter().map(|p| p.chunk_id.to_string()).collect()
}

fn doc_named<'a>(docs: &'a [IndexedDoc], suffix: &str) -> &'a IndexedDoc {
    docs.iter()
        .find(|d| d.doc.id.0.ends_with(suffix))
        .unwrap_or_else(|| panic!("a document {suffix}"))
}

#[test]
fn indexes_searches_and_resolves_as_the_folder_index_does() {
    let url = fresh_schema("same_results");
    let (dir, root) = folder(&[
        ("report.md", REPORT),
        ("corpus.jsonl", CORPUS),
        ("notes.txt", NOTES),
    ]);
    let pg = PgStore::connect(&url).expect("connects");
    assert!(pg.embedder().expect("reads").is_none());
    let summary = index(&pg, std::slice::from_ref(&root));
    assert!(summary.written);
    assert_eq!((summary.documents, summary.added), (5, 5));
    assert_eq!(summary.embedded, summary.chunks);

    let folder_store = FolderStore::new(&dir.path().join("index"));
    let folder_summary = index(&folder_store, std::slice::from_ref(&root));
    assert_eq!(
        (summary.documents, summary.chunks),
        (folder_summary.documents, folder_summary.chunks)
    );
    let docs = pg.documents().expect("documents");
    let folder_docs = folder_store.documents().expect("documents");
    assert_eq!(docs.len(), folder_docs.len());
    for (a, b) in docs.iter().zip(&folder_docs) {
        assert_eq!(a.doc, b.doc);
        assert_eq!(a.chunks, b.chunks);
    }

    for query in [
        "How much did revenue grow?",
        "Who chairs the board?",
        "the highest mountain in Slovenia",
        "how many eggs does a queen bee lay",
    ] {
        let exact = search(&pg, query, 4, true);
        let expected = search(&folder_store, query, 4, true);
        assert_eq!(chunk_ids(&exact), chunk_ids(&expected), "{query}");
        for (a, b) in exact.iter().zip(&expected) {
            assert!((a.score - b.score).abs() < 1e-4, "{query}: {a:?} {b:?}");
            assert_eq!((&a.text, &a.section_path), (&b.text, &b.section_path));
        }
        let hnsw = search(&pg, query, 4, false);
        assert_eq!(hnsw[0].chunk_id, expected[0].chunk_id, "{query}");
    }
    let top = &search(&pg, "How much did revenue grow?", 1, false)[0];
    assert_eq!(top.section_path.last().map(String::as_str), Some("Revenue"));
    assert!(top.text.contains("12%"), "{top:?}");

    let report = doc_named(&docs, "report.md");
    match pg.resolve(&report.doc.id.0).expect("resolves") {
        Some(Resolved::Document(doc)) => assert_eq!(doc.doc, report.doc),
        other => panic!("{other:?}"),
    }
    let board = report
        .doc
        .sections
        .iter()
        .position(|s| s.title() == "Board")
        .expect("a Board section");
    match pg
        .resolve(&report.doc.sections[board].id.to_string())
        .expect("resolves")
    {
        Some(Resolved::Section { doc, section }) => {
            assert_eq!(
                (doc.doc.id.clone(), section),
                (report.doc.id.clone(), board)
            )
        }
        other => panic!("{other:?}"),
    }
    match pg.resolve(&top.chunk_id.to_string()).expect("resolves") {
        Some(Resolved::Chunk { doc, chunk }) => {
            let c = &doc.chunks[chunk];
            assert_eq!(c.id(&doc.doc), top.chunk_id);
            assert_eq!(&doc.doc.text[c.range.clone()], top.text);
        }
        other => panic!("{other:?}"),
    }
    assert!(pg.resolve("ffffffff").expect("resolves").is_none());
    assert!(pg.resolve("ffffffff.0").expect("resolves").is_none());
    assert!(pg.resolve("no such document").expect("resolves").is_none());
}

#[test]
fn the_loaded_index_is_the_folder_index_and_searches_through_the_database() {
    let url = fresh_schema("loaded");
    let (dir, root) = folder(&[
        ("report.md", REPORT),
        ("corpus.jsonl", CORPUS),
        ("notes.txt", NOTES),
    ]);
    let pg = Arc::new(PgStore::connect(&url).expect("connects"));
    index(pg.as_ref(), std::slice::from_ref(&root));
    let folder_dir = dir.path().join("index");
    index(&FolderStore::new(&folder_dir), std::slice::from_ref(&root));

    let loaded = (pg.clone() as Arc<dyn Store>).load().expect("loads");
    let folder_index = Index::open(&folder_dir).expect("opens");
    assert!(loaded.searches_store() && !folder_index.searches_store());
    assert_eq!(loaded.len(), folder_index.len());
    for (a, b) in loaded.documents().iter().zip(folder_index.documents()) {
        assert_eq!((&a.doc, &a.chunks), (&b.doc, &b.chunks));
    }
    for row in 0..loaded.len() {
        assert_eq!(loaded.chunk(row).id(), folder_index.chunk(row).id());
        let (a, b) = (loaded.vector(row), folder_index.vector(row));
        assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6));
    }

    // Strategies search from inside an async runtime, and skip the chunks they have read.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let rows = |index: &Index, query: &str, skip: &str| -> Vec<String> {
        let vector = embedder().embed_one(query).expect("embeds");
        let keep = |c: ChunkRef<'_>| !c.doc.id.0.ends_with(skip);
        let options = SearchOptions {
            keep: Some(&keep),
            ..Default::default()
        };
        index
            .search_with(&vector, 3, &options)
            .into_iter()
            .map(|hit| index.chunk(hit.row).id().to_string())
            .collect()
    };
    let exact = |query: &str, skip: &str| {
        let vector = embedder().embed_one(query).expect("embeds");
        let keep = |c: ChunkRef<'_>| !c.doc.id.0.ends_with(skip);
        let options = SearchOptions {
            keep: Some(&keep),
            exact: true,
            ..Default::default()
        };
        folder_index
            .search_with(&vector, 3, &options)
            .into_iter()
            .map(|hit| folder_index.chunk(hit.row).id().to_string())
            .collect::<Vec<_>>()
    };
    for (query, skip) in [
        ("How much did revenue grow?", "report.md"),
        ("the highest mountain in Slovenia", "notes.txt"),
    ] {
        let found = runtime.block_on(async { rows(&loaded, query, skip) });
        assert_eq!(found, exact(query, skip), "{query}");
    }

    // A database gone mid-run: the vectors in memory are scanned instead.
    admin_sql("DROP SCHEMA walkrag_test_loaded CASCADE");
    let query = "Who chairs the board?";
    assert_eq!(rows(&loaded, query, "nothing"), exact(query, "nothing"));
}

#[test]
fn re_indexing_embeds_only_what_changed_and_deletes_what_is_gone() {
    let url = fresh_schema("reindex");
    let (_dir, root) = folder(&[
        ("report.md", REPORT),
        ("corpus.jsonl", CORPUS),
        ("notes.txt", NOTES),
    ]);
    let pg = PgStore::connect(&url).expect("connects");
    let first = index(&pg, std::slice::from_ref(&root));
    assert_eq!(first.documents, 5);

    let again = index(&pg, std::slice::from_ref(&root));
    assert!(!again.written);
    assert_eq!((again.unchanged, again.embedded), (5, 0));
    assert_eq!(
        (again.documents, again.chunks),
        (first.documents, first.chunks)
    );

    let edited = REPORT.replace(
        "The board met eleven times.",
        "The board met eleven times and approved a dividend of 2 euros per share.",
    );
    std::fs::write(root.join("report.md"), edited).expect("edits");
    std::fs::remove_file(root.join("notes.txt")).expect("deletes");
    std::fs::write(
        root.join("garden.md"),
        "# Garden\n\nTomatoes need six hours of sun a day.\n",
    )
    .expect("writes");
    let update = index(&pg, std::slice::from_ref(&root));
    assert!(update.written);
    assert_eq!(
        (
            update.added,
            update.changed,
            update.unchanged,
            update.removed
        ),
        (1, 1, 3, 1)
    );
    let docs = pg.documents().expect("documents");
    assert_eq!(update.documents, docs.len());
    assert_eq!(docs.len(), 5);
    let re_embedded =
        doc_named(&docs, "report.md").chunks.len() + doc_named(&docs, "garden.md").chunks.len();
    assert_eq!(update.embedded, re_embedded);
    assert_eq!(
        update.chunks,
        docs.iter().map(|d| d.chunks.len()).sum::<usize>()
    );
    assert!(!docs.iter().any(|d| d.doc.id.0.ends_with("notes.txt")));

    let hits = search(&pg, "how many eggs does a queen bee lay", 10, true);
    assert!(hits.iter().all(|p| !p.doc_id.0.ends_with("notes.txt")));
    let top = &search(&pg, "what dividend did the board approve", 1, false)[0];
    assert!(top.text.contains("dividend"), "{top:?}");
}

/// Another model, as far as the store can tell: only its id differs (a fake, named so).
struct FakeOtherModel;

impl Embedder for FakeOtherModel {
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
fn another_embedder_is_refused_with_advice() {
    let url = fresh_schema("mismatch");
    let (_dir, root) = folder(&[("report.md", REPORT)]);
    let pg = PgStore::connect(&url).expect("connects");
    let first = index(&pg, std::slice::from_ref(&root));

    let err = pg.check_embedder(&FakeOtherModel).unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(err, StoreError::EmbedderMismatch { .. }),
        "{err:?}"
    );
    assert!(
        message.contains("other-model@") && message.contains("--embedder minilm"),
        "{message}"
    );
    std::fs::write(root.join("more.md"), "# More\n\nAnother page.\n").expect("writes");
    let err = pg
        .update(
            std::slice::from_ref(&root),
            &FakeOtherModel,
            "other",
            &UpdateOptions::default(),
            &Quiet,
        )
        .unwrap_err();
    assert!(
        matches!(err, StoreError::EmbedderMismatch { .. }),
        "{err:?}"
    );
    assert_eq!(pg.documents().expect("documents").len(), first.documents);
    pg.check_embedder(embedder())
        .expect("the index's own embedder");
}

#[test]
fn an_unreachable_server_is_named_without_its_password() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.local_addr().expect("an address").port()
    };
    let url = format!("postgres://walkrag:sekrit-pw@127.0.0.1:{port}/walkrag");
    let err = PgStore::connect(&url).err().expect("nothing listens there");
    let message = err.to_string();
    assert!(matches!(err, StoreError::Unreachable { .. }), "{err:?}");
    assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
    assert!(message.contains("walkrag:***@"), "{message}");
    assert!(!message.contains("sekrit-pw"), "{message}");

    // The real server with a wrong password: its refusal, and no password either.
    let good = fresh_schema("unreachable");
    let secret = password();
    assert!(!secret.is_empty());
    let wrong = good.replace(&format!(":{secret}@"), ":not-the-password@");
    let err = PgStore::connect(&wrong).err().expect("refused");
    let message = err.to_string();
    assert!(
        message.contains("password authentication failed"),
        "{message}"
    );
    assert!(!message.contains("not-the-password"), "{message}");
    let err = PgStore::connect(&good)
        .expect("connects")
        .search(&[0.0; 384], 3, &StoreSearch::default())
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err:?}");
    assert!(!err.to_string().contains(&secret), "{err}");
}

#[test]
fn two_writers_at_once_are_serialised_and_both_land() {
    let url = fresh_schema("two_writers");
    let (_a, first) = folder(&[("report.md", REPORT), ("notes.txt", NOTES)]);
    let (_b, second) = folder(&[("corpus.jsonl", CORPUS)]);
    let summaries: Vec<Summary> = std::thread::scope(|scope| {
        let writers: Vec<_> = [&first, &second]
            .into_iter()
            .map(|root| {
                let url = url.clone();
                scope.spawn(move || {
                    let pg = PgStore::connect(&url).expect("connects");
                    index(&pg, std::slice::from_ref(root))
                })
            })
            .collect();
        writers
            .into_iter()
            .map(|w| w.join().expect("a writer"))
            .collect()
    });
    assert_eq!(
        summaries
            .iter()
            .map(|s| (s.added, s.removed))
            .collect::<Vec<_>>(),
        vec![(2, 0), (3, 0)]
    );
    // Whichever wrote second saw the first's documents (kept: other paths).
    assert_eq!(summaries.iter().map(|s| s.documents).max(), Some(5));
    let pg = PgStore::connect(&url).expect("connects");
    let docs = pg.documents().expect("documents");
    assert_eq!(docs.len(), 5);
    let chunks: usize = docs.iter().map(|d| d.chunks.len()).sum();
    assert_eq!(chunks, summaries.iter().map(|s| s.embedded).sum::<usize>());
    let top = &search(&pg, "the capital of Slovenia", 1, false)[0];
    assert_eq!(top.doc_id.0, "p2");
}

#[test]
fn a_database_without_pgvector_says_how_to_get_it() {
    // A user who may not create the extension, in a database that lacks it.
    admin_sql("DROP DATABASE IF EXISTS walkrag_test_noext");
    admin_sql("DROP ROLE IF EXISTS walkrag_test_plain");
    admin_sql("CREATE ROLE walkrag_test_plain LOGIN PASSWORD 'plain-pw'");
    admin_sql("CREATE DATABASE walkrag_test_noext OWNER walkrag_test_plain");
    let url = url_as("walkrag_test_plain", "plain-pw", "walkrag_test_noext");
    let (_dir, root) = folder(&[("report.md", REPORT)]);
    let pg = PgStore::connect(&url).expect("connects");
    let err = pg
        .update(
            std::slice::from_ref(&root),
            embedder(),
            "minilm",
            &UpdateOptions::default(),
            &Quiet,
        )
        .unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(err, StoreError::MissingExtension { .. }),
        "{err:?}"
    );
    assert!(message.contains("CREATE EXTENSION vector"), "{message}");
    assert!(message.contains("walkrag_test_plain:***@"), "{message}");
    assert!(!message.contains("plain-pw"), "{message}");
    assert!(
        pg.embedder().expect("reads").is_none(),
        "nothing was created"
    );
}

#[test]
fn searches_at_once_share_a_few_connections_and_a_dropped_one_is_replaced() {
    let url = format!(
        "{}&application_name=walkrag_test_pool",
        fresh_schema("pool")
    );
    let (_dir, root) = folder(&[("corpus.jsonl", CORPUS)]);
    let pg = PgStore::connect(&url).expect("connects");
    index(&pg, std::slice::from_ref(&root));
    let expected = chunk_ids(&search(&pg, "the highest mountain in Slovenia", 2, false));

    std::thread::scope(|scope| {
        let searches: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| search(&pg, "the highest mountain in Slovenia", 2, false)))
            .collect();
        for handle in searches {
            assert_eq!(chunk_ids(&handle.join().expect("a search")), expected);
        }
    });
    let open = crate::server::admin_count(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'walkrag_test_pool'",
    );
    assert!((1..=4).contains(&open), "{open} connections");

    // The server ends every connection (a restart, an idle timeout): the next search reconnects.
    admin_sql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE application_name = 'walkrag_test_pool'",
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        chunk_ids(&search(&pg, "the highest mountain in Slovenia", 2, false)),
        expected
    );
}

#[test]
fn each_update_that_writes_moves_the_generation() {
    let url = fresh_schema("generation");
    let pg = PgStore::connect(&url).expect("connects");
    assert_eq!(pg.generation().unwrap(), None, "no index yet");
    let (_dir, root) = folder(&[("corpus.jsonl", CORPUS)]);
    index(&pg, std::slice::from_ref(&root));
    let first = pg.generation().unwrap().expect("an index");
    assert!(first.starts_with("1 "), "{first}");
    index(&pg, std::slice::from_ref(&root));
    assert_eq!(
        pg.generation().unwrap().as_ref(),
        Some(&first),
        "nothing written"
    );
    std::fs::write(root.join("notes.txt"), NOTES).unwrap();
    index(&pg, std::slice::from_ref(&root));
    let second = pg.generation().unwrap().expect("an index");
    assert!(second.starts_with("2 "), "{second}");

    // Tables made before the counter: still read, and given it by the next update.
    admin_sql("ALTER TABLE walkrag_test_generation.walkrag_manifest DROP COLUMN generation");
    let old = pg.generation().unwrap().expect("an index");
    assert!(old.starts_with("0 "), "{old}");
    std::fs::remove_file(root.join("notes.txt")).unwrap();
    index(&pg, std::slice::from_ref(&root));
    let third = pg.generation().unwrap().expect("an index");
    assert!(third.starts_with("1 "), "{third}");
    assert_eq!(Arc::new(pg).load().unwrap().documents().len(), 3);
}

#[test]
fn a_mistyped_url_never_shows_its_password() {
    for url in [
        "postgres:/walkrag:hunter2-secret@127.0.0.1:1/db",
        "postgres://walkrag:hunter2-secret@127.0.0.1:1/db?sslmode=always",
        "postgres://walkrag:hunter2-secret@127.0.0.1:notaport/db",
        "postgres://walkrag:hunter2-secret@127.0.0.1:1/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
        "host=127.0.0.1 port=x password=hunter2-secret",
    ] {
        let error = PgStore::connect(url)
            .err()
            .unwrap_or_else(|| panic!("{url} connects"))
            .to_string();
        assert!(!error.contains("hunter2"), "{url}: {error}");
    }
}
