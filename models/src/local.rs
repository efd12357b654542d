//! Local GGUF chat models: Qwen2 (`qwen2`) and Llama-family (`llama`, SmolLM2)
//! architectures, quantized (8-, 5- and 4-bit blocks) on the CPU with our own kernels
//! (`quant`, `attention`, one per instruction set as `cpu` chooses), one file per family; candle reads the GGUF files, `sample.rs` picks each token.

mod attention;
mod cpu;
mod kquant;
mod llama;
mod pool;
mod quant;
mod qwen2;
mod transformer;

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use candle_core::quantized::gguf_file;
use walkrag_core::chat::StopCheck;
use walkrag_core::{
    ChatError, ChatModel, ChatRequest, Delta, DeltaStream, FinishReason, Message, Role,
    ScoreFuture, ScoreItem, Scores, StopMatcher, Usage,
};

use llguidance::Matcher;

use crate::channel::{self, Sender};
use crate::grammar::{self, Grammars};
use crate::sample::Sampler;
use crate::template::ChatMl;
use crate::tokenizer::GgufTokenizer;
use crate::LoadError;

pub use cpu::{cpu, Cpu};

/// A model with its KV cache and compute threads; used by one generation at a time.
struct Weights {
    model: transformer::Model,
    state: transformer::State,
    pool: pool::Pool,
    /// The ids whose keys and values `state` holds, in order: a prompt that starts with
    /// them runs only from where it differs (a walk's calls share the system prompt and the
    /// answer step's examples; eval's questions do too).
    cached: Vec<u32>,
    /// The starts of earlier sequences that a prompt of another kind displaced, most recent
    /// first: a walk alternates its read and answer prompts, and each finds its own system
    /// prompt and examples here instead of running them again.
    saved: Vec<SavedStart>,
}

/// The start of a sequence that ran, with its keys and values.
struct SavedStart {
    ids: Vec<u32>,
    kv: transformer::Saved,
}

/// Sequences kept beside the live one: a few kinds of prompt alternate (a walk's read and
/// answer steps, a pick and its fill).
const SAVED_STARTS: usize = 3;
/// A start shorter than this is not worth keeping, and prompts that share less than this
/// are of different kinds (every prompt shares the chat template's first few tokens).
const MIN_SAVED: usize = 32;
/// The most bytes of keys and values one saved start takes (about 2,700 positions of a
/// 0.5B model, 250 of a 7B): what a system prompt and its examples need.
const SAVED_BYTES: usize = 64 << 20;

impl Weights {
    /// Readies the cache for a prompt of `ids`: where a saved start shares more of it than
    /// the live sequence, the two change places. Returns how many of `ids` the cache holds.
    fn warm_for(&mut self, ids: &[u32]) -> usize {
        let live = common_prefix(&self.cached, ids);
        let best = self
            .saved
            .iter()
            .enumerate()
            .map(|(i, s)| (i, common_prefix(&s.ids, ids)))
            .max_by_key(|&(_, shared)| shared);
        match best {
            Some((i, shared)) if shared >= MIN_SAVED && shared > live => {
                let taken = self.saved.remove(i);
                self.save_live();
                self.model
                    .restore(&mut self.state, &taken.kv, self.pool.threads());
                self.cached = taken.ids;
                shared
            }
            // A prompt of another kind is about to overwrite the live sequence: keep its start.
            _ if live < MIN_SAVED => {
                self.save_live();
                live
            }
            _ => live,
        }
    }

    /// Saves the live sequence's start, in place of any saved one of its kind.
    fn save_live(&mut self) {
        let len = self
            .cached
            .len()
            .min(SAVED_BYTES / self.model.position_bytes().max(1));
        if len < MIN_SAVED {
            return;
        }
        let ids = self.cached[..len].to_vec();
        self.saved
            .retain(|s| common_prefix(&s.ids, &ids) < MIN_SAVED);
        let kv = self.model.save(&self.state, len);
        self.saved.insert(0, SavedStart { ids, kv });
        self.saved.truncate(SAVED_STARTS);
    }
}

