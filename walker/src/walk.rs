//! `walk`: multi-turn retrieval. Read the passages found so far, stream facts and
//! descriptors of where to look next, search for the descriptors, read what is new, and stop
//! for a stated reason; then answer from the facts.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::json;
use walkrag_core::{ChatRequest, Message, Sampling};
use walkrag_engine::ChunkId;

use crate::answer::{Answer, Termination};
use crate::control::{Control, CycleReport};
use crate::event::{Event, Sink};
use crate::jsonl::{Item, Reader};
use crate::passages;
use crate::prompt;
use crate::reply::{self, Match};
use crate::run::Run;
use crate::strategy::{BoxFuture, Env, Strategy, StrategyError};
use crate::trace::{Descriptor, Fact, RetrievedChunk, Step};

/// The walker's settings.
#[derive(Debug, Clone)]
pub struct Walk {
    /// New chunks read per cycle: as many as `single` reads in its one pass, so a cycle costs
    /// about what a single-shot question does.
    pub k: usize,
    /// Most read cycles; the walk never goes further whatever the model asks for. Two-hop
    /// questions need two; the rest is slack for a wrong first step.
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
    /// When the model names nowhere to look but does not say the facts suffice, search with
    /// the question and the cycle's trusted facts: the second hop's names are in the facts.
    pub expand_from_facts: bool,
    /// Stop and hint from outside.
    pub control: Control,
}

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
            expand_from_facts: true,
            control: Control::default(),
        }
    }
}

impl Strategy for Walk {
    fn name(&self) -> &'static str {
        "walk"
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
            "expand_from_facts": self.expand_from_facts,
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
        let mut run = Run::new(self, question, env, sink);
        run.control = self.control.clone();
        let mut facts: Vec<Fact> = Vec::new();
        // Hints (given before the walk or at a pause) are shown to the model in the next read
        // and searched for after it, ahead of the model's own descriptors.
        let mut hints_to_show: Vec<String> = self.control.take_hints();
        let mut hints_to_search: Vec<String> = hints_to_show.clone();
        let mut cycle = 1;
        run.emit(Event::Cycle { cycle });
        let first = run.retrieve(cycle, question, self.k, true)?;
        let mut new: Vec<ChunkId> = first.iter().map(|h| h.chunk_id).collect();
        let termination = if new.is_empty() {
            Termination::NothingRetrieved
        } else {
            loop {
                run.mark_read(&new);
                let hints = std::mem::take(&mut hints_to_show);
                let verdict = self
                    .read(&mut run, cycle, question, &facts, &new, &hints)
                    .await?;
                let (cycle_facts, mut descriptors, sufficient) = verdict;
                run.control.pause(&CycleReport {
                    cycle,
                    facts: &cycle_facts,
                    descriptors: &descriptors,
                });
                for hint in run.control.take_hints() {
                    hints_to_show.push(hint.clone());
                    hints_to_search.push(hint);
                }
                for hint in hints_to_search.drain(..).rev() {
                    descriptors.insert(0, hint_descriptor(cycle, hint));
                }
                if descriptors.is_empty() && sufficient != Some(true) && self.expand_from_facts {
                    if let Some(d) = facts_descriptor(cycle, question, &cycle_facts) {
                        run.note(
                            cycle,
                            "the model named nowhere to look next: searching with the question \
                             and the facts it found"
                                .into(),
                        );
                        run.trace.steps.push(Step::Descriptor(d.clone()));
                        descriptors.push(d);
                    }
                }
                facts.extend(cycle_facts);
                if let Some(reason) = self.should_stop(&run, cycle, sufficient, &descriptors) {
                    break reason;
                }
                cycle += 1;
                run.emit(Event::Cycle { cycle });
                new = self.follow(&mut run, cycle, &descriptors)?;
                if new.is_empty() {
                    break Termination::NothingNew;
                }
            }
        };
        run.trace.steps.push(Step::Terminate {
            cycle,
            reason: termination,
        });

