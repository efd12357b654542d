//! What an update does, whichever store it writes to: which documents under the given paths
//! are new, changed, unchanged or gone (by content hash), and the chunking and embedding of the
//! new and changed ones. The folder index ([`crate::index::update`]) and the Postgres store
//! both plan and embed through here, so they follow the same incremental rules.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rayon::prelude::*;
use walkrag_core::{EmbedError, Embedder};

use crate::chunk::{self, Chunk, ChunkSpec};
use crate::document::Document;
use crate::ids::{DocId, SectionId};
use crate::indexed::{IndexedDoc, Progress, Summary};
use crate::ingest::{self, SkipReason, Skipped};

/// Chunks embedded per call, so progress moves and memory stays bounded.
const EMBED_BATCH: usize = 256;

/// A document the store already holds, as far as planning needs to know it.
#[derive(Debug, Clone, Copy)]
pub struct Known<'a> {
    pub id: &'a str,
    pub source: &'a str,
    pub hash: &'a str,
}

/// A document of the store that stays as it is indexed (its chunks and vectors reused).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reuse {
    /// Not under this update's paths, or its file failed as a whole this time.
    Keep { known: usize },
    /// Read again with the same content; `source` is where it was read from this time.
    Unchanged { known: usize, source: String },
}

/// The outcome of reading `paths` against what the store holds.
#[derive(Debug, Default)]
pub struct Plan {
    /// Counts of files and documents (added, changed, unchanged, removed, kept after an
    /// error) and the inputs skipped; the rest is filled in by the store.
    pub summary: Summary,
    /// Documents kept as indexed, in the order the folder index lists them: kept ones in the
    /// store's order, then unchanged ones in reading order.
    pub reuse: Vec<Reuse>,
    /// Known documents to drop: their files are gone from the paths (not re-read ones).
    pub removed: Vec<usize>,
    /// Known documents replaced by a new version in `to_embed`.
    pub replaced: Vec<usize>,
    /// New and changed documents, in reading order, to chunk and embed.
    pub to_embed: Vec<Document>,
}

impl Plan {
    /// Whether the store's documents stay exactly as they are.
    pub fn changes_nothing(&self) -> bool {
        self.summary.added + self.summary.changed + self.summary.removed == 0
    }
}

