//! Llama-family models (`llama` in GGUF: Llama, SmolLM2): no biases, rotations over
//! interleaved pairs (GGUF stores Llama's query and key rows permuted for that), output
//! projection tied to the embeddings when the file has none.

use super::transformer::{Config, Model, Rope, Tensors};
use crate::LoadError;

pub fn load(t: &mut Tensors<'_>) -> Result<Model, LoadError> {
    let config = Config::from_gguf(t.content, "llama", Rope::Interleaved)?;
    Model::load(config, t)
}
