//! Markdown → a tree of sections, one per heading, with stable ids and exact byte ranges.
//!
//! Recognises ATX headings (`#` to `######`) and Setext headings (a line underlined with `=`
//! or `-`), and ignores anything inside fenced code blocks. A section's body is the text after
//! its heading up to the next heading of any level; text before the first heading becomes a
//! preamble section with an empty heading path.

use std::collections::HashMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::ids::{DocId, SectionId};

/// One heading of a document and the text directly under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Section {
    pub id: SectionId,
    /// Headings from the document's top heading down to this one; empty for the preamble.
    pub path: Vec<String>,
    /// 1 to 6 for headings, 0 for the preamble.
    pub level: u8,
    /// Byte range of the heading line(s) in the document (empty for the preamble).
    pub heading: Range<usize>,
    /// Byte range of the body: after the heading, up to the next heading.
    pub body: Range<usize>,
    /// Index of the enclosing section in the list, if any.
    pub parent: Option<usize>,
}

impl Section {
    /// The heading text (the last element of the path), or "" for the preamble.
    pub fn title(&self) -> &str {
        self.path.last().map(String::as_str).unwrap_or("")
    }
}

/// Splits `text` into sections. Two sibling headings with the same text get distinct ids (the
/// second hashes as `Heading (2)`); everything else about an id depends only on `doc` and the
/// heading path, so editing body text never changes an id.
pub fn sections(doc: &DocId, text: &str) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    let mut seen: HashMap<Vec<String>, u32> = HashMap::new();
    let mut fence: Option<(u8, usize)> = None;
    // The previous line, if it could be the text of a Setext heading.
    let mut paragraph_line: Option<Range<usize>> = None;
    // Where the body of the current section (or the preamble) began.
    let mut body_start = 0;

    let mut push = |out: &mut Vec<Section>,
                    stack: &mut Vec<usize>,
                    level: u8,
                    title: String,
                    heading: Range<usize>| {
        while stack.last().is_some_and(|&i| out[i].level >= level) {
            stack.pop();
        }
        let parent = stack.last().copied();
        let mut path = parent.map(|p| out[p].path.clone()).unwrap_or_default();
        path.push(title);
        let count = seen.entry(path.clone()).or_insert(0);
        *count += 1;
        let mut id_path = path.clone();
        if *count > 1 {
            let last = id_path.last_mut().expect("path has the new heading");
            *last = format!("{last} ({count})");
        }
        let body = heading.end..heading.end;
        out.push(Section {
            id: SectionId::new(doc, &id_path),
            path,
            level,
            heading,
            body,
            parent,
        });
        stack.push(out.len() - 1);
    };

    for line in lines(text) {
        let content = &text[line.clone()];
        let content = content.trim_end_matches(['\n', '\r']);
        if let Some((ch, len)) = fence {
            if let Some((c, l, rest)) = fence_marker(content) {
                if c == ch && l >= len && rest.trim().is_empty() {
                    fence = None;
                }
            }
            paragraph_line = None;
            continue;
        }
        if let Some((c, l, _)) = fence_marker(content) {
            fence = Some((c, l));
            paragraph_line = None;
            continue;
        }
        let heading = if let Some((level, title)) = atx_heading(content) {
            Some((level, title.to_string(), line.clone()))
        } else if let (Some(level), Some(prev)) =
            (setext_underline(content), paragraph_line.clone())
        {
            let title = text[prev.clone()].trim().to_string();
            Some((level, title, prev.start..line.end))
        } else {
            None
        };
        match heading {
            Some((level, title, range)) => {
                close_body(&mut out, doc, text, body_start, range.start);
                push(&mut out, &mut stack, level, title, range.clone());
                body_start = range.end;
                paragraph_line = None;
            }
            None => {
                // A rule (`---`) or an `===` line is not paragraph text a heading could be made of.
                let text_line = !content.trim().is_empty()
                    && indent(content) < 4
                    && setext_underline(content).is_none();
                paragraph_line = text_line.then(|| line.clone());
            }
        }
    }
    close_body(&mut out, doc, text, body_start, text.len());
    out
}

/// Ends the body of the last section (or records the preamble) at `end`.
fn close_body(out: &mut Vec<Section>, doc: &DocId, text: &str, start: usize, end: usize) {
    match out.last_mut() {
        Some(last) => last.body = start..end,
        None if !text[start..end].trim().is_empty() => out.push(Section {
            id: SectionId::new(doc, &[]),
            path: Vec::new(),
            level: 0,
            heading: 0..0,
            body: start..end,
            parent: None,
        }),
        None => {}
    }
}

/// Byte ranges of the lines of `text`, each with its line ending.
fn lines(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let end = text[start..]
            .find('\n')
            .map(|i| start + i + 1)
            .unwrap_or(text.len());
        let line = start..end;
        start = end;
        Some(line)
    })
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// `#`–`######` after at most three spaces, then a space, a tab or the end of the line.
fn atx_heading(line: &str) -> Option<(u8, &str)> {
    if indent(line) > 3 {
        return None;
    }
    let rest = line.trim_start_matches(' ');
    let level = rest.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if !(after.is_empty() || after.starts_with([' ', '\t'])) {
        return None;
    }
    let mut title = after.trim();
    // A closing run of `#`s is decoration when it stands alone or after a space.
    let without = title.trim_end_matches('#');
    if without.is_empty() || without.ends_with([' ', '\t']) {
        title = without.trim_end();
    }
    Some((level as u8, title))
}

