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
//! hub id. [`OpenAiEmbedder`] gets the vectors from an OpenAI-compatible server instead
//! (`openai:MODEL`), chunking by a local model's tokenizer; [`load`] picks by the spec.

mod bert;
mod config;
mod kernels;
mod matmul;
mod openai;
mod packed;
mod source;
#[cfg(feature = "testing")]
pub mod testing;

pub use bert::{Backend, BatchPolicy, SentenceEmbedder};
pub use openai::{
    remote_model, OpenAiEmbedder, RemoteConfig, DEFAULT_EMBED_BASE_URL, OPENAI_PREFIX,
};
pub use source::{ModelSpec, DEFAULT_EMBEDDER};
pub use walkrag_core::{EmbedError, Embedder, Embeddings};
pub use walkrag_openai::ApiKey;

/// Threads candle uses for matrix products (`RAYON_NUM_THREADS`, else every core).
pub fn compute_threads() -> usize {
    candle_core::utils::get_num_threads()
}

/// The embedder an `--embedder` spec names: `openai:MODEL` on the server the environment
/// names ([`RemoteConfig::from_env`], then changed by `configure`), else a local model.
pub fn load(
    spec: &str,
    configure: impl FnOnce(&mut RemoteConfig),
) -> Result<Box<dyn Embedder>, EmbedError> {
    match remote_model(spec) {
        Some("") => Err(EmbedError::Load(format!(
            "'{spec}' names no model: write {OPENAI_PREFIX}MODEL, the name the server knows"
        ))),
        Some(model) => {
            let mut config = RemoteConfig::from_env(model);
            configure(&mut config);
            Ok(Box::new(OpenAiEmbedder::connect(config)?))
        }
        None => Ok(Box::new(SentenceEmbedder::load(spec)?)),
    }
}