struct Inner {
    /// One generation at a time per loaded model; the KV cache lives beside the weights.
    weights: Mutex<Weights>,
    tokenizer: Arc<GgufTokenizer>,
    template: ChatMl,
    context_length: usize,
    /// The vocabulary compiled for constraints, on the first constrained generation (it
    /// takes a moment over a large vocabulary; unconstrained use never pays it).
    grammars: OnceLock<Result<Grammars, String>>,
}

/// A GGUF model loaded in memory. Cheap to clone (shared weights).
#[derive(Clone)]
pub struct LocalModel {
    id: String,
    arch: String,
    inner: Arc<Inner>,
}

/// What the model's chat turn asks for when `json` is set: local models have no constrained
/// decoding, so JSON mode is an instruction appended to the system prompt.
const JSON_INSTRUCTION: &str = "Answer with a single JSON object and nothing else.";

impl LocalModel {
    /// Loads `path` (a `.gguf` file); `name` becomes the id `local:NAME`.
    pub fn load(path: &Path, name: &str) -> Result<Self, LoadError> {
        let io = |e: std::io::Error| LoadError::Io(format!("{}: {e}", path.display()));
        let mut file = std::fs::File::open(path).map_err(io)?;
        let content = gguf_file::Content::read(&mut file).map_err(|e| {
            LoadError::Format(format!(
                "{} is not a readable GGUF file: {e}",
                path.display()
            ))
        })?;
        let get_str = |key: &str| -> Result<String, LoadError> {
            content
                .metadata
                .get(key)
                .and_then(|v| v.to_string().ok().cloned())
                .ok_or_else(|| LoadError::Format(format!("the GGUF has no `{key}`")))
        };
        let arch = get_str("general.architecture")?;
        let context_length = content
            .metadata
            .get(&format!("{arch}.context_length"))
            .and_then(|v| v.to_u32().ok())
            .ok_or_else(|| LoadError::Format(format!("the GGUF has no `{arch}.context_length`")))?
            as usize;
        let template = ChatMl::from_template(&get_str("tokenizer.chat_template")?)?;
        let tokenizer = GgufTokenizer::from_gguf(&content)?;
        let started = std::time::Instant::now();
        let mut tensors = transformer::Tensors {
            content: &content,
            file: &mut file,
            cpu: cpu()?,
        };
        let model = match arch.as_str() {
            "qwen2" => qwen2::load(&mut tensors)?,
            "llama" => llama::load(&mut tensors)?,
            other => {
                return Err(LoadError::Unsupported(format!(
                    "architecture `{other}` (supported: qwen2, llama)"
                )))
            }
        };
        tracing::debug!(
            "weights: {} MB in {:.2} s",
            model.bytes() >> 20,
            started.elapsed().as_secs_f64()
        );
        let weights = Weights {
            model,
            state: transformer::State::default(),
            pool: pool::Pool::new(candle_core::utils::get_num_threads()),
            cached: Vec::new(),
            saved: Vec::new(),
        };
        tracing::debug!(
            "loaded {} ({arch}, context {context_length})",
            path.display()
        );
        Ok(Self {
            id: format!("local:{name}"),
            arch,
            inner: Arc::new(Inner {
                weights: Mutex::new(weights),
                tokenizer: Arc::new(tokenizer),
                template,
                context_length,
                grammars: OnceLock::new(),
            }),
        })
    }

    /// `qwen2` or `llama`.
    pub fn architecture(&self) -> &str {
        &self.arch
    }

    pub fn tokenizer(&self) -> &GgufTokenizer {
        &self.inner.tokenizer
    }

    /// The prompt text for `messages` (ChatML, ending with the assistant's turn).
    pub fn render(&self, messages: &[Message]) -> String {
        self.inner.template.render(messages)
    }

