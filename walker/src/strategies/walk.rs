//! `walk`: multi-turn retrieval. Read the passages found so far, stream facts and
//! descriptors of where to look next, search for the descriptors, read what is new, and stop
//! for a stated reason; then answer from the facts.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use walkrag_engine::ChunkId;

use crate::answer::{Answer, Termination};
use crate::control::{Control, CycleReport};
use crate::reader::jsonl::{Item, Reader};
use crate::reader::prompt;
use crate::reader::reply::{self, Match};
use crate::reader::support;
use crate::run::Run;
use crate::search::dot;
use crate::search::links::Links;
use crate::search::memory::Memory;
use crate::search::names;
use crate::search::passages;
use crate::strategy::{answer_model_id, AnswerModel, BoxFuture, Env, Strategy, StrategyError};
use crate::trace::event::{Event, Sink};
use crate::trace::{Descriptor, Fact, Origin, RetrievedChunk, Step};

/// The walker's settings.
#[derive(Debug, Clone)]
pub struct Walk {
    /// New chunks read per cycle: as many as `single` reads in its one pass, so a cycle costs
    /// about what a single-shot question does.
    pub k: usize,
    /// Most search cycles; the walk never goes further whatever the model asks for. Two-hop
    /// questions need two; the rest is slack for a wrong first step. The last cycle's
    /// passages go to the answer without a read step, since its next sources could not be
    /// followed (a walk of one cycle still reads its passages).
    pub max_cycles: usize,
    /// Most descriptors followed per cycle (a model that lists ten places is not followed ten
    /// times).
    pub max_descriptors: usize,
    /// Most passages shown with the facts in the answer step.
    pub answer_passages: usize,
    /// Stop looking once the LLM calls have used this many tokens.
    pub token_budget: Option<usize>,
    /// Stop looking after this long.
    pub time_budget: Option<Duration>,
    /// Most tokens of one read step: room for a dozen facts and three descriptors.
    pub read_max_tokens: usize,
    /// How next sources are made: written by the model in its read step (the default), or
    /// asked for in a call of their own ([`NextSources`]).
    pub next_sources: NextSources,
    /// Also search, after each read that does not end the walk, the first this many unread
    /// names of the cycle's passages ([`crate::search::names`]) not already next sources, each with
    /// the question, as `links` does with no model call; 0 (the default): none. `walk --names
    /// 3` on MuSiQue's first 15 (docs/results/musique-dev15/names).
    pub names: usize,
    /// When the model names nowhere to look but does not say the facts suffice, search with
    /// the question and the cycle's trusted facts: the second hop's names are in the facts.
    pub expand_from_facts: bool,
    /// Also follow the links of the cycle's passages (other documents and sections named in
    /// the passages that gave trusted facts, and in the best new one; see [`crate::search::links`]),
    /// the most relevant to the question first.
    pub follow_links: bool,
    /// Facts of earlier questions: recalled before the first read, the walk's own trusted
    /// facts stored after the answer. `None` (the default): every question starts afresh.
    pub memory: Option<Arc<Memory>>,
    /// Stop and hint from outside.
    pub control: Control,
    /// The model of the answer step; `None`: the chat model.
    pub answer_model: Option<AnswerModel>,
}

/// Where the walk's next sources come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NextSources {
    /// The model writes them in its read step.
    #[default]
    Written,
    /// After each read step that does not end the walk, one short call asks the model for
    /// the follow-up question the cycle's best passages raise ([`crate::strategies::ask`]); it is
    /// searched before any next source the read step wrote. Recall@10 0.633 → 0.683 and F1
    /// 0.097 → 0.150 on MuSiQue's first 10, for two more calls a walk
    /// (docs/results/walk-asked).
    Asked,
}

impl NextSources {
    /// Every mode, by name.
    pub const ALL: [NextSources; 2] = [NextSources::Written, NextSources::Asked];

    /// Its name on the command line and in the recorded settings.
    pub fn name(self) -> &'static str {
        match self {
            NextSources::Written => "written",
            NextSources::Asked => "asked",
        }
    }
}

/// The query recorded for chunks found by links.
pub const LINKS_QUERY: &str = "named in the passages read (links)";
/// The query recorded for the chunks of remembered facts.
pub const MEMORY_QUERY: &str = "remembered from earlier questions (memory)";

/// Most remembered facts recalled for a question.
const RECALL_MAX: usize = 5;
/// Least cosine similarity between the question and a remembered fact for it to be recalled
/// (MiniLM: unrelated sentences score below 0.3, paraphrases above 0.7).
const RECALL_MIN_SCORE: f32 = 0.5;