/// A line of only `=` (level 1) or only `-` (level 2), after at most three spaces.
fn setext_underline(line: &str) -> Option<u8> {
    if indent(line) > 3 {
        return None;
    }
    let marks = line.trim();
    if marks.is_empty() {
        None
    } else if marks.bytes().all(|b| b == b'=') {
        Some(1)
    } else if marks.bytes().all(|b| b == b'-') {
        Some(2)
    } else {
        None
    }
}

/// A code fence: at least three backticks or tildes after at most three spaces.
fn fence_marker(line: &str) -> Option<(u8, usize, &str)> {
    if indent(line) > 3 {
        return None;
    }
    let rest = line.trim_start_matches(' ');
    let ch = *rest.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = rest.bytes().take_while(|&b| b == ch).count();
    (len >= 3).then(|| (ch, len, &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> DocId {
        DocId("report.md".into())
    }

    fn paths(text: &str) -> Vec<(u8, Vec<String>, String)> {
        sections(&doc(), text)
            .into_iter()
            .map(|s| (s.level, s.path, text[s.body].trim().to_string()))
            .collect()
    }

    fn p(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn nested_headings_make_a_tree() {
        let text = "intro\n# Annual report\ntop\n## Revenue\nup 5%\n### By region\neast\n## Costs\nflat\n# Appendix\nx\n";
        assert_eq!(
            paths(text),
            vec![
                (0, p(&[]), "intro".into()),
                (1, p(&["Annual report"]), "top".into()),
                (2, p(&["Annual report", "Revenue"]), "up 5%".into()),
                (
                    3,
                    p(&["Annual report", "Revenue", "By region"]),
                    "east".into()
                ),
                (2, p(&["Annual report", "Costs"]), "flat".into()),
                (1, p(&["Appendix"]), "x".into()),
            ]
        );
        let s = sections(&doc(), text);
        assert_eq!(s[3].parent, Some(2));
        assert_eq!(s[4].parent, Some(1));
        assert_eq!(s[5].parent, None);
        assert_eq!(&text[s[2].heading.clone()], "## Revenue\n");
    }

    #[test]
    fn headings_in_code_fences_are_text() {
        let text =
            "# A\n```sh\n# not a heading\n```\n~~~~\n## nor this\n~~~\nstill code\n~~~~\n## B\n";
        let got = paths(text);
        assert_eq!(got.len(), 2);
        assert!(got[0].2.contains("# not a heading") && got[0].2.contains("## nor this"));
        assert_eq!(got[1].1, p(&["A", "B"]));
    }

    #[test]
    fn atx_details_follow_commonmark() {
        assert_eq!(atx_heading("## Title ##"), Some((2, "Title")));
        assert_eq!(atx_heading("# C# tips"), Some((1, "C# tips")));
        assert_eq!(atx_heading("#hashtag"), None);
        assert_eq!(atx_heading("####### seven"), None);
        assert_eq!(atx_heading("    # indented code"), None);
        assert_eq!(atx_heading("#"), Some((1, "")));
    }

    #[test]
    fn setext_headings_and_thematic_breaks() {
        let text = "Title\n=====\nbody\n\n---\nmore\nSub\n---\nend\n";
        let got = paths(text);
        assert_eq!(got[0].1, p(&["Title"]));
        assert!(
            got[0].2.contains("---"),
            "a rule after a blank line stays text: {got:?}"
        );
        assert_eq!(got[1].1, p(&["Title", "Sub"]));
        assert_eq!(got[1].2, "end");
        assert_eq!(
            paths("# A\n\n---\n---\nx\n").len(),
            1,
            "two rules make no heading"
        );
    }

    #[test]
    fn ids_survive_text_edits_and_tell_duplicate_siblings_apart() {
        let before = sections(&doc(), "# A\nold text\n## Notes\n1\n## Notes\n2\n");
        let after = sections(
            &doc(),
            "# A\nnew, longer text\n\n## Notes\n1\n## Notes\n2\n",
        );
        let ids = |s: &[Section]| s.iter().map(|s| s.id).collect::<Vec<_>>();
        assert_eq!(ids(&before), ids(&after));
        assert_ne!(before[1].id, before[2].id);
        assert_eq!(before[1].path, before[2].path);
    }

    #[test]
    fn crlf_and_missing_final_newline() {
        let text = "# A\r\nbody\r\n## B\r\nlast";
        let got = paths(text);
        assert_eq!(got[0].1, p(&["A"]));
        assert_eq!(got[1].2, "last");
    }

    #[test]
    fn empty_and_heading_free_documents() {
        assert!(sections(&doc(), "").is_empty());
        assert!(sections(&doc(), "  \n\n").is_empty());
        let only = sections(&doc(), "just text");
        assert_eq!(only.len(), 1);
        assert_eq!(only[0].level, 0);
        assert_eq!(only[0].body, 0..9);
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_ranges_tile_the_text(text in "(#{0,7}[ a-z`~=\\-]{0,12}\r?\n?){0,40}") {
            let s = sections(&doc(), &text);
            let mut last_end = 0;
            for section in &s {
                proptest::prop_assert!(section.heading.start >= last_end || section.level == 0);
                proptest::prop_assert!(section.body.start <= section.body.end && section.body.end <= text.len());
                proptest::prop_assert!(text.is_char_boundary(section.body.start) && text.is_char_boundary(section.body.end));
                last_end = section.body.end;
            }
        }

        #[test]
        fn never_panics_on_any_unicode(text in "\\PC{0,200}") {
            let _ = sections(&doc(), &text);
        }
    }
}
