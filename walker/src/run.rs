//! What every strategy does along the way: retrieving, calling the model, answering, and
//! recording all of it in the trace and the event stream.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use walkrag_core::{ChatError, ChatModel, ChatRequest, Completion, Message, ScoreItem};
use walkrag_engine::{ChunkId, ChunkRef, Keep};

use crate::answer::{Answer, Cost, Termination};
use crate::control::Control;
use crate::reader::dates;
use crate::reader::llm;
use crate::reader::prompt;
use crate::reader::reply::{self, Match, Reply};
use crate::search::passages;
use crate::strategy::{Env, Strategy, StrategyError};
use crate::trace::event::{Event, Sink};
use crate::trace::{Origin, Retrieval, RetrievedChunk, Step, Trace};

mod compare;

/// The most tokens an answer may take: the format asks for a short answer, its sources and
/// one or two sentences; more means the model is rambling.
const ANSWER_MAX_TOKENS: usize = 200;

/// How much likelier (natural log) than "no" a written "yes" must be to stand. Chosen on 40
/// yes/no questions written blind over the HotpotQA dev corpus, half of them "yes"
/// (`docs/results/reader-yes/`): the 1.5B's written answers there were right for 21 of 40,
/// with this margin 27 (links); margins from 1 to 2 nats gave 25 to 27.
const YES_MARGIN: f32 = 1.0;

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
    /// The model of the answer step where it is not the chat model (`--reader-model`: a
    /// cheap model walks, a stronger one answers).
    pub answer_model: Option<Arc<dyn ChatModel>>,
}

