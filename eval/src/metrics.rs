//! Metrics: retrieval recall over documents or sections, and answer scores (SQuAD exact
//! match and token F1, `contains`, `abstain`).

use std::collections::HashSet;
use std::hash::Hash;

/// The first `k` distinct items of `ranked`, in order.
pub fn distinct_prefix<T: Eq + Hash + Clone>(ranked: &[T], k: usize) -> Vec<T> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(k);
    for item in ranked {
        if out.len() == k {
            break;
        }
        if seen.insert(item) {
            out.push(item.clone());
        }
    }
    out
}

/// Recall@k: the share of `relevant` items among the first `k` distinct items of `ranked`
/// (several chunks of one document count once). 1.0 when nothing is relevant.
pub fn recall_at<T: Eq + Hash + Clone>(ranked: &[T], relevant: &[T], k: usize) -> f64 {
    let relevant: HashSet<&T> = relevant.iter().collect();
    if relevant.is_empty() {
        return 1.0;
    }
    let top = distinct_prefix(ranked, k);
    let hits = top.iter().filter(|d| relevant.contains(d)).count();
    hits as f64 / relevant.len() as f64
}

/// Section recall@k: the share of `gold` sections (heading paths, top heading first) that hold
/// (themselves or in a subsection) at least one of the first `k` distinct sections of
/// `ranked`. 1.0 when no section is listed.
pub fn section_recall_at(ranked: &[Vec<String>], gold: &[Vec<String>], k: usize) -> f64 {
    if gold.is_empty() {
        return 1.0;
    }
    let top = distinct_prefix(ranked, k);
    let held = gold
        .iter()
        .filter(|g| top.iter().any(|r| r.starts_with(g)))
        .count();
    held as f64 / gold.len() as f64
}