impl Default for Walk {
    fn default() -> Self {
        Self {
            k: 5,
            max_cycles: 3,
            max_descriptors: 3,
            answer_passages: 5,
            token_budget: Some(40_000),
            time_budget: None,
            read_max_tokens: 400,
            next_sources: NextSources::Written,
            names: 0,
            expand_from_facts: true,
            follow_links: true,
            memory: None,
            control: Control::default(),
            answer_model: None,
        }
    }
}

impl Strategy for Walk {
    fn name(&self) -> &'static str {
        "walk"
    }

    fn answer_model(&self) -> Option<&AnswerModel> {
        self.answer_model.as_ref()
    }

    fn config(&self) -> serde_json::Value {
        json!({
            "k": self.k,
            "max_cycles": self.max_cycles,
            "max_descriptors": self.max_descriptors,
            "answer_passages": self.answer_passages,
            "token_budget": self.token_budget,
            "time_budget_s": self.time_budget.map(|d| d.as_secs_f64()),
            "read_max_tokens": self.read_max_tokens,
            "next_sources": self.next_sources.name(),
            "names": self.names,
            "expand_from_facts": self.expand_from_facts,
            "follow_links": self.follow_links,
            "memory": self.memory.as_ref().map(|m| m.path().display().to_string()),
            "answer_model": answer_model_id(&self.answer_model),
        })
    }

    fn run<'a>(
        &'a self,
        question: &'a str,
        env: Env<'a>,
        sink: &'a mut dyn Sink,
    ) -> BoxFuture<'a, Result<Answer, StrategyError>> {
        Box::pin(self.walk(question, env, sink))
    }
}