    /// Exclusive use of the model for running token ids through it directly (benchmarks,
    /// tests that compare logits). Generation waits until the session is dropped.
    pub fn session(&self) -> Result<Session<'_>, ChatError> {
        let weights = self.inner.weights.lock().map_err(|_| poisoned())?;
        Ok(Session {
            inner: &self.inner,
            weights,
        })
    }

    /// How likely the model finds each item's continuation after its prompt, on the calling
    /// thread: summed log-probabilities, in the items' order.
    pub fn score_blocking(&self, items: &[ScoreItem]) -> Result<Scores, ChatError> {
        self.inner.score(items)
    }

    /// Generates on the calling thread, handing each delta to `emit`; stops early (without
    /// error) when `emit` returns false. Says where the time went.
    pub fn generate(
        &self,
        request: &ChatRequest,
        emit: &mut dyn FnMut(Delta) -> bool,
    ) -> Result<GenerationStats, ChatError> {
        self.inner.generate(request, emit)
    }

    /// The vocabulary as constraints see it (built on first use; see [`crate::grammar`]).
    pub fn grammars(&self) -> Result<&Grammars, ChatError> {
        self.inner.grammars()
    }
}

/// A model held for direct forward passes; see [`LocalModel::session`].
pub struct Session<'a> {
    inner: &'a Inner,
    weights: MutexGuard<'a, Weights>,
}

impl Session<'_> {
    /// Runs `ids` through the model starting at position `pos` (0 starts a new sequence and
    /// drops the KV cache) and returns the logits after the last one.
    pub fn forward(&mut self, ids: &[u32], pos: usize) -> Result<Vec<f32>, ChatError> {
        self.inner.forward(&mut self.weights, ids, pos)
    }

    /// The perplexity of `ids` read as one sequence from an empty context: the exponential of
    /// the mean negative log-likelihood of each token after those before it (the first is
    /// not predicted). Runs `window` tokens a pass, so at most `window` rows of logits are
    /// held at once.
    pub fn perplexity(&mut self, ids: &[u32], window: usize) -> Result<f64, ChatError> {
        if ids.len() < 2 || window == 0 {
            return Err(ChatError::Permanent(
                "perplexity needs two tokens or more, and a window of one or more".into(),
            ));
        }
        let mut total = 0.0f64;
        let mut start = 0;
        // The logits after ids[i] predict ids[i + 1]: the last id is only predicted.
        while start < ids.len() - 1 {
            let end = (start + window).min(ids.len() - 1);
            let run = &ids[start..end];
            let logits = self
                .inner
                .forward_tail(&mut self.weights, run, start, run.len())?;
            let vocab = logits.len() / run.len();
            total += logits
                .chunks_exact(vocab)
                .zip(&ids[start + 1..=end])
                .map(|(row, &next)| f64::from(log_softmax_at(row, next as usize)))
                .sum::<f64>();
            start = end;
        }
        Ok((-total / (ids.len() - 1) as f64).exp())
    }
}

fn poisoned() -> ChatError {
    ChatError::Permanent("the local model crashed in an earlier generation".into())
}

impl Inner {
    fn forward(
        &self,
        weights: &mut Weights,
        ids: &[u32],
        pos: usize,
    ) -> Result<Vec<f32>, ChatError> {
        self.forward_tail(weights, ids, pos, 1)
    }

    /// [`Inner::forward`] with the logits after each of the last `tail` ids.
    fn forward_tail(
        &self,
        weights: &mut Weights,
        ids: &[u32],
        pos: usize,
        tail: usize,
    ) -> Result<Vec<f32>, ChatError> {
        if ids.is_empty() {
            return Err(ChatError::Permanent("no tokens to run".into()));
        }
        if pos + ids.len() > self.context_length {
            return Err(ChatError::ContextTooLong {
                needed: pos + ids.len(),
                limit: self.context_length,
            });
        }
        let w = &mut *weights;
        if let Some(bad) = ids.iter().find(|&&id| id as usize >= w.model.vocab()) {
            return Err(ChatError::Permanent(format!(
                "token id {bad} is outside the vocabulary of {}",
                w.model.vocab()
            )));
        }
        if pos > w.state.len() {
            return Err(ChatError::Permanent(format!(
                "position {pos} is past the {} tokens run so far",
                w.state.len()
            )));
        }
        // Emptied first: a forward pass that panics leaves no claim on the cache behind.
        let mut cached = std::mem::take(&mut w.cached);
        let logits = w.model.forward_tail(&mut w.state, &w.pool, ids, pos, tail);
        cached.truncate(pos);
        cached.extend_from_slice(ids);
        w.cached = cached;
        Ok(logits)
    }

