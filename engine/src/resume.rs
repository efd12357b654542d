//! The vectors of a folder-index update that has not finished, kept beside the index in
//! `DIR/partial.vectors` so that a run that failed or was killed (a server that gave up, a
//! Ctrl-C hours into a large corpus) costs only the batch under way: the next run takes every
//! vector it already has from the file and embeds only what is missing. The live generation is
//! never touched; the file goes once a generation is written.
//!
//! Layout: a header line `walkrag-partial 1 DIM ID` (the embedder's dimension and id), then
//! records of a 32-byte SHA-256 of the embedded text and its DIM little-endian `f32`s. Records
//! are appended and synced after each batch; a record cut short by a crash is dropped on open.
//! A file of another embedder is started over.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use sha2::{Digest, Sha256};
use walkrag_core::{EmbedError, Embedder, Embeddings};

use crate::indexed::IndexError;

const FILE_NAME: &str = "partial.vectors";
const MAGIC: &str = "walkrag-partial 1";

/// An [`Embedder`] that answers from the partial file what an earlier run embedded, and adds
/// what it embeds now.
pub(crate) struct Resumable<'a> {
    inner: &'a dyn Embedder,
    path: PathBuf,
    file: Mutex<File>,
    known: HashMap<[u8; 32], Vec<f32>>,
    reused: AtomicUsize,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> IndexError + '_ {
    move |source| IndexError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn key(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

impl<'a> Resumable<'a> {
    /// Opens (or starts) the partial file of the index in `dir` for `inner`.
    pub(crate) fn open(dir: &Path, inner: &'a dyn Embedder) -> Result<Self, IndexError> {
        let path = dir.join(FILE_NAME);
        let dim = inner.dim();
        let header = format!("{MAGIC} {dim} {}\n", inner.id());
        let mut known = HashMap::new();
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io(&path))?;
        let mut reader = BufReader::new(&mut file);
        let mut first = String::new();
        let whole = if reader.read_line(&mut first).is_ok() && first == header {
            let record = 32 + 4 * dim;
            let mut buf = vec![0u8; record];
            let mut whole = header.len() as u64;
            while reader.read_exact(&mut buf).is_ok() {
                let mut k = [0u8; 32];
                k.copy_from_slice(&buf[..32]);
                let vector = buf[32..]
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                known.insert(k, vector);
                whole += record as u64;
            }
            Some(whole)
        } else {
            None
        };
        drop(reader);
        match whole {
            // Drop a record cut short by a crash, then append after the whole ones.
            Some(whole) => file.set_len(whole).map_err(io(&path))?,
            None => {
                file.set_len(0).map_err(io(&path))?;
                file.seek(SeekFrom::Start(0)).map_err(io(&path))?;
                file.write_all(header.as_bytes()).map_err(io(&path))?;
                file.sync_data().map_err(io(&path))?;
            }
        }
        file.seek(SeekFrom::End(0)).map_err(io(&path))?;
        if !known.is_empty() {
            tracing::info!(
                "{} vectors of an unfinished update are reused from {}",
                known.len(),
                path.display()
            );
        }
        Ok(Self {
            inner,
            path,
            file: Mutex::new(file),
            known,
            reused: AtomicUsize::new(0),
        })
    }

    /// How many vectors came from the file rather than the embedder.
    pub(crate) fn reused(&self) -> usize {
        self.reused.load(Ordering::Relaxed)
    }

    /// Removes the file: its vectors are in a written generation now (or were not needed).
    pub(crate) fn finish(self) {
        drop(self.file);
        if let Err(e) = fs::remove_file(&self.path) {
            tracing::warn!("cannot remove {}: {e}", self.path.display());
        }
    }

    fn append(&self, keys: &[[u8; 32]], vectors: &Embeddings) -> Result<(), EmbedError> {
        let mut bytes = Vec::with_capacity(keys.len() * (32 + 4 * vectors.dim()));
        for (k, row) in keys.iter().zip(vectors.rows()) {
            bytes.extend_from_slice(k);
            for x in row {
                bytes.extend_from_slice(&x.to_le_bytes());
            }
        }
        let mut file = self.file.lock().expect("partial file lock");
        file.write_all(&bytes)
            .and_then(|()| file.sync_data())
            .map_err(|e| EmbedError::Compute(format!("cannot write {}: {e}", self.path.display())))
    }
}

