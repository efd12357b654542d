//! One line of `results.jsonl`: a strategy's answer to one question, with its scores.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use walkrag_engine::{ChunkId, Index};

use walkrag_walker::{Answer, Cost, Origin, Step};

use crate::dataset::Question;
use crate::metrics;

/// The ks of recall@k.
pub const RECALL_KS: [usize; 3] = [2, 5, 10];

/// Scores of one answer.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Metrics {
    #[serde(rename = "recall@2")]
    pub recall_2: f64,
    #[serde(rename = "recall@5")]
    pub recall_5: f64,
    #[serde(rename = "recall@10")]
    pub recall_10: f64,
    pub em: f64,
    pub f1: f64,
    /// Structured-document questions: every part of the answer appears in the prediction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<f64>,
    /// `absent` questions: the strategy said the material does not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abstain: Option<f64>,
}

impl Metrics {
    pub fn recall(&self) -> [f64; 3] {
        [self.recall_2, self.recall_5, self.recall_10]
    }
}

/// A line of `results.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResultLine {
    pub id: String,
    pub strategy: String,
    pub answer: String,
    pub found: bool,
    pub citations: Vec<ChunkId>,
    pub ranked: Vec<ChunkId>,
    /// The document of each entry of `ranked`.
    pub ranked_docs: Vec<String>,
    /// The heading path of each entry of `ranked`, top heading first.
    pub ranked_sections: Vec<Vec<String>>,
    pub termination: String,
    pub cycles: usize,
    pub usage: Cost,
    pub elapsed_ms: u64,
    pub metrics: Metrics,
    /// What first found each document read: the origin of the first search that returned a
    /// chunk of it that was read (`question`, `model`, `hint`, `fallback`, `link`, `memory`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub found_by: BTreeMap<String, Origin>,
    /// How many of the question's supporting documents each origin found first.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub supporting_found_by: BTreeMap<Origin, usize>,
    /// The model's whole reply.
    #[serde(default)]
    pub text: String,
    /// Set when the strategy failed on this question (scored as zero; re-run on resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ResultLine {
    /// Scores `answer` for `question`, mapping its chunks to documents and sections.
    pub fn new(question: &Question, strategy: &str, answer: &Answer, index: &Index) -> Self {
        let located: Vec<(String, Vec<String>)> = answer
            .ranked
            .iter()
            .map(|&id| match index.row_of(id) {
                Some(row) => {
                    let c = index.chunk(row);
                    (c.doc.id.0.clone(), c.section().path.clone())
                }
                None => (String::new(), Vec::new()),
            })
            .collect();
        let (ranked_docs, ranked_sections): (Vec<_>, Vec<_>) = located.into_iter().unzip();
        let found_by = found_by(answer);
        let metrics = score(
            question,
            &answer.answer,
            answer.found,
            &ranked_docs,
            &ranked_sections,
        );
        Self {
            id: question.id.clone(),
            strategy: strategy.to_string(),
            answer: answer.answer.clone(),
            found: answer.found,
            citations: answer.citations.clone(),
            ranked: answer.ranked.clone(),
            ranked_docs,
            ranked_sections,
            termination: answer.termination.to_string(),
            cycles: answer.cycles,
            usage: answer.usage,
            elapsed_ms: answer.elapsed_ms,
            metrics,
            supporting_found_by: count_by_origin(&found_by, &question.supporting_ids),
            found_by,
            text: answer.text.clone(),
            error: None,
        }
    }

    /// A question the strategy failed on: no answer, every score zero.
    pub fn failed(question: &Question, strategy: &str, error: String, elapsed_ms: u64) -> Self {
        let metrics = score(question, "", false, &[], &[]);
        Self {
            id: question.id.clone(),
            strategy: strategy.to_string(),
            answer: String::new(),
            found: false,
            citations: Vec::new(),
            ranked: Vec::new(),
            ranked_docs: Vec::new(),
            ranked_sections: Vec::new(),
            termination: "error".into(),
            cycles: 0,
            usage: Cost::default(),
            elapsed_ms,
            metrics: Metrics {
                abstain: metrics.abstain.map(|_| 0.0),
                ..metrics
            },
            found_by: BTreeMap::new(),
            supporting_found_by: BTreeMap::new(),
            text: String::new(),
            error: Some(error),
        }
    }
}