    /// The summed log-probability (natural log) of each item's continuation after its
    /// prompt. The KV cache is kept across items (and calls): a prompt sharing its start with
    /// what ran before (the same system prompt) runs only from where they differ.
    fn score(&self, items: &[ScoreItem]) -> Result<Scores, ChatError> {
        let mut weights = self.weights.lock().map_err(|_| poisoned())?;
        let mut scores = Vec::with_capacity(items.len());
        let mut ran = 0;
        for item in items {
            let mut ids = self.prompt_ids(&ChatRequest {
                messages: item.messages.clone(),
                ..ChatRequest::default()
            })?;
            let prompt_len = ids.len();
            if prompt_len == 0 {
                return Err(ChatError::Permanent(
                    "an empty prompt to score after".into(),
                ));
            }
            let continuation = self
                .tokenizer
                .encode(&item.continuation)
                .map_err(|e| ChatError::Permanent(format!("tokenizer failed: {e}")))?;
            if continuation.is_empty() {
                scores.push(0.0);
                continue;
            }
            ids.extend_from_slice(&continuation);
            // The logits after the prompt's last token and after each continuation token but
            // the last predict the continuation's tokens; at least one id runs anew.
            let shared = weights.warm_for(&ids).min(prompt_len - 1);
            let run = &ids[shared..ids.len() - 1];
            ran += run.len();
            let logits = self.forward_tail(&mut weights, run, shared, continuation.len())?;
            let vocab = logits.len() / continuation.len();
            let total: f32 = logits
                .chunks_exact(vocab)
                .zip(&continuation)
                .map(|(row, &next)| log_softmax_at(row, next as usize))
                .sum();
            scores.push(total);
        }
        Ok(Scores {
            scores,
            usage: Usage {
                prompt_tokens: ran,
                completion_tokens: 0,
                forced_tokens: 0,
            },
        })
    }

    fn prompt_ids(&self, request: &ChatRequest) -> Result<Vec<u32>, ChatError> {
        let mut messages = request.messages.clone();
        if request.json {
            match messages.first_mut() {
                Some(first) if first.role == Role::System => {
                    first.content = format!("{}\n\n{JSON_INSTRUCTION}", first.content);
                }
                _ => messages.insert(0, Message::system(JSON_INSTRUCTION)),
            }
        }
        let prompt = self.template.render(&messages);
        self.tokenizer
            .encode(&prompt)
            .map_err(|e| ChatError::Permanent(format!("tokenizer failed: {e}")))
    }

