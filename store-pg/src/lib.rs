//! walkrag's index in PostgreSQL with pgvector: a [`Store`] many processes share.
//!
//! Tables (in the connection's schema, `search_path`; give each index its own schema):
//!
//! ```text
//! walkrag_manifest   one row: format, version, embedder, chunking, HNSW parameters
//! walkrag_documents  id, position, source, hash, title, format, metadata, the document (JSON)
//! walkrag_sections   id, document, position in it, heading path
//! walkrag_chunks     id, document, position, section, byte range, page, text, vector(DIM)
//!                    with an HNSW index (vector_cosine_ops)
//! ```
//!
//! Updates plan and embed through `walkrag_engine::plan`, like the folder index. Writers hold
//! a session advisory lock (a second writer waits; a killed one's lock goes with its
//! connection) and replace each document's rows in one transaction, so readers, never
//! blocked, see every document at its old or its new version. The store runs its own small
//! async runtime and blocks on it: call it from plain threads (or `spawn_blocking`), not
//! from inside an async task.

pub mod bench;
mod tls;
mod url;

use std::collections::HashSet;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pgvector::Vector;
use serde::{Deserialize, Serialize};
use tokio::runtime::Runtime;
use tokio::sync::{Mutex, OwnedMutexGuard};
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::{Client, NoTls, Socket};
use walkrag_core::Embedder;
use walkrag_engine::plan::{self, Known, Plan, Reuse};
use walkrag_engine::{
    AnnParams, Chunk, ChunkId, ChunkSpec, Document, EmbedderInfo, Index, IndexedDoc, Passage,
    Progress, Resolved, SectionId, Store, StoreError, StoreSearch, Summary, UpdateOptions,
};

pub use url::redact;

/// The version of the tables above; an index of another version is refused with advice.
pub const FORMAT_VERSION: u32 = 1;
const FORMAT_NAME: &str = "walkrag-pgstore";
/// The advisory lock writers hold ("walkrag!" in ASCII).
const WRITER_LOCK: i64 = 0x7761_6c6b_7261_6721;
/// How long connecting may take unless the URL says (`connect_timeout`): long enough for a
/// server across a network, short enough that a wrong host fails while the user waits.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// pgvector's largest `hnsw.ef_search`.
const MAX_EF_SEARCH: usize = 1000;

/// Whether `spec` names a PostgreSQL database rather than an index folder.
pub fn is_postgres_url(spec: &str) -> bool {
    spec.starts_with("postgres://") || spec.starts_with("postgresql://")
}

/// `walkrag_manifest`'s row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Manifest {
    format: String,
    version: u32,
    embedder: EmbedderInfo,
    chunking: ChunkSpec,
    ann: AnnParams,
}

/// An index in a PostgreSQL database with the pgvector extension.
pub struct PgStore {
    location: String,
    password: Option<String>,
    config: tokio_postgres::Config,
    /// TLS as the URL's `sslmode` asks; `None`: plain TCP.
    tls: Option<tls::Tls>,
    runtime: Runtime,
    /// Open connections, one at first, more as callers overlap (up to [`MAX_CONNECTIONS`]);
    /// a caller holds one for a statement or a whole transaction.
    pool: std::sync::Mutex<Pool>,
}

/// The connections of a [`PgStore`].
#[derive(Default)]
struct Pool {
    open: Vec<Arc<Mutex<Client>>>,
    /// Connections being opened (counted against [`MAX_CONNECTIONS`]).
    opening: usize,
    /// Waits for a busy connection so far, to spread them over the connections.
    waits: usize,
}

/// The most connections one store opens (a server, its searches from several requests).
const MAX_CONNECTIONS: usize = 4;

