//! The interface an index store implements: the folder index ([`FolderStore`], the default,
//! on disk) and PostgreSQL with pgvector (`walkrag-pgstore`). Both update through
//! [`crate::plan`], so they follow the same incremental rules and the same embedder check.
//!
//! Results are owned values: a database store has nothing to lend.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use walkrag_core::{EmbedError, Embedder};

use crate::ids::{ChunkId, DocId, SectionId};
use crate::index::{
    self, ChunkRef, EmbedderInfo, Index, IndexError, IndexedDoc, Item, Progress, SearchOptions,
    Summary, UpdateOptions,
};

/// Why a store could not be opened, searched or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The folder index's own errors.
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error("no index at {0}: build one with `walkrag index PATH --store {0}`")]
    NotFound(String),
    #[error("the index at {location} was built with embedder {built} but {given} was given; use --embedder {spec}, or rebuild the index with `walkrag index PATH --rebuild`")]
    EmbedderMismatch {
        location: String,
        built: String,
        spec: String,
        given: String,
    },
    #[error("the index at {location} has format version {found}, this walkrag reads version {expected}; rebuild it with `walkrag index PATH --rebuild`")]
    Version {
        location: String,
        found: u32,
        expected: u32,
    },
    #[error("the index at {location} is damaged ({detail}); rebuild it with `walkrag index PATH --rebuild`")]
    Corrupt { location: String, detail: String },
    #[error("cannot reach the database at {location}: {detail}; is the server running (scripts/postgres.sh start runs one)?")]
    Unreachable { location: String, detail: String },
    #[error("the database at {location} cannot load the {extension} extension ({detail}); install it on the server (pgvector: https://github.com/pgvector/pgvector), or have a superuser run `CREATE EXTENSION {extension}`")]
    MissingExtension {
        location: String,
        extension: String,
        detail: String,
    },
    #[error("the database at {location} failed: {detail}")]
    Database { location: String, detail: String },
}

/// A search result with everything needed to show and cite it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Passage {
    /// Cosine similarity to the query.
    pub score: f32,
    pub chunk_id: ChunkId,
    pub doc_id: DocId,
    pub title: String,
    pub section_path: Vec<String>,
    /// Byte range of the chunk in its document's text.
    pub range: Range<usize>,
    pub page: Option<u32>,
    pub text: String,
}

impl Passage {
    /// The passage of a chunk of the folder index.
    pub fn of(c: ChunkRef<'_>, score: f32) -> Self {
        Self {
            score,
            chunk_id: c.id(),
            doc_id: c.doc.id.clone(),
            title: c.doc.title.clone(),
            section_path: c.section().path.clone(),
            range: c.chunk.range.clone(),
            page: c.chunk.page,
            text: c.text().to_string(),
        }
    }

    pub fn section_id(&self) -> SectionId {
        self.chunk_id.section
    }
}

/// What an id names, with its whole document.
#[derive(Debug, Clone)]
pub enum Resolved {
    Document(IndexedDoc),
    /// `section` indexes `doc.doc.sections`.
    Section {
        doc: IndexedDoc,
        section: usize,
    },
    /// `chunk` indexes `doc.chunks`.
    Chunk {
        doc: IndexedDoc,
        chunk: usize,
    },
}

/// Knobs of one search that every store honours.
#[derive(Debug, Clone, Copy, Default)]
pub struct StoreSearch {
    /// The HNSW candidate list length [default: the index's].
    pub ef_search: Option<usize>,
    /// Compare with every vector instead of walking the HNSW graph.
    pub exact: bool,
}

/// An index of documents, sections, chunks and vectors that can be updated and searched.
pub trait Store: Send + Sync {
    /// Where the index lives, fit to print (a database URL without its password).
    fn location(&self) -> String;

    /// The embedder the index was built with; `None` while there is no index.
    fn embedder(&self) -> Result<Option<EmbedderInfo>, StoreError>;

    /// The error for reading a store that holds no index yet, with the command that builds one.
    fn not_found(&self) -> StoreError {
        StoreError::NotFound(self.location())
    }

    /// Refuses an embedder other than the one that built the index.
    fn check_embedder(&self, embedder: &dyn Embedder) -> Result<(), StoreError> {
        match self.embedder()? {
            None => Err(self.not_found()),
            Some(built) if built.id != embedder.id() => Err(StoreError::EmbedderMismatch {
                location: self.location(),
                built: built.id,
                spec: built.spec,
                given: embedder.id().to_string(),
            }),
            Some(_) => Ok(()),
        }
    }

    /// Brings the index up to date with `paths` (see [`crate::index::update`]: new and
    /// changed documents are embedded, unchanged ones keep their vectors, those whose files are
    /// gone are dropped, those indexed from other paths stay).
    fn update(
        &self,
        paths: &[PathBuf],
        embedder: &dyn Embedder,
        embedder_spec: &str,
        options: &UpdateOptions,
        progress: &dyn Progress,
    ) -> Result<Summary, StoreError>;

    /// The `k` chunks nearest to `query` (a vector from the index's embedder), best first.
    fn search(
        &self,
        query: &[f32],
        k: usize,
        options: &StoreSearch,
    ) -> Result<Vec<Passage>, StoreError>;

