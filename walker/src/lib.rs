//! walkrag's retrieval strategies.
//!
//! Every strategy takes a question and an [`Env`] (index, embedder, chat model), emits
//! [`Event`]s while it works, and returns one [`Answer`] whose [`Trace`] records every
//! retrieval and every LLM call. The CLI, eval and the HTML trace consume only these types.
//!
//! This crate talks to models through the `walkrag-core` traits: it never links candle or an
//! HTTP client, so its tests run in milliseconds with scripted fakes.
//!
//! Its rooms, by job (imports flow one way: the strategies use the rest, nothing else uses a
//! strategy; `core/tests/it/crate_graph.rs` checks it):
//! - [`strategies`]: `walk`, `single`, `links`, `toc` and `sections`, `roam`, `docs`, and
//!   [`by_name`], which builds one from its name and the user's [`Options`].
//! - `reader`: talking to the model and reading what it says: prompts, constraints, the
//!   answer reply, the read step's JSON Lines, the support check of a fact, model calls.
//! - `search`: what the strategies search and show besides the index itself: links, unread
//!   names, leads, metadata filters, token budgets, passages, memory, generated tables of
//!   contents.
//! - `trace`: what a run leaves: the trace, the events, the knowledge graph, the HTML trace,
//!   the JSON objects written for other programs.
//! - Beside them, what every strategy shares: the [`Strategy`] trait and its [`Env`]
//!   (`strategy.rs`), the [`Answer`] (`answer.rs`), one question's run with its answer step
//!   (`run.rs`, its computed comparisons in `run/compare.rs`) and the [`Control`] from
//!   outside (`control.rs`).

mod answer;
mod control;
mod reader;
mod run;
mod search;
pub mod strategies;
mod strategy;
mod trace;

#[cfg(feature = "testing")]
pub mod testing;

pub use reader::{constrain, jsonl, language, llm, prompt, reply, support};
pub use search::{contents, filters, links, memory, names, passages};
pub use trace::{graph, html, output};

pub use answer::{Answer, Cost, Termination};
pub use control::{Control, CycleReport, PauseFn, Steer};
pub use search::memory::Memory;
pub use strategies::docs::Docs;
pub use strategies::linked::Linked;
pub use strategies::roam::{Opened, Roam};
pub use strategies::single::Single;
pub use strategies::toc::{SectionChooser, Toc};
pub use strategies::walk::{NextSources, Walk, LINKS_QUERY, MEMORY_QUERY};
pub use strategies::{by_name, Options, UnknownStrategy, AVAILABLE, STRATEGY_NAMES};
pub use strategy::{AnswerModel, BoxFuture, Env, SearchParams, Strategy, StrategyError};
pub use trace::event::{Event, Sink};
pub use trace::{
    ActionStep, Descriptor, Fact, LlmCall, Origin, Retrieval, RetrievedChunk, ScoreCall, Step,
    Trace,
};
