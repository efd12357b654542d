//! walkrag's retrieval strategies.
//!
//! Every strategy takes a question and an [`Env`] (index, embedder, chat model), emits
//! [`Event`]s while it works, and returns one [`Answer`] whose [`Trace`] records every
//! retrieval and every LLM call. The CLI, eval and the HTML trace consume only these types.
//!
//! This crate talks to models through the `walkrag-core` traits: it never links candle or an
//! HTTP client, so its tests run in milliseconds with scripted fakes.

mod answer;
mod ask;
mod budget;
pub mod constrain;
pub mod contents;
mod control;
mod docs;
mod event;
pub mod filters;
pub mod graph;
pub mod html;
pub mod jsonl;
pub mod language;
mod leads;
mod linked;
pub mod links;
pub mod llm;
pub mod memory;
pub mod names;
pub mod output;
pub mod passages;
pub mod prompt;
pub mod reply;
mod roam;
mod run;
mod single;
mod strategy;
pub mod support;
mod toc;
mod trace;
mod walk;

#[cfg(feature = "testing")]
pub mod testing;

pub use answer::{Answer, Cost, Termination};
pub use control::{Control, CycleReport, PauseFn, Steer};
pub use docs::Docs;
pub use event::{Event, Sink};
pub use linked::Linked;
pub use memory::Memory;
pub use roam::{Opened, Roam};
pub use single::Single;
pub use strategy::{
    by_name, AnswerModel, BoxFuture, Env, Options, SearchParams, Strategy, StrategyError,
    UnknownStrategy, AVAILABLE, STRATEGY_NAMES,
};
pub use toc::{SectionChooser, Toc};
pub use trace::{
    ActionStep, Descriptor, Fact, LlmCall, Origin, Retrieval, RetrievedChunk, ScoreCall, Step,
    Trace,
};
pub use walk::{NextSources, Walk, LINKS_QUERY, MEMORY_QUERY};

/// The dot product: the cosine of two unit-length vectors (what the index stores and the
/// embedders return).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
