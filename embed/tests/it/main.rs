//! Integration tests of walkrag-embed against the real all-MiniLM-L6-v2 (installed by
//! scripts/fetch-models.sh) and the sentence-transformers goldens in ../shared/golden.

mod golden;
mod remote;