impl Walk {
    async fn walk<'a>(
        &'a self,
        question: &'a str,
        env: Env<'a>,
        sink: &'a mut dyn Sink,
    ) -> Result<Answer, StrategyError> {
        let mut walking = Walking::start(self, question, env, sink)?;
        let termination = if walking.new.is_empty() {
            Termination::NothingRetrieved
        } else {
            loop {
                match walking.step().await {
                    Ok(ControlFlow::Break(reason)) => break reason,
                    Ok(ControlFlow::Continue(())) => {}
                    // A model call that fails for good (a grammar the decoder ran out of
                    // room for, a prompt past the context) loses its cycle, not what the walk
                    // read before: it answers from that, and the trace says why. A transient
                    // failure still fails the question, for the caller to retry.
                    Err(StrategyError::Chat(e)) if !e.is_transient() => {
                        let cycle = walking.cycle;
                        walking.run.note(
                            cycle,
                            format!(
                                "the model failed in cycle {cycle} ({e}): answering from what \
                                 was read"
                            ),
                        );
                        break Termination::ModelFailed;
                    }
                    Err(e) => return Err(e),
                }
            }
        };
        walking.answer(termination).await
    }

    /// One read step: the question, the facts so far and the new passages in; facts,
    /// descriptors and a verdict out, each emitted as soon as its JSON object closes.
    async fn read(
        &self,
        run: &mut Run<'_>,
        cycle: usize,
        question: &str,
        facts: &[Fact],
        new: &[ChunkId],
        hints: &[String],
    ) -> Result<Read, StrategyError> {
        let known = facts_text(facts);
        // No "none yet" placeholder when there are no facts: small models cite it as a source.
        let facts_block = if known.is_empty() {
            String::new()
        } else {
            format!("\nFacts found so far:\n{known}\n")
        };
        let passages = passages::render(run.env.index, new);
        let mut user = prompt::render(
            prompt::READ_USER,
            &[
                ("question", question),
                ("facts", &facts_block),
                ("passages", &passages),
            ],
        );
        for hint in hints {
            user.push_str(&format!("\n\nA hint from the user: {hint}"));
        }
        let request = prompt::request(prompt::READ_SYSTEM, user, self.read_max_tokens);
        let shown: Vec<ChunkId> = run.read().to_vec();
        let index = run.env.index;
        let passage = |id: ChunkId| {
            index.row_of(id).map(|row| {
                let c = index.chunk(row);
                format!(
                    "{} {} {}",
                    c.doc.title,
                    c.section().path.join(" "),
                    c.text()
                )
            })
        };
        let resolve = |item| resolve(item, cycle, question, &shown, &passage);
        let mut reader = Reader::new();
        // Each item is resolved once (sources matched to shown chunks) as it closes: its event
        // goes out at once, the item is kept for the trace.
        let mut resolved: Vec<Resolved> = Vec::new();
        let mut on_text = |text: &str| {
            let fresh: Vec<Resolved> = reader.push(text).into_iter().map(resolve).collect();
            let events = fresh.iter().filter_map(Resolved::event).collect();
            resolved.extend(fresh);
            events
        };
        let completion = run.chat_with(cycle, "read", request, &mut on_text).await;
        for item in reader.finish() {
            let item = resolve(item);
            if let Some(event) = item.event() {
                run.emit(event);
            }
            resolved.push(item);
        }
        completion?;

        let mut new_facts = Vec::new();
        let mut descriptors = Vec::new();
        let mut sufficient = None;
        for item in resolved {
            match item {
                Resolved::Fact(fact) => {
                    if fact.unsupported {
                        run.note(
                            cycle,
                            format!(
                                "fact not trusted: its words are not in its source {}",
                                fact.source
                            ),
                        );
                    } else if !fact.trusted {
                        run.note(
                            cycle,
                            format!(
                                "fact not trusted: its source {:?} is not a passage the model was shown",
                                fact.source
                            ),
                        );
                    }
                    run.trace.steps.push(Step::Fact(fact.clone()));
                    new_facts.push(fact);
                }
                Resolved::Descriptor(d) => {
                    run.trace.steps.push(Step::Descriptor(d.clone()));
                    descriptors.push(d);
                }
                Resolved::Sufficient(flag) => {
                    run.trace.steps.push(Step::Sufficient {
                        cycle,
                        sufficient: flag,
                    });
                    sufficient = Some(flag);
                }
                Resolved::Unread(text) => {
                    tracing::debug!("read step, cycle {cycle}: skipped {text:?}");
                    run.trace.steps.push(Step::Unread { cycle, text });
                }
            }
        }
        Ok(Read {
            facts: new_facts,
            descriptors,
            sufficient,
        })
    }

    /// Why to stop after a read step, if it is time to.
    fn should_stop(
        &self,
        run: &Run<'_>,
        cycle: usize,
        sufficient: Option<bool>,
        nowhere_to_look: bool,
    ) -> Option<Termination> {
        if run.control.is_stopped() {
            Some(Termination::Stopped)
        } else if sufficient == Some(true) {
            Some(Termination::Sufficient)
        } else if cycle >= self.max_cycles {
            Some(Termination::MaxCycles)
        } else if self.token_budget.is_some_and(|b| run.cost.tokens() >= b) {
            Some(Termination::TokenBudget)
        } else if self.time_budget.is_some_and(|b| run.elapsed() >= b) {
            Some(Termination::TimeBudget)
        } else if nowhere_to_look {
            Some(Termination::NoDescriptors)
        } else {
            None
        }
    }

    /// Searches for each descriptor, then each of the `named` queries (unread chunks only:
    /// `retrieve` passes over read ones) and merges the results with the linked chunks by
    /// rank, up to `k` chunks.
    fn follow(
        &self,
        run: &mut Run<'_>,
        cycle: usize,
        descriptors: &[Descriptor],
        named: &[String],
        (linked, ms): (Vec<RetrievedChunk>, u64),
    ) -> Result<Vec<ChunkId>, StrategyError> {
        // Links first: they come from the passages themselves, a small model's descriptors
        // often only restate the question. Recorded first too: a chunk both find was found
        // by the links, which needed no model call.
        let mut lists: Vec<Vec<ChunkId>> = vec![linked.iter().map(|h| h.chunk_id).collect()];
        if !linked.is_empty() {
            let what = LINKS_QUERY.to_string();
            run.record_retrieval(cycle, Origin::Link, what, self.k, linked, ms);
        }
        let mut seen_queries = HashSet::new();
        for d in descriptors.iter().take(self.max_descriptors) {
            let query = d.query();
            if seen_queries.insert(query.to_lowercase()) {
                let hits = run.retrieve(cycle, d.origin, &query, self.k, true)?;
                lists.push(hits.iter().map(|h| h.chunk_id).collect());
            }
        }
        for query in named {
            if seen_queries.insert(query.to_lowercase()) {
                let hits = run.retrieve(cycle, Origin::Name, query, self.k, true)?;
                lists.push(hits.iter().map(|h| h.chunk_id).collect());
            }
        }
        let mut merged = interleave(&lists);
        merged.truncate(self.k);
        Ok(merged)
    }
}

