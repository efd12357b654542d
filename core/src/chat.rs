//! The [`ChatModel`] trait: messages in, a stream of generated deltas out.
//!
//! Streaming is the core of the API: the walker parses facts out of a completion while it is
//! being generated. Every backend (local GGUF models, OpenAI-compatible servers, scripted fakes
//! in tests) implements the same trait, so strategies never know which one they drive.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::Context;
use std::time::Duration;

use futures_core::Stream;
use serde::{Deserialize, Serialize};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    /// The result of a tool call, answering the assistant's call with the same id.
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// Tool calls the assistant made in this message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For [`Role::Tool`]: the id of the call this message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// The answer to tool call `call_id`.
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(call_id.into()),
            ..Self::new(Role::Tool, content)
        }
    }
}

/// A tool the model may call: a name, what it does, and a JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// A complete tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as JSON text, exactly as the model produced them (it may be invalid JSON;
    /// the caller decides what to do with that).
    pub arguments: String,
}

/// How tokens are chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    /// 0 means greedy.
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u64,
    /// The most tokens to generate.
    pub max_tokens: usize,
    /// Generation ends before any of these strings; they are not part of the output.
    pub stop: Vec<String>,
}

impl Default for Sampling {
    /// Greedy, 512 tokens at most, no stop strings.
    fn default() -> Self {
        Self {
            temperature: 0.0,
            top_p: 1.0,
            seed: 0,
            max_tokens: 512,
            stop: Vec::new(),
        }
    }
}

/// Everything one generation needs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub sampling: Sampling,
    /// Ask for a JSON object as the whole answer (OpenAI's `response_format: json_object`).
    pub json: bool,
    /// Tools the model may call; empty for none.
    pub tools: Vec<ToolDef>,
    /// When not empty, the completion opens with one of these strings and goes on freely
    /// after it. Local models enforce it token by token (the model's preference among the
    /// openings decides); HTTP backends have no such control and ignore it, so a caller still
    /// checks what comes back. No opening may be a prefix of another.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub openings: Vec<String>,
    /// What the whole completion must follow. Local models enforce it token by token, so
    /// what they write always parses; OpenAI-compatible servers get JSON Schemas as
    /// `response_format`. A backend that cannot enforce it says so with
    /// [`Delta::Unconstrained`] before any text, and the caller reads the reply tolerantly.
    /// Not together with `openings`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<Constraint>,
}

/// What a completion must follow ([`ChatRequest::constraint`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Constraint {
    /// One JSON value valid under this JSON Schema (draft 2020-12: objects, arrays with
    /// `minItems`/`maxItems`, enums, `anyOf`, strings with `maxLength`, `$ref`, ...).
    JsonSchema(serde_json::Value),
    /// Text of a Lark-style grammar whose top rule is `start` (llguidance's dialect: rules in
    /// lower case, terminals in upper case, `/regex/` terminals, `%json { schema }` to embed
    /// a JSON Schema).
    Lark(String),
    /// Text that matches this regular expression as a whole.
    Regex(String),
}

impl Constraint {
    /// `json_schema`, `lark` or `regex`: what traces record.
    pub fn kind(&self) -> &'static str {
        match self {
            Constraint::JsonSchema(_) => "json_schema",
            Constraint::Lark(_) => "lark",
            Constraint::Regex(_) => "regex",
        }
    }
}

impl ChatRequest {
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model ended its turn, or a stop string was reached.
    Stop,
    /// `max_tokens` was reached.
    Length,
    /// The model called tools and waits for their results.
    ToolCalls,
    /// The server withheld content.
    ContentFilter,
}

/// Tokens used by one generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: usize,
    /// Every token of the completion, forced ones included.
    pub completion_tokens: usize,
    /// Tokens of the completion that a [`Constraint`] forced (JSON keys, punctuation): run
    /// through the model as a batch, like prompt tokens, instead of being sampled one by one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub forced_tokens: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One piece of a streamed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta {
    /// Generated text, to append.
    Text { text: String },
    /// Part of tool call number `index`: the id and name come first, the arguments in pieces.
    ToolCall {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    /// The request had a [`Constraint`] this backend could not enforce: the completion is
    /// free text, to be read tolerantly. Comes before any text.
    Unconstrained { reason: String },
    /// The last item of every successful stream.
    Done { usage: Usage, finish: FinishReason },
}

/// What the caller should do about a failure.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChatError {
    /// Worth retrying later (rate limit, overload, a dropped connection, a timeout).
    #[error("temporary failure: {message}")]
    Transient {
        message: String,
        retry_after: Option<Duration>,
    },
    /// The prompt does not fit the model's context: shrink it.
    #[error("context too long: the prompt needs {needed} tokens, the model takes {limit}")]
    ContextTooLong { needed: usize, limit: usize },
    /// Retrying will not help (bad request, bad key, unknown model, a broken model file).
    #[error("{0}")]
    Permanent(String),
}

