//! walkrag-actions end to end: reading OpenAPI documents (`ingest`), checking inputs
//! (`validate`), sending requests to a real HTTP server on 127.0.0.1 (`execute`, `server`),
//! keeping credentials out of everything the model or a log sees (`secrets`), the `actions`
//! strategy with a scripted model against that server (`strategy`), example requests kept
//! beside the index (`examples`), and the crate's
//! dependencies (`crate_graph`).

mod crate_graph;
mod examples;
mod execute;
mod ingest;
mod secrets;
mod server;
mod strategy;
mod validate;

use walkrag_actions::{Action, Catalog, Executor, ExecutorConfig};

use server::Server;

/// The notes API spec of `tests/data/notes.yaml`, as text.
fn notes_yaml() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/notes.yaml");
    std::fs::read_to_string(path).expect("the notes spec is readable")
}

fn notes() -> Catalog {
    Catalog::parse(&notes_yaml()).expect("the notes spec reads")
}

/// The notes action with this operation id.
fn action(catalog: &Catalog, id: &str) -> Action {
    catalog
        .get(id)
        .unwrap_or_else(|| panic!("no action {id}"))
        .clone()
}

/// An executor for the notes API on `server`.
fn executor(server: &Server, config: ExecutorConfig) -> Executor {
    let config = ExecutorConfig {
        base_url: Some(server.base_url.clone()),
        ..config
    };
    Executor::new(&notes(), config).expect("a valid configuration")
}