/// SQuAD answer normalisation: lower case, punctuation removed, the articles a/an/the
/// removed, whitespace collapsed.
pub fn normalize_answer(text: &str) -> String {
    let lower = text.to_lowercase();
    let no_punct: String = lower
        .chars()
        .filter(|c| !c.is_ascii_punctuation() && !is_unicode_punctuation(*c))
        .collect();
    no_punct
        .split_whitespace()
        .filter(|w| !matches!(*w, "a" | "an" | "the"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Punctuation outside ASCII that SQuAD's `string.punctuation` would not catch but answers
/// carry (curly quotes, dashes).
fn is_unicode_punctuation(c: char) -> bool {
    matches!(c, '‘' | '’' | '“' | '”' | '–' | '—' | '…' | '«' | '»')
}

/// The gold answers of a question: `answer` and its aliases.
pub fn golds<'a>(answer: &'a str, aliases: &'a [String]) -> impl Iterator<Item = &'a str> {
    std::iter::once(answer).chain(aliases.iter().map(String::as_str))
}

/// Exact match (0 or 1) after normalisation, best over the gold answers.
pub fn exact_match<'a>(prediction: &str, golds: impl IntoIterator<Item = &'a str>) -> f64 {
    let p = normalize_answer(prediction);
    let hit = golds.into_iter().any(|g| normalize_answer(g) == p);
    f64::from(u8::from(hit))
}

/// SQuAD token F1 after normalisation, best over the gold answers. Repeated tokens count as
/// often as they occur in both.
pub fn f1<'a>(prediction: &str, golds: impl IntoIterator<Item = &'a str>) -> f64 {
    let p = normalize_answer(prediction);
    let p: Vec<&str> = p.split_whitespace().collect();
    golds
        .into_iter()
        .map(|g| {
            let g = normalize_answer(g);
            let g: Vec<&str> = g.split_whitespace().collect();
            token_f1(&p, &g)
        })
        .fold(0.0, f64::max)
}

fn token_f1(prediction: &[&str], gold: &[&str]) -> f64 {
    if prediction.is_empty() || gold.is_empty() {
        return f64::from(u8::from(prediction == gold));
    }
    let mut counts: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for w in gold {
        *counts.entry(w).or_default() += 1;
    }
    let mut common = 0usize;
    for w in prediction {
        if let Some(n) = counts.get_mut(w) {
            if *n > 0 {
                *n -= 1;
                common += 1;
            }
        }
    }
    if common == 0 {
        return 0.0;
    }
    let precision = common as f64 / prediction.len() as f64;
    let recall = common as f64 / gold.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// 1 when every `;`-separated part of `answer` appears in the normalised prediction, or one
/// alias does (word-aligned).
pub fn contains(prediction: &str, answer: &str, aliases: &[String]) -> f64 {
    let p = format!(" {} ", normalize_answer(prediction));
    let within = |part: &str| {
        let n = normalize_answer(part);
        !n.is_empty() && p.contains(&format!(" {n} "))
    };
    let parts: Vec<&str> = answer.split(';').filter(|s| !s.trim().is_empty()).collect();
    let all_parts = !parts.is_empty() && parts.iter().all(|part| within(part));
    f64::from(u8::from(all_parts || aliases.iter().any(|a| within(a))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_count_once_and_do_not_use_up_k() {
        // Chunks of documents a, a, b, a, c: the first two distinct documents are a and b.
        let ranked = ["a", "a", "b", "a", "c"];
        assert_eq!(distinct_prefix(&ranked, 2), ["a", "b"]);
        assert_eq!(recall_at(&ranked, &["b", "c"], 2), 0.5);
        assert_eq!(recall_at(&ranked, &["b", "c"], 3), 1.0);
        assert_eq!(recall_at(&ranked, &["x"], 10), 0.0);
    }

    #[test]
    fn relevant_duplicates_and_empty_sets() {
        assert_eq!(recall_at(&["a"], &["a", "a"], 1), 1.0);
        assert_eq!(recall_at::<&str>(&[], &[], 5), 1.0);
        assert_eq!(recall_at::<&str>(&[], &["a"], 5), 0.0);
    }
    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn section_recall_counts_subsections() {
        let ranked = vec![
            strings(&["Report", "Results", "Revenue"]),
            strings(&["Report", "Results", "Revenue"]),
            strings(&["Report", "Board"]),
        ];
        let gold = vec![
            strings(&["Report", "Results"]),
            strings(&["Report", "Outlook"]),
        ];
        assert_eq!(section_recall_at(&ranked, &gold, 1), 0.5);
        // A ranked parent does not hold a gold subsection.
        let parent = vec![strings(&["Report"])];
        assert_eq!(section_recall_at(&parent, &gold, 5), 0.0);
        assert_eq!(section_recall_at(&ranked, &[], 5), 1.0);
    }

    #[test]
    fn squad_normalisation() {
        assert_eq!(normalize_answer("The  Beatles!"), "beatles");
        assert_eq!(normalize_answer("A spirit."), "spirit");
        assert_eq!(normalize_answer("“Théâtre” – an Ode"), "théâtre ode");
        assert_eq!(normalize_answer("anthem, the end"), "anthem end");
    }

    #[test]
    fn exact_match_takes_the_best_gold() {
        let aliases = strings(&["NYC"]);
        assert_eq!(
            exact_match("the New York City.", golds("New York City", &aliases)),
            1.0
        );
        assert_eq!(exact_match("nyc", golds("New York City", &aliases)), 1.0);
        assert_eq!(
            exact_match("New York", golds("New York City", &aliases)),
            0.0
        );
        assert_eq!(exact_match("", golds("", &[])), 1.0);
    }

    #[test]
    fn f1_counts_shared_tokens() {
        // prediction "new york", gold "new york city": p = 1, r = 2/3.
        let f = f1("New York", golds("New York City", &[]));
        assert!((f - 0.8).abs() < 1e-9, "{f}");
        assert_eq!(f1("Paris", golds("London", &[])), 0.0);
        assert_eq!(f1("the", golds("a", &[])), 1.0, "both normalise to nothing");
        assert_eq!(f1("", golds("Paris", &[])), 0.0);
        // Repeated tokens count at most as often as in the gold.
        let f = f1("paris paris", golds("paris", &[]));
        assert!((f - 2.0 / 3.0).abs() < 1e-9, "{f}");
        let aliases = strings(&["Big Apple"]);
        assert_eq!(f1("big apple", golds("New York", &aliases)), 1.0);
    }

    #[test]
    fn contains_needs_every_part_or_an_alias() {
        assert_eq!(
            contains(
                "Revenue rose to 48 million euros in 2025",
                "48 million; 2025",
                &[]
            ),
            1.0
        );
        assert_eq!(
            contains("Revenue rose to 48 million euros", "48 million; 2025", &[]),
            0.0
        );
        assert_eq!(
            contains("It was the K-7.", "K7 turbine", &strings(&["k7"])),
            1.0
        );
        assert_eq!(contains("1234", "123", &[]), 0.0, "whole words only");
        assert_eq!(contains("anything", "", &[]), 0.0);
    }
}
