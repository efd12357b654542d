//! A document as the index keeps it: its text, its section tree, its pages and its metadata.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::ids::{DocId, SectionId};
use crate::markdown::{self, Section};

/// The kind of source a document was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Markdown,
    /// `llms.txt` / `llms-full.txt`: Markdown by convention, kept apart for filtering.
    LlmsTxt,
    Text,
    Pdf,
    /// One record of a JSON Lines corpus.
    Jsonl,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Markdown => "markdown",
            Format::LlmsTxt => "llms.txt",
            Format::Text => "text",
            Format::Pdf => "pdf",
            Format::Jsonl => "jsonl",
        }
    }
}

/// One document: text plus the structure the chunker and the outline need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    pub id: DocId,
    pub title: String,
    /// The file it was read from, as reached from the indexed path.
    pub source: String,
    pub format: Format,
    pub text: String,
    /// Sections in document order; a section's body never overlaps another's.
    pub sections: Vec<Section>,
    /// PDF only: the byte offset in `text` where each page starts (page `i + 1` starts at
    /// `pages[i]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pages: Vec<usize>,
    /// Extra fields of a `.jsonl` record or a Markdown file's front matter, for filtering.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// sha256 of everything above that chunking and embedding depend on.
    pub hash: String,
}

impl Document {
    /// A Markdown document (also `llms.txt`): the title is the first heading, else `fallback`.
    pub fn markdown(
        id: DocId,
        source: String,
        format: Format,
        text: String,
        fallback: &str,
    ) -> Self {
        let sections = markdown::sections(&id, &text);
        let title = sections
            .iter()
            .find(|s| s.level > 0)
            .map(|s| s.title().to_string())
            .unwrap_or_else(|| fallback.to_string());
        Self::unhashed(id, title, source, format, text, sections).hashed()
    }

    /// A document without headings (plain text, a corpus record): one section named `title`
    /// holding the whole text.
    pub fn single(
        id: DocId,
        title: String,
        source: String,
        format: Format,
        text: String,
        metadata: Map<String, Value>,
    ) -> Self {
        let sections = vec![whole(&id, &title, 0..text.len())];
        Self {
            metadata,
            ..Self::unhashed(id, title, source, format, text, sections)
        }
        .hashed()
    }

    /// The document with `metadata` (hash updated).
    pub fn with_metadata(self, metadata: Map<String, Value>) -> Self {
        Self { metadata, ..self }.hashed()
    }

    /// A PDF: one section per page (`Page 3`), so every chunk cites its page.
    pub fn pdf(id: DocId, title: String, source: String, pages: Vec<String>) -> Self {
        let mut text = String::new();
        let mut starts = Vec::with_capacity(pages.len());
        let mut sections = Vec::with_capacity(pages.len());
        for (i, page) in pages.iter().enumerate() {
            starts.push(text.len());
            text.push_str(page.trim_end());
            text.push('\n');
            let name = format!("Page {}", i + 1);
            sections.push(whole(&id, &name, starts[i]..text.len()));
        }
        Self {
            pages: starts,
            ..Self::unhashed(id, title, source, Format::Pdf, text, sections)
        }
        .hashed()
    }

    /// A document without pages, metadata or hash yet.
    fn unhashed(
        id: DocId,
        title: String,
        source: String,
        format: Format,
        text: String,
        sections: Vec<Section>,
    ) -> Self {
        Self {
            id,
            title,
            source,
            format,
            text,
            sections,
            pages: Vec::new(),
            metadata: Map::new(),
            hash: String::new(),
        }
    }

    /// Sets `hash` from everything chunking and embedding depend on.
    fn hashed(mut self) -> Self {
        let mut hasher = Sha256::new();
        for part in [self.format.name(), &self.id.0, &self.title, &self.text] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        hasher.update(Value::Object(self.metadata.clone()).to_string().as_bytes());
        self.hash = format!("{:x}", hasher.finalize());
        self
    }

    /// The page (1-based) holding byte `offset`, for PDFs.
    pub fn page_of(&self, offset: usize) -> Option<u32> {
        if self.pages.is_empty() {
            return None;
        }
        Some(self.pages.partition_point(|&start| start <= offset) as u32)
    }

    /// Byte range of section `i` with all its subsections (its heading included).
    pub fn subtree_range(&self, i: usize) -> Range<usize> {
        let start = self.sections[i]
            .heading
            .start
            .min(self.sections[i].body.start);
        let mut end = self.sections[i].body.end;
        for (j, s) in self.sections.iter().enumerate().skip(i + 1) {
            if !self.is_within(j, i) {
                break;
            }
            end = end.max(s.body.end);
        }
        start..end
    }

    /// Whether section `j` is `ancestor` or lies below it.
    pub fn is_within(&self, mut j: usize, ancestor: usize) -> bool {
        loop {
            if j == ancestor {
                return true;
            }
            match self.sections[j].parent {
                Some(p) => j = p,
                None => return false,
            }
        }
    }
}

/// A level-1 section over `body` whose heading is not in the text.
fn whole(doc: &DocId, name: &str, body: Range<usize>) -> Section {
    let path = vec![name.to_string()];
    Section {
        id: SectionId::new(doc, &path),
        path,
        level: 1,
        heading: body.start..body.start,
        body,
        parent: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pdf_pages_become_sections_and_offsets_map_to_pages() {
        let doc = Document::pdf(
            DocId("a.pdf".into()),
            "A".into(),
            "a.pdf".into(),
            vec!["one\n".into(), "two".into(), "three".into()],
        );
        assert_eq!(doc.text, "one\ntwo\nthree\n");
        assert_eq!(doc.sections.len(), 3);
        assert_eq!(doc.sections[1].path, ["Page 2"]);
        assert_eq!(&doc.text[doc.sections[1].body.clone()], "two\n");
        assert_eq!(doc.page_of(0), Some(1));
        assert_eq!(doc.page_of(4), Some(2));
        assert_eq!(doc.page_of(8), Some(3));
    }

    #[test]
    fn the_hash_changes_with_text_title_and_metadata_only() {
        let make = |title: &str, text: &str, meta: Value| {
            let Value::Object(meta) = meta else {
                unreachable!()
            };
            Document::single(
                DocId("r1".into()),
                title.into(),
                "c.jsonl".into(),
                Format::Jsonl,
                text.into(),
                meta,
            )
        };
        let a = make("T", "body", serde_json::json!({"year": 2020}));
        assert_eq!(
            a.hash,
            make("T", "body", serde_json::json!({"year": 2020})).hash
        );
        assert_ne!(
            a.hash,
            make("T", "body!", serde_json::json!({"year": 2020})).hash
        );
        assert_ne!(
            a.hash,
            make("U", "body", serde_json::json!({"year": 2020})).hash
        );
        assert_ne!(
            a.hash,
            make("T", "body", serde_json::json!({"year": 2021})).hash
        );
    }

    #[test]
    fn subtrees_span_nested_sections() {
        let text = "# A\na\n## B\nb\n### C\nc\n## D\nd\n";
        let doc = Document::markdown(
            DocId("r.md".into()),
            "r.md".into(),
            Format::Markdown,
            text.into(),
            "r",
        );
        assert_eq!(doc.title, "A");
        let b = doc.sections.iter().position(|s| s.title() == "B").unwrap();
        assert_eq!(&text[doc.subtree_range(b)], "## B\nb\n### C\nc\n");
        assert_eq!(&text[doc.subtree_range(0)], text);
    }
}
