//! Links between passages: a passage that names another document or section of the index
//! (its title or heading, as written) points there, the way a hyperlink would. The walk
//! follows the links of the passages its facts came from: the second hop of a question is
//! usually named in the first hop's passage ("a number of films, such as Maximum Overdrive,
//! were shot in Leland"), even when a small model does not think to say so.

use std::collections::HashMap;

use aho_corasick::{AhoCorasick, MatchKind};
use walkrag_engine::Index;

/// Shortest name that counts as a link (shorter ones match everywhere).
const MIN_NAME_CHARS: usize = 4;

/// The names of an index's documents and sections, and the chunk rows each leads to.
pub struct Links {
    matcher: Option<AhoCorasick>,
    /// Rows of pattern `i`'s document or section.
    targets: Vec<Vec<usize>>,
}

impl Links {
    pub fn of(index: &Index) -> Self {
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for row in 0..index.len() {
            let c = index.chunk(row);
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
        Self { matcher, targets }
    }

    /// Rows of every document or section `text` names, in the order first named; a name
    /// counts only as whole words.
    pub fn named_in(&self, text: &str) -> Vec<usize> {
        let Some(matcher) = &self.matcher else {
            return Vec::new();
        };
        let mut rows = Vec::new();
        for m in matcher.find_iter(text) {
            let before = text[..m.start()].chars().next_back();
            let after = text[m.end()..].chars().next();
            if before.is_some_and(char::is_alphanumeric) || after.is_some_and(char::is_alphanumeric)
            {
                continue;
            }
            for &row in &self.targets[m.pattern().as_usize()] {
                if !rows.contains(&row) {
                    rows.push(row);
                }
            }
        }
        rows
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
}