/// The origin of the first search that returned a read chunk of each document, from the
/// answer's trace; chunks returned but never read (a walk keeps k of its searches' hits)
/// do not count.
fn found_by(answer: &Answer) -> BTreeMap<String, Origin> {
    let read: std::collections::HashSet<ChunkId> = answer.ranked.iter().copied().collect();
    let mut found = BTreeMap::new();
    for step in &answer.trace.steps {
        let Step::Retrieve(retrieval) = step else {
            continue;
        };
        for hit in retrieval.hits.iter().filter(|h| read.contains(&h.chunk_id)) {
            found.entry(hit.doc_id.clone()).or_insert(retrieval.origin);
        }
    }
    found
}

/// How many of `docs` each origin found first.
fn count_by_origin(
    found_by: &BTreeMap<String, Origin>,
    docs: &[String],
) -> BTreeMap<Origin, usize> {
    let mut counts = BTreeMap::new();
    for origin in docs.iter().filter_map(|d| found_by.get(d)) {
        *counts.entry(*origin).or_default() += 1;
    }
    counts
}

/// Scores one prediction. Document questions count recall over `ranked_docs`; structured ones
/// over `ranked_sections`, and add `contains` and (for `absent` questions) `abstain`.
pub fn score(
    question: &Question,
    prediction: &str,
    found: bool,
    ranked_docs: &[String],
    ranked_sections: &[Vec<String>],
) -> Metrics {
    let recall = |k| {
        if question.is_structured() {
            metrics::section_recall_at(ranked_sections, &question.sections, k)
        } else {
            metrics::recall_at(ranked_docs, &question.supporting_ids, k)
        }
    };
    let golds = || metrics::golds(&question.answer, &question.answer_aliases);
    let structured = question.is_structured();
    Metrics {
        recall_2: recall(RECALL_KS[0]),
        recall_5: recall(RECALL_KS[1]),
        recall_10: recall(RECALL_KS[2]),
        em: metrics::exact_match(prediction, golds()),
        f1: metrics::f1(prediction, golds()),
        contains: structured
            .then(|| metrics::contains(prediction, &question.answer, &question.answer_aliases)),
        abstain: question.is_absent().then(|| f64::from(u8::from(!found))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(json: &str) -> Question {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn document_questions_count_distinct_documents_of_ranked_chunks() {
        let q = question(
            r#"{"id": "q", "question": "?", "answer": "Ilsa Brandt", "supporting_ids": ["d1", "d2"]}"#,
        );
        // Chunks of d1, d1, d3, d2: the first two distinct documents are d1 and d3.
        let docs: Vec<String> = ["d1", "d1", "d3", "d2"].map(String::from).to_vec();
        let m = score(&q, "ilsa brandt.", true, &docs, &[]);
        assert_eq!(m.recall(), [0.5, 1.0, 1.0]);
        assert_eq!((m.em, m.f1), (1.0, 1.0));
        assert_eq!((m.contains, m.abstain), (None, None));
    }

    #[test]
    fn structured_questions_count_sections_contains_and_abstain() {
        let q = question(
            r#"{"id": "q", "question": "?", "answer": "48 million; 12%", "sections": [["Report", "Results"]], "kind": "multi"}"#,
        );
        let sections = vec![vec!["Report".into(), "Results".into(), "Revenue".into()]];
        let m = score(&q, "Revenue rose 12% to 48 million", true, &[], &sections);
        assert_eq!(m.recall(), [1.0; 3]);
        assert_eq!(m.contains, Some(1.0));
        assert_eq!(m.abstain, None);

        let absent = question(r#"{"id": "q", "question": "?", "answer": "", "kind": "absent"}"#);
        assert_eq!(
            score(&absent, "not found", false, &[], &[]).abstain,
            Some(1.0)
        );
        assert_eq!(score(&absent, "Paris", true, &[], &[]).abstain, Some(0.0));
    }
}
