//! The trace: every retrieval and every LLM call of one question, in order.
//!
//! Beside it: the events a run emits as it goes ([`event`]), the knowledge graph of an
//! answer ([`graph`]) and its HTML page ([`html`]), and the JSON objects written for other
//! programs ([`output`]).

pub mod event;
pub mod graph;
pub mod html;
pub mod output;

use serde::{Deserialize, Serialize};
use walkrag_core::{FinishReason, Message, ScoreItem, Usage};
use walkrag_engine::ChunkId;

/// Everything a strategy did for one question.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Trace {
    pub question: String,
    pub strategy: String,
    /// The chat model's id.
    pub model: String,
    /// The embedder's id.
    pub embedder: String,
    /// The strategy's settings.
    pub config: serde_json::Value,
    pub steps: Vec<Step>,
}

/// One step of a trace, tagged `"step"`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    Retrieve(Retrieval),
    Llm(LlmCall),
    /// A model call that weighed fixed continuations instead of writing one.
    Score(ScoreCall),
    Fact(Fact),
    Descriptor(Descriptor),
    /// Model output that was neither a fact, a descriptor nor a verdict.
    Unread {
        cycle: usize,
        text: String,
    },
    /// The model's verdict on whether the facts answer the question.
    Sufficient {
        cycle: usize,
        sufficient: bool,
    },
    /// Why the walk stopped looking.
    Terminate {
        cycle: usize,
        reason: crate::Termination,
    },
    Note {
        cycle: usize,
        message: String,
    },
    /// An action of the `actions` strategy and what came of it.
    Action(ActionStep),
}

/// A call that asked the model how likely it finds fixed continuations of prompts
/// ([`walkrag_core::ChatModel::score`]): what the `actions` pick does with local models.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ScoreCall {
    pub cycle: usize,
    /// What the call was for (`pick`).
    pub purpose: String,
    pub items: Vec<ScoreItem>,
    /// Each item's summed log-probability, in order (empty when the call failed).
    pub scores: Vec<f32>,
    pub usage: Usage,
    pub ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One action the `actions` strategy took for the model (`find_actions`, `execute_action`,
/// `ask_user`, `respond`) and what came of it. Holds no credentials: the request is the
/// preview the user confirms, made before credentials are added.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ActionStep {
    /// The turn (1-based): one model call, or the search that starts a request.
    pub cycle: usize,
    /// `find_actions`, `execute_action`, `ask_user` or `respond`.
    pub action: String,
    /// The operation the model named (`execute_action`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// The inputs as the model wrote them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Value>,
    /// The inputs checked against the operation, after the repairs below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_params: Option<serde_json::Value>,
    /// What the strategy changed in the model's inputs before checking them (a name read as
    /// another, a value dropped because the user never gave it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<String>,
    /// The required inputs the user was asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked: Vec<String>,
    /// The search query (`find_actions`), the question (`ask_user`) or the reply (`respond`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `None`: no confirmation was asked; else the user's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<bool>,
    /// The request as built (method, URL, headers, body; never credentials): sent, would
    /// have been sent (dry run) or declined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<serde_json::Value>,
    /// What came of it: `found`, `response`, `dry_run`, `declined`, `failed`, `invalid`,
    /// `missing`, `unknown_operation`, `asked`, `responded`, `unreadable`, `not_run`,
    /// `premature` (a reply or a question naming no input before any operation was called:
    /// sent back to the model once).
    pub outcome: String,
    /// The HTTP status, when a server answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// What the model was told (the tool result).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub result: String,
}

/// A fact read in a passage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    pub cycle: usize,
    pub fact: String,
    pub relevance: String,
    /// The source as the model wrote it.
    pub source: String,
    /// The chunk the source names, when it names one.
    pub chunk_id: Option<ChunkId>,
    /// The source is a chunk the model was shown, and the fact's words are in it; untrusted
    /// facts are kept for the record but never used as evidence.
    pub trusted: bool,
    /// The source was a near miss of the chunk's id (a digit dropped or swapped), read as it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repaired: bool,
    /// Its source was shown, but its words are not in that passage (see
    /// [`crate::reader::support`]): not trusted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsupported: bool,
    /// Recalled from the memory of earlier questions (`--memory`), not read in this walk.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remembered: bool,
}

/// Where to look next, and what should be there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Descriptor {
    pub cycle: usize,
    pub next_source: String,
    pub expected_info: String,
    /// Who named it: the model, the user (a hint), or the walk's fallback (the question and
    /// the facts found).
    #[serde(default = "Origin::model")]
    pub origin: Origin,
}

/// What a search was for: where the chunks a strategy read came from.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The question itself.
    #[default]
    Question,
    /// A descriptor the model wrote (`nextSource`, `expectedInfo`), or a model's pick.
    Model,
    /// A hint from the user.
    Hint,
    /// The walk's own search with the question and the facts found, when the model named
    /// nowhere to look.
    Fallback,
    /// Documents and sections named in the passages read (titles, headings, "Section 7.2").
    Link,
    /// Facts remembered from earlier questions (`--memory`).
    Memory,
    /// A name written in the passages read and not read yet, searched with the question
    /// (no model call: see [`crate::search::names`]), or a side of a comparison that no
    /// passage shown was about, searched by its name.
    Name,
}

impl Origin {
    /// Every origin, in the order reports list them.
    pub const ALL: [Origin; 7] = [
        Origin::Question,
        Origin::Model,
        Origin::Hint,
        Origin::Fallback,
        Origin::Link,
        Origin::Name,
        Origin::Memory,
    ];

    fn model() -> Self {
        Origin::Model
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Question => "question",
            Origin::Model => "model",
            Origin::Hint => "hint",
            Origin::Fallback => "fallback",
            Origin::Link => "link",
            Origin::Memory => "memory",
            Origin::Name => "name",
        }
    }
}

impl Descriptor {
    /// The text embedded to search for it.
    pub fn query(&self) -> String {
        if self.expected_info.is_empty() {
            self.next_source.clone()
        } else {
            format!("{}: {}", self.next_source, self.expected_info)
        }
    }
}

/// One search of the index.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Retrieval {
    pub cycle: usize,
    /// What the search was for.
    #[serde(default)]
    pub origin: Origin,
    /// The text that was embedded (for links and memory, what they are).
    pub query: String,
    pub k: usize,
    /// Best first.
    pub hits: Vec<RetrievedChunk>,
    pub ms: u64,
}

/// A chunk as a retrieval returned it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievedChunk {
    pub chunk_id: ChunkId,
    pub score: f32,
    pub doc_id: String,
    pub title: String,
    /// Heading path from the document's top heading down.
    pub section_path: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Not read before this retrieval.
    pub new: bool,
    /// Found by a link: the chunk whose text names this one's document or section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linked_from: Option<ChunkId>,
}

/// One LLM call: the prompt as sent and the reply as received.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LlmCall {
    pub cycle: usize,
    /// What the call was for (`answer`, `read`, ...).
    pub purpose: String,
    pub messages: Vec<Message>,
    pub json: bool,
    /// The kind of constraint the call asked for (`json_schema`, `lark`, `regex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<String>,
    /// Why the model did not enforce the constraint (a server that refused it): the
    /// completion was read tolerantly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconstrained: Option<String>,
    pub completion: String,
    pub usage: Usage,
    pub finish: Option<FinishReason>,
    pub ms: u64,
    /// The model called, where it is not the trace's (`docs`' reader model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Set when the call failed; `completion` then holds what had arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
