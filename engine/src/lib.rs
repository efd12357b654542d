//! walkrag's document index: documents → sections → chunks → vectors → HNSW, on disk.
//!
//! - [`ingest`] finds files and reads them into [`Document`]s (Markdown, plain text,
//!   `llms.txt`, PDF, `.jsonl` corpora), with one warning per bad input.
//! - [`front_matter`] reads a Markdown file's `---` block into document metadata.
//! - [`markdown`] splits Markdown into a section tree with stable ids.
//! - [`chunk`] cuts sections into chunks that fit the embedder.
//! - [`ann`] searches vectors exactly or through an HNSW graph.
//! - [`index`] keeps all of it on disk, updates it incrementally and crash-safely, and
//!   searches it.
//! - [`indexed`] holds the types the index, the plan and the stores share (below all three).
//! - [`plan`] decides what an update re-embeds (by content hash) and embeds it, for every store.
//! - `resume` keeps an unfinished folder-index update's vectors, so a re-run embeds only the rest.
//! - [`store`] is the interface both index stores implement: the folder index and Postgres.
//! - [`jsonl_file`] reads back the JSON Lines files kept beside an index or a run.
//! - [`lexical`] scores short texts by their words (BM25) and fuses rankings.
//! - [`outline`] renders the abridged outline with section ids.

pub mod ann;
pub mod chunk;
pub mod document;
pub mod front_matter;
mod ids;
pub mod index;
pub mod indexed;
pub mod ingest;
pub mod jsonl_file;
pub mod lexical;
pub mod markdown;
pub mod outline;
pub mod plan;
mod resume;
pub mod store;

pub use ann::AnnParams;
pub use chunk::{Chunk, ChunkSpec};
pub use document::{Document, Format};
pub use ids::{ChunkId, DocId, SectionId};
pub use index::{
    read_manifest, update, ChunkRef, EmbedderInfo, Hit, Index, IndexError, IndexedDoc, Item, Keep,
    Manifest, Progress, Quiet, SearchOptions, Summary, UpdateOptions, FORMAT_VERSION,
};
pub use ingest::{SkipReason, Skipped};
pub use store::{FolderStore, Passage, Resolved, Store, StoreError, StoreSearch};
