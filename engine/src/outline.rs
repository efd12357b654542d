//! The abridged outline: the top of each document's section tree with a short excerpt of each
//! section, deeper sections collapsed to their ids and headings, to be expanded on demand.

use serde::Serialize;

use crate::document::Document;

/// Characters of body text shown for an expanded section.
pub const SNIPPET_CHARS: usize = 100;

/// One document's outline.
#[derive(Debug, Clone, Serialize)]
pub struct Outline {
    pub doc_id: String,
    pub title: String,
    pub format: &'static str,
    pub sections: Vec<Entry>,
}

/// A section in the outline: expanded (with a snippet and its children) or collapsed.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub id: String,
    pub level: u8,
    pub heading: String,
    /// The first ~100 characters of the section's own text; `None` when collapsed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    /// Sections anywhere below this one.
    pub subsections: usize,
    pub collapsed: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Entry>,
}

/// The outline of `doc`: sections are expanded down to the first level at which the tree
/// branches (so a document under one title shows its chapters), and their children are listed
/// collapsed.
pub fn outline(doc: &Document) -> Outline {
    let children = children_of(doc);
    let roots = roots_of(doc);
    let expand_depth = expanded_depth(doc, &children);
    let sections = roots
        .iter()
        .map(|&i| entry(doc, &children, i, 1, expand_depth))
        .collect();
    Outline {
        doc_id: doc.id.0.clone(),
        title: doc.title.clone(),
        format: doc.format.name(),
        sections,
    }
}

/// The sections without a parent, in document order.
pub fn roots_of(doc: &Document) -> Vec<usize> {
    (0..doc.sections.len())
        .filter(|&i| doc.sections[i].parent.is_none())
        .collect()
}

/// How many levels the outline shows expanded (1: the top sections): down to the first level
/// where the tree branches, so a lone title expands into its chapters.
pub fn expanded_depth(doc: &Document, children: &[Vec<usize>]) -> usize {
    let mut depth = 1;
    let mut level = roots_of(doc);
    while level.len() == 1 && !children[level[0]].is_empty() {
        depth += 1;
        level = children[level[0]].clone();
    }
    depth
}

/// Each section's children, in document order.
pub fn children_of(doc: &Document) -> Vec<Vec<usize>> {
    let mut children = vec![Vec::new(); doc.sections.len()];
    for (i, s) in doc.sections.iter().enumerate() {
        if let Some(p) = s.parent {
            children[p].push(i);
        }
    }
    children
}

/// How many sections lie anywhere below section `i`.
pub fn count_below(children: &[Vec<usize>], i: usize) -> usize {
    children[i]
        .iter()
        .map(|&c| 1 + count_below(children, c))
        .sum()
}

fn entry(
    doc: &Document,
    children: &[Vec<usize>],
    i: usize,
    depth: usize,
    expand_depth: usize,
) -> Entry {
    let section = &doc.sections[i];
    let heading = if section.path.is_empty() {
        "(preamble)".to_string()
    } else {
        section.title().to_string()
    };
    let expanded = depth <= expand_depth;
    Entry {
        id: section.id.to_string(),
        level: section.level,
        heading,
        snippet: expanded.then(|| snippet(&doc.text[section.body.clone()], SNIPPET_CHARS)),
        subsections: count_below(children, i),
        collapsed: !expanded,
        children: if expanded {
            children[i]
                .iter()
                .map(|&c| entry(doc, children, c, depth + 1, expand_depth))
                .collect()
        } else {
            Vec::new()
        },
    }
}

/// The first `max` characters of `text` with whitespace runs collapsed, `…` when cut.
pub fn snippet(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut chars = 0;
    for word in text.split_whitespace() {
        let needed = word.chars().count() + usize::from(!out.is_empty());
        if chars + needed > max {
            if out.is_empty() {
                out.extend(word.chars().take(max));
            }
            out.push('…');
            return out;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
        chars += needed;
    }
    out
}

/// The outline as indented text: `[id] Heading — snippet`, collapsed children on one line each
/// as `▸ [id] Heading (+n below)`.
pub fn render(outline: &Outline) -> String {
    let mut out = format!(
        "{}  ({}, {})\n",
        outline.title, outline.doc_id, outline.format
    );
    for e in &outline.sections {
        render_entry(&mut out, e, 1);
    }
    out
}

fn render_entry(out: &mut String, e: &Entry, depth: usize) {
    let indent = "  ".repeat(depth);
    if e.collapsed {
        out.push_str(&format!("{indent}▸ [{}] {}", e.id, e.heading));
        if e.subsections > 0 {
            out.push_str(&format!(" (+{} below)", e.subsections));
        }
    } else {
        out.push_str(&format!("{indent}[{}] {}", e.id, e.heading));
        match e.snippet.as_deref() {
            Some(s) if !s.is_empty() => out.push_str(&format!(" — {s}")),
            _ => {}
        }
    }
    out.push('\n');
    for c in &e.children {
        render_entry(out, c, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Format;
    use crate::ids::DocId;

    const REPORT: &str = "# Annual Report\nThe year in brief.\n## Results\nRevenue rose.\n### Europe\nUp 4%.\n#### Germany\nFlat.\n### Asia\nUp 9%.\n## Outlook\nCautious optimism for the coming year, with investment in new plants and a hiring freeze in administration.\n";

    #[test]
    fn a_lone_title_expands_into_its_chapters_and_deeper_levels_collapse() {
        let doc = Document::markdown(
            DocId("r.md".into()),
            "r.md".into(),
            Format::Markdown,
            REPORT.into(),
            "r",
        );
        let o = outline(&doc);
        assert_eq!(o.sections.len(), 1);
        let top = &o.sections[0];
        assert_eq!(top.heading, "Annual Report");
        assert_eq!(top.snippet.as_deref(), Some("The year in brief."));
        let results = &top.children[0];
        assert_eq!(
            (results.heading.as_str(), results.collapsed),
            ("Results", false)
        );
        assert_eq!(results.subsections, 3);
        let europe = &results.children[0];
        assert!(europe.collapsed && europe.snippet.is_none() && europe.children.is_empty());
        assert_eq!(europe.subsections, 1);
        let text = render(&o);
        assert!(
            text.contains(&format!("▸ [{}] Europe (+1 below)", europe.id)),
            "{text}"
        );
        assert!(!text.contains("Germany"), "{text}");
        let outlook = text.lines().find(|l| l.contains("Outlook")).unwrap();
        assert!(
            outlook.ends_with('…') && outlook.chars().count() < 140,
            "{outlook}"
        );
    }

    #[test]
    fn snippets_cut_at_word_boundaries() {
        assert_eq!(snippet("a  b\n c", 100), "a b c");
        assert_eq!(snippet("alpha beta gamma", 10), "alpha beta…");
        assert_eq!(snippet("abcdefghijkl", 5), "abcde…");
    }
}
