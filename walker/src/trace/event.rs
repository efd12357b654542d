//! Events a strategy emits while it works, in order: what the CLI shows live and
//! `walkrag ask --json` streams.

use serde::Serialize;

use crate::trace::{ActionStep, Descriptor, Fact, Origin, RetrievedChunk};

/// One thing that happened. Serialized with a `"type"` tag (`retrieved`, `token`, ...).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A cycle starts (1-based).
    Cycle { cycle: usize },
    /// Chunks came back for a query; `new` marks the ones not read before.
    Retrieved {
        cycle: usize,
        /// What the search was for (`question`, `model`, `hint`, `fallback`, `link`, `memory`).
        origin: Origin,
        query: String,
        chunks: Vec<RetrievedChunk>,
    },
    /// A fact the model read in a passage, as soon as its JSON object closed.
    Fact(Fact),
    /// Where the model wants to look next.
    NextSource(Descriptor),
    /// A piece of the answer as it is generated.
    Token { text: String },
    /// Something the user should know (a chunk dropped to fit the context, a citation of a
    /// chunk that was never shown).
    Note { message: String },
    /// An action of the `actions` strategy (an operation found, called, confirmed or not, a
    /// question to the user, a reply) and what came of it. Boxed: it is much larger than
    /// the other events.
    Action(Box<ActionStep>),
}

/// Where events go. Any `FnMut(Event) + Send` closure is a sink.
pub trait Sink: Send {
    fn emit(&mut self, event: Event);
}

impl<F: FnMut(Event) + Send> Sink for F {
    fn emit(&mut self, event: Event) {
        self(event)
    }
}