impl PgStore {
    /// Connects to the database at `url` (a `postgres://` URL or `key=value` pairs, with
    /// `sslmode` and `sslrootcert` for TLS as libpq reads them); nothing is created until the
    /// first update.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let location = redact(url);
        let bad = |detail: String| StoreError::Database {
            location: location.clone(),
            detail: redact(&detail),
        };
        let (url, tls_settings) = tls::split(url).map_err(&bad)?;
        let mut config = tokio_postgres::Config::from_str(&url)
            .map_err(|e| bad(format!("not a PostgreSQL connection string: {e}")))?;
        config.ssl_mode(tls_settings.ssl_mode());
        let tls = tls_settings.connector().map_err(&bad)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let password = config
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .filter(|p| !p.is_empty());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("walkrag-pgstore")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Database {
                location: location.clone(),
                detail: format!("cannot start the client's runtime: {e}"),
            })?;
        let store = Self {
            location,
            password,
            config,
            tls,
            runtime,
            pool: std::sync::Mutex::new(Pool::default()),
        };
        // The first connection now: a wrong address or password fails here, not later.
        drop(store.block(store.client())?);
        Ok(store)
    }

    /// A connection of the pool to use alone: a free open one, else a new one while there
    /// are fewer than [`MAX_CONNECTIONS`], else the next to come free. Connections the server
    /// closed leave the pool, so a restarted server is reconnected to.
    async fn client(&self) -> Result<OwnedMutexGuard<Client>, StoreError> {
        loop {
            let busy = {
                let mut pool = self.pool.lock().expect("pool lock");
                pool.open
                    .retain(|c| c.try_lock().map_or(true, |c| !c.is_closed()));
                if let Some(free) = pool
                    .open
                    .iter()
                    .find_map(|c| c.clone().try_lock_owned().ok())
                {
                    return Ok(free);
                }
                if pool.open.len() + pool.opening < MAX_CONNECTIONS {
                    pool.opening += 1;
                    None
                } else {
                    pool.waits += 1;
                    let at = pool.waits % pool.open.len().max(1);
                    Some(pool.open.get(at).cloned())
                }
            };
            match busy {
                Some(Some(busy)) => return Ok(busy.lock_owned().await),
                // Every connection is still being opened.
                Some(None) => tokio::time::sleep(Duration::from_millis(5)).await,
                None => break,
            }
        }
        let opened = self.open().await;
        let mut pool = self.pool.lock().expect("pool lock");
        pool.opening -= 1;
        let client = Arc::new(Mutex::new(opened?));
        pool.open.push(client.clone());
        Ok(client.try_lock_owned().expect("a new connection is free"))
    }

    /// A new connection, served by this store's runtime.
    async fn open(&self) -> Result<Client, StoreError> {
        let client = match &self.tls {
            Some(tls) => self.open_with(tls.clone()).await?,
            None => self.open_with(NoTls).await?,
        };
        tracing::debug!("connected to {}", self.location);
        Ok(client)
    }

    /// A new connection over `tls`, its messages served by a task of this store's runtime.
    async fn open_with<T>(&self, tls: T) -> Result<Client, StoreError>
    where
        T: MakeTlsConnect<Socket>,
        T::Stream: Send + 'static,
        T::TlsConnect: Send,
        <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
    {
        let (client, connection) = self.config.connect(tls).await.map_err(|e| {
            let detail = scrub(&e, self.password.as_deref());
            let location = self.location.clone();
            match e.as_db_error() {
                Some(_) => StoreError::Database { location, detail },
                None => StoreError::Unreachable { location, detail },
            }
        })?;
        let logged = self.location.clone();
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!("connection to {logged} ended: {e}");
            }
        });
        Ok(client)
    }

    /// Runs one step against the database. Inside another async runtime (a strategy's
    /// search), where blocking on this one would panic, it waits for a thread that does.
    fn block<F>(&self, step: F) -> F::Output
    where
        F: std::future::Future + Send,
        F::Output: Send,
    {
        if tokio::runtime::Handle::try_current().is_err() {
            return self.runtime.block_on(step);
        }
        std::thread::scope(|scope| {
            scope
                .spawn(|| self.runtime.block_on(step))
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// A database error as a [`StoreError`], without the password.
    fn fail(&self, e: tokio_postgres::Error) -> StoreError {
        let detail = scrub(&e, self.password.as_deref());
        if e.is_closed() {
            StoreError::Unreachable {
                location: self.location.clone(),
                detail,
            }
        } else {
            StoreError::Database {
                location: self.location.clone(),
                detail,
            }
        }
    }

    fn corrupt(&self, detail: String) -> StoreError {
        StoreError::Corrupt {
            location: self.location.clone(),
            detail,
        }
    }

    /// Whether the current schema holds the manifest table: only the current schema's counts,
    /// as a table of the same name further along the search_path (`public`) belongs to
    /// another index.
    async fn has_manifest(&self) -> Result<bool, StoreError> {
        Ok(self
            .client()
            .await?
            .query_one(
                "SELECT current_schema() IS NOT NULL
                     AND to_regclass(format('%I.walkrag_manifest', current_schema())) IS NOT NULL",
                &[],
            )
            .await
            .map_err(|e| self.fail(e))?
            .get(0))
    }

    /// The manifest row; `None` when the tables do not exist yet.
    async fn manifest(&self) -> Result<Option<Manifest>, StoreError> {
        if !self.has_manifest().await? {
            return Ok(None);
        }
        let row = self
            .client()
            .await?
            .query_opt("SELECT manifest::text FROM walkrag_manifest", &[])
            .await
            .map_err(|e| self.fail(e))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let text: String = row.get(0);
        let manifest: Manifest = serde_json::from_str(&text)
            .map_err(|e| self.corrupt(format!("walkrag_manifest: {e}")))?;
        if manifest.format != FORMAT_NAME {
            return Err(self.corrupt(format!("walkrag_manifest is not a {FORMAT_NAME} manifest")));
        }
        if manifest.version != FORMAT_VERSION {
            return Err(StoreError::Version {
                location: self.location.clone(),
                found: manifest.version,
                expected: FORMAT_VERSION,
            });
        }
        Ok(Some(manifest))
    }

    async fn ensure_extension(&self) -> Result<(), StoreError> {
        let installed: bool = self
            .client()
            .await?
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')",
                &[],
            )
            .await
            .map_err(|e| self.fail(e))?
            .get(0);
        if installed {
            return Ok(());
        }
        self.client()
            .await?
            .batch_execute("CREATE EXTENSION IF NOT EXISTS vector")
            .await
            .map_err(|e| StoreError::MissingExtension {
                location: self.location.clone(),
                extension: "vector".into(),
                detail: scrub(&e, self.password.as_deref()),
            })
    }

    /// Drops the tables and creates them for `manifest`'s embedder.
    async fn create_tables(&self, manifest: &Manifest) -> Result<(), StoreError> {
        let schema: Option<String> = self
            .client()
            .await?
            .query_one("SELECT quote_ident(current_schema())", &[])
            .await
            .map_err(|e| self.fail(e))?
            .get(0);
        let Some(schema) = schema else {
            return Err(StoreError::Database {
                location: self.location.clone(),
                detail: "no schema to create the tables in: the search_path names none that exists"
                    .into(),
            });
        };
        let dim = manifest.embedder.dim;
        let m = manifest.ann.m.clamp(2, 100);
        let ef_construction = manifest.ann.ef_construction.clamp(4, 1000).max(2 * m);
        let sql = format!(
            "DROP TABLE IF EXISTS {schema}.walkrag_chunks, {schema}.walkrag_sections,
                 {schema}.walkrag_documents, {schema}.walkrag_manifest;
             DROP SEQUENCE IF EXISTS {schema}.walkrag_document_position;
             CREATE TABLE walkrag_manifest (
                 one boolean PRIMARY KEY DEFAULT true CHECK (one),
                 manifest json NOT NULL,
                 updated timestamptz NOT NULL DEFAULT now(),
                 generation bigint NOT NULL DEFAULT 0);
             CREATE SEQUENCE walkrag_document_position;
             CREATE TABLE walkrag_documents (
                 id text PRIMARY KEY,
                 position bigint NOT NULL DEFAULT nextval('walkrag_document_position'),
                 source text NOT NULL,
                 hash text NOT NULL,
                 title text NOT NULL,
                 format text NOT NULL,
                 metadata jsonb NOT NULL,
                 document json NOT NULL);
             CREATE INDEX walkrag_documents_position ON walkrag_documents (position);
             CREATE TABLE walkrag_sections (
                 id text PRIMARY KEY,
                 doc_id text NOT NULL REFERENCES walkrag_documents (id) ON DELETE CASCADE,
                 ordinal integer NOT NULL,
                 path text[] NOT NULL);
             CREATE INDEX walkrag_sections_doc ON walkrag_sections (doc_id);
             CREATE TABLE walkrag_chunks (
                 id text PRIMARY KEY,
                 doc_id text NOT NULL REFERENCES walkrag_documents (id) ON DELETE CASCADE,
                 ordinal integer NOT NULL,
                 section_id text NOT NULL,
                 section_ordinal integer NOT NULL,
                 chunk_index integer NOT NULL,
                 start_byte bigint NOT NULL,
                 end_byte bigint NOT NULL,
                 page integer,
                 text text NOT NULL,
                 embedding vector({dim}) NOT NULL);
             CREATE INDEX walkrag_chunks_doc ON walkrag_chunks (doc_id);
             CREATE INDEX walkrag_chunks_embedding ON walkrag_chunks
                 USING hnsw (embedding vector_cosine_ops)
                 WITH (m = {m}, ef_construction = {ef_construction});"
        );
        self.client()
            .await?
            .batch_execute(&sql)
            .await
            .map_err(|e| self.fail(e))?;
        self.write_manifest(manifest).await
    }

    /// Writes the manifest at the end of an update, moving the generation counter readers
    /// watch (tables made before the counter get it here).
    async fn write_manifest(&self, manifest: &Manifest) -> Result<(), StoreError> {
        let text = serde_json::to_string(manifest).expect("a manifest serialises");
        self.batch(
            "ALTER TABLE walkrag_manifest ADD COLUMN IF NOT EXISTS generation bigint NOT NULL DEFAULT 0",
        )
        .await?;
        self.exec(
            "INSERT INTO walkrag_manifest (one, manifest) VALUES (true, $1::text::json)
             ON CONFLICT (one) DO UPDATE SET manifest = EXCLUDED.manifest, updated = now(),
                 generation = walkrag_manifest.generation + 1",
            &[&text],
        )
        .await?;
        Ok(())
    }

    /// The generation counter and the time of the last update; `None` without an index.
    async fn generation_async(&self) -> Result<Option<String>, StoreError> {
        if !self.has_manifest().await? {
            return Ok(None);
        }
        // Through jsonb: a table made before the counter has no such column yet.
        let row = self
            .client()
            .await?
            .query_opt(
                "SELECT coalesce(to_jsonb(m)->>'generation', '0') || ' ' || m.updated::text
                 FROM walkrag_manifest m",
                &[],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok(row.map(|r| r.get(0)))
    }

    async fn counts(&self) -> Result<(usize, usize), StoreError> {
        let row = self.client().await?
            .query_one(
                "SELECT (SELECT count(*) FROM walkrag_documents), (SELECT count(*) FROM walkrag_chunks)",
                &[],
            )
            .await
            .map_err(|e| self.fail(e))?;
        Ok((row.get::<_, i64>(0) as usize, row.get::<_, i64>(1) as usize))
    }

    /// Replaces `indexed` (if there) with its new version and vectors, in one transaction.
    async fn write_document(
        &self,
        indexed: &IndexedDoc,
        vectors: &[f32],
    ) -> Result<(), StoreError> {
        let doc = &indexed.doc;
        let dim = vectors.len() / indexed.chunks.len().max(1);
        let document = serde_json::to_string(doc).expect("a document serialises");
        let metadata = serde_json::to_string(&doc.metadata).expect("metadata serialises");
        let section_ids: Vec<String> = doc.sections.iter().map(|s| s.id.to_string()).collect();
        let section_ordinals: Vec<i32> = (0..doc.sections.len() as i32).collect();
        // Postgres has no arrays of arrays of differing lengths: paths go as JSON text.
        let section_paths: Vec<String> = doc
            .sections
            .iter()
            .map(|s| serde_json::to_string(&s.path).expect("a path serialises"))
            .collect();
        let chunks = &indexed.chunks;
        let chunk_ids: Vec<String> = chunks.iter().map(|c| c.id(doc).to_string()).collect();
        let ordinals: Vec<i32> = (0..chunks.len() as i32).collect();
        let chunk_sections: Vec<String> = chunks
            .iter()
            .map(|c| doc.sections[c.section as usize].id.to_string())
            .collect();
        let section_of: Vec<i32> = chunks.iter().map(|c| c.section as i32).collect();
        let index_of: Vec<i32> = chunks.iter().map(|c| c.index as i32).collect();
        let starts: Vec<i64> = chunks.iter().map(|c| c.range.start as i64).collect();
        let ends: Vec<i64> = chunks.iter().map(|c| c.range.end as i64).collect();
        let pages: Vec<Option<i32>> = chunks.iter().map(|c| c.page.map(|p| p as i32)).collect();
        let texts: Vec<&str> = chunks.iter().map(|c| &doc.text[c.range.clone()]).collect();
        let embeddings: Vec<Vector> = vectors
            .chunks_exact(dim.max(1))
            .map(|v| Vector::from(v.to_vec()))
            .collect();

        let fail = |e: tokio_postgres::Error| self.fail(e);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&fail)?;
        tx.execute("DELETE FROM walkrag_documents WHERE id = $1", &[&doc.id.0])
            .await
            .map_err(&fail)?;
        tx.execute(
            "INSERT INTO walkrag_documents (id, source, hash, title, format, metadata, document)
             VALUES ($1, $2, $3, $4, $5, $6::text::jsonb, $7::text::json)",
            &[
                &doc.id.0,
                &doc.source,
                &doc.hash,
                &doc.title,
                &doc.format.name(),
                &metadata,
                &document,
            ],
        )
        .await
        .map_err(&fail)?;
        tx.execute(
            "INSERT INTO walkrag_sections (id, doc_id, ordinal, path)
             SELECT s.id, $1, s.ordinal, ARRAY(SELECT json_array_elements_text(s.path::json))
             FROM unnest($2::text[], $3::int[], $4::text[]) AS s (id, ordinal, path)",
            &[&doc.id.0, &section_ids, &section_ordinals, &section_paths],
        )
        .await
        .map_err(&fail)?;
        tx.execute(
            "INSERT INTO walkrag_chunks (id, doc_id, ordinal, section_id, section_ordinal,
                 chunk_index, start_byte, end_byte, page, text, embedding)
             SELECT c.id, $1, c.ordinal, c.section_id, c.section_ordinal, c.chunk_index,
                 c.start_byte, c.end_byte, c.page, c.text, c.embedding
             FROM unnest($2::text[], $3::int[], $4::text[], $5::int[], $6::int[], $7::bigint[],
                 $8::bigint[], $9::int[], $10::text[], $11::vector[])
                 AS c (id, ordinal, section_id, section_ordinal, chunk_index, start_byte,
                     end_byte, page, text, embedding)",
            &[
                &doc.id.0,
                &chunk_ids,
                &ordinals,
                &chunk_sections,
                &section_of,
                &index_of,
                &starts,
                &ends,
                &pages,
                &texts,
                &embeddings,
            ],
        )
        .await
        .map_err(&fail)?;
        tx.commit().await.map_err(&fail)
    }

    /// Documents with their chunks: all of them (`None`) or those with the given ids, read in
    /// one snapshot (a writer's commit between two reads cannot mix versions).
    async fn load_documents(&self, ids: Option<&[String]>) -> Result<Vec<IndexedDoc>, StoreError> {
        Ok(self.read_documents(ids, false).await?.0)
    }

    /// [`PgStore::load_documents`], and with `vectors` every chunk's vector too, row after
    /// row in the documents' order.
    async fn read_documents(
        &self,
        ids: Option<&[String]>,
        vectors: bool,
    ) -> Result<(Vec<IndexedDoc>, Vec<f32>), StoreError> {
        if self.manifest().await?.is_none() {
            return Err(StoreError::NotFound(self.location.clone()));
        }
        let all = ids.is_none();
        let ids: Vec<String> = ids.map(<[String]>::to_vec).unwrap_or_default();
        let mut client = self.client().await?;
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(|e| self.fail(e))?;
        let rows = tx
            .query(
                "SELECT id, source, document::text FROM walkrag_documents
                 WHERE $1 OR id = ANY($2) ORDER BY position",
                &[&all, &ids],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let mut docs = Vec::with_capacity(rows.len());
        let mut at = std::collections::HashMap::new();
        for row in rows {
            let id: String = row.get(0);
            let mut doc: Document = serde_json::from_str(row.get(2))
                .map_err(|e| self.corrupt(format!("document {id}: {e}")))?;
            doc.source = row.get(1);
            at.insert(id, docs.len());
            docs.push(IndexedDoc {
                doc,
                chunks: Vec::new(),
            });
        }
        let rows = tx
            .query(
                "SELECT doc_id, section_ordinal, chunk_index, start_byte, end_byte, page,
                     CASE WHEN $3 THEN embedding END
                 FROM walkrag_chunks WHERE $1 OR doc_id = ANY($2) ORDER BY doc_id, ordinal",
                &[&all, &ids, &vectors],
            )
            .await
            .map_err(|e| self.fail(e))?;
        tx.commit().await.map_err(|e| self.fail(e))?;
        drop(client);
        let mut by_doc: Vec<Vec<f32>> = vec![Vec::new(); docs.len()];
        for row in rows {
            let doc_id: String = row.get(0);
            let Some(&d) = at.get(&doc_id) else {
                return Err(self.corrupt(format!("chunks of {doc_id}, a document not there")));
            };
            let start: i64 = row.get(3);
            let end: i64 = row.get(4);
            let chunk = Chunk {
                section: row.get::<_, i32>(1) as u32,
                index: row.get::<_, i32>(2) as u32,
                range: start as usize..end as usize,
                page: row.get::<_, Option<i32>>(5).map(|p| p as u32),
            };
            let doc = &docs[d].doc;
            if chunk.section as usize >= doc.sections.len() || chunk.range.end > doc.text.len() {
                return Err(self.corrupt(format!("a chunk of {doc_id} lies outside it")));
            }
            docs[d].chunks.push(chunk);
            if let Some(vector) = row.get::<_, Option<Vector>>(6) {
                by_doc[d].extend_from_slice(vector.as_slice());
            }
        }
        Ok((docs, by_doc.concat()))
    }

    async fn one_document(&self, id: &str) -> Result<Option<IndexedDoc>, StoreError> {
        Ok(self.load_documents(Some(&[id.to_string()])).await?.pop())
    }

    /// A query's rows, or the store's error.
    async fn rows(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        self.client()
            .await?
            .query(sql, params)
            .await
            .map_err(|e| self.fail(e))
    }

    /// Statements separated by semicolons, or the store's error.
    async fn batch(&self, sql: &str) -> Result<(), StoreError> {
        self.client()
            .await?
            .batch_execute(sql)
            .await
            .map_err(|e| self.fail(e))
    }

    /// A statement's count of rows, or the store's error.
    async fn exec(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<u64, StoreError> {
        self.client()
            .await?
            .execute(sql, params)
            .await
            .map_err(|e| self.fail(e))
    }

    /// The update under the writer lock: plan against the stored documents, drop the gone
    /// ones, then embed and write the new and changed ones document by document.
    fn update_locked(
        &self,
        paths: &[PathBuf],
        embedder: &dyn Embedder,
        embedder_spec: &str,
        options: &UpdateOptions,
        progress: &dyn Progress,
    ) -> Result<Summary, StoreError> {
        let chunking = options
            .chunking
            .unwrap_or_else(|| ChunkSpec::for_embedder(embedder));
        let mut manifest = Manifest {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            embedder: EmbedderInfo {
                spec: embedder_spec.into(),
                id: embedder.id().into(),
                dim: embedder.dim(),
                max_tokens: embedder.max_tokens(),
            },
            chunking,
            ann: options.ann,
        };
        let old = match self.block(self.manifest()) {
            Ok(old) if options.rebuild => {
                if old.is_some() {
                    tracing::info!("rebuilding the index at {}", self.location);
                }
                None
            }
            Ok(old) => old,
            Err(e) if options.rebuild => {
                tracing::warn!("replacing the unreadable index: {e}");
                None
            }
            Err(e) => return Err(e),
        };
        let same_chunking = match &old {
            Some(old) => {
                if old.embedder.id != manifest.embedder.id {
                    return Err(StoreError::EmbedderMismatch {
                        location: self.location.clone(),
                        built: old.embedder.id.clone(),
                        spec: old.embedder.spec.clone(),
                        given: manifest.embedder.id.clone(),
                    });
                }
                // HNSW parameters are fixed when the tables are made.
                manifest.ann = old.ann;
                old.chunking == chunking
            }
            None => {
                self.block(self.create_tables(&manifest))?;
                false
            }
        };

        let stored: Vec<(String, String, String)> = self
            .block(self.rows(
                "SELECT id, source, hash FROM walkrag_documents ORDER BY position",
                &[],
            ))?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        let known: Vec<Known<'_>> = stored
            .iter()
            .map(|(id, source, hash)| Known { id, source, hash })
            .collect();
        let plan = plan::plan(paths, &known, same_chunking, progress);
        drop(known);
        let changes_nothing = plan.changes_nothing();
        let Plan {
            mut summary,
            reuse,
            removed,
            replaced,
            mut to_embed,
        } = plan;
        summary.search = "pgvector hnsw".into();
        if !changes_nothing || old.is_none() {
            progress.phase("writing");
            let gone: Vec<String> = removed.iter().map(|&k| stored[k].0.clone()).collect();
            if !gone.is_empty() {
                self.block(
                    self.exec("DELETE FROM walkrag_documents WHERE id = ANY($1)", &[&gone]),
                )?;
            }
            for r in &reuse {
                if let Reuse::Unchanged { known, source } = r {
                    if *source != stored[*known].1 {
                        self.block(self.exec(
                            "UPDATE walkrag_documents SET source = $2 WHERE id = $1",
                            &[&stored[*known].0, source],
                        ))?;
                    }
                }
            }

            // Section ids must be unique in the whole index: a colliding new section is salted.
            let replaced: Vec<String> = replaced.iter().map(|&k| stored[k].0.clone()).collect();
            let used: HashSet<SectionId> = self
                .block(self.rows(
                    "SELECT id FROM walkrag_sections WHERE doc_id <> ALL($1)",
                    &[&replaced],
                ))?
                .iter()
                .filter_map(|r| SectionId::parse(r.get(0)))
                .collect();
            plan::salt_section_ids(&mut to_embed, used);

            // Each document is written, in its own transaction, once its chunks are embedded.
            let (embed_seconds, embedded) =
                plan::embed_documents(to_embed, embedder, &chunking, progress, |ready| {
                    for (indexed, vectors) in &ready {
                        self.block(self.write_document(indexed, vectors))?;
                    }
                    Ok::<(), StoreError>(())
                })?;
            self.block(self.write_manifest(&manifest))?;
            summary.embedded = embedded;
            summary.embed_seconds = embed_seconds;
            summary.written = true;
        }
        let (documents, chunks) = self.block(self.counts())?;
        summary.documents = documents;
        summary.chunks = chunks;
        Ok(summary)
    }

    async fn search_async(
        &self,
        query: &[f32],
        k: usize,
        options: &StoreSearch,
    ) -> Result<Vec<Passage>, StoreError> {
        let Some(manifest) = self.manifest().await? else {
            return Err(StoreError::NotFound(self.location.clone()));
        };
        assert_eq!(
            query.len(),
            manifest.embedder.dim,
            "query vector of the wrong dimension"
        );
        if k == 0 {
            return Ok(Vec::new());
        }
        let ef = options
            .ef_search
            .unwrap_or(manifest.ann.ef_search)
            .max(k)
            .min(MAX_EF_SEARCH);
        let fail = |e: tokio_postgres::Error| self.fail(e);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&fail)?;
        let mut settings = format!("SET LOCAL hnsw.ef_search = {ef};");
        if options.exact {
            // Without index scans the planner sorts every distance: an exact search.
            settings.push_str("SET LOCAL enable_indexscan = off;");
        }
        tx.batch_execute(&settings).await.map_err(&fail)?;
        let rows = tx
            .query(
                "SELECT c.id, c.doc_id, d.title, s.path, c.start_byte, c.end_byte, c.page, c.text,
                     (1 - c.distance)::real
                 FROM (SELECT id, doc_id, section_id, start_byte, end_byte, page, text,
                           embedding <=> $1 AS distance
                       FROM walkrag_chunks ORDER BY embedding <=> $1 LIMIT $2) AS c
                 JOIN walkrag_documents d ON d.id = c.doc_id
                 JOIN walkrag_sections s ON s.id = c.section_id
                 ORDER BY c.distance, c.id",
                &[&Vector::from(query.to_vec()), &(k as i64)],
            )
            .await
            .map_err(&fail)?;
        tx.commit().await.map_err(&fail)?;
        rows.iter()
            .map(|row| {
                let id: &str = row.get(0);
                let chunk_id =
                    ChunkId::parse(id).ok_or_else(|| self.corrupt(format!("chunk id {id:?}")))?;
                let start: i64 = row.get(4);
                let end: i64 = row.get(5);
                Ok(Passage {
                    score: row.get(8),
                    chunk_id,
                    doc_id: walkrag_engine::DocId(row.get(1)),
                    title: row.get(2),
                    section_path: row.get(3),
                    range: start as usize..end as usize,
                    page: row.get::<_, Option<i32>>(6).map(|p| p as u32),
                    text: row.get(7),
                })
            })
            .collect()
    }

    async fn resolve_async(&self, id: &str) -> Result<Option<Resolved>, StoreError> {
        if let Some(doc) = self.one_document(id).await? {
            return Ok(Some(Resolved::Document(doc)));
        }
        let (table, is_chunk) = if ChunkId::parse(id).is_some() {
            ("walkrag_chunks", true)
        } else if SectionId::parse(id).is_some() {
            ("walkrag_sections", false)
        } else {
            return Ok(None);
        };
        let row = self
            .client()
            .await?
            .query_opt(
                &format!("SELECT doc_id, ordinal FROM {table} WHERE id = $1"),
                &[&id],
            )
            .await
            .map_err(|e| self.fail(e))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let doc_id: String = row.get(0);
        let at = row.get::<_, i32>(1) as usize;
        // Replaced between the two reads: as if it had not been found.
        let Some(doc) = self.one_document(&doc_id).await? else {
            return Ok(None);
        };
        Ok(Some(if is_chunk {
            if at >= doc.chunks.len() {
                return Ok(None);
            }
            Resolved::Chunk { doc, chunk: at }
        } else {
            if at >= doc.doc.sections.len() {
                return Ok(None);
            }
            Resolved::Section { doc, section: at }
        }))
    }
}

/// An error's text (the server's message, detail and hint for a database error) with the
/// password removed, should the server or the client quote it.
fn scrub(e: &tokio_postgres::Error, password: Option<&str>) -> String {
    let text = match e.as_db_error() {
        Some(db) => {
            let mut text = db.message().to_string();
            if let Some(detail) = db.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            if let Some(hint) = db.hint() {
                text.push_str(&format!("; hint: {hint}"));
            }
            text
        }
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(inner) = source {
                text.push_str(&format!(": {inner}"));
                source = inner.source();
            }
            text
        }
    };
    match password {
        Some(p) => text.replace(p, "***"),
        None => text,
    }
}

