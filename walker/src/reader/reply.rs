//! Reading an answer reply: the short answer, whether it was found, and the chunks cited.
//!
//! Small models follow the `Answer: / Sources: / Explanation:` format loosely, so the reader
//! accepts Markdown decoration, ids with or without brackets, and a reply without labels.

use walkrag_engine::ChunkId;

/// An answer reply, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The answer line without its label and citations.
    pub answer: String,
    /// False when the reply says the passages do not hold the answer.
    pub found: bool,
}

/// Answers that mean "the passages do not say" (compared after normalisation).
const NOT_FOUND: [&str; 8] = [
    "not found",
    "no answer",
    "unknown",
    "cannot be determined",
    "not mentioned",
    "not stated",
    "the passages do not",
    "insufficient information",
];

/// The short answer and whether it was found; the chunks cited come from [`match_ids`],
/// which needs the passages shown.
pub fn parse(text: &str) -> Reply {
    let raw = answer_line(text).unwrap_or_default();
    let answer = clean(&raw);
    let key = normalise(&answer);
    let found = !key.is_empty() && !NOT_FOUND.iter().any(|p| key.starts_with(p));
    Reply { answer, found }
}

/// The text after `Answer:` (or on the next line when that is empty); without such a label,
/// the first non-empty line.
fn answer_line(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().map(undecorate).collect();
    for (i, line) in lines.iter().enumerate() {
        if let Some(rest) = strip_label(line, "answer") {
            if !rest.is_empty() {
                return Some(rest.to_string());
            }
            return lines[i + 1..]
                .iter()
                .find(|l| !l.is_empty())
                .filter(|l| label_of(l).is_none())
                .map(|l| l.to_string());
        }
    }
    lines
        .iter()
        .find(|l| !l.is_empty() && label_of(l).is_none())
        .map(|l| l.to_string())
}

/// A line without Markdown list, heading and emphasis marks around it.
fn undecorate(line: &str) -> &str {
    line.trim()
        .trim_start_matches(['#', '-', '>', ' '])
        .trim_matches('*')
        .trim_matches('_')
        .trim()
}

/// `rest` when `line` starts with `label:` (any case, emphasis around the label allowed).
fn strip_label<'a>(line: &'a str, label: &str) -> Option<&'a str> {
    let head = line.get(..label.len())?;
    if !head.eq_ignore_ascii_case(label) {
        return None;
    }
    let rest = line[label.len()..].trim_start_matches('*');
    let rest = rest.strip_prefix(':')?;
    Some(rest.trim_start_matches('*').trim())
}

fn label_of(line: &str) -> Option<&'static str> {
    ["answer", "sources", "source", "explanation"]
        .into_iter()
        .find(|label| strip_label(line, label).is_some())
}

/// The answer without chunk ids, empty brackets and trailing punctuation.
fn clean(raw: &str) -> String {
    let mut text = strip_ids(raw);
    for empty in ["[]", "()", "[, ]", "[,]"] {
        text = text.replace(empty, "");
    }
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    text.trim_matches(|c: char| c == '.' || c == ',' || c == ';' || c == '*' || c == '"')
        .trim()
        .to_string()
}

/// Lower case, letters and digits only, single spaces.
fn normalise(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Byte ranges of chunk ids (`1a2b3c4d.0`) in `text`, standing alone (not inside a longer word).
fn id_spans(text: &str) -> Vec<(usize, usize, ChunkId)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 10 <= bytes.len() {
        let boundary_before = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if boundary_before
            && bytes[i..i + 8].iter().all(u8::is_ascii_hexdigit)
            && bytes[i + 8] == b'.'
        {
            let mut end = i + 9;
            while end < bytes.len() && bytes[end].is_ascii_digit() {
                end += 1;
            }
            let boundary_after = end == bytes.len() || !bytes[end].is_ascii_alphanumeric();
            if end > i + 9 && boundary_after {
                if let Some(id) = ChunkId::parse(&text[i..end]) {
                    out.push((i, end, id));
                    i = end;
                    continue;
                }
            }
        }
        i += 1;
    }
    out
}

/// `text` with every chunk id removed.
pub fn strip_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end, _) in id_spans(text) {
        out.push_str(&text[last..start]);
        last = end;
    }
    out.push_str(&text[last..]);
    out
}

/// How a cited id was matched to a passage the model was shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// The id as written.
    Exact(ChunkId),
    /// A near miss (a digit dropped, swapped or added: small models do this) that is closer to
    /// this shown id than to any other.
    Repaired(ChunkId),
}

impl Match {
    pub fn id(self) -> ChunkId {
        match self {
            Match::Exact(id) | Match::Repaired(id) => id,
        }
    }
}

/// Every id-like token of `text` (hex digits, a dot, digits), matched to `shown`: exactly, or
/// within two edits of exactly one shown id. Tokens that match nothing are returned apart.
pub fn match_ids(text: &str, shown: &[ChunkId]) -> (Vec<Match>, Vec<String>) {
    let mut matched: Vec<Match> = Vec::new();
    let mut unknown = Vec::new();
    for token in id_like_tokens(text) {
        let found = match ChunkId::parse(&token).filter(|id| shown.contains(id)) {
            Some(id) => Some(Match::Exact(id)),
            None if token.contains('.') => nearest(&token, shown).map(Match::Repaired),
            // A section id without its chunk number: the one shown chunk of that section.
            None => {
                let of_section: Vec<ChunkId> = shown
                    .iter()
                    .copied()
                    .filter(|id| {
                        edit_distance(token.as_bytes(), id.section.to_string().as_bytes()) <= 1
                    })
                    .collect();
                (of_section.len() == 1).then(|| Match::Repaired(of_section[0]))
            }
        };
        match found {
            Some(m) if !matched.iter().any(|x| x.id() == m.id()) => matched.push(m),
            Some(_) => {}
            None if token.contains('.') => unknown.push(token),
            None => {}
        }
    }
    (matched, unknown)
}

