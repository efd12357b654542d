//! Links between passages: a passage that names another document or section of the index
//! (its title or heading, as written) points there, the way a hyperlink would. The walk
//! follows the links of the passages its facts came from: the second hop of a question is
//! usually named in the first hop's passage ("a number of films, such as Maximum Overdrive,
//! were shot in Leland"), even when a small model does not think to say so.
//!
//! Numbered documents (standards, reports, manuals) link by number instead: "as described in
//! Section 7.2" or "Sections 4.1.3, 4.2.3, and 4.3.3" lead to the sections of the same
//! document whose headings start with those numbers, subsections included.

use std::collections::HashMap;

use aho_corasick::{AhoCorasick, MatchKind};
use walkrag_engine::Index;

/// Shortest name that counts as a link (shorter ones match everywhere).
const MIN_NAME_CHARS: usize = 4;

/// The names of an index's documents and sections, and the chunk rows each leads to.
pub struct Links {
    matcher: Option<AhoCorasick>,
    /// The names matched, by pattern.
    names: Vec<String>,
    /// Rows of pattern `i`'s document or section.
    targets: Vec<Vec<usize>>,
    /// Rows of each numbered section (subsections included), by document id and number.
    numbered: HashMap<(String, String), Vec<usize>>,
}

impl Links {
    pub fn of(index: &Index) -> Self {
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        let mut numbered: HashMap<(String, String), Vec<usize>> = HashMap::new();
        for row in 0..index.len() {
            let c = index.chunk(row);
            // "4.2.3 Reauthentication" is part of 4.2 and of 4: each number leads here.
            if let Some(number) = c.section().path.last().and_then(|h| section_number(h)) {
                let mut prefix = String::new();
                for part in number.split('.') {
                    if !prefix.is_empty() {
                        prefix.push('.');
                    }
                    prefix.push_str(part);
                    numbered
                        .entry((c.doc.id.0.clone(), prefix.clone()))
                        .or_default()
                        .push(row);
                }
            }
            let mut names = vec![name_of(&c.doc.title)];
            if let Some(heading) = c.section().path.last() {
                names.push(name_of(heading));
            }
            names.dedup();
            for name in names.into_iter().flatten() {
                by_name.entry(name).or_default().push(row);
            }
        }
        let (patterns, targets): (Vec<String>, Vec<Vec<usize>>) = by_name.into_iter().unzip();
        let matcher = (!patterns.is_empty()).then(|| {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&patterns)
                .expect("plain string patterns build")
        });
        Self {
            matcher,
            names: patterns,
            targets,
            numbered,
        }
    }

    /// Rows of the sections of document `doc` that `text` refers to by number ("Section
    /// 7.2", "Sections 4.1.3 and 4.2.3", "§ 5"), in the order referred to.
    pub fn referenced_in(&self, text: &str, doc: &str) -> Vec<usize> {
        let mut rows = Vec::new();
        for number in section_references(text) {
            for &row in self
                .numbered
                .get(&(doc.to_string(), number))
                .into_iter()
                .flatten()
            {
                if !rows.contains(&row) {
                    rows.push(row);
                }
            }
        }
        rows
    }

    /// Rows of every document or section `text` names, in the order first named; a name
    /// counts only as whole words.
    pub fn named_in(&self, text: &str) -> Vec<usize> {
        let mut rows = Vec::new();
        for pattern in self.mentions(text) {
            for &row in &self.targets[pattern] {
                if !rows.contains(&row) {
                    rows.push(row);
                }
            }
        }
        rows
    }

    /// The names of documents and sections `text` names, in the order first named, each
    /// once.
    pub fn names_in(&self, text: &str) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for pattern in self.mentions(text) {
            if !names.contains(&self.names[pattern]) {
                names.push(self.names[pattern].clone());
            }
        }
        names
    }

    /// The patterns `text` mentions as whole words, in order.
    fn mentions<'t>(&'t self, text: &'t str) -> impl Iterator<Item = usize> + 't {
        self.matcher
            .iter()
            .flat_map(move |matcher| matcher.find_iter(text))
            .filter(move |m| {
                let before = text[..m.start()].chars().next_back();
                let after = text[m.end()..].chars().next();
                !(before.is_some_and(char::is_alphanumeric)
                    || after.is_some_and(char::is_alphanumeric))
            })
            .map(|m| m.pattern().as_usize())
    }
}

