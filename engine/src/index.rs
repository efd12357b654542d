//! The on-disk index: open it, search it, and update it crash-safely.
//!
//! Layout of an index directory:
//!
//! ```text
//! DIR/CURRENT          the name of the live generation, e.g. "gen-000003"
//! DIR/gen-000003/      manifest.json, docs.jsonl, vectors.f32, graph.hnsw.{graph,data}
//! DIR/gen-000002/      the previous generation, kept for readers that opened it just before
//! DIR/lock             held by the one process writing
//! ```
//!
//! A writer builds a whole new generation in `gen-N.tmp`, syncs it, renames it to `gen-N`,
//! and only then replaces `CURRENT` (write a temporary file, sync, rename). A process killed
//! at any moment therefore leaves `CURRENT` naming a complete generation.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use walkrag_core::Embedder;

use crate::ann::{self, AnnParams, Graph};
use crate::chunk::{Chunk, ChunkSpec};
use crate::document::Document;
use crate::ids::{ChunkId, DocId, SectionId};
use crate::indexed::Nearest;
pub use crate::indexed::{IndexError, IndexedDoc, Progress, Quiet, Summary, FORMAT_VERSION};
use crate::markdown::Section;
use crate::plan::{self, Known, Plan, Reuse};
use crate::resume::Resumable;

const FORMAT_NAME: &str = "walkrag-index";
const GRAPH_BASENAME: &str = "graph";
/// The most candidates asked of a store's ANN search when a filter turns some down
/// (pgvector's largest `hnsw.ef_search`); beyond it the vectors in memory are scanned.
const MAX_STORE_CANDIDATES: usize = 1000;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> IndexError + '_ {
    move |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Which embedder built the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedderInfo {
    /// What the user typed (`minilm`, a folder, a hub id): used when a command needs the model.
    pub spec: String,
    /// Name and weights checksum ([`Embedder::id`]); must match to search.
    pub id: String,
    pub dim: usize,
    pub max_tokens: usize,
}

/// `manifest.json`: everything needed to trust and read the other files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    pub embedder: EmbedderInfo,
    pub chunking: ChunkSpec,
    pub ann: AnnParams,
    /// Basename of the HNSW files, when the index is large enough to have a graph.
    pub graph: Option<String>,
    pub documents: usize,
    pub chunks: usize,
    /// Size in bytes of every other file of the generation, checked on open.
    pub files: BTreeMap<String, u64>,
    pub created_unix: u64,
}

/// One chunk of the index with its document.
#[derive(Debug, Clone, Copy)]
pub struct ChunkRef<'a> {
    /// The chunk's row in the vector matrix.
    pub row: usize,
    pub doc: &'a Document,
    pub chunk: &'a Chunk,
}

impl<'a> ChunkRef<'a> {
    pub fn id(&self) -> ChunkId {
        self.chunk.id(self.doc)
    }

    pub fn text(&self) -> &'a str {
        &self.doc.text[self.chunk.range.clone()]
    }

    pub fn section(&self) -> &'a Section {
        &self.doc.sections[self.chunk.section as usize]
    }
}

/// A search result: a chunk and its cosine similarity to the query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub row: usize,
    pub score: f32,
}

