//! Tables of contents written by a model for documents without headings (plain text, PDF,
//! Markdown without a heading), once, at index time (`walkrag index --toc`), so that `toc`
//! can list them by content instead of by title alone.
//!
//! The document's chunks are taken in runs of about `group_tokens` tokens; for each run the
//! model writes a heading and a one-sentence summary. The result is kept beside the index in
//! `INDEX/contents.jsonl`, one line per document, with the document's content hash: a changed
//! document's contents are stale (ignored, and generated again by the next `--toc`), never
//! misread. The file is rewritten whole through a temporary file and a rename, so a killed
//! process leaves the previous file.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use walkrag_core::{ChatError, ChatModel, ChatRequest, Embedder};
use walkrag_engine::{jsonl_file, ChunkId, DocId, Document, Format, Index, IndexedDoc, SectionId};

use crate::control::Control;
use crate::reader::jsonl::{ObjectReader, Raw};
use crate::reader::{llm, prompt};

/// The file beside the index.
pub const CONTENTS_FILE: &str = "contents.jsonl";

/// The most tokens an entry may take: a heading and a sentence.
const ENTRY_MAX_TOKENS: usize = 96;

/// A document's generated table of contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contents {
    pub doc_id: String,
    /// The document's content hash when the contents were written.
    pub hash: String,
    /// The model that wrote them.
    pub model: String,
    pub entries: Vec<ContentsEntry>,
}

/// One entry: a run of consecutive chunks under a heading the model wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentsEntry {
    /// An id of the section-id kind, derived from the document and the entry's place: what the
    /// `toc` pick names. Written as its 8 hex digits.
    #[serde(with = "hex_id")]
    pub id: SectionId,
    pub heading: String,
    pub summary: String,
    pub chunks: Vec<ChunkId>,
}

/// A section id as its 8 hex digits in JSON.
mod hex_id {
    use serde::{Deserialize, Deserializer, Serializer};
    use walkrag_engine::SectionId;

    pub fn serialize<S: Serializer>(id: &SectionId, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(id)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<SectionId, D::Error> {
        let text = String::deserialize(deserializer)?;
        SectionId::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("not a section id: {text:?}")))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ContentsError {
    #[error("cannot read or write {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// Whether a document gets a generated table of contents: one without headings of its own.
pub fn needs_contents(doc: &Document) -> bool {
    match doc.format {
        Format::Text | Format::Pdf => true,
        Format::Markdown | Format::LlmsTxt => !doc.sections.iter().any(|s| s.level > 0),
        Format::Jsonl => false,
    }
}

/// The generated tables of contents of an index.
#[derive(Debug, Default)]
pub struct ContentsFile {
    path: PathBuf,
    docs: Vec<Contents>,
}

impl ContentsFile {
    /// Reads `INDEX/contents.jsonl`; a missing file holds nothing, and a line that does not
    /// read is passed over with a warning (its document is generated again when asked).
    pub fn of_index(index_dir: &Path) -> Result<Self, ContentsError> {
        let path = index_dir.join(CONTENTS_FILE);
        let file = jsonl_file::read::<Contents>(&path).map_err(|source| ContentsError::Io {
            path: path.clone(),
            source,
        })?;
        file.pass_over_bad(&path, "a table of contents");
        let docs = file.records;
        Ok(Self { path, docs })
    }

    /// The contents of `doc`, if written for its current text.
    pub fn get(&self, doc: &Document) -> Option<&Contents> {
        self.docs
            .iter()
            .find(|c| c.doc_id == doc.id.0 && c.hash == doc.hash)
    }

    /// The documents of `index` that need contents and have none for their current text.
    pub fn missing<'i>(&self, index: &'i Index) -> Vec<&'i IndexedDoc> {
        index
            .documents()
            .iter()
            .filter(|d| needs_contents(&d.doc) && self.get(&d.doc).is_none())
            .collect()
    }

    /// Keeps `contents` (replacing the document's earlier ones) and rewrites the file, leaving
    /// out documents no longer in `index`.
    pub fn put(&mut self, contents: Contents, index: &Index) -> Result<(), ContentsError> {
        self.docs.retain(|c| c.doc_id != contents.doc_id);
        self.docs.push(contents);
        let known = |c: &Contents| index.document(&DocId(c.doc_id.clone())).is_some();
        self.docs.retain(known);
        self.write()
    }

    fn write(&self) -> Result<(), ContentsError> {
        let io_error = |source| ContentsError::Io {
            path: self.path.clone(),
            source,
        };
        let tmp = self.path.with_extension("jsonl.tmp");
        let mut file = fs::File::create(&tmp).map_err(io_error)?;
        for contents in &self.docs {
            let line = serde_json::to_string(contents).expect("contents serialise");
            writeln!(file, "{line}").map_err(io_error)?;
        }
        file.sync_all().map_err(io_error)?;
        drop(file);
        fs::rename(&tmp, &self.path).map_err(io_error)
    }
}

