//! The strategy interface and what a strategy runs against.

use std::future::Future;
use std::pin::Pin;

use walkrag_core::{ChatError, ChatModel, EmbedError, Embedder};
use walkrag_engine::{Index, Keep, SearchOptions};

use crate::answer::Answer;
use crate::trace::event::Sink;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How the index is searched.
#[derive(Debug, Clone, Copy, Default)]
pub struct SearchParams {
    /// HNSW candidate list length; `None`: the index's own setting.
    pub ef_search: Option<usize>,
    /// Scan every vector instead of walking the graph.
    pub exact: bool,
}

impl SearchParams {
    /// The engine's options for these settings, returning only chunks that `keep` accepts
    /// (all where `None`).
    pub fn options<'a>(&self, keep: Option<Keep<'a>>) -> SearchOptions<'a> {
        SearchOptions {
            ef_search: self.ef_search,
            exact: self.exact,
            keep,
        }
    }
}

/// What a strategy runs against. The embedder must be the one the index was built with.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    pub index: &'a Index,
    pub embedder: &'a dyn Embedder,
    pub model: &'a dyn ChatModel,
    pub search: SearchParams,
}

/// A way of answering a question from an index.
pub trait Strategy: Send + Sync {
    /// The name users pick it by (`single`, `walk`, ...).
    fn name(&self) -> &'static str;

    /// The settings, recorded in traces and eval runs.
    fn config(&self) -> serde_json::Value;

    /// The model of the answer step where it is not the chat model (`--reader-model`); a
    /// question's [`crate::run::Run`] sends the answer step to it.
    fn answer_model(&self) -> Option<&AnswerModel> {
        None
    }

    /// Answers `question`, sending events to `sink` as it goes.
    fn run<'a>(
        &'a self,
        question: &'a str,
        env: Env<'a>,
        sink: &'a mut dyn Sink,
    ) -> BoxFuture<'a, Result<Answer, StrategyError>>;
}

/// Why a strategy could not answer at all.
#[derive(Debug, thiserror::Error)]
pub enum StrategyError {
    #[error("embedding failed: {0}")]
    Embed(#[from] EmbedError),
    /// The chat model failed; `is_transient` says whether retrying the question may help.
    #[error("the chat model failed: {0}")]
    Chat(#[from] ChatError),
}

impl StrategyError {
    pub fn is_transient(&self) -> bool {
        matches!(self, StrategyError::Chat(e) if e.is_transient())
    }
}

/// The model that writes the answer, where it is not the chat model: a cheap model walks,
/// a stronger one answers from what the walk found.
#[derive(Clone)]
pub struct AnswerModel(pub std::sync::Arc<dyn ChatModel>);

impl std::fmt::Debug for AnswerModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.id())
    }
}

/// The id of `model`, for a strategy's recorded settings.
pub(crate) fn answer_model_id(model: &Option<AnswerModel>) -> Option<String> {
    model.as_ref().map(|m| m.0.id().to_string())
}
