//! What every strategy does along the way: retrieving, calling the model and recording all
//! of it in the trace and the event stream. The answer step is the reader's
//! ([`crate::reader::answer`]).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use walkrag_core::{ChatError, ChatModel, ChatRequest, Completion};
use walkrag_engine::{ChunkId, ChunkRef, Keep};

use crate::answer::{Answer, Cost, Termination};
use crate::control::Control;
use crate::reader::answer::Answered;
use crate::reader::llm;
use crate::search::passages;
use crate::strategy::{AnswerModel, Env, Strategy, StrategyError};
use crate::trace::event::{Event, Sink};
use crate::trace::{Origin, Retrieval, RetrievedChunk, Step, Trace};

/// One question being answered.
pub(crate) struct Run<'a> {
    pub env: Env<'a>,
    sink: &'a mut dyn Sink,
    pub trace: Trace,
    pub cost: Cost,
    started: Instant,
    /// Chunks shown to the model, in the order they were first shown.
    read: Vec<ChunkId>,
    read_set: HashSet<ChunkId>,
    pub control: Control,
    /// The model of the answer step where it is not the chat model (`--answer-model`: a
    /// cheap model walks, a stronger one answers).
    pub answer_model: Option<Arc<dyn ChatModel>>,
}

impl<'a> Run<'a> {
    pub fn new(
        strategy: &dyn Strategy,
        question: &str,
        env: Env<'a>,
        sink: &'a mut dyn Sink,
    ) -> Self {
        let trace = Trace {
            question: question.to_string(),
            strategy: strategy.name().to_string(),
            model: env.model.id().to_string(),
            embedder: env.embedder.id().to_string(),
            config: strategy.config(),
            steps: Vec::new(),
        };
        Self {
            env,
            sink,
            trace,
            cost: Cost::default(),
            started: Instant::now(),
            read: Vec::new(),
            read_set: HashSet::new(),
            control: Control::default(),
            answer_model: None,
        }
    }

    /// Sends the answer step to `model` where one is given (the strategy's `answer_model`).
    pub fn answer_with(&mut self, model: &Option<AnswerModel>) {
        self.answer_model = model.as_ref().map(|m| m.0.clone());
    }

    pub fn emit(&mut self, event: Event) {
        self.sink.emit(event);
    }

    /// Records something the user should know, in the trace and as an event.
    pub fn note(&mut self, cycle: usize, message: String) {
        tracing::info!("{message}");
        self.trace.steps.push(Step::Note {
            cycle,
            message: message.clone(),
        });
        self.emit(Event::Note { message });
    }

    /// Marks chunks as shown to the model.
    pub fn mark_read(&mut self, ids: &[ChunkId]) {
        for &id in ids {
            if self.read_set.insert(id) {
                self.read.push(id);
            }
        }
    }

    /// Chunks shown to the model so far, in the order first shown.
    pub fn read(&self) -> &[ChunkId] {
        &self.read
    }