impl Store for PgStore {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn embedder(&self) -> Result<Option<EmbedderInfo>, StoreError> {
        Ok(self.block(self.manifest())?.map(|m| m.embedder))
    }

    fn update(
        &self,
        paths: &[PathBuf],
        embedder: &dyn Embedder,
        embedder_spec: &str,
        options: &UpdateOptions,
        progress: &dyn Progress,
    ) -> Result<Summary, StoreError> {
        let started = Instant::now();
        tracing::debug!("waiting for the writer lock of {}", self.location);
        // A session lock, on a connection kept aside for it: held across the documents'
        // transactions (on other connections), released below or, if this process dies,
        // with its connection. Two first writers would otherwise race to create the
        // extension and the tables.
        let holder = self.block(self.client())?;
        let lock = "SELECT pg_advisory_lock($1)";
        self.block(holder.execute(lock, &[&WRITER_LOCK]))
            .map_err(|e| self.fail(e))?;
        let result = self
            .block(self.ensure_extension())
            .and_then(|()| self.update_locked(paths, embedder, embedder_spec, options, progress));
        let unlock = "SELECT pg_advisory_unlock($1)";
        if let Err(e) = self.block(holder.execute(unlock, &[&WRITER_LOCK])) {
            tracing::warn!("cannot release the writer lock: {}", self.fail(e));
        }
        drop(holder);
        let mut summary = result?;
        summary.seconds = started.elapsed().as_secs_f64();
        Ok(summary)
    }