impl Embedder for Resumable<'_> {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn max_tokens(&self) -> usize {
        self.inner.max_tokens()
    }

    fn count_tokens(&self, text: &str) -> Result<usize, EmbedError> {
        self.inner.count_tokens(text)
    }

    fn token_spans(&self, text: &str) -> Result<Vec<Range<usize>>, EmbedError> {
        self.inner.token_spans(text)
    }

    fn embed(&self, texts: &[&str]) -> Result<Embeddings, EmbedError> {
        let dim = self.inner.dim();
        let keys: Vec<[u8; 32]> = texts.iter().map(|t| key(t)).collect();
        let mut out = Embeddings::zeros(texts.len(), dim);
        let mut missing = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            match self.known.get(k) {
                Some(vector) => out.row_mut(i).copy_from_slice(vector),
                None => missing.push(i),
            }
        }
        self.reused
            .fetch_add(texts.len() - missing.len(), Ordering::Relaxed);
        if missing.is_empty() {
            return Ok(out);
        }
        let fresh = self
            .inner
            .embed(&missing.iter().map(|&i| texts[i]).collect::<Vec<_>>())?;
        let fresh_keys: Vec<[u8; 32]> = missing.iter().map(|&i| keys[i]).collect();
        self.append(&fresh_keys, &fresh)?;
        // Not added to `known`: this run's own texts do not come back, and the vectors are
        // held by the update already.
        for (&i, row) in missing.iter().zip(fresh.rows()) {
            out.row_mut(i).copy_from_slice(row);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A test fake: vectors from text lengths, failing once it has embedded `fail_after`.
    struct CountingFake {
        id: String,
        embedded: AtomicUsize,
        fail_after: usize,
    }

    impl Embedder for CountingFake {
        fn id(&self) -> &str {
            &self.id
        }
        fn dim(&self) -> usize {
            2
        }
        fn max_tokens(&self) -> usize {
            256
        }
        fn count_tokens(&self, text: &str) -> Result<usize, EmbedError> {
            Ok(text.len())
        }
        fn token_spans(&self, _text: &str) -> Result<Vec<Range<usize>>, EmbedError> {
            Ok(Vec::new())
        }
        fn embed(&self, texts: &[&str]) -> Result<Embeddings, EmbedError> {
            let done = self.embedded.fetch_add(texts.len(), Ordering::SeqCst);
            if done + texts.len() > self.fail_after {
                return Err(EmbedError::Compute("the fake fails here".into()));
            }
            let data = texts.iter().flat_map(|t| [t.len() as f32, 1.0]).collect();
            Ok(Embeddings::new(2, data))
        }
    }

    fn fake(id: &str, fail_after: usize) -> CountingFake {
        CountingFake {
            id: id.into(),
            embedded: AtomicUsize::new(0),
            fail_after,
        }
    }

    #[test]
    fn a_rerun_embeds_only_what_the_failed_run_had_not() {
        let dir = tempfile::tempdir().unwrap();
        let failing = fake("m", 3);
        let first = Resumable::open(dir.path(), &failing).unwrap();
        first.embed(&["a", "bb", "ccc"]).unwrap();
        assert!(first.embed(&["dddd", "eeeee"]).is_err());
        drop(first);
        // A crash mid-record leaves a cut tail, dropped on open.
        let path = dir.path().join(FILE_NAME);
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(&[1, 2, 3]).unwrap();
        drop(file);

        let healthy = fake("m", usize::MAX);
        let second = Resumable::open(dir.path(), &healthy).unwrap();
        let out = second.embed(&["bb", "dddd", "a", "ccc", "eeeee"]).unwrap();
        assert_eq!(second.reused(), 3);
        assert_eq!(healthy.embedded.load(Ordering::SeqCst), 2);
        assert_eq!(out.row(0), [2.0, 1.0]);
        assert_eq!(out.row(1), [4.0, 1.0]);
        assert_eq!(out.row(4), [5.0, 1.0]);
        second.finish();
        assert!(!path.exists());
    }

    #[test]
    fn another_embedders_file_is_started_over() {
        let dir = tempfile::tempdir().unwrap();
        let one = fake("one", usize::MAX);
        Resumable::open(dir.path(), &one)
            .unwrap()
            .embed(&["a", "b"])
            .unwrap();
        let other = fake("other", usize::MAX);
        let again = Resumable::open(dir.path(), &other).unwrap();
        again.embed(&["a", "b"]).unwrap();
        assert_eq!(again.reused(), 0);
        assert_eq!(other.embedded.load(Ordering::SeqCst), 2);
    }
}