        // Chunks that yielded trusted facts first, then the rest in the order read.
        let mut evidence: Vec<ChunkId> = Vec::new();
        for fact in facts.iter().filter(|f| f.trusted) {
            let id = fact.chunk_id.expect("trusted facts name a chunk");
            if !evidence.contains(&id) {
                evidence.push(id);
            }
        }
        let rest: Vec<ChunkId> = run
            .read()
            .iter()
            .copied()
            .filter(|id| !evidence.contains(id))
            .collect();
        let shown: Vec<ChunkId> = evidence
            .iter()
            .chain(&rest)
            .copied()
            .take(self.answer_passages)
            .collect();
        let answered = if shown.is_empty() {
            run.nothing_found()
        } else {
            let notes = facts_text(&facts);
            let notes = (!notes.is_empty()).then_some(notes);
            run.answer(cycle, question, notes.as_deref(), &shown)
                .await?
        };
        let mut ranked: Vec<ChunkId> = answered.citations.clone();
        for id in evidence.iter().chain(&rest) {
            if !ranked.contains(id) {
                ranked.push(*id);
            }
        }
        Ok(run.finish(answered, ranked, termination, cycle))
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
    ) -> Result<(Vec<Fact>, Vec<Descriptor>, Option<bool>), StrategyError> {
        let known = facts_text(facts);
        // No "none yet" placeholder when there are no facts: small models cite it as a source.
        let facts_block = if known.is_empty() {
            String::new()
        } else {
            format!("\nFacts found so far:\n{known}\n")
        };
        let mut user = prompt::render(
            prompt::READ_USER,
            &[
                ("question", question),
                ("facts", &facts_block),
                ("passages", &passages::render(run.env.index, new)),
            ],
        );
        for hint in hints {
            user.push_str(&format!("\n\nA hint from the user: {hint}"));
        }
        let request = ChatRequest {
            messages: vec![
                Message::system(prompt::READ_SYSTEM.trim()),
                Message::user(user),
            ],
            sampling: Sampling {
                max_tokens: self.read_max_tokens,
                ..Sampling::default()
            },
            ..ChatRequest::default()
        };
        let shown: Vec<ChunkId> = run.read().to_vec();
        let mut reader = Reader::new();
        // Each item is resolved once (sources matched to shown chunks) as it closes: its event
        // goes out at once, the item is kept for the trace.
        let mut resolved: Vec<Resolved> = Vec::new();
        let mut on_text = |text: &str| {
            let fresh: Vec<Resolved> = reader
                .push(text)
                .into_iter()
                .map(|i| resolve(i, cycle, &shown))
                .collect();
            let events = fresh.iter().filter_map(Resolved::event).collect();
            resolved.extend(fresh);
            events
        };
        let completion = run.chat_with(cycle, "read", request, &mut on_text).await;
        for item in reader.finish() {
            let item = resolve(item, cycle, &shown);
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
                    if !fact.trusted {
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
        Ok((new_facts, descriptors, sufficient))
    }

    /// Why to stop after a read step, if it is time to.
    fn should_stop(
        &self,
        run: &Run<'_>,
        cycle: usize,
        sufficient: Option<bool>,
        descriptors: &[Descriptor],
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
        } else if descriptors.is_empty() {
            Some(Termination::NoDescriptors)
        } else {
            None
        }
    }

    /// Searches for each descriptor (unread chunks only: `retrieve` passes over read ones)
    /// and merges the results by rank, up to `k` chunks.
    fn follow(
        &self,
        run: &mut Run<'_>,
        cycle: usize,
        descriptors: &[Descriptor],
    ) -> Result<Vec<ChunkId>, StrategyError> {
        let mut lists: Vec<Vec<RetrievedChunk>> = Vec::new();
        let mut seen_queries = HashSet::new();
        for d in descriptors.iter().take(self.max_descriptors) {
            let query = d.query();
            if seen_queries.insert(query.to_lowercase()) {
                lists.push(run.retrieve(cycle, &query, self.k, true)?);
            }
        }
        let mut merged: Vec<ChunkId> = Vec::new();
        let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
        'merge: for rank in 0..longest {
            for list in &lists {
                if let Some(hit) = list.get(rank) {
                    if !merged.contains(&hit.chunk_id) {
                        merged.push(hit.chunk_id);
                        if merged.len() == self.k {
                            break 'merge;
                        }
                    }
                }
            }
        }
        Ok(merged)
    }
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
/// near miss of exactly one, see [`reply::match_ids`]).
fn resolve(item: Item, cycle: usize, shown: &[ChunkId]) -> Resolved {
    match item {
        Item::Fact {
            fact,
            relevance,
            source,
        } => {
            let first = reply::match_ids(&source, shown).0.first().copied();
            Resolved::Fact(Fact {
                cycle,
                fact,
                relevance,
                source,
                chunk_id: first.map(Match::id),
                trusted: first.is_some(),
                repaired: matches!(first, Some(Match::Repaired(_))),
            })
        }
        Item::NextSource {
            next_source,
            expected_info,
        } => Resolved::Descriptor(Descriptor {
            cycle,
            next_source,
            expected_info,
        }),
        Item::Sufficient(flag) => Resolved::Sufficient(flag),
        Item::Skipped(text) => Resolved::Unread(text),
    }
}

/// A hint searched for like a descriptor.
fn hint_descriptor(cycle: usize, hint: String) -> Descriptor {
    Descriptor {
        cycle,
        next_source: hint,
        expected_info: String::new(),
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