/// Tokens of 5 to 10 hex digits, a dot and 1 to 3 digits, standing alone; or of 7 to 9 hex
/// digits alone, with at least one letter and one digit (a section id without its chunk number).
fn id_like_tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
        .map(|t| t.trim_end_matches('.'))
        .filter(|t| {
            let Some((hex, index)) = t.split_once('.') else {
                return (7..=9).contains(&t.len())
                    && t.bytes().all(|b| b.is_ascii_hexdigit())
                    && t.bytes().any(|b| b.is_ascii_digit())
                    && t.bytes().any(|b| b.is_ascii_alphabetic());
            };
            (5..=10).contains(&hex.len())
                && hex.bytes().all(|b| b.is_ascii_hexdigit())
                && (1..=3).contains(&index.len())
                && index.bytes().all(|b| b.is_ascii_digit())
        })
        .map(|t| t.to_ascii_lowercase())
        .collect()
}

/// The shown id within two edits of `token`, if exactly one is nearest.
fn nearest(token: &str, shown: &[ChunkId]) -> Option<ChunkId> {
    let mut best: Option<(usize, ChunkId)> = None;
    let mut tie = false;
    for &id in shown {
        let d = edit_distance(token.as_bytes(), id.to_string().as_bytes());
        match best {
            Some((b, _)) if d > b => {}
            Some((b, _)) if d == b => tie = true,
            _ => {
                best = Some((d, id));
                tie = false;
            }
        }
    }
    match best {
        Some((d, id)) if d <= 2 && !tie => Some(id),
        _ => None,
    }
}

/// Levenshtein distance.
fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &y) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(x != y);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> ChunkId {
        ChunkId::parse(text).unwrap()
    }

    #[test]
    fn reads_the_requested_format() {
        let text = "Answer: Paris [0badcafe.1]\nSources: [0badcafe.1], [12345678.0]\nExplanation: \
             The capital is Paris [0badcafe.1].";
        let reply = parse(text);
        assert_eq!(reply.answer, "Paris");
        assert!(reply.found);
        let shown = [id("12345678.0"), id("0badcafe.1")];
        assert_eq!(
            match_ids(text, &shown),
            (
                vec![
                    Match::Exact(id("0badcafe.1")),
                    Match::Exact(id("12345678.0"))
                ],
                vec![]
            ),
            "first mention first, once each"
        );
    }

    #[test]
    fn tolerates_markdown_and_missing_labels() {
        assert_eq!(parse("**Answer:** yes.\n").answer, "yes");
        assert_eq!(parse("- **Answer**: 1998 (abcdef01.2)").answer, "1998");
        assert_eq!(
            parse("Answer:\n\nThe Beatles\nSources: x").answer,
            "The Beatles"
        );
        assert_eq!(
            parse("\nA spirit, see [abcdef01.0]\n").answer,
            "A spirit, see"
        );
        assert_eq!(parse("Sources: [abcdef01.0]").answer, "");
    }

    #[test]
    fn recognises_not_found() {
        for text in [
            "Answer: not found\nExplanation: the passages are about trains.",
            "Answer: Not found.",
            "Answer: Unknown",
            "Answer: The passages do not say.",
            "",
        ] {
            assert!(!parse(text).found, "{text:?}");
        }
        assert!(parse("Answer: Foundation year 1902").found);
    }

    #[test]
    fn ids_must_stand_alone() {
        assert_eq!(
            strip_ids("x0badcafe.1 0badcafe.1x 0badcafe. 0badcafe.12"),
            "x0badcafe.1 0badcafe.1x 0badcafe. "
        );
        assert_eq!(strip_ids("a [0badcafe.1] b"), "a [] b");
        assert_eq!(strip_ids("ünï [0badcafe.3]"), "ünï []");
    }
    #[test]
    fn near_miss_ids_are_repaired_only_when_unambiguous() {
        let shown = [id("e0fe6442.0"), id("6a38dd1c.0"), id("b02e1443.1")];
        let (matched, unknown) = match_ids(
            "[0fe6442.0], [6a38dd1c.0] and b02e1443.7 or 12345678.0",
            &shown,
        );
        assert_eq!(
            matched,
            [
                Match::Repaired(id("e0fe6442.0")),
                Match::Exact(id("6a38dd1c.0")),
                Match::Repaired(id("b02e1443.1"))
            ]
        );
        assert_eq!(unknown, ["12345678.0"]);
        // A section id without its chunk number names the one shown chunk of that section.
        assert_eq!(
            match_ids("(6a38dd1c)", &shown).0,
            [Match::Repaired(id("6a38dd1c.0"))]
        );
        // Other hex-looking words are neither matched nor reported.
        assert_eq!(match_ids("deadbee1 and 19711971", &shown), (vec![], vec![]));
        // Equally near two shown ids: not guessed.
        let twins = [id("aaaaaaa1.0"), id("aaaaaaa2.0")];
        assert_eq!(match_ids("aaaaaaa3.0", &twins).0, []);
        assert_eq!(edit_distance(b"kitten", b"sitting"), 3);
    }
}