/// One question's walk in progress: what each cycle leaves to the next.
struct Walking<'a> {
    walk: &'a Walk,
    run: Run<'a>,
    question: &'a str,
    /// Embedded once: the first search, the memory and the links' order all use it.
    question_vector: Vec<f32>,
    /// Every fact so far, remembered ones first.
    facts: Vec<Fact>,
    /// Hints (given before the walk or at a pause) are shown to the model in the next read
    /// and searched for after it, ahead of the model's own descriptors.
    hints_to_show: Vec<String>,
    hints_to_search: Vec<String>,
    cycle: usize,
    /// What the current cycle reads.
    new: Vec<ChunkId>,
    /// What each cycle read, in the order it was retrieved: the ranking interleaves them.
    /// Remembered facts' chunks are what is known before the first cycle.
    cycles_read: Vec<Vec<ChunkId>>,
    /// The index's links, made when first needed.
    links: Option<Links>,
}

impl<'a> Walking<'a> {
    /// Recalls remembered facts, then searches with the question: the first cycle's reads.
    fn start(
        walk: &'a Walk,
        question: &'a str,
        env: Env<'a>,
        sink: &'a mut dyn Sink,
    ) -> Result<Self, StrategyError> {
        let mut run = Run::new(walk, question, env, sink);
        run.control = walk.control.clone();
        let question_vector = run.env.embedder.embed_one(question)?;
        let facts: Vec<Fact> = match &walk.memory {
            Some(memory) => recall(&mut run, memory, &question_vector),
            None => Vec::new(),
        };
        let hints = walk.control.take_hints();
        let cycle = 1;
        run.emit(Event::Cycle { cycle });
        let first = run.retrieve_embedded(
            cycle,
            Origin::Question,
            question,
            &question_vector,
            walk.k,
            true,
        );
        let remembered: Vec<ChunkId> = facts.iter().filter_map(|f| f.chunk_id).collect();
        let cycles_read = if remembered.is_empty() {
            Vec::new()
        } else {
            vec![remembered]
        };
        Ok(Self {
            walk,
            run,
            question,
            question_vector,
            facts,
            hints_to_search: hints.clone(),
            hints_to_show: hints,
            cycle,
            new: first.iter().map(|h| h.chunk_id).collect(),
            cycles_read,
            links: None,
        })
    }

    /// One cycle: read what is new, decide where to look next, and search there. Breaks with
    /// the reason the walk ends.
    async fn step(&mut self) -> Result<ControlFlow<Termination>, StrategyError> {
        let walk = self.walk;
        let cycle = self.cycle;
        self.run.mark_read(&self.new);
        self.cycles_read.push(self.new.clone());
        if cycle > 1 && cycle >= walk.max_cycles {
            // After the last search a read could lead nowhere: its passages go to the answer
            // as they are, and the call is saved.
            self.run.note(
                cycle,
                format!(
                    "cycle {cycle} is the last: its passages go to the answer without a read step"
                ),
            );
            return Ok(ControlFlow::Break(Termination::MaxCycles));
        }
        let hints = std::mem::take(&mut self.hints_to_show);
        let names = self.unread_names();
        let Read {
            facts: cycle_facts,
            descriptors: written,
            sufficient,
        } = walk
            .read(
                &mut self.run,
                cycle,
                self.question,
                &self.facts,
                &self.new,
                &hints,
            )
            .await?;
        let sufficient = self.verdict(sufficient, &cycle_facts);
        let descriptors = self.descriptors(sufficient, written, &cycle_facts).await?;
        let linked = self.linked(sufficient, &cycle_facts);
        let named: Vec<String> = if sufficient == Some(true) {
            Vec::new()
        } else {
            let sources: Vec<&str> = descriptors.iter().map(|d| d.next_source.as_str()).collect();
            names
                .iter()
                .filter(|name| !sources.contains(&name.as_str()))
                .take(walk.names)
                .map(|name| names::query(name, self.question))
                .collect()
        };
        self.facts.extend(cycle_facts);
        let nowhere = descriptors.is_empty() && linked.0.is_empty() && named.is_empty();
        if let Some(reason) = walk.should_stop(&self.run, cycle, sufficient, nowhere) {
            return Ok(ControlFlow::Break(reason));
        }
        self.cycle += 1;
        self.run.emit(Event::Cycle { cycle: self.cycle });
        self.new = walk.follow(&mut self.run, self.cycle, &descriptors, &named, linked)?;
        Ok(if self.new.is_empty() {
            ControlFlow::Break(Termination::NothingNew)
        } else {
            ControlFlow::Continue(())
        })
    }

