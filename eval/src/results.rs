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
    /// Questions with a gold answer: the answer holds the gold answer or an alias
    /// (word-aligned, after normalisation; for a yes/no gold, the same word).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub right: Option<f64>,
    /// Questions with a gold answer: the passages the answer step was shown hold it (see
    /// [`gold_in_context`]). Unknown for a question the strategy failed on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_context: Option<f64>,
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
    /// The passages the answer step was shown, in prompt order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shown: Vec<ChunkId>,
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
    /// The question's kind in the set (`bridge`, `comparison`, `absent`...), where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question_kind: Option<String>,
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
        let metrics = Metrics {
            in_context: gold_in_context(question, &shown_passages(index, &answer.shown))
                .map(|held| f64::from(u8::from(held))),
            ..score(
                question,
                &answer.answer,
                answer.found,
                &ranked_docs,
                &ranked_sections,
            )
        };
        Self {
            id: question.id.clone(),
            strategy: strategy.to_string(),
            answer: answer.answer.clone(),
            found: answer.found,
            citations: answer.citations.clone(),
            shown: answer.shown.clone(),
            ranked: answer.ranked.clone(),
            ranked_docs,
            ranked_sections,
            termination: answer.termination.to_string(),
            cycles: answer.cycles,
            usage: answer.usage,
            elapsed_ms: answer.elapsed_ms,
            metrics,
            question_kind: question.kind.clone(),
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
            shown: Vec::new(),
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
            question_kind: question.kind.clone(),
            found_by: BTreeMap::new(),
            supporting_found_by: BTreeMap::new(),
            text: String::new(),
            error: Some(error),
        }
    }
}

/// What the answer step was shown: each passage's text, document and heading path.
fn shown_passages(index: &Index, shown: &[ChunkId]) -> Vec<ShownPassage> {
    shown
        .iter()
        .filter_map(|&id| index.row_of(id))
        .map(|row| {
            let c = index.chunk(row);
            ShownPassage {
                text: c.text().to_string(),
                doc: c.doc.id.0.clone(),
                section: c.section().path.clone(),
            }
        })
        .collect()
}

/// A passage the answer step was shown.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShownPassage {
    pub text: String,
    pub doc: String,
    pub section: Vec<String>,
}

/// Whether the passages shown held the gold answer: `None` for a question without one
/// (`absent`). A phrase gold is held when every `;` part, or one alias, occurs word-aligned in
/// the passages' text. A yes/no gold occurs in no passage as such: it is held when every
/// supporting document (or gold section) was among the passages shown, the evidence the
/// answer is decided on.
pub fn gold_in_context(question: &Question, shown: &[ShownPassage]) -> Option<bool> {
    if question.is_absent() {
        return None;
    }
    let gold = metrics::normalize_answer(&question.answer);
    if matches!(gold.as_str(), "yes" | "no") {
        let held = if question.is_structured() {
            !question.sections.is_empty()
                && question
                    .sections
                    .iter()
                    .all(|gold| shown.iter().any(|p| p.section.starts_with(gold)))
        } else {
            !question.supporting_ids.is_empty()
                && question
                    .supporting_ids
                    .iter()
                    .all(|doc| shown.iter().any(|p| &p.doc == doc))
        };
        return Some(held);
    }
    let text: Vec<&str> = shown.iter().map(|p| p.text.as_str()).collect();
    Some(metrics::contains(&text.join("\n"), &question.answer, &question.answer_aliases) > 0.0)
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
        right: (!question.is_absent())
            .then(|| metrics::contains(prediction, &question.answer, &question.answer_aliases)),
        in_context: None,
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

    fn passage(text: &str, doc: &str, section: &[&str]) -> ShownPassage {
        ShownPassage {
            text: text.into(),
            doc: doc.into(),
            section: section.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn right_is_the_gold_or_an_alias_held_word_aligned_by_the_answer() {
        let q = question(
            r#"{"id": "q", "question": "?", "answer": "Ilsa Brandt", "answer_aliases": ["I. Brandt"], "supporting_ids": ["d1"]}"#,
        );
        assert_eq!(
            score(&q, "It was Ilsa Brandt.", true, &[], &[]).right,
            Some(1.0)
        );
        assert_eq!(score(&q, "i brandt", true, &[], &[]).right, Some(1.0));
        assert_eq!(
            score(&q, "Ilsa Brandtberg", true, &[], &[]).right,
            Some(0.0)
        );
        let absent = question(r#"{"id": "q", "question": "?", "answer": "", "kind": "absent"}"#);
        assert_eq!(score(&absent, "not found", false, &[], &[]).right, None);
    }

    #[test]
    fn a_phrase_gold_is_in_context_when_a_shown_passage_holds_it() {
        let q = question(
            r#"{"id": "q", "question": "?", "answer": "Ilsa Brandt", "supporting_ids": ["d1", "d2"]}"#,
        );
        let held = [
            passage("The mill was sold.", "d9", &[]),
            passage("Its founder, Ilsa Brandt, left.", "d3", &[]),
        ];
        assert_eq!(gold_in_context(&q, &held), Some(true));
        let missed = [passage("Ilsa Brandtberg founded it.", "d1", &[])];
        assert_eq!(gold_in_context(&q, &missed), Some(false));
        assert_eq!(gold_in_context(&q, &[]), Some(false));
        let absent = question(r#"{"id": "q", "question": "?", "answer": "", "kind": "absent"}"#);
        assert_eq!(gold_in_context(&absent, &held), None);
    }

    #[test]
    fn a_yes_no_gold_is_in_context_when_every_piece_of_evidence_was_shown() {
        let q = question(
            r#"{"id": "q", "question": "?", "answer": "yes", "supporting_ids": ["d1", "d2"]}"#,
        );
        let one = [passage("yes", "d1", &[]), passage("x", "d3", &[])];
        assert_eq!(gold_in_context(&q, &one), Some(false));
        let both = [passage("a", "d2", &[]), passage("b", "d1", &[])];
        assert_eq!(gold_in_context(&q, &both), Some(true));

        let s = question(
            r#"{"id": "q", "question": "?", "answer": "No", "sections": [["Report", "Results"]], "kind": "multi"}"#,
        );
        let inside = [passage("a", "r", &["Report", "Results", "Revenue"])];
        assert_eq!(gold_in_context(&s, &inside), Some(true));
        let beside = [passage("a", "r", &["Report", "Methods"])];
        assert_eq!(gold_in_context(&s, &beside), Some(false));
    }
}
