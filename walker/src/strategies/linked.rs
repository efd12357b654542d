//! `links`: the walk without the model between retrievals. Search with the question, follow
//! the links of what was found (documents and sections the passages name, sections they
//! refer to by number; see [`crate::search::links`]), rank what was read as the walk ranks it, and
//! answer with one model call. It is the baseline every walk is reported beside: what the
//! walk gains over it is what its model calls earn.

use serde_json::json;
use walkrag_engine::ChunkId;

use crate::answer::{Answer, Termination};
use crate::run::Run;
use crate::search::links::Links;
use crate::search::names;
use crate::strategies::walk::{cited_first, interleave, linked, rank, read_names, LINKS_QUERY};
use crate::strategy::{answer_model_id, AnswerModel, BoxFuture, Env, Strategy, StrategyError};
use crate::trace::event::{Event, Sink};
use crate::trace::{Origin, Step};

/// Link following with no model call before the answer.
#[derive(Debug, Clone)]
pub struct Linked {
    /// Chunks retrieved for the question, and most chunks added by each hop.
    pub k: usize,
    /// Retrieval cycles: the question's search, then one hop of links per further cycle.
    pub max_cycles: usize,
    /// The best this many passages of each cycle have their links followed: the walk follows
    /// its cycle's best passage and those its facts came from; with no model there are no
    /// facts, so the best passages stand in for them.
    pub follow_from: usize,
    /// Most passages shown in the answer step, as in the walk.
    pub answer_passages: usize,
    /// Also search, in each hop, the first this many names written in the cycle's passages
    /// and not read yet ([`crate::search::names`]), each with the question; 0: none. 3: recall@5
    /// 0.650 → 0.672 on MuSiQue's first 15 (docs/results/musique-dev15/names).
    pub names: usize,
    /// The model of the answer step; `None`: the chat model.
    pub answer_model: Option<AnswerModel>,
}

impl Default for Linked {
    fn default() -> Self {
        Self {
            k: 5,
            max_cycles: 2,
            follow_from: 1,
            answer_passages: 5,
            names: 0,
            answer_model: None,
        }
    }
}

impl Strategy for Linked {
    fn name(&self) -> &'static str {
        "links"
    }

    fn answer_model(&self) -> Option<&AnswerModel> {
        self.answer_model.as_ref()
    }

    fn config(&self) -> serde_json::Value {
        json!({
            "k": self.k,
            "max_cycles": self.max_cycles,
            "follow_from": self.follow_from,
            "answer_passages": self.answer_passages,
            "names": self.names,
            "answer_model": answer_model_id(&self.answer_model),
        })
    }

    fn run<'a>(
        &'a self,
        question: &'a str,
        env: Env<'a>,
        sink: &'a mut dyn Sink,
    ) -> BoxFuture<'a, Result<Answer, StrategyError>> {
        Box::pin(async move {
            let mut run = Run::new(self, question, env, sink);
            let question_vector = run.env.embedder.embed_one(question)?;
            let mut cycle = 1;
            run.emit(Event::Cycle { cycle });
            let first = run.retrieve_embedded(
                cycle,
                Origin::Question,
                question,
                &question_vector,
                self.k,
                true,
            );
            let mut new: Vec<ChunkId> = first.iter().map(|h| h.chunk_id).collect();
            if new.is_empty() {
                let answered = run.nothing_found();
                return Ok(run.finish(answered, new, Termination::NothingRetrieved, cycle));
            }
            run.mark_read(&new);
            let mut cycles_read = vec![new.clone()];
            let links = Links::of(run.env.index);
            let termination = loop {
                if cycle >= self.max_cycles {
                    break Termination::MaxCycles;
                }
                let from: Vec<ChunkId> = new.iter().take(self.follow_from).copied().collect();
                let (hits, ms) = linked(&run, &question_vector, &links, &from, self.k);
                let offered = if self.names == 0 {
                    Vec::new()
                } else {
                    names::unread(run.env.index, &links, &new, question, &read_names(&run))
                };
                if hits.is_empty() && offered.is_empty() {
                    break Termination::NothingNew;
                }
                cycle += 1;
                run.emit(Event::Cycle { cycle });
                // Links first, as in the walk: a chunk both find was found by the links.
                let mut lists = vec![hits.iter().map(|h| h.chunk_id).collect::<Vec<_>>()];
                if !hits.is_empty() {
                    let what = LINKS_QUERY.to_string();
                    run.record_retrieval(cycle, Origin::Link, what, self.k, hits, ms);
                }
                for name in offered.iter().take(self.names) {
                    let query = names::query(name, question);
                    let hits = run.retrieve(cycle, Origin::Name, &query, self.k, true)?;
                    lists.push(hits.iter().map(|h| h.chunk_id).collect());
                }
                new = interleave(&lists);
                new.truncate(self.k);
                if new.is_empty() {
                    break Termination::NothingNew;
                }
                run.mark_read(&new);
                cycles_read.push(new.clone());
            };
            run.trace.steps.push(Step::Terminate {
                cycle,
                reason: termination,
            });
            let lead = self.k.saturating_sub(1).max(1);
            let ranking = rank(&cycles_read, &[], run.read(), lead);
            let shown: Vec<ChunkId> = ranking.iter().copied().take(self.answer_passages).collect();
            let answered = run.answer(cycle, question, None, &shown).await?;
            let ranked = cited_first(&answered.citations, &ranking);
            Ok(run.finish(answered, ranked, termination, cycle))
        })
    }
}