    fn search(
        &self,
        query: &[f32],
        k: usize,
        options: &StoreSearch,
    ) -> Result<Vec<Passage>, StoreError> {
        self.block(self.search_async(query, k, options))
    }

    fn resolve(&self, id: &str) -> Result<Option<Resolved>, StoreError> {
        self.block(self.resolve_async(id))
    }

    fn documents(&self) -> Result<Vec<IndexedDoc>, StoreError> {
        self.block(self.load_documents(None))
    }

    /// The counter each completed update moves (with its time, for tables older than it).
    fn generation(&self) -> Result<Option<String>, StoreError> {
        self.block(self.generation_async())
    }

    /// Every document, chunk and vector read in one snapshot; searches come back here, to
    /// the HNSW index of `walkrag_chunks`.
    fn load(self: Arc<Self>) -> Result<Index, StoreError> {
        let started = Instant::now();
        let manifest = self
            .block(self.manifest())?
            .ok_or_else(|| self.not_found())?;
        let (docs, vectors) = self.block(self.read_documents(None, true))?;
        tracing::debug!(
            "read {} documents and {} vector values from {} in {:.1} s",
            docs.len(),
            vectors.len(),
            self.location,
            started.elapsed().as_secs_f64()
        );
        let manifest = walkrag_engine::Manifest {
            format: manifest.format,
            version: manifest.version,
            embedder: manifest.embedder,
            chunking: manifest.chunking,
            ann: manifest.ann,
            graph: None,
            documents: docs.len(),
            chunks: 0,
            files: Default::default(),
            created_unix: 0,
        };
        Ok(Index::of_store(self, manifest, docs, vectors)?)
    }
}