/// Reads the files under `paths` and compares their documents with `known` (the store's, in
/// its order). `same_chunking`: whether the store's chunks were cut the way this update cuts
/// them (if not, every re-read document is re-embedded).
pub fn plan(
    paths: &[PathBuf],
    known: &[Known<'_>],
    same_chunking: bool,
    progress: &dyn Progress,
) -> Plan {
    let mut summary = Summary::default();
    let found = ingest::discover(paths);
    summary.files = found.files.len();
    summary.other_files = found.other_files;
    for s in &found.skipped {
        progress.skipped(s);
    }
    summary.skipped = found.skipped;

    let done = AtomicUsize::new(0);
    let reads: Vec<(String, ingest::FileRead)> = found
        .files
        .par_iter()
        .map(|path| {
            let read = ingest::read_file(path);
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            progress.read(n, summary.files);
            (ingest::path_name(path), read)
        })
        .collect();

    // Gather this run's documents; a file that failed as a whole keeps its old documents.
    let mut failed_sources: HashSet<String> = HashSet::new();
    let mut fresh: Vec<Document> = Vec::new();
    let mut taken: HashMap<DocId, String> = HashMap::new();
    for (source, read) in reads {
        if read.failed {
            failed_sources.insert(source);
        }
        for s in &read.skipped {
            progress.skipped(s);
        }
        summary.skipped.extend(read.skipped);
        for doc in read.documents {
            if let Some(first) = taken.get(&doc.id) {
                let s = Skipped {
                    path: doc.source.clone(),
                    line: None,
                    reason: SkipReason::DuplicateId,
                    detail: format!("document id {:?} was already read from {first}", doc.id.0),
                };
                progress.skipped(&s);
                summary.skipped.push(s);
                continue;
            }
            taken.insert(doc.id.clone(), doc.source.clone());
            fresh.push(doc);
        }
    }

    let scopes: Vec<String> = paths.iter().map(|p| ingest::path_name(p)).collect();
    let in_scope = |source: &str| {
        scopes.iter().any(|scope| {
            let scope = scope.trim_end_matches('/');
            scope.is_empty()
                || scope == "."
                || source == scope
                || source.starts_with(&format!("{scope}/"))
        })
    };

    let mut plan = Plan::default();
    let known_by_id: HashMap<&str, usize> =
        known.iter().enumerate().map(|(k, d)| (d.id, k)).collect();
    for (k, doc) in known.iter().enumerate() {
        let read_again = taken.contains_key(&DocId(doc.id.to_string()));
        let keep = !read_again && (!in_scope(doc.source) || failed_sources.contains(doc.source));
        if keep {
            if in_scope(doc.source) {
                summary.kept_after_error += 1;
            }
            plan.reuse.push(Reuse::Keep { known: k });
        } else if !read_again {
            summary.removed += 1;
            plan.removed.push(k);
        }
    }
    for doc in fresh {
        match known_by_id.get(doc.id.0.as_str()) {
            Some(&k) if same_chunking && known[k].hash == doc.hash => {
                summary.unchanged += 1;
                // Same content; the file may have moved between sources of the same id.
                plan.reuse.push(Reuse::Unchanged {
                    known: k,
                    source: doc.source,
                });
            }
            Some(&k) => {
                summary.changed += 1;
                plan.replaced.push(k);
                plan.to_embed.push(doc);
            }
            None => {
                summary.added += 1;
                plan.to_embed.push(doc);
            }
        }
    }
    plan.summary = summary;
    plan
}

/// Gives each section of `docs` that collides with an id in `used` (the sections of the
/// documents kept) or with an earlier one a salted id, so section ids stay unique in the index.
pub fn salt_section_ids(docs: &mut [Document], mut used: HashSet<SectionId>) {
    for doc in docs {
        for section in &mut doc.sections {
            let mut salt = 0;
            while !used.insert(section.id) {
                salt += 1;
                tracing::warn!(
                    "section id {} of {} collides with another section; using a salted id",
                    section.id,
                    doc.id
                );
                section.id = SectionId::salted(&doc.id, &section.path, salt);
            }
        }
    }
}

/// Chunks `docs` (in parallel) and embeds their chunks in batches, handing each run of
/// documents whose chunks are all embedded to `done` with their vectors (row after row), in
/// the order of `docs`. Returns the seconds spent embedding and the number of chunks embedded.
pub fn embed_documents<E: From<EmbedError>>(
    docs: Vec<Document>,
    embedder: &dyn Embedder,
    chunking: &ChunkSpec,
    progress: &dyn Progress,
    mut done: impl FnMut(Vec<(IndexedDoc, Vec<f32>)>) -> Result<(), E>,
) -> Result<(f64, usize), E> {
    progress.phase("chunking");
    let chunked: Vec<Vec<(Chunk, usize)>> = docs
        .par_iter()
        .map(|doc| chunk::chunk_document(doc, embedder, chunking))
        .collect::<Result<_, _>>()?;
    let texts: Vec<String> = docs
        .iter()
        .zip(&chunked)
        .flat_map(|(doc, chunks)| {
            chunks
                .iter()
                .map(move |(c, head)| chunk::embedding_text(doc, c, *head))
        })
        .collect();
    let dim = embedder.dim();
    let mut pending = docs
        .into_iter()
        .zip(chunked)
        .map(|(doc, chunks)| IndexedDoc {
            doc,
            chunks: chunks.into_iter().map(|(c, _)| c).collect(),
        })
        .peekable();
    // Vectors of the chunks embedded and not yet handed over, from the first pending document.
    let mut vectors: Vec<f32> = Vec::new();
    let mut embedded = 0;
    let mut seconds = 0.0;
    progress.embedded(0, texts.len());
    let mut hand_over = |vectors: &mut Vec<f32>| -> Result<(), E> {
        let mut ready = Vec::new();
        while let Some(next) = pending.peek() {
            let rows = next.chunks.len();
            if vectors.len() < rows * dim {
                break;
            }
            let rest = vectors.split_off(rows * dim);
            let own = std::mem::replace(vectors, rest);
            ready.push((pending.next().expect("peeked"), own));
        }
        if ready.is_empty() {
            Ok(())
        } else {
            done(ready)
        }
    };
    for batch in texts.chunks(EMBED_BATCH) {
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        let started = Instant::now();
        let out = embedder.embed(&refs)?;
        seconds += started.elapsed().as_secs_f64();
        vectors.extend_from_slice(out.as_slice());
        embedded += batch.len();
        progress.embedded(embedded, texts.len());
        hand_over(&mut vectors)?;
    }
    // Documents without chunks after the last batch (or when there was nothing to embed).
    hand_over(&mut vectors)?;
    Ok((seconds, embedded))
}