/// The name a title is mentioned by: without a trailing qualifier in parentheses ("Kiss and
/// Tell (1945 film)" is written "Kiss and Tell"); `None` when too short or not capitalised
/// (common words would link everything), or when a qualifier leaves a single word: a title
/// needs one because the word alone means other things ("United (album)" is not what "United
/// States" names).
fn name_of(title: &str) -> Option<String> {
    let (name, qualified) = match title.rfind(" (") {
        Some(at) if title.ends_with(')') => (title[..at].trim(), true),
        _ => (title.trim(), false),
    };
    let capitalised = name
        .chars()
        .next()
        .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit());
    let one_word = name.split_whitespace().count() < 2;
    (capitalised && name.chars().count() >= MIN_NAME_CHARS && !(qualified && one_word))
        .then(|| name.to_string())
}

/// The number a heading starts with: "4.2.3" of "4.2.3 Reauthentication" (or of "4.2.3.
/// Reauthentication"); `None` for a heading without one.
fn section_number(heading: &str) -> Option<&str> {
    let first = heading.split_whitespace().next()?;
    let number = first.trim_end_matches('.');
    let well_formed = !number.is_empty()
        && number
            .split('.')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
    (well_formed && heading.split_whitespace().nth(1).is_some()).then_some(number)
}

/// The section numbers `text` refers to: after "Section", "Sections" or "§", a number and
/// any more joined by commas, "and", "or" or "to".
fn section_references(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut numbers = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if !matches!(
            *word,
            "Section" | "Sections" | "section" | "sections" | "§" | "§§"
        ) {
            continue;
        }
        for next in &words[i + 1..] {
            let bare = next.trim_end_matches([',', '.', ';', ':', ')']);
            if matches!(bare, "and" | "or" | "to") {
                continue;
            }
            let is_number = !bare.is_empty()
                && bare
                    .split('.')
                    .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
            if !is_number {
                break;
            }
            numbers.push(bare.to_string());
            // A number that ends its clause ends the list.
            if next.len() > bare.len() && !next.ends_with(',') {
                break;
            }
        }
    }
    numbers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_drop_qualifiers_and_skip_short_or_lower_case_titles() {
        assert_eq!(
            name_of("Kiss and Tell (1945 film)").as_deref(),
            Some("Kiss and Tell")
        );
        assert_eq!(
            name_of("Leland, North Carolina").as_deref(),
            Some("Leland, North Carolina")
        );
        assert_eq!(name_of("Kur"), None);
        assert_eq!(name_of("United (Marian Gold album)"), None);
        assert_eq!(name_of("Kessel").as_deref(), Some("Kessel"));
        assert_eq!(name_of("revenue"), None);
        assert_eq!(
            name_of("1999 World Drivers' Championship").as_deref(),
            Some("1999 World Drivers' Championship")
        );
    }

    #[test]
    fn headings_give_their_numbers() {
        assert_eq!(section_number("4.2.3 Reauthentication"), Some("4.2.3"));
        assert_eq!(section_number("7. Session Management"), Some("7"));
        assert_eq!(section_number("Reauthentication"), None);
        assert_eq!(
            section_number("1999 World Drivers' Championship"),
            Some("1999")
        );
        assert_eq!(section_number("2024"), None);
        assert_eq!(section_number("4..2 Odd"), None);
    }

    #[test]
    fn references_are_read_with_their_lists() {
        assert_eq!(
            section_references("performed as described in Section 7.2. At AAL2, it"),
            ["7.2"]
        );
        assert_eq!(
            section_references(
                "past the guidelines in Sections 4.1.3, 4.2.3, and 4.3.3 (depending"
            ),
            ["4.1.3", "4.2.3", "4.3.3"]
        );
        assert_eq!(
            section_references("see § 5 and Section 6 or 7"),
            ["5", "6", "7"]
        );
        assert_eq!(
            section_references("in Section 5, 30 days later"),
            ["5", "30"],
            "a number after a comma reads as listed: a near miss the ranking by the question sorts out"
        );
        assert!(section_references("the section on fees; 7.2 million").is_empty());
    }
}