    fn generate(
        &self,
        request: &ChatRequest,
        emit: &mut dyn FnMut(Delta) -> bool,
    ) -> Result<GenerationStats, ChatError> {
        if !request.tools.is_empty() {
            return Err(ChatError::Permanent(
                "local models take no tool definitions; use a strategy's JSON action protocol"
                    .into(),
            ));
        }
        if request.constraint.is_some() && !request.openings.is_empty() {
            return Err(ChatError::Permanent(
                "a request takes a constraint or openings, not both".into(),
            ));
        }
        let mut stats = GenerationStats::default();
        // Compiled before any model work: a constraint that does not compile costs nothing.
        let mut matcher = match &request.constraint {
            Some(constraint) => {
                let started = Instant::now();
                let matcher = self.grammars()?.matcher(constraint)?;
                stats.compile_seconds = started.elapsed().as_secs_f64();
                Some(matcher)
            }
            None => None,
        };
        let ids = self.prompt_ids(request)?;
        if ids.len() >= self.context_length {
            return Err(ChatError::ContextTooLong {
                needed: ids.len() + 1,
                limit: self.context_length,
            });
        }
        let budget = request
            .sampling
            .max_tokens
            .min(self.context_length - ids.len());
        let s = &request.sampling;
        let mut sampler = Sampler::new(s.seed, s.temperature, s.top_p);
        let mut out = Writer::new(&s.stop);
        // Dropped once the completion is free: generation without openings pays nothing.
        let mut openings = Openings::new(&request.openings);

        let mut weights = self.weights.lock().map_err(|_| poisoned())?;
        let mut generated: Vec<u32> = Vec::new();
        // The prompt's start that the cache already holds is not run again; at least its
        // last id runs, for the logits after it.
        let reused = weights.warm_for(&ids).min(ids.len().saturating_sub(1));
        stats.reused = reused;
        // What runs through the model next: the prompt, then each sampled token with the
        // tokens the constraint forces after it, in one batch.
        let mut run: Vec<u32> = ids[reused..].to_vec();
        if let Some(matcher) = &mut matcher {
            let forced = forced_tokens(matcher, budget)?;
            stats.forced += forced.len();
            generated.extend_from_slice(&forced);
            run.extend_from_slice(&forced);
            if out.write(&self.tokenizer, &generated, emit)? != Flow::Go {
                return Ok(stats);
            }
        }
        let mut pos = reused;
        let mut finish = FinishReason::Length;
        loop {
            if matcher.as_ref().is_some_and(|m| m.is_stopped()) {
                finish = FinishReason::Stop;
                break;
            }
            if generated.len() >= budget {
                break;
            }
            let started = Instant::now();
            let mut logits = self.forward(&mut weights, &run, pos)?;
            let spent = started.elapsed().as_secs_f64();
            if pos == reused {
                stats.prompt_seconds = spent;
            } else {
                stats.forward_seconds += spent;
            }
            pos += run.len();
            if let Some(held) = &openings {
                match held.allowed(&self.tokenizer.token_bytes) {
                    Some(allowed) => logits = only(&logits, &allowed),
                    None => openings = None,
                }
            }
            if let Some(matcher) = &mut matcher {
                let started = Instant::now();
                let mask = matcher.compute_mask().map_err(grammar_failed)?;
                grammar::mask_logits(&mut logits, &mask);
                stats.mask_seconds += started.elapsed().as_secs_f64();
            }
            let next = sampler.sample(&logits).ok_or_else(|| {
                ChatError::Permanent("the local model ruled out every token".into())
            })?;
            stats.sampled += 1;
            if self.tokenizer.stop_ids.contains(&next) {
                finish = FinishReason::Stop;
                break;
            }
            generated.push(next);
            run = vec![next];
            if let (Some(held), Some(bytes)) =
                (&mut openings, self.tokenizer.token_bytes.get(next as usize))
            {
                held.written.extend_from_slice(bytes);
            }
            if let Some(matcher) = &mut matcher {
                let started = Instant::now();
                matcher.consume_token(next).map_err(grammar_failed)?;
                let forced = forced_tokens(matcher, budget - generated.len())?;
                stats.mask_seconds += started.elapsed().as_secs_f64();
                stats.forced += forced.len();
                generated.extend_from_slice(&forced);
                run.extend_from_slice(&forced);
            }
            match out.write(&self.tokenizer, &generated, emit)? {
                Flow::Go => {}
                Flow::StopString => {
                    finish = FinishReason::Stop;
                    break;
                }
                Flow::Cancelled => return Ok(stats),
            }
        }
        drop(weights);
        // Text held back as a possible start of a stop string is real text when the turn ended
        // otherwise (after a stop string the matcher holds nothing).
        let rest = out.stops.finish();
        if !rest.is_empty() && !emit(Delta::Text { text: rest }) {
            return Ok(stats);
        }
        let usage = Usage {
            prompt_tokens: ids.len(),
            completion_tokens: generated.len(),
            forced_tokens: stats.forced,
        };
        emit(Delta::Done { usage, finish });
        Ok(stats)
    }

