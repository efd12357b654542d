//! What every strategy returns.

use std::fmt;

use serde::{Deserialize, Serialize};
use walkrag_core::Usage;
use walkrag_engine::ChunkId;

use crate::trace::Trace;

/// Why a strategy stopped looking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Termination {
    /// One retrieval, one answer: the strategy has no loop.
    SinglePass,
    /// The model said the facts gathered are sufficient.
    Sufficient,
    /// The model named nowhere else to look.
    NoDescriptors,
    /// Every chunk retrieved for the descriptors had been read already.
    NothingNew,
    /// The cycle limit was reached.
    MaxCycles,
    /// The token budget was spent.
    TokenBudget,
    /// The time budget was spent.
    TimeBudget,
    /// The user (or the library caller) stopped the walk.
    Stopped,
    /// `walk`: a model call failed for good in a cycle (not a transient failure); the walk
    /// answered from what it had read before.
    ModelFailed,
    /// The index returned nothing for the question (or `toc`: the model picked no section).
    NothingRetrieved,
    /// `toc`: the message needed no documents (a greeting, thanks) and was answered directly.
    NoRetrieval,
    /// `actions`: the model replied to the user (after a request, or without one).
    Responded,
    /// `actions`: the user was asked something (missing inputs, an unclear request).
    AskedUser,
    /// `actions`: a dry run built the request and stopped before sending it.
    DryRun,
}

impl Termination {
    pub fn as_str(self) -> &'static str {
        match self {
            Termination::SinglePass => "single_pass",
            Termination::Sufficient => "sufficient",
            Termination::NoDescriptors => "no_descriptors",
            Termination::NothingNew => "nothing_new",
            Termination::MaxCycles => "max_cycles",
            Termination::TokenBudget => "token_budget",
            Termination::TimeBudget => "time_budget",
            Termination::Stopped => "stopped",
            Termination::ModelFailed => "model_failed",
            Termination::NothingRetrieved => "nothing_retrieved",
            Termination::NoRetrieval => "no_retrieval",
            Termination::Responded => "responded",
            Termination::AskedUser => "asked_user",
            Termination::DryRun => "dry_run",
        }
    }
}

impl fmt::Display for Termination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the LLM calls of one question cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Cost {
    pub llm_calls: usize,
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
}

impl Cost {
    /// Counts one call that used `usage`.
    pub fn add_call(&mut self, usage: Usage) {
        self.llm_calls += 1;
        self.prompt_tokens += usage.prompt_tokens;
        self.completion_tokens += usage.completion_tokens;
    }

    pub fn tokens(&self) -> usize {
        self.prompt_tokens + self.completion_tokens
    }
}

/// A strategy's result. Serializes to the `answer` line of `walkrag ask --json` (the trace is
/// written on its own, with `--trace`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    /// The answer alone, as short as the model gave it, citations removed: what EM/F1 score.
    pub answer: String,
    /// The model's whole reply (answer, sources, explanation).
    pub text: String,
    /// False when the strategy concluded that the material does not answer the question.
    pub found: bool,
    /// Chunks cited in the reply that the strategy had shown the model, in order of citation.
    pub citations: Vec<ChunkId>,
    /// The passages the answer step was shown, in prompt order: what eval checks the gold
    /// answer against (`gold_in_context`). Empty where no answer step read passages.
    #[serde(default)]
    pub shown: Vec<ChunkId>,
    /// Every chunk read, most useful first; retrieval recall is computed from it.
    pub ranked: Vec<ChunkId>,
    pub termination: Termination,
    pub cycles: usize,
    pub usage: Cost,
    pub elapsed_ms: u64,
    #[serde(skip)]
    pub trace: Trace,
}