    /// The unread names of the cycle's passages, where they are searched.
    fn unread_names(&mut self) -> Vec<String> {
        if self.walk.names == 0 {
            return Vec::new();
        }
        let index = self.run.env.index;
        let links = self.links.get_or_insert_with(|| Links::of(index));
        let names = names::unread(
            index,
            links,
            &self.new,
            self.question,
            &read_names(&self.run),
        );
        self.run
            .note(self.cycle, format!("unread names: {}", names.join("; ")));
        names
    }

    /// The model's verdict as far as it may end the walk: not without a fact its passages
    /// support.
    fn verdict(&mut self, sufficient: Option<bool>, cycle_facts: &[Fact]) -> Option<bool> {
        let cycle = self.cycle;
        if sufficient != Some(true) {
            sufficient
        } else if !self.facts.iter().chain(cycle_facts).any(|f| f.trusted) {
            // "The facts suffice" with no fact to trust is no verdict on facts: nothing was
            // found that could suffice, so the walk goes on (links, descriptors).
            self.run.note(
                cycle,
                "the model said the facts suffice, but it wrote none that its passages \
                 support: walking on"
                    .into(),
            );
            None
        } else {
            Some(true)
        }
    }

    /// Where to look next: hints first, then the asked follow-up question, then what the
    /// model wrote; the question with the cycle's facts when nothing names a
    /// place and the facts do not suffice. The user may pause here and add hints.
    async fn descriptors(
        &mut self,
        sufficient: Option<bool>,
        written: Vec<Descriptor>,
        cycle_facts: &[Fact],
    ) -> Result<Vec<Descriptor>, StrategyError> {
        let walk = self.walk;
        let cycle = self.cycle;
        let mut descriptors = written;
        if walk.next_sources == NextSources::Asked
            && sufficient != Some(true)
            && cycle < walk.max_cycles
        {
            let asked =
                crate::strategies::ask::follow_up(&mut self.run, cycle, self.question, &self.new)
                    .await?;
            if let Some(d) = asked {
                self.run.trace.steps.push(Step::Descriptor(d.clone()));
                self.run.emit(Event::NextSource(d.clone()));
                descriptors.insert(0, d);
            }
        }
        self.run.control.pause(&CycleReport {
            cycle,
            facts: cycle_facts,
            descriptors: &descriptors,
        });
        for hint in self.run.control.take_hints() {
            self.hints_to_show.push(hint.clone());
            self.hints_to_search.push(hint);
        }
        for hint in self.hints_to_search.drain(..).rev() {
            descriptors.insert(0, hint_descriptor(cycle, hint));
        }
        if descriptors.is_empty() && sufficient != Some(true) && walk.expand_from_facts {
            if let Some(d) = facts_descriptor(cycle, self.question, cycle_facts) {
                self.run.note(
                    cycle,
                    "the model named nowhere to look next: searching with the question and the \
                     facts it found"
                        .into(),
                );
                self.run.trace.steps.push(Step::Descriptor(d.clone()));
                descriptors.push(d);
            }
        }
        Ok(descriptors)
    }

    /// The links to follow unless the facts suffice: those of the cycle's best new passage
    /// and of the passages that gave trusted facts, with the time it took to find them.
    fn linked(
        &mut self,
        sufficient: Option<bool>,
        cycle_facts: &[Fact],
    ) -> (Vec<RetrievedChunk>, u64) {
        if !self.walk.follow_links || sufficient == Some(true) {
            return (Vec::new(), 0);
        }
        let index = self.run.env.index;
        let links = self.links.get_or_insert_with(|| Links::of(index));
        let mut from: Vec<ChunkId> = self.new.iter().take(1).copied().collect();
        for id in cycle_facts
            .iter()
            .filter(|f| f.trusted)
            .filter_map(|f| f.chunk_id)
        {
            if !from.contains(&id) {
                from.push(id);
            }
        }
        linked(&self.run, &self.question_vector, links, &from, self.walk.k)
    }

