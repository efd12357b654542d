//! Lexical scoring: Okapi BM25 over a set of short texts held in memory.
//!
//! Dense retrieval places "Search the forum for docker compose" near operations about
//! posting and inviting (same topic, other words) and can miss the operation named `search`;
//! a word-level score finds it at once. Callers fuse the two rankings
//! ([`reciprocal_rank_fusion`]) rather than pick one.
//!
//! Terms are lowercase runs of letters or digits; `camelCase` and `snake_case` are split
//! into words (`getUserEmails` → `get user email`), and a plural `s` is dropped so that
//! "members" meets "member" (not that of "status", "class" or "analysis").

use std::collections::HashMap;

/// BM25's term-frequency saturation.
const K1: f32 = 1.2;
/// BM25's length normalisation.
const B: f32 = 0.75;

/// A BM25 scorer over a fixed list of texts, scored by position in that list.
#[derive(Debug, Clone, Default)]
pub struct Bm25 {
    /// Per text: term → occurrences.
    texts: Vec<HashMap<String, u32>>,
    /// Per text: its number of terms.
    lengths: Vec<u32>,
    average_length: f32,
    /// Term → number of texts holding it.
    frequency: HashMap<String, u32>,
}

impl Bm25 {
    pub fn new<I, S>(texts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut scorer = Self::default();
        for text in texts {
            let mut counts: HashMap<String, u32> = HashMap::new();
            let terms = terms(text.as_ref());
            scorer.lengths.push(terms.len() as u32);
            for term in terms {
                *counts.entry(term).or_default() += 1;
            }
            for term in counts.keys() {
                *scorer.frequency.entry(term.clone()).or_default() += 1;
            }
            scorer.texts.push(counts);
        }
        let total: u32 = scorer.lengths.iter().sum();
        scorer.average_length = total as f32 / scorer.lengths.len().max(1) as f32;
        scorer
    }

    pub fn len(&self) -> usize {
        self.texts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// The score of every text for `query`, in the order the texts were given. A query term
    /// counts once however often it is repeated.
    pub fn scores(&self, query: &str) -> Vec<f32> {
        let mut query_terms = terms(query);
        query_terms.sort();
        query_terms.dedup();
        let n = self.texts.len() as f32;
        let weights: Vec<(&String, f32)> = query_terms
            .iter()
            .filter_map(|term| {
                let df = *self.frequency.get(term)? as f32;
                Some((term, (1.0 + (n - df + 0.5) / (df + 0.5)).ln()))
            })
            .collect();
        self.texts
            .iter()
            .zip(&self.lengths)
            .map(|(counts, &length)| {
                let norm = K1 * (1.0 - B + B * length as f32 / self.average_length.max(1.0));
                weights
                    .iter()
                    .filter_map(|(term, idf)| {
                        let tf = *counts.get(*term)? as f32;
                        Some(idf * tf * (K1 + 1.0) / (tf + norm))
                    })
                    .sum()
            })
            .collect()
    }

    /// The texts sharing a term with `query`, best first (ties by position): `(position,
    /// score)`.
    pub fn ranked(&self, query: &str) -> Vec<(usize, f32)> {
        let mut ranked: Vec<(usize, f32)> = self
            .scores(query)
            .into_iter()
            .enumerate()
            .filter(|&(_, score)| score > 0.0)
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }
}

/// The terms of `text` as [`Bm25`] counts them.
pub fn terms(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous: Option<char> = None;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            push_word(&mut words, &mut word);
            previous = None;
            continue;
        }
        let camel = c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase());
        let digits = previous.is_some_and(|p| p.is_ascii_digit() != c.is_ascii_digit());
        if camel || digits {
            push_word(&mut words, &mut word);
        }
        word.extend(c.to_lowercase());
        previous = Some(c);
    }
    push_word(&mut words, &mut word);
    words
}

fn push_word(words: &mut Vec<String>, word: &mut String) {
    if word.is_empty() {
        return;
    }
    let mut term = std::mem::take(word);
    if let Some(stem) = term.strip_suffix("ies").filter(|stem| stem.len() >= 2) {
        term = format!("{stem}y");
    } else if term.len() > 3
        && term.ends_with('s')
        && !["ss", "us", "is"].iter().any(|end| term.ends_with(end))
    {
        term.pop();
    }
    words.push(term);
}

/// Reciprocal rank fusion of rankings of the same items: each item scores
/// `Σ 1 / (k + rank)` over the rankings holding it (rank from 1), and the fused ranking is
/// best first, ties kept in order of first appearance. `k` = 60 is the usual choice: it
/// damps the difference between the first few places of any one ranking.
pub fn reciprocal_rank_fusion<T>(rankings: &[Vec<T>], k: f32) -> Vec<(T, f32)>
where
    T: Clone + PartialEq,
{
    let mut fused: Vec<(T, f32)> = Vec::new();
    for ranking in rankings {
        for (rank, item) in ranking.iter().enumerate() {
            let score = 1.0 / (k + rank as f32 + 1.0);
            match fused.iter_mut().find(|(seen, _)| seen == item) {
                Some((_, total)) => *total += score,
                None => fused.push((item.clone(), score)),
            }
        }
    }
    // A stable sort keeps first appearance among equal scores.
    fused.sort_by(|a, b| b.1.total_cmp(&a.1));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_split_identifiers_and_drop_plurals() {
        assert_eq!(
            terms("getUserEmails GET /u/{username}/emails.json"),
            ["get", "user", "email", "get", "u", "username", "email", "json"]
        );
        assert_eq!(terms("List group members"), ["list", "group", "member"]);
        assert_eq!(
            terms("tag_groups categories status"),
            ["tag", "group", "category", "status"]
        );
        assert_eq!(terms("user42 v2"), ["user", "42", "v", "2"]);
    }

    #[test]
    fn the_text_sharing_rare_words_ranks_first() {
        let bm25 = Bm25::new([
            "createTopicPostPM: Creates a new topic, a new post, or a private message",
            "search GET /search.json: Search for a term",
            "listLatestTopics: Get the latest topics",
        ]);
        let ranked = bm25.ranked("Search the forum for docker compose");
        assert_eq!(ranked[0].0, 1);
        // "for" is shared too, but only the search text matches "search".
        assert!(ranked[0].1 > 2.0 * ranked.get(1).map_or(0.0, |r| r.1));
        assert!(bm25.ranked("zebra").is_empty());
    }

    #[test]
    fn a_longer_text_with_the_same_match_scores_lower() {
        let bm25 = Bm25::new([
            "remove topic",
            "remove topic with many other words about posts and users and groups",
        ]);
        let scores = bm25.scores("remove topic");
        assert!(scores[0] > scores[1], "{scores:?}");
    }

    #[test]
    fn fusion_rewards_agreement_and_keeps_items_one_ranking_lacks() {
        let dense = vec!["a", "b", "c"];
        let lexical = vec!["d", "b", "c"];
        let fused: Vec<&str> = reciprocal_rank_fusion(&[dense, lexical], 60.0)
            .into_iter()
            .map(|(item, _)| item)
            .collect();
        // a and d tie (first place once each): a came first.
        assert_eq!(fused, ["b", "c", "a", "d"]);
    }
}
