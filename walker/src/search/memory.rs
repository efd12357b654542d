//! Memory (`--memory`): facts found by earlier walks on the same index, kept in a file beside
//! it, embedded, and recalled when a later question is close to them, so a follow-up question
//! starts from what is already known.
//!
//! Invariants:
//! - The file is append-only JSON Lines, one fact per line, each line written whole and
//!   synced; a line cut off by a crash is ignored (with a warning), never a reason to refuse
//!   the rest, and cut off before the next fact is appended.
//! - A remembered fact is recalled only while the chunk it came from is in the index (a
//!   re-indexed, changed document makes its old facts stale) and only with the embedder that
//!   embedded it.
//! - Only trusted facts are stored: read from a chunk the model was shown, and supported by
//!   that chunk's words.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use walkrag_core::{EmbedError, Embedder};
use walkrag_engine::{jsonl_file, ChunkId, Index};

/// The memory file's name in an index directory.
pub const MEMORY_FILE: &str = "memory.jsonl";

/// One remembered fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Remembered {
    /// The question whose walk found it.
    pub question: String,
    pub fact: String,
    pub chunk_id: ChunkId,
    /// The embedder that embedded `vector`.
    pub embedder: String,
    pub vector: Vec<f32>,
}

/// A remembered fact found close to a question.
#[derive(Debug, Clone, PartialEq)]
pub struct Recalled {
    pub fact: Remembered,
    /// Cosine similarity to the question.
    pub score: f32,
}

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("memory {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("memory {path}, line {line}: {message}")]
    Corrupt {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("memory: {0}")]
    Embed(#[from] EmbedError),
}

/// The remembered facts of one index, shared by the walks that use it.
#[derive(Debug)]
pub struct Memory {
    path: PathBuf,
    file: Mutex<Kept>,
}

/// What the file holds, under one lock so that appends keep its order.
#[derive(Debug)]
struct Kept {
    facts: Vec<Remembered>,
    /// Whether the file ends in a line cut short, which the next append cuts off.
    cut: bool,
}

impl Memory {
    /// The memory of the index in `index_dir` (empty when it has none yet).
    pub fn of_index(index_dir: &Path) -> Result<Self, MemoryError> {
        Self::open(&index_dir.join(MEMORY_FILE))
    }

    /// Reads the memory file at `path`; a missing file is an empty memory.
    pub fn open(path: &Path) -> Result<Self, MemoryError> {
        let io_error = |source| MemoryError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = jsonl_file::read::<Remembered>(path).map_err(io_error)?;
        for bad in &file.bad {
            // The last line may have been cut off by a crash mid-write.
            if !bad.last {
                return Err(MemoryError::Corrupt {
                    path: path.to_path_buf(),
                    line: bad.line,
                    message: bad.error.to_string(),
                });
            }
            tracing::warn!(
                "memory {}: ignoring the unfinished last line ({})",
                path.display(),
                bad.error
            );
        }
        Ok(Self {
            path: path.to_path_buf(),
            file: Mutex::new(Kept {
                facts: file.records,
                cut: file.cut,
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many facts are remembered.
    pub fn len(&self) -> usize {
        self.file.lock().expect("memory lock").facts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Up to `n` remembered facts with a cosine similarity of at least `min_score` to
    /// `query`, best first; facts from chunks no longer in `index`, or embedded by another
    /// embedder, are passed over.
    pub fn recall(
        &self,
        query: &[f32],
        embedder: &str,
        index: &Index,
        n: usize,
        min_score: f32,
    ) -> Vec<Recalled> {
        let kept = self.file.lock().expect("memory lock");
        let mut found: Vec<Recalled> = kept
            .facts
            .iter()
            .filter(|f| f.embedder == embedder && index.row_of(f.chunk_id).is_some())
            .map(|f| Recalled {
                score: cosine(query, &f.vector),
                fact: f.clone(),
            })
            .filter(|r| r.score >= min_score)
            .collect();
        found.sort_by(|a, b| b.score.total_cmp(&a.score));
        found.truncate(n);
        found
    }

    /// Embeds and stores facts `(text, chunk)` found for `question`, skipping any already
    /// remembered for the same chunk; returns how many were stored.
    pub fn remember(
        &self,
        question: &str,
        facts: &[(&str, ChunkId)],
        embedder: &dyn Embedder,
    ) -> Result<usize, MemoryError> {
        let mut kept = self.file.lock().expect("memory lock");
        // Facts already remembered, and those taken from `facts` so far, by chunk and text.
        let mut seen: HashSet<(ChunkId, String)> = kept
            .facts
            .iter()
            .map(|f| (f.chunk_id, normalise(&f.fact)))
            .collect();
        let fresh: Vec<(&str, ChunkId)> = facts
            .iter()
            .copied()
            .filter(|&(text, chunk_id)| {
                let key = normalise(text);
                !key.is_empty() && seen.insert((chunk_id, key))
            })
            .collect();
        if fresh.is_empty() {
            return Ok(0);
        }
        let texts: Vec<&str> = fresh.iter().map(|&(t, _)| t).collect();
        let vectors = embedder.embed(&texts)?;
        let records: Vec<Remembered> = fresh
            .iter()
            .zip(vectors.rows())
            .map(|(&(text, chunk_id), vector)| Remembered {
                question: question.to_string(),
                fact: text.to_string(),
                chunk_id,
                embedder: embedder.id().to_string(),
                vector: vector.to_vec(),
            })
            .collect();
        let mut body = String::new();
        for record in &records {
            body.push_str(&serde_json::to_string(record).expect("a fact serialises"));
            body.push('\n');
        }
        jsonl_file::append(&self.path, &body, &mut kept.cut).map_err(|source| MemoryError::Io {
            path: self.path.clone(),
            source,
        })?;
        let stored = records.len();
        kept.facts.extend(records);
        Ok(stored)
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return f32::MIN;
    }
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let denom = norm(a) * norm(b);
    if denom == 0.0 {
        0.0
    } else {
        dot / denom
    }
}

fn normalise(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}
