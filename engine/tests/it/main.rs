//! Integration tests of the index on real files with the real MiniLM embedder.
//!
//! The model comes from the models directory (`scripts/fetch-models.sh minilm`).

mod fixtures;
mod index;