    /// The vocabulary compiled for constraints, built on first use.
    fn grammars(&self) -> Result<&Grammars, ChatError> {
        self.grammars
            .get_or_init(|| {
                let started = Instant::now();
                let built = Grammars::new(self.tokenizer.clone());
                tracing::debug!(
                    "constraint trie built in {:.2} s",
                    started.elapsed().as_secs_f64()
                );
                built
            })
            .as_ref()
            .map_err(|e| ChatError::Permanent(format!("constraints unavailable: {e}")))
    }
}

/// Where one constrained or free generation spent its time, beside what it produced.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GenerationStats {
    /// Tokens chosen by sampling.
    pub sampled: usize,
    /// Tokens the constraint forced, run through the model in batches.
    pub forced: usize,
    /// Compiling the constraint.
    pub compile_seconds: f64,
    /// Computing the constraint's masks and forced tokens.
    pub mask_seconds: f64,
    /// Running the prompt (with the tokens forced before the first choice).
    pub prompt_seconds: f64,
    /// Running the model on every later batch: a sampled token and those forced after it.
    pub forward_seconds: f64,
    /// Prompt tokens not run again: the start the previous call left in the KV cache.
    pub reused: usize,
}

/// How many ids `a` and `b` start with alike.
fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The tokens the constraint forces now (at most `room`), already consumed by it.
fn forced_tokens(matcher: &mut Matcher, room: usize) -> Result<Vec<u32>, ChatError> {
    let mut forced = matcher.compute_ff_tokens();
    forced.truncate(room);
    if !forced.is_empty() {
        matcher.consume_tokens(&forced).map_err(grammar_failed)?;
    }
    Ok(forced)
}

fn grammar_failed(e: impl std::fmt::Display) -> ChatError {
    ChatError::Permanent(format!("constrained decoding failed: {e}"))
}

/// What [`Writer::write`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Go,
    /// A stop string was reached.
    StopString,
    /// The receiver wants no more.
    Cancelled,
}

/// Turns the generated tokens into text deltas: whole characters only, cut at stop strings.
struct Writer {
    stops: StopMatcher,
    /// Bytes of the decoded completion already emitted.
    shown: usize,
}

impl Writer {
    fn new(stops: &[String]) -> Self {
        Self {
            stops: StopMatcher::new(stops),
            shown: 0,
        }
    }

    fn write(
        &mut self,
        tokenizer: &GgufTokenizer,
        generated: &[u32],
        emit: &mut dyn FnMut(Delta) -> bool,
    ) -> Result<Flow, ChatError> {
        let text = tokenizer.decode(generated).map_err(ChatError::Permanent)?;
        // A character split across tokens decodes as U+FFFD until its last byte arrives.
        if text.ends_with('\u{FFFD}') || text.len() <= self.shown {
            return Ok(Flow::Go);
        }
        let piece = &text[self.shown..];
        self.shown = text.len();
        let (out, reached_stop) = match self.stops.push(piece) {
            StopCheck::Continue(out) => (out, false),
            StopCheck::Stop(out) => (out, true),
        };
        if !out.is_empty() && !emit(Delta::Text { text: out }) {
            return Ok(Flow::Cancelled);
        }
        Ok(if reached_stop {
            Flow::StopString
        } else {
            Flow::Go
        })
    }
}

/// `ln softmax(logits)[at]`.
fn log_softmax_at(logits: &[f32], at: usize) -> f32 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = logits.iter().map(|l| (l - max).exp()).sum();
    logits[at] - max - sum.ln()
}

/// The openings a completion must start with (`ChatRequest::openings`), as bytes. Checked
/// on text, not on one tokenization: a token may end past an opening (`",` after an id
/// opening that ends with `"`), so the model writes the opening the way it would tokenize it.
struct Openings {
    texts: Vec<Vec<u8>>,
    /// What the completion's tokens have written so far.
    written: Vec<u8>,
}

impl Openings {
    /// `None` when there are none to hold the completion to.
    fn new(openings: &[String]) -> Option<Self> {
        (!openings.is_empty()).then(|| Self {
            texts: openings.iter().map(|o| o.as_bytes().to_vec()).collect(),
            written: Vec::new(),
        })
    }

