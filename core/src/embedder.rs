//! The [`Embedder`] trait: text in, L2-normalised vectors out.

use std::fmt;
use std::ops::Range;

/// A dense row-major matrix of embeddings, one row per input text.
#[derive(Clone, PartialEq)]
pub struct Embeddings {
    dim: usize,
    data: Vec<f32>,
}

impl Embeddings {
    /// Wraps `data`, which must hold a whole number of rows of `dim` values.
    pub fn new(dim: usize, data: Vec<f32>) -> Self {
        assert!(
            dim > 0 && data.len().is_multiple_of(dim),
            "embeddings: {} values are not rows of {dim}",
            data.len()
        );
        Self { dim, data }
    }

    /// An all-zero matrix of `rows` rows, to be filled in place.
    pub fn zeros(rows: usize, dim: usize) -> Self {
        Self::new(dim, vec![0.0; rows * dim])
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn len(&self) -> usize {
        self.data.len() / self.dim
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Row `i`: the embedding of the `i`-th input.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    pub fn row_mut(&mut self, i: usize) -> &mut [f32] {
        &mut self.data[i * self.dim..(i + 1) * self.dim]
    }

    pub fn rows(&self) -> std::slice::ChunksExact<'_, f32> {
        self.data.chunks_exact(self.dim)
    }

    /// All values, row after row.
    pub fn as_slice(&self) -> &[f32] {
        &self.data
    }

    pub fn into_vec(self) -> Vec<f32> {
        self.data
    }
}

impl fmt::Debug for Embeddings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Embeddings({} x {})", self.len(), self.dim)
    }
}

/// Why an embedder could not load or embed.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model files are missing, unreadable or of an unsupported kind.
    #[error("cannot load embedding model: {0}")]
    Load(String),
    /// The tokenizer rejected the input.
    #[error("tokenizer failed: {0}")]
    Tokenize(String),
    /// The forward pass failed.
    #[error("embedding model failed: {0}")]
    Compute(String),
    /// An embedding server failed, or answered what cannot be used. `server` is its host and
    /// port only: never a key, never credentials from its URL.
    #[error("the embedding server at {server} {detail}")]
    Server { server: String, detail: String },
}

/// Turns texts into L2-normalised vectors of a fixed dimension.
///
/// Implementations batch internally; callers pass as many texts as they like.
pub trait Embedder: Send + Sync {
    /// A stable identifier of the model and its weights (name plus a checksum), recorded in
    /// index manifests so that an index is never queried with a different model.
    fn id(&self) -> &str;

    /// The length of every vector.
    fn dim(&self) -> usize;

    /// The most tokens (special tokens included) the model reads; longer texts are truncated.
    fn max_tokens(&self) -> usize;

    /// How many tokens `text` becomes, special tokens included, before truncation.
    fn count_tokens(&self, text: &str) -> Result<usize, EmbedError>;

    /// The byte range in `text` of every token it becomes, special tokens excluded, without
    /// truncation. Chunkers use it to cut long text at token boundaries.
    fn token_spans(&self, text: &str) -> Result<Vec<Range<usize>>, EmbedError>;

    /// Embeds every text; row `i` of the result belongs to `texts[i]`.
    fn embed(&self, texts: &[&str]) -> Result<Embeddings, EmbedError>;

    /// Embeds one text (a query).
    fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        Ok(self.embed(&[text])?.into_vec())
    }
}
