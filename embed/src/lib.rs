//! Sentence embeddings with candle.
//!
//! [`SentenceEmbedder`] runs a sentence-transformers BERT model (all-MiniLM-L6-v2 by default)
//! with candle-transformers' BERT and the `tokenizers` crate, reproducing sentence-transformers:
//! truncation at the model's `max_seq_length`, attention-masked mean pooling, L2 normalisation.
//! By default the transformer runs unpadded (packed) batches through fused kernels; the
//! candle-transformers `BertModel` remains available as the reference ([`Backend::Candle`]).
//! [`ModelSpec`] says where the model comes from: the walkrag models directory, a local
//! sentence-transformers folder, or a Hugging Face hub id.

mod bert;
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
