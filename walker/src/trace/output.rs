//! The JSON objects walkrag writes for other programs: the `answer` line of `ask --json`, the
//! `--trace FILE.json` file, a `search --json` hit and a `show --json` item. The CLI prints
//! them and `walkrag serve` sends them, from these types only, so the two never drift apart.

use serde::Serialize;
use walkrag_engine::{ChunkRef, Hit, Index, Item};

use crate::answer::Answer;
use crate::trace::graph::Graph;
use crate::trace::Trace;

/// The last line of `ask --json` (and the last event of the server's stream).
#[derive(Serialize)]
pub struct AnswerLine<'a> {
    pub r#type: &'static str,
    #[serde(flatten)]
    pub answer: &'a Answer,
}

impl<'a> AnswerLine<'a> {
    pub fn new(answer: &'a Answer) -> Self {
        Self {
            r#type: "answer",
            answer,
        }
    }
}

/// What `--trace FILE.json` holds: the trace, the answer and the query-time knowledge graph.
#[derive(Serialize)]
pub struct TraceFile<'a> {
    #[serde(flatten)]
    pub trace: &'a Trace,
    pub answer: &'a Answer,
    /// The query-time knowledge graph: question, chunks, facts, descriptors, answer.
    pub graph: &'a Graph,
}

/// One hit of `search --json`.
#[derive(Serialize)]
pub struct SearchHit<'a> {
    pub rank: usize,
    pub score: f32,
    pub chunk_id: String,
    pub doc_id: &'a str,
    pub title: &'a str,
    pub section_id: String,
    pub section_path: &'a [String],
    pub text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
}

impl<'a> SearchHit<'a> {
    /// The hit ranked `rank` (1-based) of a search of `index`.
    pub fn new(index: &'a Index, rank: usize, hit: &Hit) -> Self {
        let c: ChunkRef<'a> = index.chunk(hit.row);
        SearchHit {
            rank,
            score: hit.score,
            chunk_id: c.id().to_string(),
            doc_id: &c.doc.id.0,
            title: &c.doc.title,
            section_id: c.section().id.to_string(),
            section_path: &c.section().path,
            text: c.text(),
            page: c.chunk.page,
        }
    }
}

/// A document, section (with its subsections) or chunk, as `show --json` prints it.
#[derive(Serialize)]
pub struct Shown<'a> {
    /// `document`, `section` or `chunk`.
    pub kind: &'static str,
    pub id: String,
    pub doc_id: &'a str,
    pub title: &'a str,
    pub section_path: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Byte range in the document's text.
    pub range: [usize; 2],
    pub text: &'a str,
}

impl<'a> Shown<'a> {
    pub fn of(item: Item<'a>) -> Self {
        match item {
            Item::Document(d) => Shown {
                kind: "document",
                id: d.doc.id.0.clone(),
                doc_id: &d.doc.id.0,
                title: &d.doc.title,
                section_path: &[],
                page: None,
                range: [0, d.doc.text.len()],
                text: &d.doc.text,
            },
            Item::Section { doc, section } => {
                let range = doc.doc.subtree_range(section);
                let s = &doc.doc.sections[section];
                Shown {
                    kind: "section",
                    id: s.id.to_string(),
                    doc_id: &doc.doc.id.0,
                    title: &doc.doc.title,
                    section_path: &s.path,
                    page: doc.doc.page_of(range.start),
                    range: [range.start, range.end],
                    text: &doc.doc.text[range],
                }
            }
            Item::Chunk(c) => Shown {
                kind: "chunk",
                id: c.id().to_string(),
                doc_id: &c.doc.id.0,
                title: &c.doc.title,
                section_path: &c.section().path,
                page: c.chunk.page,
                range: [c.chunk.range.start, c.chunk.range.end],
                text: c.text(),
            },
        }
    }
}
