//! Workspace-wide invariants that no single crate can check on its own.

mod crate_graph;
