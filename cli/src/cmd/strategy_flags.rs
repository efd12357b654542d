//! The strategies' settings that `ask` and `eval` share, declared once.

use std::sync::Arc;

use anyhow::{bail, ensure};
use walkrag_core::ChatModel;
use walkrag_walker::{AnswerModel, Options};

use super::ANSWERED_BY_ONE_MODEL;

/// How the strategies search, hop and answer.
#[derive(clap::Args, Clone, Debug)]
pub struct StrategyFlags {
    /// The model that reads whole documents for --strategy docs (a cheaper one: the
    /// documents are many, the answer is one) [default: --model].
    #[arg(long, value_name = "SPEC")]
    pub doc_reader_model: Option<String>,
    /// The model that writes the final answer (every strategy but actions; --answer-model is
    /// another name for it): a cheap --model walks, picks or reads, a stronger one answers
    /// from what it found; a smaller one saves time where only recall is measured
    /// (docs/results/ranking-dev) [default: --model where given, else
    /// local:qwen2.5-coder-1.5b where installed, else the default --model].
    #[arg(long, value_name = "SPEC", alias = "answer-model")]
    pub reader_model: Option<String>,
    /// Chunks retrieved per search [default: the strategy's, 5 for single].
    #[arg(short)]
    pub k: Option<usize>,
    /// Most retrieval cycles (multi-cycle strategies).
    #[arg(long)]
    pub max_cycles: Option<usize>,
    /// walk: where next sources come from. written: the model writes them in its read step;
    /// asked: after each read, one short call writes the follow-up question the cycle's best
    /// two passages raise ("Where was Tomas Belvik born?"), and it is searched
    /// (docs/results/walk-asked).
    #[arg(long, value_name = "FROM", default_value = "written", value_parser = ["written", "asked"])]
    pub next_sources: String,
    /// links, walk: in each hop, also search the first N names written in the passages read
    /// that were not read yet (index titles they mention, capitalised names), each with the
    /// question, with no model call: `links --names 3` recall@5 0.650 → 0.672 on MuSiQue's
    /// first 15, 0.850 → 0.925 on HotpotQA's first 20 (docs/results/musique-dev15/names)
    /// [default: 0].
    #[arg(long, value_name = "N")]
    pub names: Option<usize>,
    /// toc, roam: beside the table of contents or outline, list the sections of the
    /// question's N nearest passages, each with the line of its passage nearest the
    /// question, for the model to pick from (0: headings only); sections: the passages
    /// whose sections it reads, the first five, in the search's order [default: 10]. toc's
    /// section recall@5 0.533 → 0.700 with them; roam's the same (docs/results/leads).
    #[arg(long, value_name = "N")]
    pub leads: Option<usize>,
}

impl StrategyFlags {
    /// Refuses counts of zero, and a setting that no strategy that `runs` takes.
    pub fn check(&self, runs: impl Fn(&str) -> bool) -> anyhow::Result<()> {
        ensure!(self.k != Some(0), "-k must be at least 1");
        ensure!(
            self.max_cycles != Some(0),
            "--max-cycles must be at least 1"
        );
        if self.doc_reader_model.is_some() && !runs("docs") {
            bail!("--doc-reader-model works with the docs strategy (its readers read whole documents)");
        }
        if self.reader_model.is_some() && !ANSWERED_BY_ONE_MODEL.into_iter().any(&runs) {
            bail!("--reader-model works with every strategy but actions (it writes the answer from passages)");
        }
        if self.names.is_some() && !runs("links") && !runs("walk") {
            bail!("--names works with the links and walk strategies (their hops search the names)");
        }
        if self.next_sources != "written" && !runs("walk") {
            bail!("--next-sources works with the walk strategy");
        }
        if self.leads.is_some() && !["toc", "sections", "roam"].into_iter().any(&runs) {
            bail!(
                "--leads works with the toc, sections and roam strategies (their picks list the leads)"
            );
        }
        if self.leads == Some(0) && runs("sections") {
            bail!("--leads 0 leaves the sections strategy nothing to read: it reads the leads");
        }
        Ok(())
    }

    /// The strategies' options beside the chat model `model`, for the strategies that `runs`;
    /// each other model is loaded and passed through `wrap`.
    pub fn options(
        &self,
        model: &super::ModelArg,
        runs: impl Fn(&str) -> bool,
        wrap: impl Fn(Arc<dyn ChatModel>) -> Arc<dyn ChatModel>,
    ) -> anyhow::Result<Options> {
        let reader = super::load_other_model(
            self.doc_reader_model.as_deref(),
            model.spec(),
            "document reader",
        )?;
        let answer = if ANSWERED_BY_ONE_MODEL.into_iter().any(runs) {
            super::load_answer_model(self.reader_model.as_deref(), model)?
        } else {
            None
        };
        Ok(Options {
            k: self.k,
            max_cycles: self.max_cycles,
            reader: reader.map(&wrap),
            answer_model: answer.map(&wrap).map(AnswerModel),
            next_sources: super::next_sources(&self.next_sources),
            names: self.names,
            leads: self.leads,
            ..Options::default()
        })
    }
}
