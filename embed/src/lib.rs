//! Sentence embeddings with candle.
//!
//! [`SentenceEmbedder`] runs a sentence-transformers BERT model (all-MiniLM-L6-v2 by default)
//! with the `tokenizers` crate and candle's tensors, reproducing sentence-transformers:
//! truncation at the model's `max_seq_length`, attention-masked mean pooling, L2
//! normalisation. The transformer runs unpadded (packed) batches through our own fused
//! kernels; with the `candle-bert` feature, candle-transformers' `BertModel` is there too, as
//! the reference ([`Backend::Candle`]) and for configs the packed encoder does not run (an
//! activation other than GELU, relative positions). [`ModelSpec`] says where the model comes
//! from: the walkrag models directory, a local sentence-transformers folder, or a Hugging Face
//! hub id.

mod bert;
mod config;
mod kernels;
mod matmul;
mod packed;
mod source;

pub use bert::{Backend, BatchPolicy, SentenceEmbedder};
pub use source::{ModelSpec, DEFAULT_EMBEDDER};
pub use walkrag_core::{EmbedError, Embedder, Embeddings};

/// Threads candle uses for matrix products (`RAYON_NUM_THREADS`, else every core).
pub fn compute_threads() -> usize {
    candle_core::utils::get_num_threads()
}
