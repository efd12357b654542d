//! Types and traits shared by every walkrag crate.
//!
//! This crate is deliberately light (no candle, no HTTP, no async runtime) so that the walker
//! and its tests can depend on the [`Embedder`] trait without linking a model runtime.

pub mod catalog;
pub mod chat;
mod embedder;
mod hash;
pub mod rand;

pub use catalog::{models_dir, Catalog, CatalogModel, ModelKind};
pub use chat::{
    ChatError, ChatModel, ChatRequest, Completion, Constraint, Delta, DeltaStream, FinishReason,
    Message, Role, Sampling, ScoreFuture, ScoreItem, Scores, StopMatcher, ToolCall, ToolDef,
    Unconstrained, Usage,
};
pub use embedder::{EmbedError, Embedder, Embeddings};
pub use hash::sha256_file;
pub use rand::SplitMix64;
