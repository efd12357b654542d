//! Which language a question is in, when it is clearly not English, so the answer step can
//! ask for an answer in that language. Small models answer in English whatever they are
//! asked unless told; telling them only when needed keeps English prompts as they are.
//!
//! Scripts decide first (Cyrillic, Greek, Arabic, Hebrew, Devanagari, Thai, Hangul, kana,
//! Han); for Latin script, the most common short words of a few languages are counted and
//! the language with the most wins when it has at least two and more than English.

/// Common words that mostly belong to one language (articles, pronouns, question words,
/// prepositions), lowercase.
const WORDS: [(&str, &[&str]); 8] = [
    (
        "English",
        &[
            "the", "what", "which", "who", "how", "is", "are", "was", "of", "and", "in", "does",
            "did", "to", "for", "with",
        ],
    ),
    (
        "German",
        &[
            "der", "die", "das", "und", "ist", "wie", "was", "wer", "welche", "welcher", "nicht",
            "ein", "eine", "den", "dem", "mit", "für", "auf", "im", "wird", "hat",
        ],
    ),
    (
        "French",
        &[
            "le", "la", "les", "est", "quel", "quelle", "quels", "qui", "comment", "une", "des",
            "du", "pour", "dans", "avec", "pas", "que", "au",
        ],
    ),
    (
        "Spanish",
        &[
            "el", "la", "los", "las", "qué", "cuál", "cuáles", "quién", "cómo", "una", "del",
            "para", "con", "por", "es", "está", "son", "que", "fue", "su", "sus", "hay",
        ],
    ),
    (
        "Italian",
        &[
            "il", "gli", "che", "cosa", "quale", "quali", "chi", "come", "della", "per", "con",
            "non", "è", "sono", "una", "nel",
        ],
    ),
    (
        "Portuguese",
        &[
            "o", "os", "as", "qual", "quais", "quem", "como", "uma", "do", "da", "para", "com",
            "não", "é", "são", "em",
        ],
    ),
    (
        "Dutch",
        &[
            "de", "het", "een", "wat", "welke", "wie", "hoe", "is", "van", "voor", "met", "niet",
            "en", "zijn",
        ],
    ),
    (
        "Swedish",
        &[
            "och", "är", "vad", "vilken", "vilka", "vem", "hur", "en", "ett", "för", "med", "inte",
            "som", "på",
        ],
    ),
];

/// The language of `text` by its script or words, or `None` for English or when unsure.
pub fn not_english(text: &str) -> Option<&'static str> {
    if let Some(language) = by_script(text) {
        return Some(language);
    }
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let count = |list: &[&str]| words.iter().filter(|w| list.contains(&w.as_str())).count();
    let english = count(WORDS[0].1);
    // The first of equal counts wins.
    let (language, best) = WORDS[1..]
        .iter()
        .map(|(name, list)| (*name, count(list)))
        .fold(None, |best: Option<(&str, usize)>, (name, n)| match best {
            Some((_, m)) if m >= n => best,
            _ => Some((name, n)),
        })?;
    (best >= 2 && best > english).then_some(language)
}

/// A language named by the script most of the letters are in (Latin: `None`).
fn by_script(text: &str) -> Option<&'static str> {
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    let mut latin = 0;
    for c in text.chars().filter(|c| c.is_alphabetic()) {
        let script = match c as u32 {
            0x0400..=0x04FF => "Russian",
            0x0370..=0x03FF => "Greek",
            0x0590..=0x05FF => "Hebrew",
            0x0600..=0x06FF => "Arabic",
            0x0900..=0x097F => "Hindi",
            0x0E00..=0x0E7F => "Thai",
            0xAC00..=0xD7AF | 0x1100..=0x11FF => "Korean",
            0x3040..=0x30FF => "Japanese",
            0x4E00..=0x9FFF => "Chinese",
            _ => {
                latin += 1;
                continue;
            }
        };
        match counts.iter_mut().find(|(name, _)| *name == script) {
            Some((_, n)) => *n += 1,
            None => counts.push((script, 1)),
        }
    }
    // Kana among Han characters is Japanese.
    if counts.iter().any(|(name, _)| *name == "Japanese") {
        let kana = counts
            .iter()
            .find(|(n, _)| *n == "Japanese")
            .map_or(0, |c| c.1);
        let han = counts
            .iter()
            .find(|(n, _)| *n == "Chinese")
            .map_or(0, |c| c.1);
        counts.retain(|(name, _)| *name != "Chinese" && *name != "Japanese");
        counts.push(("Japanese", kana + han));
    }
    let (script, n) = counts.into_iter().max_by_key(|&(_, n)| n)?;
    (n > latin).then_some(script)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_and_unsure_text_is_none() {
        assert_eq!(
            not_english("What was the revenue of the cooperative in 2023?"),
            None
        );
        assert_eq!(not_english("Who is Ilsa Brandt?"), None);
        assert_eq!(not_english("llama-server --parallel"), None);
        assert_eq!(not_english(""), None);
    }

    #[test]
    fn languages_are_told_by_their_words_or_script() {
        assert_eq!(
            not_english("Wie hoch war der Umsatz der Genossenschaft im Jahr 2023?"),
            Some("German")
        );
        assert_eq!(
            not_english("Quel est le chiffre d'affaires de la coopérative ?"),
            Some("French")
        );
        assert_eq!(
            not_english("¿Cuál fue el beneficio de la cooperativa en 2023?"),
            Some("Spanish")
        );
        assert_eq!(not_english("Какая выручка у кооператива?"), Some("Russian"));
        assert_eq!(not_english("合作社的收入是多少？"), Some("Chinese"));
        assert_eq!(
            not_english("協同組合の売上はいくらですか？"),
            Some("Japanese")
        );
    }
}