impl ChatError {
    pub fn is_transient(&self) -> bool {
        matches!(self, ChatError::Transient { .. })
    }
}

/// A stream of deltas ending with [`Delta::Done`], or with an error. Dropping it cancels the
/// generation.
pub type DeltaStream = Pin<Box<dyn Stream<Item = Result<Delta, ChatError>> + Send>>;

/// A prompt and a continuation of it to weigh: how likely the model finds `continuation` as
/// the start of its reply to `messages`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ScoreItem {
    pub messages: Vec<Message>,
    pub continuation: String,
}

/// How likely a model found each of a set of [`ScoreItem`]s.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Scores {
    /// Each continuation's summed log-probability (natural log), in the items' order.
    pub scores: Vec<f32>,
    /// `prompt_tokens`: the tokens the model ran (a start shared with the item before may
    /// be run once); nothing is generated.
    pub usage: Usage,
}

/// What [`ChatModel::score`] returns.
pub type ScoreFuture = Pin<Box<dyn Future<Output = Result<Scores, ChatError>> + Send>>;

/// A chat model.
pub trait ChatModel: Send + Sync {
    /// What to call it in traces and reports (`local:qwen2.5-coder-0.5b`, `openai:gpt-4o-mini`).
    fn id(&self) -> &str;

    /// The most tokens (prompt and completion) the model takes, when known.
    fn context_length(&self) -> Option<usize>;

    /// Whether the model takes `tools` natively (else strategies use a JSON action protocol).
    fn supports_tools(&self) -> bool;

    /// Starts generating. Errors that happen before the first token (a prompt that is too
    /// long, a refused request) come as the stream's first item.
    fn stream(&self, request: ChatRequest) -> DeltaStream;

    /// Whether [`ChatModel::score`] works (models whose token probabilities we can read).
    fn can_score(&self) -> bool {
        false
    }

    /// How likely the model finds each item's continuation after its prompt. Strategies
    /// choose among fixed options this way where a model allows it ([`ChatModel::can_score`]);
    /// the default says it cannot.
    fn score(&self, items: Vec<ScoreItem>) -> ScoreFuture {
        let _ = items;
        let error = ChatError::Permanent(format!("{} cannot weigh continuations", self.id()));
        Box::pin(std::future::ready(Err(error)))
    }
}

/// A model with its constraints taken off: requests reach `inner` without their
/// [`Constraint`], and each stream opens with [`Delta::Unconstrained`], so callers read the
/// replies tolerantly, as they do a server's that cannot constrain. For measuring what
/// constraining gains (`walkrag eval --unconstrained`).
pub struct Unconstrained<M: ?Sized>(pub std::sync::Arc<M>);

impl<M: ChatModel + ?Sized> ChatModel for Unconstrained<M> {
    fn id(&self) -> &str {
        self.0.id()
    }

    fn context_length(&self) -> Option<usize> {
        self.0.context_length()
    }

    fn supports_tools(&self) -> bool {
        self.0.supports_tools()
    }

    fn stream(&self, mut request: ChatRequest) -> DeltaStream {
        let note = request.constraint.take().map(|c| Delta::Unconstrained {
            reason: format!(
                "the {} constraint was taken off (--unconstrained)",
                c.kind()
            ),
        });
        let inner = self.0.stream(request);
        Box::pin(Prefixed { note, inner })
    }

    fn can_score(&self) -> bool {
        self.0.can_score()
    }

    fn score(&self, items: Vec<ScoreItem>) -> ScoreFuture {
        self.0.score(items)
    }
}

/// A stream with one delta put before it.
struct Prefixed {
    note: Option<Delta>,
    inner: DeltaStream,
}

impl Stream for Prefixed {
    type Item = Result<Delta, ChatError>;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        if let Some(note) = self.note.take() {
            return std::task::Poll::Ready(Some(Ok(note)));
        }
        self.inner.as_mut().poll_next(cx)
    }
}

/// A finished answer: the deltas of a stream put together.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Completion {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub finish: Option<FinishReason>,
    /// Why the request's constraint was not enforced ([`Delta::Unconstrained`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconstrained: Option<String>,
}

impl Completion {
    /// Adds one delta.
    pub fn push(&mut self, delta: Delta) {
        match delta {
            Delta::Text { text } => self.text.push_str(&text),
            Delta::ToolCall {
                index,
                id,
                name,
                arguments,
            } => {
                while self.tool_calls.len() <= index {
                    self.tool_calls.push(ToolCall {
                        id: String::new(),
                        name: String::new(),
                        arguments: String::new(),
                    });
                }
                let call = &mut self.tool_calls[index];
                if let Some(id) = id {
                    call.id = id;
                }
                if let Some(name) = name {
                    call.name.push_str(&name);
                }
                call.arguments.push_str(&arguments);
            }
            Delta::Unconstrained { reason } => self.unconstrained = Some(reason),
            Delta::Done { usage, finish } => {
                self.usage = usage;
                self.finish = Some(finish);
            }
        }
    }
}