    /// Time since the question was asked.
    pub fn elapsed(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// Embeds `query` and returns the `k` nearest chunks, best first; with `only_new`, chunks
    /// already read are passed over (and `k` new ones returned where the index has them).
    pub fn retrieve(
        &mut self,
        cycle: usize,
        origin: Origin,
        query: &str,
        k: usize,
        only_new: bool,
    ) -> Result<Vec<RetrievedChunk>, StrategyError> {
        let started = Instant::now();
        let vector = self.env.embedder.embed_one(query)?;
        Ok(self.search(cycle, origin, query, &vector, k, only_new, started))
    }

    /// [`retrieve`](Self::retrieve) with `query` already embedded as `vector` (a strategy that
    /// needs the question's vector for more than one search embeds it once).
    pub fn retrieve_embedded(
        &mut self,
        cycle: usize,
        origin: Origin,
        query: &str,
        vector: &[f32],
        k: usize,
        only_new: bool,
    ) -> Vec<RetrievedChunk> {
        self.search(cycle, origin, query, vector, k, only_new, Instant::now())
    }

    #[allow(clippy::too_many_arguments)]
    fn search(
        &mut self,
        cycle: usize,
        origin: Origin,
        query: &str,
        vector: &[f32],
        k: usize,
        only_new: bool,
        started: Instant,
    ) -> Vec<RetrievedChunk> {
        let read = &self.read_set;
        let unread = |c: ChunkRef<'_>| !read.contains(&c.id());
        let options = self
            .env
            .search
            .options(only_new.then_some(&unread as Keep<'_>));
        let index = self.env.index;
        let hits: Vec<RetrievedChunk> = index
            .search_with(vector, k, &options)
            .into_iter()
            .map(|hit| {
                let c = index.chunk(hit.row);
                let new = !read.contains(&c.id());
                passages::retrieved(&c, hit.score, new)
            })
            .collect();
        let ms = started.elapsed().as_millis() as u64;
        self.record_retrieval(cycle, origin, query.to_string(), k, hits.clone(), ms);
        hits
    }

    /// Records chunks found for `query` (a search, or how else they were found), in the trace
    /// and as an event.
    pub fn record_retrieval(
        &mut self,
        cycle: usize,
        origin: Origin,
        query: String,
        k: usize,
        hits: Vec<RetrievedChunk>,
        ms: u64,
    ) {
        self.emit(Event::Retrieved {
            cycle,
            origin,
            query: query.clone(),
            chunks: hits.clone(),
        });
        self.trace.steps.push(Step::Retrieve(Retrieval {
            cycle,
            origin,
            query,
            k,
            hits,
            ms,
        }));
    }

    /// The documents (indices into the index's list) of the `k` passages nearest `vector`,
    /// nearest first, each once; the search is recorded like any other.
    pub fn documents_near(
        &mut self,
        cycle: usize,
        query: &str,
        vector: &[f32],
        k: usize,
    ) -> Vec<usize> {
        let all = self.env.index.documents();
        let mut near: Vec<usize> = Vec::new();
        for hit in self.retrieve_embedded(cycle, Origin::Question, query, vector, k, false) {
            if let Some(d) = all.iter().position(|d| d.doc.id.0 == hit.doc_id) {
                if !near.contains(&d) {
                    near.push(d);
                }
            }
        }
        near
    }

    /// Whether a chunk has been shown to the model.
    pub fn is_read(&self, id: ChunkId) -> bool {
        self.read_set.contains(&id)
    }

    /// Calls the model, streaming its text to the event stream as `token` events when
    /// `stream_tokens` is set, and records the call.
    pub async fn chat(
        &mut self,
        cycle: usize,
        purpose: &str,
        request: ChatRequest,
        stream_tokens: bool,
    ) -> Result<Completion, ChatError> {
        let mut on_text = |text: &str| {
            if stream_tokens {
                vec![Event::Token {
                    text: text.to_string(),
                }]
            } else {
                Vec::new()
            }
        };
        self.chat_with(cycle, purpose, request, &mut on_text).await
    }

    /// [`chat`](Self::chat) with the answer model where one is set: tokens stream, and the
    /// trace names the model.
    pub(crate) async fn chat_answer(
        &mut self,
        cycle: usize,
        request: ChatRequest,
    ) -> Result<Completion, ChatError> {
        let Some(model) = self.answer_model.clone() else {
            return self.chat(cycle, "answer", request, true).await;
        };
        let mut on_text = |text: &str| {
            vec![Event::Token {
                text: text.to_string(),
            }]
        };
        self.chat_on(&*model, true, cycle, "answer", request, &mut on_text)
            .await
    }

    /// Calls the model; `on_text` sees each piece of text as it arrives and returns events to
    /// emit at once. When the walk is stopped the generation is cancelled and the text so far
    /// returned.
    pub async fn chat_with(
        &mut self,
        cycle: usize,
        purpose: &str,
        request: ChatRequest,
        on_text: &mut (dyn FnMut(&str) -> Vec<Event> + Send),
    ) -> Result<Completion, ChatError> {
        let model = self.env.model;
        self.chat_on(model, false, cycle, purpose, request, on_text)
            .await
    }

    /// [`chat_with`](Self::chat_with) on `model`; the trace names it when it is `other`
    /// than the chat model.
    async fn chat_on(
        &mut self,
        model: &dyn ChatModel,
        other: bool,
        cycle: usize,
        purpose: &str,
        request: ChatRequest,
        on_text: &mut (dyn FnMut(&str) -> Vec<Event> + Send),
    ) -> Result<Completion, ChatError> {
        let control = self.control.clone();
        let sink = &mut *self.sink;
        let mut emit_text = |text: &str| {
            for event in on_text(text) {
                sink.emit(event);
            }
        };
        let (result, mut call) =
            llm::call(model, cycle, purpose, request, &control, &mut emit_text).await;
        if other {
            call.model = Some(model.id().to_string());
        }
        self.trace.steps.push(Step::Llm(call));
        if let Ok(out) = &result {
            self.cost.add_call(out.usage);
        }
        result
    }

    pub fn finish(
        self,
        answered: Answered,
        ranked: Vec<ChunkId>,
        termination: Termination,
        cycles: usize,
    ) -> Answer {
        Answer {
            answer: answered.reply.answer,
            text: answered.text,
            found: answered.reply.found,
            citations: answered.citations,
            shown: answered.shown,
            kind: answered.kind,
            comparison: answered.comparison,
            ranked,
            termination,
            cycles,
            usage: self.cost,
            elapsed_ms: self.started.elapsed().as_millis() as u64,
            trace: self.trace,
        }
    }
}