    /// A document id, a section id (`1a2b3c4d`) or a chunk id (`1a2b3c4d.2`).
    fn resolve(&self, id: &str) -> Result<Option<Resolved>, StoreError>;

    /// Every document with its chunks, in the index's order.
    fn documents(&self) -> Result<Vec<IndexedDoc>, StoreError>;

    /// The index the strategies read: every document, chunk and vector in memory, as they
    /// were at one moment, searched by the store's own ANN index where it has one.
    fn load(self: Arc<Self>) -> Result<Index, StoreError>;

    /// A name for the index's current version that changes whenever an update completes, cheap
    /// to read, so a long-running reader (`walkrag serve`) sees when to [`Store::load`] again;
    /// `None` while there is no index. Read it before loading: a later update then changes it.
    fn generation(&self) -> Result<Option<String>, StoreError>;
}

/// Every store answers an index's searches by its own ANN search.
impl<S: Store> crate::indexed::Nearest for S {
    fn location(&self) -> String {
        Store::location(self)
    }

    fn nearest(
        &self,
        query: &[f32],
        k: usize,
        ef_search: usize,
    ) -> Result<Vec<(ChunkId, f32)>, Box<dyn std::error::Error + Send + Sync>> {
        let options = StoreSearch {
            ef_search: Some(ef_search),
            exact: false,
        };
        let passages = self.search(query, k, &options)?;
        Ok(passages
            .into_iter()
            .map(|p| (p.chunk_id, p.score))
            .collect())
    }
}

/// The folder index as a [`Store`]: [`index::update`] to write, an [`Index`] opened on first
/// read (and again after an update) to read.
pub struct FolderStore {
    dir: PathBuf,
    opened: Mutex<Option<Arc<Index>>>,
}

impl FolderStore {
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            opened: Mutex::new(None),
        }
    }

    /// The opened index, shared by later reads.
    pub fn index(&self) -> Result<Arc<Index>, IndexError> {
        let mut opened = self.opened.lock().expect("folder store lock");
        if let Some(index) = opened.as_ref() {
            return Ok(index.clone());
        }
        let index = Arc::new(Index::open(&self.dir)?);
        *opened = Some(index.clone());
        Ok(index)
    }
}

impl Store for FolderStore {
    fn location(&self) -> String {
        self.dir.display().to_string()
    }

    fn not_found(&self) -> StoreError {
        IndexError::NotFound(self.dir.clone()).into()
    }

    fn embedder(&self) -> Result<Option<EmbedderInfo>, StoreError> {
        match index::read_manifest(&self.dir) {
            Ok((_, manifest)) => Ok(Some(manifest.embedder)),
            Err(IndexError::NotFound(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn check_embedder(&self, embedder: &dyn Embedder) -> Result<(), StoreError> {
        Ok(self.index()?.check_embedder(embedder)?)
    }

    fn update(
        &self,
        paths: &[PathBuf],
        embedder: &dyn Embedder,
        embedder_spec: &str,
        options: &UpdateOptions,
        progress: &dyn Progress,
    ) -> Result<Summary, StoreError> {
        let summary = index::update(&self.dir, paths, embedder, embedder_spec, options, progress);
        *self.opened.lock().expect("folder store lock") = None;
        Ok(summary?)
    }

    fn search(
        &self,
        query: &[f32],
        k: usize,
        options: &StoreSearch,
    ) -> Result<Vec<Passage>, StoreError> {
        let index = self.index()?;
        let options = SearchOptions {
            ef_search: options.ef_search,
            exact: options.exact,
            keep: None,
        };
        Ok(index
            .search_with(query, k, &options)
            .into_iter()
            .map(|hit| Passage::of(index.chunk(hit.row), hit.score))
            .collect())
    }

    fn resolve(&self, id: &str) -> Result<Option<Resolved>, StoreError> {
        let index = self.index()?;
        Ok(index.resolve(id).map(|item| match item {
            Item::Document(doc) => Resolved::Document(doc.clone()),
            Item::Section { doc, section } => Resolved::Section {
                doc: doc.clone(),
                section,
            },
            Item::Chunk(c) => {
                let doc = index
                    .document(&c.doc.id)
                    .expect("a chunk's document")
                    .clone();
                let chunk = doc
                    .chunks
                    .iter()
                    .position(|other| other.id(&doc.doc) == c.id())
                    .expect("a chunk of its document");
                Resolved::Chunk { doc, chunk }
            }
        }))
    }

    fn documents(&self) -> Result<Vec<IndexedDoc>, StoreError> {
        Ok(self.index()?.documents().to_vec())
    }

    /// The folder index itself, searched through its own HNSW graph.
    fn load(self: Arc<Self>) -> Result<Index, StoreError> {
        Ok(Index::open(&self.dir)?)
    }

    /// The live generation's name (`CURRENT`): each update that writes makes a new one.
    fn generation(&self) -> Result<Option<String>, StoreError> {
        match index::read_manifest(&self.dir) {
            Ok((generation, _)) => Ok(Some(generation.display().to_string())),
            Err(IndexError::NotFound(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}