    /// The tokens (by the bytes each writes) that keep what is written on the way to an
    /// opening; `None` when the completion is free: an opening is written in full (or no
    /// token can go on, which cannot happen with a byte-level vocabulary).
    fn allowed(&self, vocab: &[Vec<u8>]) -> Option<Vec<u32>> {
        let written = self.written.as_slice();
        if self.texts.iter().any(|o| written.starts_with(o)) {
            return None;
        }
        let rests: Vec<&[u8]> = self
            .texts
            .iter()
            .filter_map(|o| o.strip_prefix(written))
            .collect();
        let fits = |token: &[u8]| {
            !token.is_empty()
                && rests
                    .iter()
                    .any(|rest| rest.starts_with(token) || token.starts_with(rest))
        };
        let allowed: Vec<u32> = (0..vocab.len() as u32)
            .filter(|&id| fits(&vocab[id as usize]))
            .collect();
        (!allowed.is_empty()).then_some(allowed)
    }
}

/// `logits` with every token but `allowed` ruled out.
fn only(logits: &[f32], allowed: &[u32]) -> Vec<f32> {
    let mut masked = vec![f32::NEG_INFINITY; logits.len()];
    for &token in allowed {
        if let Some(&logit) = logits.get(token as usize) {
            masked[token as usize] = logit;
        }
    }
    masked
}

impl ChatModel for LocalModel {
    fn id(&self) -> &str {
        &self.id
    }

    fn context_length(&self) -> Option<usize> {
        Some(self.inner.context_length)
    }

    fn supports_tools(&self) -> bool {
        false
    }

    /// Generation runs on a thread of its own, off the async runtime; the stream is fed
    /// through a bounded channel, and dropping the stream stops generation at the next token.
    fn stream(&self, request: ChatRequest) -> DeltaStream {
        let (tx, stream) = channel::bounded(64);
        let model = self.clone();
        std::thread::Builder::new()
            .name("walkrag-generate".into())
            .spawn(move || run(model, request, tx))
            .expect("spawn a generation thread");
        stream
    }

    fn can_score(&self) -> bool {
        true
    }

    /// On a thread of its own, like generation.
    fn score(&self, items: Vec<ScoreItem>) -> ScoreFuture {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let model = self.clone();
        std::thread::Builder::new()
            .name("walkrag-score".into())
            .spawn(move || {
                let _ = tx.send(model.score_blocking(&items));
            })
            .expect("spawn a scoring thread");
        Box::pin(async move {
            rx.await
                .unwrap_or_else(|_| Err(ChatError::Permanent("the scoring thread died".into())))
        })
    }
}

fn run(model: LocalModel, request: ChatRequest, tx: Sender) {
    let result = model.generate(&request, &mut |delta| tx.send(Ok(delta)));
    if let Err(e) = result {
        tx.send(Err(e));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openings_allow_tokens_that_write_on_towards_one_or_past_its_end() {
        let vocab: Vec<Vec<u8>> = ["{", "\"", "id", "\",", "idx", "x", ""]
            .iter()
            .map(|t| t.as_bytes().to_vec())
            .collect();
        let after = |written: &[u8]| {
            let mut openings = Openings::new(&["{\"id\"".into(), "x".into()]).unwrap();
            openings.written = written.to_vec();
            openings.allowed(&vocab)
        };
        assert_eq!(after(b""), Some(vec![0, 5]));
        assert_eq!(after(b"{"), Some(vec![1]));
        assert_eq!(after(b"{\""), Some(vec![2]));
        // `",` ends past the opening: allowed, as the model would write it.
        assert_eq!(after(b"{\"id"), Some(vec![1, 3]));
        assert_eq!(after(b"{\"id\","), None);
        assert_eq!(after(b"xyz"), None);
        assert!(Openings::new(&[]).is_none());
    }

    #[test]
    fn masked_logits_keep_only_allowed_tokens() {
        let masked = only(&[0.5, 2.0, -1.0, 3.0], &[0, 2, 7]);
        assert_eq!(masked[0], 0.5);
        assert_eq!(masked[2], -1.0);
        assert!(masked[1].is_infinite() && masked[3].is_infinite());
    }
}