/// The answer step's result.
pub(crate) struct Answered {
    pub reply: Reply,
    pub text: String,
    /// Cited chunks that were shown, in order of citation.
    pub citations: Vec<ChunkId>,
    /// The passages the answer step was shown, in prompt order (after any dropped to fit).
    pub shown: Vec<ChunkId>,
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
            answer_model: strategy.answer_model().map(|m| m.0.clone()),
        }
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
    async fn chat_answer(
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

    /// The answer step: the question, optional notes (facts gathered), and the passages of
    /// `shown` in; a short cited answer out, streamed as `token` events. When the prompt does
    /// not fit the model, the last passages are dropped until it does.
    pub async fn answer(
        &mut self,
        cycle: usize,
        question: &str,
        facts: Option<&str>,
        shown: &[ChunkId],
    ) -> Result<Answered, StrategyError> {
        let mut shown = shown.to_vec();
        // A stop asks for the answer from what was found: the answer itself is not cut.
        let control = std::mem::take(&mut self.control);
        let mut messages: Vec<Message>;
        let completion = loop {
            let passages = passages::render(self.env.index, &shown);
            // Facts are notes beside the passages, never instead of them: a small model's
            // facts are often the question's own words.
            let notes = match facts {
                Some(facts) => format!(
                    "\nNotes taken while reading (check them against the passages):\n{facts}\n"
                ),
                None => String::new(),
            };
            let mut user = prompt::render(
                prompt::ANSWER_USER,
                &[
                    ("passages", passages.as_str()),
                    ("notes", notes.as_str()),
                    ("question", question),
                ],
            );
            // Told only when the question is clearly in another language: English prompts
            // stay as they are. Such an answer is written, not copied from the passages.
            let language = crate::reader::language::not_english(question);
            if let Some(language) = language {
                user.push_str(&format!(
                    "\nThe question is in {language}: write the answer and the explanation in \
                     {language} (keep the words \"Answer:\" and \"Sources:\")."
                ));
            }
            let copy = language
                .is_none()
                .then(|| format!("{passages}\n{question}"));
            let ids: Vec<String> = shown.iter().map(ToString::to_string).collect();
            let request = ChatRequest {
                constraint: Some(crate::reader::constrain::answer(&ids, copy.as_deref())),
                ..prompt::request_with_examples(
                    prompt::ANSWER_SYSTEM,
                    prompt::ANSWER_EXAMPLES,
                    user,
                    ANSWER_MAX_TOKENS,
                )
            };
            messages = request.messages.clone();
            match self.chat_answer(cycle, request).await {
                Err(ChatError::ContextTooLong { needed, limit }) if shown.len() > 1 => {
                    let dropped = shown.pop().expect("more than one passage");
                    self.note(
                        cycle,
                        format!(
                            "the prompt needs {needed} tokens, the model takes {limit}: \
                             answering without passage {dropped}"
                        ),
                    );
                }
                result => break result,
            }
        };
        self.control = control;
        let completion = completion?;
        let reply = reply::parse(&completion.text);
        let (matched, unknown) = reply::match_ids(&completion.text, &shown);
        let mut citations = Vec::new();
        for m in matched {
            if let Match::Repaired(id) = m {
                self.note(
                    cycle,
                    format!("the answer cites a near miss of {id}'s id, read as {id}"),
                );
            }
            citations.push(m.id());
        }
        for token in unknown {
            self.note(
                cycle,
                format!("the answer cites {token}, a passage it was not shown; citation dropped"),
            );
        }
        let answered = Answered {
            reply,
            text: completion.text,
            citations,
            shown,
        };
        let answered = self.weigh_yes(cycle, messages, answered).await;
        let answered = self.compare_sides(cycle, question, answered).await;
        Ok(self.hold_to_dates(cycle, question, answered))
    }

    /// `answered`, its yes weighed again where the answer model can weigh: a small model
    /// says "yes" to most yes/no questions whatever the passages say, so a written "yes"
    /// stands only where the model finds it [`YES_MARGIN`] nats likelier than "no" after the
    /// same prompt; else the answer is "no". Both weights go into the trace.
    async fn weigh_yes(
        &mut self,
        cycle: usize,
        messages: Vec<Message>,
        answered: Answered,
    ) -> Answered {
        if !answered.reply.answer.eq_ignore_ascii_case("yes") {
            return answered;
        }
        let answer_model = self.answer_model.clone();
        let model = answer_model.as_deref().unwrap_or(self.env.model);
        if !model.can_score() {
            return answered;
        }
        let continuations = ["yes", "no"].map(|answer| format!("Answer: {answer}"));
        let Some(scores) = self
            .weigh(
                cycle,
                model,
                "answer: yes against no",
                messages,
                continuations.to_vec(),
                "yes and no",
            )
            .await
        else {
            return answered;
        };
        let margin = scores[0] - scores[1];
        if margin > YES_MARGIN {
            return answered;
        }
        self.note(
            cycle,
            format!(
                "\"yes\" is only {margin:.2} nats likelier than \"no\" (it needs \
                 {YES_MARGIN}): answered \"no\""
            ),
        );
        let text = match answered.text.split_once('\n') {
            Some((_, rest)) => format!("Answer: no\n{rest}"),
            None => "Answer: no".to_string(),
        };
        Answered {
            reply: Reply {
                answer: "no".into(),
                found: true,
            },
            text,
            ..answered
        }
    }

    /// The weight of each of `continuations` after `messages` by `model`, recorded in the
    /// trace as `purpose`; `None` where the model fails, noted as "`what` could not be
    /// weighed".
    async fn weigh(
        &mut self,
        cycle: usize,
        model: &dyn ChatModel,
        purpose: &str,
        messages: Vec<Message>,
        continuations: Vec<String>,
        what: &str,
    ) -> Option<Vec<f32>> {
        let items = continuations
            .into_iter()
            .map(|continuation| ScoreItem {
                messages: messages.clone(),
                continuation,
            })
            .collect();
        let scores = llm::score_recorded(
            model,
            cycle,
            purpose,
            items,
            &mut self.trace.steps,
            &mut self.cost,
        )
        .await;
        match scores {
            Ok(scores) => Some(scores),
            Err(e) => {
                self.note(cycle, format!("{what} could not be weighed: {e}"));
                None
            }
        }
    }

    /// `answered`, or "not found" where the question names days or months (`the March 2024
    /// report`, `the invoice dated 2024-06-12`) and the cited sources' documents (the passages
    /// shown when none is cited) hold none of them: the answer then comes from another report
    /// or invoice than the one asked about. A document holds a date in its title, text or
    /// metadata (a front matter's `date:`).
    fn hold_to_dates(&mut self, cycle: usize, question: &str, answered: Answered) -> Answered {
        if !answered.reply.found {
            return answered;
        }
        let index = self.env.index;
        let cited = if answered.citations.is_empty() {
            &answered.shown
        } else {
            &answered.citations
        };
        // Each cited document once, read in place (its text is not copied), and only where
        // the question names a date.
        let mut seen = HashSet::new();
        let sources = cited
            .iter()
            .filter_map(|&id| index.row_of(id))
            .map(|row| index.chunk(row).doc)
            .filter(|doc| seen.insert(&doc.id))
            .flat_map(|doc| {
                let metadata = serde_json::to_string(&doc.metadata).unwrap_or_default();
                [
                    Cow::Borrowed(doc.title.as_str()),
                    Cow::Owned(metadata),
                    Cow::Borrowed(doc.text.as_str()),
                ]
            });
        let Some(dates) = dates::unheld(question, sources) else {
            return answered;
        };
        let date = dates
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" or ");
        let answer = answered.reply.answer;
        self.note(
            cycle,
            format!(
                "no cited source holds {date}, which the question names: \"{answer}\" is \
                 about something else, answered \"not found\""
            ),
        );
        Answered {
            reply: Reply {
                answer: "not found".into(),
                found: false,
            },
            text: format!(
                "Answer: not found\nExplanation: no source the answer cited holds {date}, \
                 which the question names (the answer written from them was \"{answer}\")."
            ),
            citations: Vec::new(),
            shown: answered.shown,
        }
    }

    /// The answer when there is nothing to answer from.
    pub fn nothing_found(&self) -> Answered {
        Answered {
            reply: Reply {
                answer: "not found".into(),
                found: false,
            },
            text: "Answer: not found\nExplanation: the index returned no passages for this \
                   question."
                .into(),
            citations: Vec::new(),
            shown: Vec::new(),
        }
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
            ranked,
            termination,
            cycles,
            usage: self.cost,
            elapsed_ms: self.started.elapsed().as_millis() as u64,
            trace: self.trace,
        }
    }
}
