//! What the strategies search and show besides the index's own nearest chunks: the links
//! between passages, the names a passage gives that were not read yet, the leads beside a
//! table of contents, metadata filters, the token budget of chosen sections, passages as
//! the model sees them, facts remembered across questions, and tables of contents written
//! by a model.

pub mod budget;
pub mod contents;
pub mod filters;
pub mod leads;
pub mod links;
pub mod memory;
pub mod names;
pub mod passages;

/// The dot product: the cosine of two unit-length vectors (what the index stores and the
/// embedders return).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
