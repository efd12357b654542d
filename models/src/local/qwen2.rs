//! Qwen2 (`qwen2` in GGUF): query, key and value biases, rotations over the two halves of
//! each head, a separate output projection.

use super::transformer::{Config, Model, Rope, Tensors};
use crate::LoadError;

pub fn load(t: &mut Tensors<'_>) -> Result<Model, LoadError> {
    let config = Config::from_gguf(t.content, "qwen2", Rope::Halves)?;
    Model::load(config, t)
}
