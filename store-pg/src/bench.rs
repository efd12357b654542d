//! Bare vectors in PostgreSQL for `walkrag bench store`: the store's HNSW index (pgvector,
//! `vector_cosine_ops`, the same M and ef_construction) over a table of ids and vectors only,
//! so that millions of vectors can be loaded without documents around them.

use std::time::Instant;

use pgvector::Vector;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{Kind, Type};
use walkrag_engine::StoreError;

use crate::PgStore;

/// The schema the bench writes in, apart from any index's tables.
const SCHEMA: &str = "walkrag_bench";
/// Rows per `COPY`: each one is its own statement, so progress can be reported between them.
const COPY_ROWS: usize = 20_000;

/// A table `walkrag_bench.vectors (id int, embedding vector(DIM))`, dropped and created anew.
pub struct VectorTable {
    store: PgStore,
    dim: usize,
}

/// What the server says about itself, for the report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerInfo {
    pub version: String,
    pub pgvector: String,
    pub shared_buffers: String,
}

impl VectorTable {
    /// Connects to `url` and creates an empty table for vectors of `dim` values.
    pub fn create(url: &str, dim: usize) -> Result<Self, StoreError> {
        let store = PgStore::connect(url)?;
        store.block(store.ensure_extension())?;
        store.block(store.batch(&format!(
            "DROP SCHEMA IF EXISTS {SCHEMA} CASCADE;
             CREATE SCHEMA {SCHEMA};
             CREATE TABLE {SCHEMA}.vectors (id integer NOT NULL, embedding vector({dim}) NOT NULL);"
        )))?;
        Ok(Self { store, dim })
    }

    pub fn server(&self) -> Result<ServerInfo, StoreError> {
        let rows = self.store.block(self.store.rows(
            "SELECT current_setting('server_version'),
                 (SELECT extversion FROM pg_extension WHERE extname = 'vector'),
                 current_setting('shared_buffers')",
            &[],
        ))?;
        let row = &rows[0];
        Ok(ServerInfo {
            version: row.get(0),
            pgvector: row.get(1),
            shared_buffers: row.get(2),
        })
    }

    /// Appends `vectors` (row after row) with ids from `first_id` on, by binary `COPY`;
    /// `progress` gets the rows written so far.
    pub fn load(
        &self,
        vectors: &[f32],
        first_id: usize,
        progress: &dyn Fn(usize),
    ) -> Result<(), StoreError> {
        let store = &self.store;
        let vector_type = store.block(async {
            let rows = store
                .rows(
                    "SELECT t.oid, n.nspname FROM pg_type t
                     JOIN pg_namespace n ON n.oid = t.typnamespace WHERE t.typname = 'vector'",
                    &[],
                )
                .await?;
            let row = rows.first().ok_or_else(|| StoreError::Database {
                location: store.location.clone(),
                detail: "the vector type is missing".into(),
            })?;
            Ok::<_, StoreError>(Type::new(
                "vector".into(),
                row.get(0),
                Kind::Simple,
                row.get(1),
            ))
        })?;
        let rows = vectors.len() / self.dim;
        let mut written = 0;
        while written < rows {
            let end = (written + COPY_ROWS).min(rows);
            let batch = &vectors[written * self.dim..end * self.dim];
            let ids = (first_id + written) as i32..;
            store.block(async {
                let client = store.client().await?;
                let sink = client
                    .copy_in(&format!(
                        "COPY {SCHEMA}.vectors (id, embedding) FROM STDIN (FORMAT binary)"
                    ))
                    .await
                    .map_err(|e| store.fail(e))?;
                let writer = BinaryCopyInWriter::new(sink, &[Type::INT4, vector_type.clone()]);
                let mut writer = std::pin::pin!(writer);
                for (id, row) in ids.zip(batch.chunks_exact(self.dim)) {
                    let vector = Vector::from(row.to_vec());
                    writer
                        .as_mut()
                        .write(&[&id, &vector])
                        .await
                        .map_err(|e| store.fail(e))?;
                }
                writer.finish().await.map_err(|e| store.fail(e))?;
                Ok::<_, StoreError>(())
            })?;
            written = end;
            progress(written);
        }
        Ok(())
    }

    /// Builds the HNSW index the store builds (`vector_cosine_ops`, `m`, `ef_construction`),
    /// with `memory_mib` of `maintenance_work_mem` and `workers` parallel workers; returns
    /// the seconds it took.
    pub fn build(
        &self,
        m: usize,
        ef_construction: usize,
        memory_mib: usize,
        workers: usize,
    ) -> Result<f64, StoreError> {
        let started = Instant::now();
        self.store.block(self.store.batch(&format!(
            "SET maintenance_work_mem = '{memory_mib}MB';
             SET max_parallel_maintenance_workers = {workers};
             CREATE INDEX vectors_embedding ON {SCHEMA}.vectors
                 USING hnsw (embedding vector_cosine_ops)
                 WITH (m = {m}, ef_construction = {ef_construction});
             RESET maintenance_work_mem;
             RESET max_parallel_maintenance_workers;
             ANALYZE {SCHEMA}.vectors;"
        )))?;
        Ok(started.elapsed().as_secs_f64())
    }

    /// Drops the HNSW index, so that rows load without updating it.
    pub fn drop_index(&self) -> Result<(), StoreError> {
        self.store.block(
            self.store
                .batch(&format!("DROP INDEX IF EXISTS {SCHEMA}.vectors_embedding")),
        )
    }

    /// Sets `hnsw.ef_search` for the searches that follow.
    pub fn set_ef_search(&self, ef: usize) -> Result<(), StoreError> {
        self.store
            .block(self.store.batch(&format!("SET hnsw.ef_search = {ef}")))
    }

    /// The ids of the `k` rows nearest to `query` by the HNSW index.
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<usize>, StoreError> {
        let rows = self.store.block(self.store.rows(
            &format!("SELECT id FROM {SCHEMA}.vectors ORDER BY embedding <=> $1 LIMIT $2"),
            &[&Vector::from(query.to_vec()), &(k as i64)],
        ))?;
        Ok(rows.iter().map(|r| r.get::<_, i32>(0) as usize).collect())
    }

    /// Bytes on disk of the table (with its TOAST) and of its HNSW index.
    pub fn sizes(&self) -> Result<(u64, u64), StoreError> {
        let rows = self.store.block(self.store.rows(
            &format!(
                "SELECT pg_table_size('{SCHEMA}.vectors'),
                     coalesce(pg_relation_size(to_regclass('{SCHEMA}.vectors_embedding')), 0)"
            ),
            &[],
        ))?;
        Ok((
            rows[0].get::<_, i64>(0) as u64,
            rows[0].get::<_, i64>(1) as u64,
        ))
    }

    /// Drops the bench's schema.
    pub fn drop_all(self) -> Result<(), StoreError> {
        self.store.block(
            self.store
                .batch(&format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")),
        )
    }
}
