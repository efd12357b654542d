//! `summary.json`: means per strategy over the questions answered so far.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use walkrag_walker::Origin;

use crate::results::{Metrics, ResultLine};

/// The whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub dataset: String,
    /// Questions in the set (answered or not).
    pub questions: usize,
    pub strategies: BTreeMap<String, StrategySummary>,
}

/// One strategy's means per question. Questions it failed on count as zero.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StrategySummary {
    /// Mean scores (recall@2/5/10, EM, F1, and `contains`/`abstain` where they apply).
    #[serde(flatten)]
    pub scores: Metrics,
    pub llm_calls: f64,
    pub prompt_tokens: f64,
    pub completion_tokens: f64,
    pub seconds: f64,
    /// Questions answered (or failed) so far.
    pub answered: usize,
    pub errors: usize,
    /// Share of answers the strategy considered found.
    pub found: f64,
    /// Right among the questions whose gold answer was in the passages the answer step was
    /// shown: what the reader made of what the search found. `None` while no answer had it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_efficiency: Option<f64>,
    pub cycles: f64,
    /// Per kind of question in the set (`bridge`, `comparison`...), where questions have
    /// kinds: how many, and the share right and mean F1 among them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_kind: BTreeMap<String, KindSummary>,
    /// How many questions ended for each reason.
    pub terminations: BTreeMap<String, usize>,
    /// How many supporting documents each origin found first, over all questions: whether
    /// the model's searches found what the question and the links did not.
    #[serde(default)]
    pub supporting_found_by: BTreeMap<Origin, usize>,
}

/// One kind of question's share of a strategy's results.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KindSummary {
    pub questions: usize,
    /// Share right (gold in the answer); `None` where no question of the kind has a gold
    /// answer.
    pub right: Option<f64>,
    pub f1: f64,
}

/// Means per question kind of `lines`.
fn by_kind(lines: &[&ResultLine]) -> BTreeMap<String, KindSummary> {
    let mut kinds: BTreeMap<String, Vec<&ResultLine>> = BTreeMap::new();
    for line in lines {
        if let Some(kind) = &line.question_kind {
            kinds.entry(kind.clone()).or_default().push(line);
        }
    }
    kinds
        .into_iter()
        .map(|(kind, of)| {
            let rights: Vec<f64> = of.iter().filter_map(|l| l.metrics.right).collect();
            let summary = KindSummary {
                questions: of.len(),
                right: (!rights.is_empty())
                    .then(|| rights.iter().sum::<f64>() / rights.len() as f64),
                f1: of.iter().map(|l| l.metrics.f1).sum::<f64>() / of.len() as f64,
            };
            (kind, summary)
        })
        .collect()
}

impl StrategySummary {
    /// Means over `lines` (one strategy's).
    pub fn of(lines: &[&ResultLine]) -> Self {
        let n = lines.len().max(1) as f64;
        let mean = |f: &dyn Fn(&ResultLine) -> f64| lines.iter().map(|l| f(l)).sum::<f64>() / n;
        let optional_mean = |f: &dyn Fn(&ResultLine) -> Option<f64>| {
            let values: Vec<f64> = lines.iter().filter_map(|l| f(l)).collect();
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        };
        let mut terminations = BTreeMap::new();
        let mut supporting_found_by = BTreeMap::new();
        for line in lines {
            *terminations.entry(line.termination.clone()).or_default() += 1;
            for (&origin, &n) in &line.supporting_found_by {
                *supporting_found_by.entry(origin).or_default() += n;
            }
        }
        Self {
            scores: Metrics {
                recall_2: mean(&|l| l.metrics.recall_2),
                recall_5: mean(&|l| l.metrics.recall_5),
                recall_10: mean(&|l| l.metrics.recall_10),
                em: mean(&|l| l.metrics.em),
                f1: mean(&|l| l.metrics.f1),
                contains: optional_mean(&|l| l.metrics.contains),
                abstain: optional_mean(&|l| l.metrics.abstain),
                right: optional_mean(&|l| l.metrics.right),
                in_context: optional_mean(&|l| l.metrics.in_context),
            },
            reader_efficiency: reader_efficiency(lines),
            llm_calls: mean(&|l| l.usage.llm_calls as f64),
            prompt_tokens: mean(&|l| l.usage.prompt_tokens as f64),
            completion_tokens: mean(&|l| l.usage.completion_tokens as f64),
            seconds: mean(&|l| l.elapsed_ms as f64 / 1000.0),
            answered: lines.len(),
            errors: lines.iter().filter(|l| l.error.is_some()).count(),
            found: mean(&|l| f64::from(u8::from(l.found))),
            cycles: mean(&|l| l.cycles as f64),
            by_kind: by_kind(lines),
            terminations,
            supporting_found_by,
        }
    }
}

/// The mean of `right` over the lines whose gold was in context.
fn reader_efficiency(lines: &[&ResultLine]) -> Option<f64> {
    let rights: Vec<f64> = lines
        .iter()
        .filter(|l| l.metrics.in_context == Some(1.0))
        .filter_map(|l| l.metrics.right)
        .collect();
    (!rights.is_empty()).then(|| rights.iter().sum::<f64>() / rights.len() as f64)
}

impl Summary {
    /// The summary of `lines` for `strategies`, in a set of `questions` questions.
    pub fn of(dataset: &str, questions: usize, strategies: &[&str], lines: &[&ResultLine]) -> Self {
        let strategies = strategies
            .iter()
            .map(|&name| {
                let mine: Vec<&ResultLine> = lines
                    .iter()
                    .copied()
                    .filter(|l| l.strategy == name)
                    .collect();
                (name.to_string(), StrategySummary::of(&mine))
            })
            .collect();
        Self {
            dataset: dataset.to_string(),
            questions,
            strategies,
        }
    }
}