/// Writes tables of contents with a chat model.
#[derive(Debug, Clone)]
pub struct Generator {
    /// Tokens of text per entry (embedder tokenizer): 600, two or three chunks.
    pub group_tokens: usize,
    /// Most entries per document: 40 (a longer document gets longer runs).
    pub max_entries: usize,
}

impl Default for Generator {
    fn default() -> Self {
        Self {
            group_tokens: 600,
            max_entries: 40,
        }
    }
}

impl Generator {
    /// The runs of chunks `doc` is cut into, in order.
    pub fn groups(&self, embedder: &dyn Embedder, doc: &IndexedDoc) -> Vec<Vec<ChunkId>> {
        let chunks: Vec<(ChunkId, usize)> = doc
            .chunks
            .iter()
            .map(|c| {
                let id = c.id(&doc.doc);
                let text = &doc.doc.text[c.range.clone()];
                (id, embedder.count_tokens(text).unwrap_or(text.len() / 4))
            })
            .collect();
        let total: usize = chunks.iter().map(|c| c.1).sum();
        let size = self
            .group_tokens
            .max(total.div_ceil(self.max_entries.max(1)));
        let mut groups: Vec<Vec<ChunkId>> = Vec::new();
        let mut used = 0;
        for (id, tokens) in chunks {
            match groups.last_mut() {
                Some(group) if used + tokens <= size => {
                    group.push(id);
                    used += tokens;
                }
                _ => {
                    groups.push(vec![id]);
                    used = tokens;
                }
            }
        }
        groups
    }

    /// Writes `doc`'s contents, one model call per run of chunks; `progress` hears of each
    /// entry written (done, of).
    pub async fn generate(
        &self,
        index: &Index,
        embedder: &dyn Embedder,
        model: &dyn ChatModel,
        doc: &IndexedDoc,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Contents, ChatError> {
        let groups = self.groups(embedder, doc);
        let total = groups.len();
        let mut entries = Vec::with_capacity(total);
        for (i, chunks) in groups.into_iter().enumerate() {
            let text: String = chunks
                .iter()
                .filter_map(|&id| index.row_of(id))
                .map(|row| index.chunk(row).text())
                .collect::<Vec<_>>()
                .join("\n");
            let user = prompt::render(
                prompt::CONTENTS_USER,
                &[("title", doc.doc.title.as_str()), ("text", text.as_str())],
            );
            let request = ChatRequest {
                constraint: Some(crate::reader::constrain::contents_entry()),
                ..prompt::request(prompt::CONTENTS_SYSTEM, user, ENTRY_MAX_TOKENS)
            };
            let mut quiet = |_: &str| {};
            let (result, _) = llm::call(
                model,
                1,
                "contents",
                request,
                &Control::default(),
                &mut quiet,
            )
            .await;
            let (heading, summary) = parse_entry(&result?.text, &text);
            entries.push(ContentsEntry {
                id: entry_id(&doc.doc.id, i),
                heading,
                summary,
                chunks,
            });
            progress(i + 1, total);
        }
        Ok(Contents {
            doc_id: doc.doc.id.0.clone(),
            hash: doc.doc.hash.clone(),
            model: model.id().to_string(),
            entries,
        })
    }
}

/// The id of entry `i` of `doc`'s contents: a section id of a path no heading can have (it
/// starts with a control character).
fn entry_id(doc: &DocId, i: usize) -> SectionId {
    SectionId::new(doc, &[format!("\u{1}generated contents, entry {i}")])
}

/// The heading and summary of an entry the model wrote; a heading that does not read is the
/// passage's first words.
fn parse_entry(text: &str, passage: &str) -> (String, String) {
    let mut reader = ObjectReader::new();
    let mut objects = reader.push(text);
    objects.extend(reader.finish());
    let field = |name: &str| {
        objects.iter().find_map(|raw| match raw {
            Raw::Object(o) => o
                .get(name)
                .and_then(Value::as_str)
                .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|s| !s.is_empty()),
            _ => None,
        })
    };
    let heading = field("heading").unwrap_or_else(|| {
        let words: Vec<&str> = passage.split_whitespace().take(8).collect();
        format!("{} ...", words.join(" "))
    });
    let heading: String = heading.chars().take(80).collect();
    let summary: String = field("summary")
        .unwrap_or_default()
        .chars()
        .take(200)
        .collect();
    (heading, summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_as_written_or_fall_back_to_the_first_words() {
        assert_eq!(
            parse_entry(
                r#"{"heading": "Fleet  size", "summary": "Nine vessels."}"#,
                "ignored"
            ),
            ("Fleet size".to_string(), "Nine vessels.".to_string())
        );
        assert_eq!(
            parse_entry("Fleet", "one two three four five six seven eight nine"),
            (
                "one two three four five six seven eight ...".to_string(),
                String::new()
            )
        );
        assert_ne!(
            entry_id(&DocId("a".into()), 0),
            entry_id(&DocId("a".into()), 1)
        );
    }
}
