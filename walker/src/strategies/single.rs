//! `single`: the single-shot baseline. Embed the question, take the top k chunks, answer.

use serde_json::json;

use crate::answer::{Answer, Termination};
use crate::run::Run;
use crate::strategy::{answer_model_id, AnswerModel, BoxFuture, Env, Strategy, StrategyError};
use crate::trace::event::{Event, Sink};
use crate::trace::Origin;

/// Single-shot retrieval-augmented answering: what walkrag's other strategies are measured
/// against. `ranked` is the retrieval order.
#[derive(Debug, Clone)]
pub struct Single {
    /// Chunks retrieved and shown: 5 fits a 2,048-token context with room for the answer.
    pub k: usize,
    /// The model of the answer step; `None`: the chat model.
    pub answer_model: Option<AnswerModel>,
}

impl Default for Single {
    fn default() -> Self {
        Self {
            k: 5,
            answer_model: None,
        }
    }
}

impl Strategy for Single {
    fn name(&self) -> &'static str {
        "single"
    }

    fn answer_model(&self) -> Option<&AnswerModel> {
        self.answer_model.as_ref()
    }

    fn config(&self) -> serde_json::Value {
        json!({ "k": self.k, "answer_model": answer_model_id(&self.answer_model) })
    }

    fn run<'a>(
        &'a self,
        question: &'a str,
        env: Env<'a>,
        sink: &'a mut dyn Sink,
    ) -> BoxFuture<'a, Result<Answer, StrategyError>> {
        Box::pin(async move {
            let mut run = Run::new(self, question, env, sink);
            run.emit(Event::Cycle { cycle: 1 });
            let hits = run.retrieve(1, Origin::Question, question, self.k, false)?;
            let ids: Vec<_> = hits.iter().map(|h| h.chunk_id).collect();
            if ids.is_empty() {
                let answered = run.nothing_found();
                return Ok(run.finish(answered, ids, Termination::NothingRetrieved, 1));
            }
            run.mark_read(&ids);
            let answered = run.answer(1, question, None, &ids).await?;
            Ok(run.finish(answered, ids, Termination::SinglePass, 1))
        })
    }
}