    /// Ranks what was read and answers from the best of it. The facts lead the ranking (their
    /// passages first) but are not shown to the answer step: written by the read step's
    /// model, they misled both readers on HotpotQA dev (walk, first 20: right 0.35 -> 0.40
    /// with the 0.5B answering and 0.35 -> 0.50 with the 1.5B once they were left out;
    /// docs/results/reader-copy).
    async fn answer(self, termination: Termination) -> Result<Answer, StrategyError> {
        let Walking {
            walk,
            mut run,
            question,
            facts,
            cycle,
            cycles_read,
            ..
        } = self;
        run.trace.steps.push(Step::Terminate {
            cycle,
            reason: termination,
        });
        let mut evidence: Vec<ChunkId> = Vec::new();
        for fact in facts.iter().filter(|f| f.trusted) {
            let id = fact.chunk_id.expect("trusted facts name a chunk");
            if !evidence.contains(&id) {
                evidence.push(id);
            }
        }
        // The answer sees the question's best and the best of every later cycle: the second
        // hop is what a later cycle found. One of the question's hits makes room for the hops.
        let lead = walk.k.saturating_sub(1).max(1);
        let ranking = rank(&cycles_read, &evidence, run.read(), lead);
        let shown: Vec<ChunkId> = ranking.iter().copied().take(walk.answer_passages).collect();
        let answered = if shown.is_empty() {
            run.nothing_found()
        } else {
            run.answer(cycle, question, None, &shown).await?
        };
        let ranked = cited_first(&answered.citations, &ranking);
        if let Some(memory) = &walk.memory {
            remember(&mut run, memory, question, &facts, cycle);
        }
        Ok(run.finish(answered, ranked, termination, cycle))
    }
}

/// What a read step gave: its facts, the model's descriptors and verdict.
struct Read {
    facts: Vec<Fact>,
    descriptors: Vec<Descriptor>,
    sufficient: Option<bool>,
}

/// A read-step item with its source matched.
enum Resolved {
    Fact(Fact),
    Descriptor(Descriptor),
    Sufficient(bool),
    Unread(String),
}

impl Resolved {
    /// What the user sees of it as it arrives.
    fn event(&self) -> Option<Event> {
        match self {
            Resolved::Fact(fact) => Some(Event::Fact(fact.clone())),
            Resolved::Descriptor(d) => Some(Event::NextSource(d.clone())),
            Resolved::Sufficient(_) | Resolved::Unread(_) => None,
        }
    }
}

/// Resolves a parsed item; facts are trusted when their source is a chunk in `shown` (or a
/// near miss of exactly one, see [`reply::match_ids`]) and `passage` of that chunk supports
/// them (see [`support`]).
fn resolve(
    item: Item,
    cycle: usize,
    question: &str,
    shown: &[ChunkId],
    passage: &dyn Fn(ChunkId) -> Option<String>,
) -> Resolved {
    match item {
        Item::Fact {
            fact,
            relevance,
            source,
        } => {
            let first = reply::match_ids(&source, shown).0.first().copied();
            let supported = first
                .and_then(|m| passage(m.id()))
                .map(|text| support::is_supported(&fact, question, &text));
            Resolved::Fact(Fact {
                cycle,
                chunk_id: first.map(Match::id),
                trusted: supported == Some(true),
                unsupported: supported == Some(false),
                repaired: matches!(first, Some(Match::Repaired(_))),
                fact,
                relevance,
                source,
                remembered: false,
            })
        }
        Item::NextSource {
            next_source,
            expected_info,
        } => Resolved::Descriptor(Descriptor {
            cycle,
            next_source,
            expected_info,
            origin: Origin::Model,
        }),
        Item::Sufficient(flag) => Resolved::Sufficient(flag),
        Item::Skipped(text) => Resolved::Unread(text),
    }
}

