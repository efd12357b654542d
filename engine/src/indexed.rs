//! What an index holds, why it fails (`IndexError`) and what it reports while it is updated,
//! and what it asks of a store that searches for it: the types the folder index (`index`), its
//! resumable embedding (`resume`), the update plan (`plan`) and the stores (`store`) share. It
//! imports none of them, so none of them imports another that imports it back.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use walkrag_core::EmbedError;

use crate::chunk::Chunk;
use crate::document::Document;
use crate::ids::ChunkId;
use crate::ingest::{SkipReason, Skipped};

/// The version of the folder index's layout (see `index`); an index of another version is refused with advice.
pub const FORMAT_VERSION: u32 = 1;

/// Why an index could not be opened, searched or written.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("no index at {}: build one with `walkrag index PATH --index {}`", .0.display(), .0.display())]
    NotFound(PathBuf),
    #[error("the index at {} is damaged ({detail}); rebuild it with `walkrag index PATH --rebuild`", path.display())]
    Corrupt { path: PathBuf, detail: String },
    #[error("the index at {} has format version {found}, this walkrag reads version {FORMAT_VERSION}; rebuild it with `walkrag index PATH --rebuild`", path.display())]
    Version { path: PathBuf, found: u32 },
    #[error("the index at {} was built with embedder {built} but {given} was given; use --embedder {spec}, or rebuild the index with `walkrag index PATH --rebuild`", path.display())]
    EmbedderMismatch {
        path: PathBuf,
        built: String,
        spec: String,
        given: String,
    },
    #[error("another walkrag process is writing the index at {}; try again when it has finished", .0.display())]
    Busy(PathBuf),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

/// A document and its chunks, one line of `docs.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexedDoc {
    pub doc: Document,
    pub chunks: Vec<Chunk>,
}

/// Hooks for progress and warnings while updating; every method has a no-op default.
pub trait Progress: Sync {
    /// A file or record was left out; the update goes on.
    fn skipped(&self, _skipped: &Skipped) {}
    /// `done` of `total` files read.
    fn read(&self, _done: usize, _total: usize) {}
    /// `done` of `total` chunks embedded.
    fn embedded(&self, _done: usize, _total: usize) {}
    /// A new phase begins ("building the HNSW graph", "writing").
    fn phase(&self, _name: &str) {}
}

/// Progress that only logs warnings through `tracing`.
pub struct Quiet;

impl Progress for Quiet {
    fn skipped(&self, skipped: &Skipped) {
        tracing::warn!("{skipped}");
    }
}

/// What an update did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub documents: usize,
    pub chunks: usize,
    pub added: usize,
    pub changed: usize,
    pub unchanged: usize,
    pub removed: usize,
    /// Documents kept as previously indexed because their file could not be read this time.
    pub kept_after_error: usize,
    /// Chunks embedded by this update (the rest were reused).
    pub embedded: usize,
    /// Of those, chunks whose vectors an unfinished earlier update had left (folder index).
    pub resumed: usize,
    /// Indexable files found.
    pub files: usize,
    /// Files of kinds walkrag does not index, found while walking directories.
    pub other_files: usize,
    pub skipped: Vec<Skipped>,
    /// Whether a new generation was written (false when nothing changed).
    pub written: bool,
    /// "hnsw" or "exact".
    pub search: String,
    pub seconds: f64,
    pub embed_seconds: f64,
    pub graph_seconds: f64,
}

impl Summary {
    /// How many inputs were skipped for each reason.
    pub fn skipped_by_reason(&self) -> BTreeMap<SkipReason, usize> {
        let mut out = BTreeMap::new();
        for s in &self.skipped {
            *out.entry(s.reason).or_insert(0) += 1;
        }
        out
    }
}

/// A store's own ANN search, through which an index read from that store searches
/// (`Index::of_store`); every `Store` has one.
pub trait Nearest: Send + Sync {
    /// Where the store lives, fit to print (a database URL without its password).
    fn location(&self) -> String;

    /// The `k` chunks nearest to `query` with their cosine similarity, best first, from a
    /// candidate list of `ef_search`.
    fn nearest(
        &self,
        query: &[f32],
        k: usize,
        ef_search: usize,
    ) -> Result<Vec<(ChunkId, f32)>, Box<dyn std::error::Error + Send + Sync>>;
}
