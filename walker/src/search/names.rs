//! The names a walk may search for next: what the passages shown name that was not read yet.
//!
//! Asked to say where to look next, a small model names the passages it was shown (their
//! titles, ids, openings) rather than what they point to. Offered the passages' own unread
//! names as the only choices (the read step's grammar holds `nextSource` to them), it has a
//! choice it can make: which of these leads to the answer. The names are the titles and
//! headings of the index that the passages mention (see [`Links`]) and the capitalised
//! names written in them ("Hank Snow", "American Psychological Association").

use walkrag_engine::{ChunkId, Index};

use crate::search::links::Links;

/// Most names offered in one read step.
pub const MAX_NAMES: usize = 24;

/// Shortest name offered, in characters.
const MIN_CHARS: usize = 3;

/// Most words of a written name.
const MAX_WORDS: usize = 6;

/// The search for an unread `name`: the name, then the question it should help answer.
pub fn query(name: &str, question: &str) -> String {
    format!("{name}: {question}")
}

/// The unread names of the passages `shown` (best first): names of the index's documents and
/// sections the passages mention, then the capitalised names written in them, each once, in
/// the order met. A name the question already holds, or the title or heading of a passage
/// read (`read_names`), is left out: searching for it finds what was found.
pub fn unread(
    index: &Index,
    links: &Links,
    shown: &[ChunkId],
    question: &str,
    read_names: &[String],
) -> Vec<String> {
    let question = question.to_lowercase();
    let read: Vec<String> = read_names.iter().map(|n| n.to_lowercase()).collect();
    let mut names: Vec<String> = Vec::new();
    let mut offer = |name: String| {
        let lower = name.to_lowercase();
        let known = question.contains(&lower)
            || read
                .iter()
                .any(|r| r == &lower || r.starts_with(&format!("{lower} (")))
            || names.iter().any(|n| n.to_lowercase() == lower);
        if !known && name.chars().count() >= MIN_CHARS && names.len() < MAX_NAMES {
            names.push(name);
        }
    };
    let texts: Vec<&str> = shown
        .iter()
        .filter_map(|&id| index.row_of(id))
        .map(|row| index.chunk(row).text())
        .collect();
    for text in &texts {
        for name in links.names_in(text) {
            offer(name);
        }
    }
    for text in &texts {
        for name in written_names(text) {
            offer(name);
        }
    }
    names
}

/// The capitalised names written in `text`: runs of capitalised words ("Johann Strauss II"),
/// joined by "of" ("Bank of England"), with initials kept inside ("G. Stanley Hall") and a
/// possessive's "'s" left off. A sentence's first word counts only when the passage never
/// writes it in lower case: capitals there say nothing ("The", "In").
pub fn written_names(text: &str) -> Vec<String> {
    let lower: std::collections::HashSet<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().next().is_some_and(char::is_lowercase))
        .collect();
    let mut names = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    let mut flush = |run: &mut Vec<&str>| {
        while run.last() == Some(&"of") {
            run.pop();
        }
        if !run.is_empty() && run.len() <= MAX_WORDS {
            names.push(run.join(" "));
        }
        run.clear();
    };
    let mut sentence_start = true;
    for raw in text.split_whitespace() {
        let opens = raw.starts_with(OPENING);
        let word = raw.trim_start_matches(OPENING);
        let bare = word.trim_end_matches(CLOSING);
        let bare = bare
            .strip_suffix("'s")
            .or_else(|| bare.strip_suffix("’s"))
            .unwrap_or(bare);
        let initial = is_initial(word);
        let capitalised = bare.chars().next().is_some_and(char::is_uppercase);
        let common = sentence_start && lower.contains(bare.to_lowercase().as_str());
        if opens {
            flush(&mut run);
        }
        if capitalised && !common {
            run.push(if initial { word } else { bare });
        } else if bare == "of" && !run.is_empty() {
            run.push("of");
        } else {
            flush(&mut run);
        }
        // Punctuation after a word ends the name (an initial's full stop does not).
        if !initial && bare.len() < word.len() {
            flush(&mut run);
        }
        sentence_start = !initial && word.ends_with(['.', '!', '?']);
    }
    flush(&mut run);
    names
}

/// What may open a name's first word: brackets and quotes.
const OPENING: [char; 5] = ['(', '"', '“', '\'', '['];
/// What may close a name's last word: punctuation, brackets and quotes.
const CLOSING: [char; 11] = [',', '.', ';', ':', ')', '"', '”', '\'', ']', '!', '?'];

/// "G." or "U.S.": capital letters each followed by a full stop.
fn is_initial(word: &str) -> bool {
    let mut chars = word.chars();
    let mut any = false;
    loop {
        match (chars.next(), chars.next()) {
            (Some(c), Some('.')) if c.is_uppercase() => any = true,
            (None, _) => return any,
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_names_are_capitalised_runs() {
        assert_eq!(
            written_names(
                "The formal study began with G. Stanley Hall's book. Hall, who was the first \
                 president of the American Psychological Association, viewed it so."
            ),
            [
                "G. Stanley Hall",
                "Hall",
                "American Psychological Association"
            ]
        );
        assert_eq!(
            written_names("It was written by Johann Strauss II in Vienna, Austria; it was not."),
            ["Johann Strauss II", "Vienna", "Austria"]
        );
        assert_eq!(
            written_names(
                "a historic tavern at Linville Falls (Avery County) and the Bank of England's"
            ),
            ["Linville Falls", "Avery County", "Bank of England"]
        );
        assert_eq!(
            written_names("Tennessee is a state. It borders Kentucky; it is in the U.S. South."),
            ["Tennessee", "Kentucky", "U.S. South"]
        );
    }

    #[test]
    fn initials_are_capitals_with_full_stops() {
        assert!(is_initial("G."));
        assert!(is_initial("U.S."));
        assert!(!is_initial("Hall."));
        assert!(!is_initial("G"));
    }
}