/// The titles and headings of everything read so far: a next source that names one of them
/// would find nothing new.
pub(crate) fn read_names(run: &Run<'_>) -> Vec<String> {
    let index = run.env.index;
    let mut names: Vec<String> = Vec::new();
    for row in run.read().iter().filter_map(|&id| index.row_of(id)) {
        let chunk = index.chunk(row);
        let heading = chunk.section().path.last().cloned();
        for name in std::iter::once(chunk.doc.title.clone()).chain(heading) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// A hint searched for like a descriptor.
fn hint_descriptor(cycle: usize, hint: String) -> Descriptor {
    Descriptor {
        cycle,
        next_source: hint,
        expected_info: String::new(),
        origin: Origin::Hint,
    }
}

/// A descriptor made of the question and the trusted facts of a cycle, if it has any.
fn facts_descriptor(cycle: usize, question: &str, facts: &[Fact]) -> Option<Descriptor> {
    let found: Vec<&str> = facts
        .iter()
        .filter(|f| f.trusted)
        .map(|f| f.fact.as_str())
        .collect();
    (!found.is_empty()).then(|| Descriptor {
        cycle,
        next_source: question.to_string(),
        expected_info: found.join(" "),
        origin: Origin::Fallback,
    })
}

/// Trusted facts, one per line with their source: what the model sees of earlier cycles.
fn facts_text(facts: &[Fact]) -> String {
    facts
        .iter()
        .filter(|f| f.trusted)
        .map(|f| {
            format!(
                "- {} [{}]",
                f.fact,
                f.chunk_id.expect("trusted facts name a chunk")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Remembered facts close to the question, as facts known before the first read; their
/// chunks count as read, so the walk's first retrieval brings new material.
fn recall(run: &mut Run<'_>, memory: &Memory, question: &[f32]) -> Vec<Fact> {
    let recalled = memory.recall(
        question,
        run.env.embedder.id(),
        run.env.index,
        RECALL_MAX,
        RECALL_MIN_SCORE,
    );
    run.note(
        0,
        format!(
            "memory {}: {} of {} remembered facts recalled",
            memory.path().display(),
            recalled.len(),
            memory.len()
        ),
    );
    let facts: Vec<Fact> = recalled
        .into_iter()
        .map(|r| Fact {
            cycle: 0,
            fact: r.fact.fact,
            relevance: format!("remembered from an earlier question: {}", r.fact.question),
            source: r.fact.chunk_id.to_string(),
            chunk_id: Some(r.fact.chunk_id),
            trusted: true,
            unsupported: false,
            repaired: false,
            remembered: true,
        })
        .collect();
    let chunks: Vec<ChunkId> = facts.iter().filter_map(|f| f.chunk_id).collect();
    // The remembered facts' chunks, recorded as what memory found.
    let index = run.env.index;
    let hits: Vec<RetrievedChunk> = chunks
        .iter()
        .filter_map(|&id| index.row_of(id))
        .map(|row| passages::retrieved(&index.chunk(row), 1.0, true))
        .collect();
    if !hits.is_empty() {
        let k = hits.len();
        run.record_retrieval(0, Origin::Memory, MEMORY_QUERY.into(), k, hits, 0);
    }
    run.mark_read(&chunks);
    for fact in &facts {
        run.trace.steps.push(Step::Fact(fact.clone()));
        run.emit(Event::Fact(fact.clone()));
    }
    facts
}

/// Stores the walk's own trusted facts. A failure to store is noted, not fatal: the answer
/// stands without it.
fn remember(run: &mut Run<'_>, memory: &Memory, question: &str, facts: &[Fact], cycle: usize) {
    let found: Vec<(&str, ChunkId)> = facts
        .iter()
        .filter(|f| f.trusted && !f.remembered)
        .filter_map(|f| Some((f.fact.as_str(), f.chunk_id?)))
        .collect();
    let message = match memory.remember(question, &found, run.env.embedder) {
        Ok(stored) => format!(
            "memory {}: {stored} new facts remembered",
            memory.path().display()
        ),
        Err(e) => format!("facts not remembered: {e}"),
    };
    run.note(cycle, message);
}

/// Unread chunks linked from the passages `from` (documents and sections they name, sections
/// they refer to by number), the nearest to the question first, at most `k`; and how long
/// finding them took, in milliseconds.
pub(crate) fn linked(
    run: &Run<'_>,
    question: &[f32],
    links: &Links,
    from: &[ChunkId],
    k: usize,
) -> (Vec<RetrievedChunk>, u64) {
    let started = std::time::Instant::now();
    let index = run.env.index;
    // Each unread target with the first passage that names it.
    let mut rows: Vec<(usize, ChunkId)> = Vec::new();
    for &source in from {
        let Some(row) = index.row_of(source) else {
            continue;
        };
        let chunk = index.chunk(row);
        let named = links.named_in(chunk.text());
        let referenced = links.referenced_in(chunk.text(), &chunk.doc.id.0);
        for target in named.into_iter().chain(referenced) {
            if !rows.iter().any(|&(r, _)| r == target) && !run.is_read(index.chunk(target).id()) {
                rows.push((target, source));
            }
        }
    }
    if rows.is_empty() {
        return (Vec::new(), 0);
    }
    let mut scored: Vec<(usize, ChunkId, f32)> = rows
        .into_iter()
        .map(|(row, source)| (row, source, dot(question, index.vector(row))))
        .collect();
    scored.sort_by(|a, b| b.2.total_cmp(&a.2));
    let hits = scored
        .into_iter()
        .take(k)
        .map(|(row, source, score)| RetrievedChunk {
            linked_from: Some(source),
            ..passages::retrieved(&index.chunk(row), score, true)
        })
        .collect();
    (hits, started.elapsed().as_millis() as u64)
}

/// What an answer read, the chunks it cites first, then the rest of `ranking`.
pub(crate) fn cited_first(citations: &[ChunkId], ranking: &[ChunkId]) -> Vec<ChunkId> {
    let mut ranked = citations.to_vec();
    for id in ranking {
        if !ranked.contains(id) {
            ranked.push(*id);
        }
    }
    ranked
}

/// The lists merged by rank: every list's first, then every list's second, ..., each chunk
/// once.
pub(crate) fn interleave(lists: &[Vec<ChunkId>]) -> Vec<ChunkId> {
    let mut merged: Vec<ChunkId> = Vec::new();
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    for rank in 0..longest {
        for list in lists {
            if let Some(&id) = list.get(rank) {
                if !merged.contains(&id) {
                    merged.push(id);
                }
            }
        }
    }
    merged
}

/// The walk's ranking of what it read: the question's own best `lead` chunks (a single
/// search's floor), then the best of every later cycle (the hops), then the question's other
/// hits, then the later cycles' other reads interleaved by rank; within each cycle the chunks
/// that gave trusted facts come first. Anything else read (remembered evidence) comes last.
///
/// Why this order: measured on HotpotQA-100 traces, the question's top hits stay the best
/// evidence for the first hop, and a later cycle contributes one passage worth ranking
/// high (the second hop); interleaving every cycle rank by rank pushed the question's third
/// and fourth hits below the follow-ups' weaker ones.
pub(crate) fn rank(
    cycles: &[Vec<ChunkId>],
    evidence: &[ChunkId],
    read: &[ChunkId],
    lead: usize,
) -> Vec<ChunkId> {
    let ordered: Vec<Vec<ChunkId>> = cycles
        .iter()
        .map(|c| {
            let (first, rest): (Vec<ChunkId>, Vec<ChunkId>) =
                c.iter().partition(|id| evidence.contains(id));
            first.into_iter().chain(rest).collect()
        })
        .collect();
    let none = Vec::new();
    let (question, later) = ordered.split_first().unwrap_or((&none, &[]));
    let hops = later.iter().filter_map(|c| c.first());
    let rest = interleave(later);
    let mut ranked: Vec<ChunkId> = Vec::new();
    for id in question
        .iter()
        .take(lead)
        .chain(hops)
        .chain(question)
        .chain(&rest)
        .chain(evidence)
        .chain(read)
    {
        if !ranked.contains(id) {
            ranked.push(*id);
        }
    }
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: std::ops::Range<u32>) -> Vec<ChunkId> {
        n.map(|i| ChunkId::parse(&format!("{:08x}.0", i + 1)).unwrap())
            .collect()
    }

    #[test]
    fn ranking_keeps_the_questions_best_then_each_later_cycles_best() {
        let question = ids(0..5);
        let second = ids(5..8);
        let third = ids(8..10);
        let read: Vec<ChunkId> = question
            .iter()
            .chain(&second)
            .chain(&third)
            .copied()
            .collect();
        // Cycle one's fourth chunk and cycle two's second gave trusted facts.
        let evidence = [question[3], second[1]];
        let cycles = [question.clone(), second.clone(), third.clone()];
        let ranked = rank(&cycles, &evidence, &read, 4);
        assert_eq!(
            ranked,
            [
                question[3],
                question[0],
                question[1],
                question[2],
                second[1],
                third[0],
                question[4],
                second[0],
                third[1],
                second[2],
            ]
        );
        // A walk of one cycle ranks as the question's search did, its evidence first.
        let ranked = rank(
            std::slice::from_ref(&question),
            &evidence[..1],
            &question,
            4,
        );
        assert_eq!(
            ranked,
            [
                question[3],
                question[0],
                question[1],
                question[2],
                question[4]
            ]
        );
        // Remembered evidence not read in any cycle still ranks, after the cycles' reads.
        let remembered = ids(9..10)[0];
        let ranked = rank(std::slice::from_ref(&question), &[remembered], &question, 4);
        assert_eq!(ranked.last(), Some(&remembered));
        assert_eq!(ranked.len(), 6);
    }
}