/// Runs a stream to its end and returns the whole answer.
pub async fn complete(
    model: &dyn ChatModel,
    request: ChatRequest,
) -> Result<Completion, ChatError> {
    let mut stream = model.stream(request);
    let mut out = Completion::default();
    while let Some(delta) = next(&mut stream).await {
        out.push(delta?);
    }
    if out.finish.is_none() {
        return Err(ChatError::Transient {
            message: "the stream ended without finishing".into(),
            retry_after: None,
        });
    }
    Ok(out)
}

/// The next item of a stream (what `StreamExt::next` does, without the dependency).
pub fn next<S: Stream + Unpin + ?Sized>(
    stream: &mut S,
) -> impl Future<Output = Option<S::Item>> + '_ {
    std::future::poll_fn(move |cx: &mut Context<'_>| Pin::new(&mut *stream).poll_next(cx))
}

/// Cuts generated text at stop strings, holding back a tail that may be the start of one so
/// that no part of a stop string is ever emitted.
#[derive(Debug, Clone, Default)]
pub struct StopMatcher {
    stops: Vec<String>,
    pending: String,
}

/// What [`StopMatcher::push`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopCheck {
    /// Emit this text (possibly empty) and go on.
    Continue(String),
    /// Emit this text and stop: a stop string was reached.
    Stop(String),
}

impl StopMatcher {
    pub fn new(stops: &[String]) -> Self {
        Self {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            pending: String::new(),
        }
    }

    pub fn push(&mut self, text: &str) -> StopCheck {
        self.pending.push_str(text);
        if let Some(at) = self
            .stops
            .iter()
            .filter_map(|s| self.pending.find(s.as_str()))
            .min()
        {
            let out = self.pending[..at].to_string();
            self.pending.clear();
            return StopCheck::Stop(out);
        }
        // Hold back the longest suffix that is a prefix of some stop string.
        let mut keep = 0;
        for stop in &self.stops {
            for len in (1..stop.len().min(self.pending.len() + 1)).rev() {
                if stop.is_char_boundary(len) && self.pending.ends_with(&stop[..len]) {
                    keep = keep.max(len);
                    break;
                }
            }
        }
        let cut = self.pending.len() - keep;
        let out = self.pending[..cut].to_string();
        self.pending.drain(..cut);
        StopCheck::Continue(out)
    }

    /// Text held back when generation ends for another reason.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_strings_are_cut_even_across_deltas() {
        let mut m = StopMatcher::new(&["</answer>".to_string(), "\n\n".to_string()]);
        assert_eq!(
            m.push("The answer is"),
            StopCheck::Continue("The answer is".into())
        );
        assert_eq!(m.push(" 42</ans"), StopCheck::Continue(" 42".into()));
        assert_eq!(m.push("wer> and more"), StopCheck::Stop("".into()));
        let mut m = StopMatcher::new(&["\n\n".to_string()]);
        assert_eq!(m.push("a\n"), StopCheck::Continue("a".into()));
        assert_eq!(m.push("b"), StopCheck::Continue("\nb".into()));
        assert_eq!(m.push("\n"), StopCheck::Continue("".into()));
        assert_eq!(m.finish(), "\n");
        let mut none = StopMatcher::new(&[]);
        assert_eq!(none.push("x"), StopCheck::Continue("x".into()));
    }

    #[test]
    fn deltas_assemble_into_a_completion() {
        let mut c = Completion::default();
        for d in [
            Delta::Text { text: "Hel".into() },
            Delta::Text { text: "lo".into() },
            Delta::ToolCall {
                index: 0,
                id: Some("c1".into()),
                name: Some("search".into()),
                arguments: "{\"q\":".into(),
            },
            Delta::ToolCall {
                index: 0,
                id: None,
                name: None,
                arguments: "\"x\"}".into(),
            },
            Delta::Done {
                usage: Usage {
                    prompt_tokens: 3,
                    completion_tokens: 2,
                    forced_tokens: 0,
                },
                finish: FinishReason::ToolCalls,
            },
        ] {
            c.push(d);
        }
        assert_eq!(c.text, "Hello");
        assert_eq!(
            c.tool_calls,
            [ToolCall {
                id: "c1".into(),
                name: "search".into(),
                arguments: "{\"q\":\"x\"}".into()
            }]
        );
        assert_eq!(c.finish, Some(FinishReason::ToolCalls));
        assert_eq!(c.usage.completion_tokens, 2);
    }
}
