//! Leads for the strategies that pick sections (`toc`, `roam`): the sections that hold the
//! question's nearest passages, each with the line of that passage that shares the most with
//! the question, listed beside the table of contents or the outline.
//!
//! Headings alone rarely say where an answer is: picking from the llama.cpp server README's
//! headings, the 0.5B model reached section recall@5 0.533 where the question's own search
//! reached 0.900 (`docs/results/llama-cpp-server/`). A lead lets the model see a passage's
//! own words under the id it may pick, and still pick another section where the headings
//! say more.

use walkrag_engine::lexical::Bm25;
use walkrag_engine::outline::snippet;
use walkrag_engine::{ChunkId, SectionId};

use crate::run::Run;
use crate::trace::Origin;

/// Characters of a lead's line shown.
const LINE_CHARS: usize = 160;

/// A section holding one of the question's nearest passages.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lead {
    /// The section the model may pick for it.
    pub section: SectionId,
    /// Its heading as the table of contents or outline writes it.
    pub heading: String,
    /// The passage's line nearest the question, shortened.
    pub line: String,
}

/// The distinct sections of the question's `k` nearest passages, nearest first; the search
/// is recorded like any other. `listed` gives the section (and its heading) a chunk is
/// listed under, `None` for one that cannot be picked.
pub(crate) fn search(
    run: &mut Run<'_>,
    cycle: usize,
    question: &str,
    vector: &[f32],
    k: usize,
    listed: impl Fn(ChunkId) -> Option<(SectionId, String)>,
) -> Vec<Lead> {
    let hits = run.retrieve_embedded(cycle, Origin::Question, question, vector, k, false);
    let index = run.env.index;
    let texts: Vec<String> = hits
        .iter()
        .map(|hit| {
            index
                .row_of(hit.chunk_id)
                .map(|row| index.chunk(row).text().to_string())
                .unwrap_or_default()
        })
        .collect();
    let lines = best_lines(&texts, question);
    let mut leads: Vec<Lead> = Vec::new();
    for (hit, line) in hits.iter().zip(lines) {
        let Some((section, heading)) = listed(hit.chunk_id) else {
            continue;
        };
        if leads.iter().any(|l| l.section == section) {
            continue;
        }
        leads.push(Lead {
            section,
            heading,
            line,
        });
    }
    leads
}

/// Each text's line that scores best for `question` by BM25 over the lines of all `texts`
/// (its first line where none shares a word with it), shortened to [`LINE_CHARS`].
fn best_lines(texts: &[String], question: &str) -> Vec<String> {
    let lines: Vec<Vec<&str>> = texts
        .iter()
        .map(|t| t.lines().map(str::trim).filter(|l| !l.is_empty()).collect())
        .collect();
    let scorer = Bm25::new(lines.iter().flatten());
    let scores = scorer.scores(question);
    let mut at = 0;
    lines
        .iter()
        .map(|of_text| {
            let own = &scores[at..at + of_text.len()];
            at += of_text.len();
            let best = (0..of_text.len())
                .max_by(|&a, &b| own[a].total_cmp(&own[b]).then(b.cmp(&a)))
                .filter(|&i| own[i] > 0.0)
                .unwrap_or(0);
            of_text
                .get(best)
                .map(|line| snippet(line, LINE_CHARS))
                .unwrap_or_default()
        })
        .collect()
}

/// The leads as the model reads them: `[id] heading: line`, one per line.
pub(crate) fn render<'l>(leads: impl IntoIterator<Item = &'l Lead>) -> String {
    leads
        .into_iter()
        .map(|l| format!("[{}] {}: {}\n", l.section, l.heading, l.line))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lead_shows_the_line_that_shares_most_with_the_question() {
        let texts = vec![
            "| Argument | Explanation |\n| --- | --- |\n| `-ub N` | physical maximum batch \
             size (default: 512) |\n| `-t N` | threads |"
                .to_string(),
            "Nothing in common here.\nStill nothing.".to_string(),
        ];
        let lines = best_lines(&texts, "How large is the physical batch by default?");
        assert_eq!(
            lines,
            [
                "| `-ub N` | physical maximum batch size (default: 512) |",
                "Nothing in common here."
            ]
        );
    }

    #[test]
    fn a_long_line_is_shortened_and_an_empty_text_has_none() {
        let long = format!("batch {}", "word ".repeat(100));
        let lines = best_lines(&[long, String::new()], "batch");
        assert!(lines[0].chars().count() <= LINE_CHARS + 1, "{}", lines[0]);
        assert!(lines[0].starts_with("batch word") && lines[0].ends_with('…'));
        assert_eq!(lines[1], "");
    }

    #[test]
    fn leads_render_one_line_each() {
        let leads = [Lead {
            section: SectionId(0x0a1b2c3d),
            heading: "Common params".into(),
            line: "| `-ub N` | physical batch |".into(),
        }];
        assert_eq!(
            render(&leads),
            "[0a1b2c3d] Common params: | `-ub N` | physical batch |\n"
        );
    }
}
