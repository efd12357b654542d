//! Whether a fact is supported by the passage it cites: small models copy the question, or a
//! fact of an earlier cycle, and cite whatever passage is at hand.
//!
//! A fact is supported when at least half of its content words that are not in the question
//! occur in the passage (its words, when all of them are the question's). Lexical, so
//! paraphrase costs a little; it is meant to catch facts with nothing to do with their
//! source, not to judge truth.

use std::collections::HashSet;

/// Least share of a fact's words found in its passage.
pub const MIN_SUPPORT: f32 = 0.5;

/// Words too common to count.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "he", "her",
    "his", "how", "in", "is", "it", "its", "of", "on", "or", "she", "that", "the", "their", "they",
    "this", "to", "was", "were", "what", "when", "where", "which", "who", "whom", "with",
];

fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect()
}

/// The share of `fact`'s words found in `passage`, counting only words not in `question`
/// when there are any.
pub fn support(fact: &str, question: &str, passage: &str) -> f32 {
    let fact_words = words(fact);
    let asked = words(question);
    let novel: HashSet<&String> = fact_words.difference(&asked).collect();
    let counted: HashSet<&String> = if novel.is_empty() {
        fact_words.iter().collect()
    } else {
        novel
    };
    if counted.is_empty() {
        return 0.0;
    }
    let passage = words(passage);
    let found = counted.iter().filter(|w| passage.contains(**w)).count();
    found as f32 / counted.len() as f32
}

/// Whether `fact` is supported by `passage` (see the module docs).
pub fn is_supported(fact: &str, question: &str, passage: &str) -> bool {
    support(fact, question, passage) >= MIN_SUPPORT
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUESTION: &str = "Where was the mayor of Velmora born?";
    const PASSAGE: &str = "Ilsa Brandt was born in Kessel in 1971 and trained as an engineer.";

    #[test]
    fn a_fact_drawn_from_the_passage_is_supported() {
        assert!(is_supported(
            "Ilsa Brandt was born in Kessel.",
            QUESTION,
            PASSAGE
        ));
        // Paraphrase within limits.
        assert!(is_supported(
            "Brandt, an engineer, comes from Kessel.",
            QUESTION,
            PASSAGE
        ));
    }

    #[test]
    fn a_copied_fact_citing_an_unrelated_passage_is_not() {
        assert!(!is_supported(
            "The mayor of Velmora is Ilsa Brandt, who chairs the river board.",
            QUESTION,
            "Apple orchards surround the valley below the mountain pass."
        ));
    }

    #[test]
    fn restating_the_question_counts_all_its_words() {
        // Nothing beyond the question: judged on all its words.
        assert!(!is_supported(
            "The mayor of Velmora was born?",
            QUESTION,
            "Apple orchards surround the valley."
        ));
        assert!(is_supported(
            "The mayor of Velmora was born.",
            QUESTION,
            "Velmora's mayor was born in the river town."
        ));
        assert_eq!(support("", QUESTION, PASSAGE), 0.0);
        assert_eq!(support("the of", QUESTION, PASSAGE), 0.0);
    }

    #[test]
    fn words_are_unicode_and_case_blind() {
        assert!(is_supported(
            "CHLOË LELAND",
            "q",
            "Chloë Leland directed it."
        ));
    }
}
