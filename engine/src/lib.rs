//! walkrag's document index: documents → sections → chunks → vectors → HNSW, on disk.
//!
//! Built so far: the id types ([`DocId`], [`SectionId`], [`ChunkId`]) and the Markdown
//! sectioner ([`markdown::sections`]). Chunking, embedding, HNSW and the on-disk index come
//! with the rest of the document-index issue.

mod ids;
pub mod markdown;

pub use ids::{ChunkId, DocId, SectionId};
