//! Integration tests of the Postgres store against a real PostgreSQL with pgvector on
//! 127.0.0.1 and the real MiniLM embedder.
//!
//! The server is `$WALKRAG_TEST_POSTGRES` (scripts/test.sh starts one and sets it), else the
//! one `scripts/postgres.sh start` starts or finds running. Each test works in a schema of its
//! own. The model comes from the models directory (`scripts/fetch-models.sh minilm`).

mod server;
mod store;
mod tls;
