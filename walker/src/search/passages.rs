//! Chunks as the model sees them: each tagged with its id, so the model can cite it.

use walkrag_engine::{ChunkId, ChunkRef, Index};

use crate::trace::RetrievedChunk;

/// Where a chunk is: `Title › Section › Subsection (p. 3)`.
pub fn location(c: &ChunkRef<'_>) -> String {
    describe(&c.doc.title, &c.section().path, c.chunk.page)
}

/// `Title › Section › Subsection (p. 3)`; the title is left out where the top heading
/// repeats it.
pub fn describe(title: &str, path: &[String], page: Option<u32>) -> String {
    let mut parts: Vec<&str> = Vec::with_capacity(path.len() + 1);
    if path.first().map(String::as_str) != Some(title) {
        parts.push(title);
    }
    parts.extend(path.iter().map(String::as_str));
    let mut text = parts.join(" › ");
    if let Some(page) = page {
        text.push_str(&format!(" (p. {page})"));
    }
    text
}

/// One passage: `[id] location` on the first line, then the chunk's text.
pub fn render_one(c: &ChunkRef<'_>) -> String {
    format!("[{}] {}\n{}", c.id(), location(c), c.text().trim())
}

/// The passages of `ids`, in order, separated by blank lines. Ids not in the index are skipped.
pub fn render(index: &Index, ids: &[ChunkId]) -> String {
    let passages: Vec<String> = ids
        .iter()
        .filter_map(|&id| index.row_of(id))
        .map(|row| render_one(&index.chunk(row)))
        .collect();
    passages.join("\n\n")
}

/// The retrieval record of a chunk.
pub fn retrieved(c: &ChunkRef<'_>, score: f32, new: bool) -> RetrievedChunk {
    RetrievedChunk {
        chunk_id: c.id(),
        score,
        doc_id: c.doc.id.0.clone(),
        title: c.doc.title.clone(),
        section_path: c.section().path.clone(),
        page: c.chunk.page,
        new,
        linked_from: None,
    }
}