/// Something an id typed by a person or a model names.
#[derive(Debug, Clone, Copy)]
pub enum Item<'a> {
    Document(&'a IndexedDoc),
    Section { doc: &'a IndexedDoc, section: usize },
    Chunk(ChunkRef<'a>),
}

/// An opened index: read-only, cheap to search, safe to share between threads.
///
/// It holds every document, chunk and vector in memory, as the strategies read them. Searches
/// go through its HNSW graph, or through the store it was loaded from ([`Index::of_store`]: a
/// database's own ANN index), or scan every vector.
pub struct Index {
    dir: PathBuf,
    generation: PathBuf,
    manifest: Manifest,
    docs: Vec<IndexedDoc>,
    /// Row → (document, chunk within it).
    rows: Vec<(u32, u32)>,
    vectors: Vec<f32>,
    graph: Option<Graph>,
    /// The store that searches for this index, where it was loaded from one.
    store: Option<Arc<dyn Nearest>>,
    /// Whether a failed store search was already reported (later ones fall back quietly).
    store_failed: AtomicBool,
    by_doc: HashMap<String, usize>,
    by_section: HashMap<SectionId, (usize, usize)>,
    by_chunk: HashMap<ChunkId, usize>,
}

impl Index {
    /// Opens the live generation of the index in `dir`.
    pub fn open(dir: &Path) -> Result<Self, IndexError> {
        let (generation, manifest) = read_manifest(dir)?;
        let corrupt = |detail: String| IndexError::Corrupt {
            path: dir.to_path_buf(),
            detail,
        };
        for (file, &size) in &manifest.files {
            let path = generation.join(file);
            let actual = fs::metadata(&path).map_err(io(&path))?.len();
            if actual != size {
                return Err(corrupt(format!(
                    "{file} has {actual} bytes, the manifest says {size}"
                )));
            }
        }

        let started = Instant::now();
        let docs_path = generation.join("docs.jsonl");
        let reader = BufReader::new(File::open(&docs_path).map_err(io(&docs_path))?);
        let mut docs = Vec::with_capacity(manifest.documents);
        for (i, line) in reader.lines().enumerate() {
            let line = line.map_err(io(&docs_path))?;
            let doc: IndexedDoc = serde_json::from_str(&line)
                .map_err(|e| corrupt(format!("docs.jsonl line {}: {e}", i + 1)))?;
            docs.push(doc);
        }

        let docs_ms = started.elapsed().as_secs_f64() * 1e3;
        let vectors_path = generation.join("vectors.f32");
        let raw = fs::read(&vectors_path).map_err(io(&vectors_path))?;
        let vectors: Vec<f32> = raw
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let rows = rows_of(&docs);
        if docs.len() != manifest.documents
            || rows.len() != manifest.chunks
            || vectors.len() != rows.len() * manifest.embedder.dim
        {
            return Err(corrupt(format!(
                "{} documents, {} chunks and {} vector values do not match the manifest",
                docs.len(),
                rows.len(),
                vectors.len()
            )));
        }
        let vectors_ms = started.elapsed().as_secs_f64() * 1e3 - docs_ms;
        let graph = match &manifest.graph {
            Some(basename) => {
                let graph = Graph::load(&generation, basename).map_err(corrupt)?;
                if graph.len() != rows.len() {
                    return Err(corrupt(format!(
                        "the graph holds {} of {} chunks",
                        graph.len(),
                        rows.len()
                    )));
                }
                Some(graph)
            }
            None => None,
        };
        let mut index = Self {
            dir: dir.to_path_buf(),
            generation,
            manifest,
            docs,
            rows,
            vectors,
            graph,
            store: None,
            store_failed: AtomicBool::new(false),
            by_doc: HashMap::new(),
            by_section: HashMap::new(),
            by_chunk: HashMap::new(),
        };
        let graph_ms = started.elapsed().as_secs_f64() * 1e3 - docs_ms - vectors_ms;
        index.build_lookups();
        tracing::debug!(
            "opened {}: documents {docs_ms:.1} ms, vectors {vectors_ms:.1} ms, graph {graph_ms:.1} ms, lookups {:.1} ms",
            index.generation.display(),
            started.elapsed().as_secs_f64() * 1e3 - docs_ms - vectors_ms - graph_ms
        );
        Ok(index)
    }

    /// An index read from `store` (documents in order, their chunks' vectors row after row),
    /// whose searches `store` answers. A chunk the store returns that `docs` lacks (written
    /// after they were read) is left out of results.
    pub fn of_store(
        store: Arc<dyn Nearest>,
        manifest: Manifest,
        docs: Vec<IndexedDoc>,
        vectors: Vec<f32>,
    ) -> Result<Self, IndexError> {
        let location = PathBuf::from(store.location());
        let rows = rows_of(&docs);
        if vectors.len() != rows.len() * manifest.embedder.dim {
            return Err(IndexError::Corrupt {
                path: location,
                detail: format!(
                    "{} chunks but {} vector values of dimension {}",
                    rows.len(),
                    vectors.len(),
                    manifest.embedder.dim
                ),
            });
        }
        let mut index = Self {
            dir: location.clone(),
            generation: location,
            manifest: Manifest {
                documents: docs.len(),
                chunks: rows.len(),
                ..manifest
            },
            docs,
            rows,
            vectors,
            graph: None,
            store: Some(store),
            store_failed: AtomicBool::new(false),
            by_doc: HashMap::new(),
            by_section: HashMap::new(),
            by_chunk: HashMap::new(),
        };
        index.build_lookups();
        Ok(index)
    }

    fn build_lookups(&mut self) {
        for (d, indexed) in self.docs.iter().enumerate() {
            self.by_doc.insert(indexed.doc.id.0.clone(), d);
            for (s, section) in indexed.doc.sections.iter().enumerate() {
                self.by_section.insert(section.id, (d, s));
            }
        }
        for (row, &(d, c)) in self.rows.iter().enumerate() {
            let indexed = &self.docs[d as usize];
            self.by_chunk
                .insert(indexed.chunks[c as usize].id(&indexed.doc), row);
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The generation directory this index was read from.
    pub fn generation(&self) -> &Path {
        &self.generation
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    pub fn documents(&self) -> &[IndexedDoc] {
        &self.docs
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Whether searches go through the HNSW graph (else they scan every vector).
    pub fn has_graph(&self) -> bool {
        self.graph.is_some()
    }

    /// Whether searches go to the store the index was loaded from ([`Index::of_store`]).
    pub fn searches_store(&self) -> bool {
        self.store.is_some()
    }

    /// Refuses an embedder other than the one that built the index.
    pub fn check_embedder(&self, embedder: &dyn Embedder) -> Result<(), IndexError> {
        let built = &self.manifest.embedder;
        if embedder.id() != built.id {
            return Err(IndexError::EmbedderMismatch {
                path: self.dir.clone(),
                built: built.id.clone(),
                spec: built.spec.clone(),
                given: embedder.id().to_string(),
            });
        }
        Ok(())
    }

    pub fn chunk(&self, row: usize) -> ChunkRef<'_> {
        let (d, c) = self.rows[row];
        let indexed = &self.docs[d as usize];
        ChunkRef {
            row,
            doc: &indexed.doc,
            chunk: &indexed.chunks[c as usize],
        }
    }

    /// Every stored vector, row after row (row `i` belongs to chunk row `i`).
    pub fn vectors(&self) -> &[f32] {
        &self.vectors
    }

    /// The stored vector of a chunk.
    pub fn vector(&self, row: usize) -> &[f32] {
        let dim = self.manifest.embedder.dim;
        &self.vectors[row * dim..(row + 1) * dim]
    }

    /// The `k` chunks nearest to `query` (a vector from the index's embedder), best first.
    pub fn search(&self, query: &[f32], k: usize) -> Vec<Hit> {
        self.search_with(query, k, &SearchOptions::default())
    }

    pub fn search_with(&self, query: &[f32], k: usize, options: &SearchOptions<'_>) -> Vec<Hit> {
        let dim = self.manifest.embedder.dim;
        assert_eq!(query.len(), dim, "query vector of the wrong dimension");
        if k == 0 || self.rows.is_empty() {
            return Vec::new();
        }
        let keep_row = |row: usize| options.keep.is_none_or(|keep| keep(self.chunk(row)));
        let found = match (&self.graph, &self.store, options.exact) {
            (Some(graph), _, false) => {
                let ef = options.ef_search.unwrap_or(self.manifest.ann.ef_search);
                let filter = options.keep.map(|_| &keep_row as &dyn Fn(usize) -> bool);
                graph.search(query, k, ef, filter)
            }
            (_, Some(store), false) => self
                .search_store(store.as_ref(), query, k, options.ef_search, &keep_row)
                .unwrap_or_else(|| ann::exact(&self.vectors, dim, query, k, &keep_row)),
            _ => ann::exact(&self.vectors, dim, query, k, &keep_row),
        };
        found
            .into_iter()
            .map(|(row, score)| Hit { row, score })
            .collect()
    }

    /// The `k` nearest rows that `keep_row` accepts, by the store's own search. Where the
    /// filter turns down candidates, asks for four times as many, up to the most an ANN search
    /// returns; `None` (scan every vector instead) where that still leaves fewer than `k`, or
    /// where the store fails, which is reported once.
    fn search_store(
        &self,
        store: &dyn Nearest,
        query: &[f32],
        k: usize,
        ef_search: Option<usize>,
        keep_row: &dyn Fn(usize) -> bool,
    ) -> Option<Vec<(usize, f32)>> {
        let mut want = k;
        loop {
            let ef_search = ef_search.unwrap_or(self.manifest.ann.ef_search).max(want);
            let passages = match store.nearest(query, want, ef_search) {
                Ok(passages) => passages,
                Err(e) => {
                    if !self.store_failed.swap(true, Ordering::Relaxed) {
                        tracing::warn!(
                            "searching {} failed, scanning the vectors in memory instead: {e}",
                            store.location()
                        );
                    }
                    return None;
                }
            };
            let exhausted = passages.len() < want;
            let found: Vec<(usize, f32)> = passages
                .iter()
                .filter_map(|&(chunk, score)| Some((self.row_of(chunk)?, score)))
                .filter(|&(row, _)| keep_row(row))
                .take(k)
                .collect();
            if found.len() == k || exhausted {
                return Some(found);
            }
            if want >= MAX_STORE_CANDIDATES {
                return None;
            }
            want = (want * 4).min(MAX_STORE_CANDIDATES);
        }
    }

    /// A document id, a section id (`1a2b3c4d`) or a chunk id (`1a2b3c4d.2`).
    pub fn resolve(&self, id: &str) -> Option<Item<'_>> {
        if let Some(&d) = self.by_doc.get(id) {
            return Some(Item::Document(&self.docs[d]));
        }
        if let Some(chunk) = ChunkId::parse(id) {
            return self
                .by_chunk
                .get(&chunk)
                .map(|&row| Item::Chunk(self.chunk(row)));
        }
        let section = SectionId::parse(id)?;
        let &(d, s) = self.by_section.get(&section)?;
        Some(Item::Section {
            doc: &self.docs[d],
            section: s,
        })
    }

    pub fn document(&self, id: &DocId) -> Option<&IndexedDoc> {
        self.by_doc.get(&id.0).map(|&d| &self.docs[d])
    }

    /// The row of a chunk id.
    pub fn row_of(&self, id: ChunkId) -> Option<usize> {
        self.by_chunk.get(&id).copied()
    }
}

/// Row → (document, chunk within it), for documents in index order.
fn rows_of(docs: &[IndexedDoc]) -> Vec<(u32, u32)> {
    docs.iter()
        .enumerate()
        .flat_map(|(d, doc)| (0..doc.chunks.len()).map(move |c| (d as u32, c as u32)))
        .collect()
}

/// The live generation's directory and manifest, without reading the rest of the index (for
/// callers that only need the embedder spec or parameters).
pub fn read_manifest(dir: &Path) -> Result<(PathBuf, Manifest), IndexError> {
    let current = dir.join("CURRENT");
    let name = match fs::read_to_string(&current) {
        Ok(name) => name.trim().to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(IndexError::NotFound(dir.to_path_buf()))
        }
        Err(e) => return Err(io(&current)(e)),
    };
    let corrupt = |detail: String| IndexError::Corrupt {
        path: dir.to_path_buf(),
        detail,
    };
    if !name.starts_with("gen-") || name.contains(['/', '\\']) || name.ends_with(".tmp") {
        return Err(corrupt(format!("CURRENT names {name:?}")));
    }
    let generation = dir.join(&name);
    let manifest_path = generation.join("manifest.json");
    let bytes = fs::read(&manifest_path).map_err(io(&manifest_path))?;
    let manifest: Manifest =
        serde_json::from_slice(&bytes).map_err(|e| corrupt(format!("manifest.json: {e}")))?;
    if manifest.format != FORMAT_NAME {
        return Err(corrupt(format!(
            "manifest.json is not a {FORMAT_NAME} manifest"
        )));
    }
    if manifest.version != FORMAT_VERSION {
        return Err(IndexError::Version {
            path: dir.to_path_buf(),
            found: manifest.version,
        });
    }
    Ok((generation, manifest))
}

/// "hnsw" or "exact", as summaries and reports name the search an index uses.
fn search_kind(has_graph: bool) -> &'static str {
    if has_graph {
        "hnsw"
    } else {
        "exact"
    }
}

/// A filter on the chunks a search may return.
pub type Keep<'a> = &'a (dyn Fn(ChunkRef<'_>) -> bool + Sync);

/// Knobs of one search.
#[derive(Default, Clone, Copy)]
pub struct SearchOptions<'a> {
    /// Overrides the manifest's `ef_search` for HNSW.
    pub ef_search: Option<usize>,
    /// Scan every vector even when there is a graph.
    pub exact: bool,
    /// Only chunks this accepts are returned (already-read chunks, metadata filters).
    pub keep: Option<Keep<'a>>,
}

/// What an update should do besides syncing `paths`.
#[derive(Debug, Clone, Default)]
pub struct UpdateOptions {
    /// Ignore the existing index (another embedder, other chunking) and build from scratch.
    pub rebuild: bool,
    /// Chunk sizes; the embedder's limits when `None`.
    pub chunking: Option<ChunkSpec>,
    pub ann: AnnParams,
}

/// Brings the index in `dir` up to date with `paths`: documents under them that are new or
/// changed are chunked and embedded, unchanged ones reuse their vectors, ones whose files are
/// gone are dropped; documents indexed from other paths stay. Nothing is written when nothing
/// changed. `embedder_spec` is recorded so later commands can load the same model.
pub fn update(
    dir: &Path,
    paths: &[PathBuf],
    embedder: &dyn Embedder,
    embedder_spec: &str,
    options: &UpdateOptions,
    progress: &dyn Progress,
) -> Result<Summary, IndexError> {
    let started = Instant::now();
    fs::create_dir_all(dir).map_err(io(dir))?;
    let lock_path = dir.join("lock");
    let lock = File::create(&lock_path).map_err(io(&lock_path))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => return Err(IndexError::Busy(dir.to_path_buf())),
        Err(fs::TryLockError::Error(e)) => return Err(io(&lock_path)(e)),
    }

    let old = match Index::open(dir) {
        Ok(old) if !options.rebuild => {
            old.check_embedder(embedder)?;
            Some(old)
        }
        Ok(_) | Err(IndexError::NotFound(_)) => None,
        Err(e) if options.rebuild => {
            tracing::warn!("replacing the unreadable index: {e}");
            None
        }
        Err(e) => return Err(e),
    };
    let chunking = options
        .chunking
        .unwrap_or_else(|| ChunkSpec::for_embedder(embedder));
    let same_chunking = old
        .as_ref()
        .is_some_and(|o| o.manifest.chunking == chunking);

    let known: Vec<Known<'_>> = old
        .iter()
        .flat_map(|old| &old.docs)
        .map(|indexed| Known {
            id: &indexed.doc.id.0,
            source: &indexed.doc.source,
            hash: &indexed.doc.hash,
        })
        .collect();
    let Plan {
        mut summary,
        reuse,
        mut to_embed,
        ..
    } = plan::plan(paths, &known, same_chunking, progress);
    drop(known);

    // Final document list: kept old documents first (they keep their section ids), then this
    // run's documents, reused where unchanged.
    let old_vectors = |old: &Index, d: usize| -> Vec<f32> {
        let dim = old.manifest.embedder.dim;
        let first = old.rows.partition_point(|&(doc, _)| (doc as usize) < d);
        old.vectors[first * dim..(first + old.docs[d].chunks.len()) * dim].to_vec()
    };
    let mut reused: Vec<(IndexedDoc, Vec<f32>)> = Vec::with_capacity(reuse.len());
    if let Some(old) = &old {
        for r in reuse {
            match r {
                Reuse::Keep { known: d } => {
                    reused.push((old.docs[d].clone(), old_vectors(old, d)));
                }
                Reuse::Unchanged { known: d, source } => {
                    let mut indexed = old.docs[d].clone();
                    indexed.doc.source = source;
                    reused.push((indexed, old_vectors(old, d)));
                }
            }
        }
    }

    let nothing_changed = old.is_some()
        && summary.added + summary.changed + summary.removed == 0
        && old.as_ref().is_some_and(|o| o.manifest.ann == options.ann);
    if nothing_changed {
        let old = old.expect("checked above");
        summary.documents = old.docs.len();
        summary.chunks = old.rows.len();
        summary.search = search_kind(old.has_graph()).into();
        summary.seconds = started.elapsed().as_secs_f64();
        return Ok(summary);
    }
    drop(old);

    // Section ids must be unique in the whole index: a colliding new section is salted.
    let used: HashSet<SectionId> = reused
        .iter()
        .flat_map(|(indexed, _)| indexed.doc.sections.iter().map(|s| s.id))
        .collect();
    plan::salt_section_ids(&mut to_embed, used);

    // Chunk in parallel, embed in batches.
    let dim = embedder.dim();
    let mut docs: Vec<IndexedDoc> = Vec::with_capacity(reused.len() + to_embed.len());
    let mut vectors: Vec<f32> = Vec::new();
    for (indexed, v) in reused {
        docs.push(indexed);
        vectors.extend_from_slice(&v);
    }
    // What an unfinished earlier update embedded is taken from its partial file.
    let resumable = Resumable::open(dir, embedder)?;
    let (embed_seconds, embedded) =
        plan::embed_documents(to_embed, &resumable, &chunking, progress, |ready| {
            for (indexed, v) in ready {
                docs.push(indexed);
                vectors.extend_from_slice(&v);
            }
            Ok::<(), IndexError>(())
        })?;
    summary.embedded = embedded;
    summary.resumed = resumable.reused();
    summary.embed_seconds = embed_seconds;
    let chunks: usize = docs.iter().map(|d| d.chunks.len()).sum();

    let graph = (chunks >= options.ann.exact_below.max(1)).then(|| {
        progress.phase("building the HNSW graph");
        let graph_started = Instant::now();
        let graph = Graph::build(&vectors, dim, &options.ann);
        summary.graph_seconds = graph_started.elapsed().as_secs_f64();
        graph
    });

    progress.phase("writing");
    let manifest = Manifest {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        embedder: EmbedderInfo {
            spec: embedder_spec.into(),
            id: embedder.id().into(),
            dim,
            max_tokens: embedder.max_tokens(),
        },
        chunking,
        ann: options.ann,
        graph: None,
        documents: docs.len(),
        chunks,
        files: BTreeMap::new(),
        created_unix: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    };
    write_generation(dir, manifest, &docs, &vectors, graph.as_ref())?;
    resumable.finish();
    summary.documents = docs.len();
    summary.chunks = chunks;
    summary.written = true;
    summary.search = search_kind(graph.is_some()).into();
    summary.seconds = started.elapsed().as_secs_f64();
    drop(lock);
    Ok(summary)
}

/// Writes a complete generation next to the live one and makes it live (see the module docs).
fn write_generation(
    dir: &Path,
    mut manifest: Manifest,
    docs: &[IndexedDoc],
    vectors: &[f32],
    graph: Option<&Graph>,
) -> Result<(), IndexError> {
    let generations = list_generations(dir)?;
    let number = generations.iter().map(|(n, _)| n + 1).max().unwrap_or(1);
    let name = format!("gen-{number:06}");
    let tmp = dir.join(format!("{name}.tmp"));
    if tmp.exists() {
        fs::remove_dir_all(&tmp).map_err(io(&tmp))?;
    }
    fs::create_dir(&tmp).map_err(io(&tmp))?;

    let docs_path = tmp.join("docs.jsonl");
    let mut out = BufWriter::new(File::create(&docs_path).map_err(io(&docs_path))?);
    for doc in docs {
        serde_json::to_writer(&mut out, doc).map_err(|e| io(&docs_path)(e.into()))?;
        out.write_all(b"\n").map_err(io(&docs_path))?;
    }
    let file = out
        .into_inner()
        .map_err(|e| io(&docs_path)(e.into_error()))?;
    file.sync_all().map_err(io(&docs_path))?;

    let vectors_path = tmp.join("vectors.f32");
    let mut out = BufWriter::new(File::create(&vectors_path).map_err(io(&vectors_path))?);
    for v in vectors {
        out.write_all(&v.to_le_bytes()).map_err(io(&vectors_path))?;
    }
    let file = out
        .into_inner()
        .map_err(|e| io(&vectors_path)(e.into_error()))?;
    file.sync_all().map_err(io(&vectors_path))?;

    if let Some(graph) = graph {
        let basename = graph
            .save(&tmp, GRAPH_BASENAME)
            .map_err(|e| IndexError::Io {
                path: tmp.clone(),
                source: std::io::Error::other(e),
            })?;
        for ext in ["hnsw.graph", "hnsw.data"] {
            let path = tmp.join(format!("{basename}.{ext}"));
            File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(io(&path))?;
        }
        manifest.graph = Some(basename);
    }

    for entry in fs::read_dir(&tmp).map_err(io(&tmp))? {
        let entry = entry.map_err(io(&tmp))?;
        let size = entry.metadata().map_err(io(&entry.path()))?.len();
        manifest
            .files
            .insert(entry.file_name().to_string_lossy().into_owned(), size);
    }
    let manifest_path = tmp.join("manifest.json");
    let text = serde_json::to_vec_pretty(&manifest).expect("a manifest serialises");
    write_synced(&manifest_path, &text)?;
    sync_dir(&tmp)?;

    let live = dir.join(&name);
    fs::rename(&tmp, &live).map_err(io(&live))?;
    sync_dir(dir)?;
    let current_tmp = dir.join("CURRENT.tmp");
    write_synced(&current_tmp, format!("{name}\n").as_bytes())?;
    let current = dir.join("CURRENT");
    fs::rename(&current_tmp, &current).map_err(io(&current))?;
    sync_dir(dir)?;

    // Keep the previous generation for readers that opened it a moment ago; drop the rest
    // and any half-written leftovers of killed writers.
    let previous = generations
        .iter()
        .map(|(n, _)| *n)
        .filter(|&n| n < number)
        .max();
    for (n, path) in generations {
        if Some(n) != previous {
            if let Err(e) = fs::remove_dir_all(&path) {
                tracing::warn!("cannot remove old generation {}: {e}", path.display());
            }
        }
    }
    for entry in fs::read_dir(dir).map_err(io(dir))?.flatten() {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        if file_name.starts_with("gen-") && file_name.ends_with(".tmp") {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
    Ok(())
}

/// Complete generations in `dir`, with their numbers.
fn list_generations(dir: &Path) -> Result<Vec<(u64, PathBuf)>, IndexError> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if let Some(n) = name
            .strip_prefix("gen-")
            .and_then(|n| n.parse::<u64>().ok())
        {
            out.push((n, entry.path()));
        }
    }
    Ok(out)
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), IndexError> {
    let mut file = File::create(path).map_err(io(path))?;
    file.write_all(bytes).map_err(io(path))?;
    file.sync_all().map_err(io(path))
}

fn sync_dir(dir: &Path) -> Result<(), IndexError> {
    File::open(dir).and_then(|f| f.sync_all()).map_err(io(dir))
}
