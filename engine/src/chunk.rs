//! Sections → chunks that fit the embedder: never across a section boundary, cut where the
//! text breaks most naturally, with a small overlap when a section needs several chunks.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use walkrag_core::{EmbedError, Embedder};

use crate::document::Document;
use crate::ids::ChunkId;

/// How chunks are sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkSpec {
    /// The most word pieces one chunk may become, special tokens and context header included
    /// (the embedder's own limit by default).
    pub max_tokens: usize,
    /// Word pieces repeated from the end of one chunk at the start of the next when a section
    /// is split.
    pub overlap_tokens: usize,
    /// The context header (document title and heading path) is cut to this many word pieces.
    pub max_header_tokens: usize,
}

impl ChunkSpec {
    /// Chunks as large as `embedder` reads, with a 32-piece overlap.
    pub fn for_embedder(embedder: &dyn Embedder) -> Self {
        Self {
            max_tokens: embedder.max_tokens(),
            overlap_tokens: 32,
            max_header_tokens: 64,
        }
    }
}

/// A piece of one section, the unit that is embedded and retrieved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Index of the section in the document.
    pub section: u32,
    /// Position among the section's chunks.
    pub index: u32,
    /// Byte range of the chunk's text in the document.
    pub range: Range<usize>,
    /// PDF page (1-based) where the chunk starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
}

impl Chunk {
    pub fn id(&self, doc: &Document) -> ChunkId {
        ChunkId {
            section: doc.sections[self.section as usize].id,
            index: self.index,
        }
    }
}

/// Word pieces kept free of text, for when re-tokenizing a chunk on its own comes out a
/// little longer than its share of the section did (a cut inside a very long word).
const SAFETY_TOKENS: usize = 4;

/// The context every chunk of a section is embedded with: the document title and the heading
/// path, so a chunk about "Revenue" under "2023 > Europe" is found by questions naming either.
pub fn header(doc: &Document, section: usize) -> String {
    let path = &doc.sections[section].path;
    let mut parts: Vec<&str> = Vec::with_capacity(path.len() + 1);
    if path.first().is_none_or(|first| *first != doc.title) {
        parts.push(&doc.title);
    }
    parts.extend(path.iter().map(String::as_str));
    parts.join(" > ")
}

/// The text embedded for `chunk`: its context header, a newline, and its text.
pub fn embedding_text(doc: &Document, chunk: &Chunk, max_header_chars: usize) -> String {
    let mut head = header(doc, chunk.section as usize);
    if head.len() > max_header_chars {
        let mut cut = max_header_chars;
        while !head.is_char_boundary(cut) {
            cut -= 1;
        }
        head.truncate(cut);
    }
    format!("{head}\n{}", &doc.text[chunk.range.clone()])
}

/// Chunks of every section of `doc`, in document order, and for each the number of header
/// characters that fit the header budget (see [`embedding_text`]).
pub fn chunk_document(
    doc: &Document,
    embedder: &dyn Embedder,
    spec: &ChunkSpec,
) -> Result<Vec<(Chunk, usize)>, EmbedError> {
    let mut out = Vec::new();
    for (i, section) in doc.sections.iter().enumerate() {
        let body = trim_range(&doc.text, section.body.clone());
        if body.is_empty() {
            continue;
        }
        let head = header(doc, i);
        let head_spans = embedder.token_spans(&head)?;
        let head_chars = match head_spans.get(spec.max_header_tokens) {
            Some(cut) => cut.start,
            None => head.len(),
        };
        let head_tokens = head_spans.len().min(spec.max_header_tokens);
        // [CLS] header [SEP]... the header and the text share one sequence of max_tokens.
        let budget = spec
            .max_tokens
            .saturating_sub(2 + head_tokens + SAFETY_TOKENS)
            .max(16);
        let text = &doc.text[body.clone()];
        let spans = embedder.token_spans(text)?;
        for (index, tokens) in split(text, &spans, budget, spec.overlap_tokens)
            .into_iter()
            .enumerate()
        {
            let range =
                body.start + spans[tokens.start].start..body.start + spans[tokens.end - 1].end;
            let chunk = Chunk {
                section: i as u32,
                index: index as u32,
                page: doc.page_of(range.start),
                range,
            };
            out.push((chunk, head_chars));
        }
    }
    Ok(out)
}

fn trim_range(text: &str, range: Range<usize>) -> Range<usize> {
    let slice = &text[range.clone()];
    let start = range.start + (slice.len() - slice.trim_start().len());
    let end = range.start + slice.trim_end().len();
    start..end.max(start)
}

/// Token ranges of the chunks of one text: each at most `budget` tokens, cut at the strongest
/// break in the second half of the window, the next starting up to `overlap` tokens earlier.
pub(crate) fn split(
    text: &str,
    spans: &[Range<usize>],
    budget: usize,
    overlap: usize,
) -> Vec<Range<usize>> {
    let n = spans.len();
    let mut out = Vec::new();
    if n == 0 {
        return out;
    }
    let budget = budget.max(1);
    let strength = |i: usize| -> u8 {
        let gap = &text[spans[i - 1].end..spans[i].start];
        let prev = &text[spans[i - 1].clone()];
        if gap.contains("\n\n") || gap.contains("\n\r\n") {
            5
        } else if !gap.is_empty() && prev.ends_with(['.', '!', '?', '。']) {
            4
        } else if gap.contains('\n') {
            3
        } else if !gap.is_empty() && prev.ends_with([';', ':', ',', ')']) {
            2
        } else if !gap.is_empty() {
            1
        } else {
            0
        }
    };
    let mut start = 0;
    loop {
        if n - start <= budget {
            out.push(start..n);
            return out;
        }
        let limit = start + budget;
        // The best place for the next chunk to begin: strongest break, latest among equals.
        let cut = (start + budget / 2 + 1..=limit)
            .max_by_key(|&i| (strength(i), i))
            .expect("window is not empty");
        out.push(start..cut);
        // Back up by at most `overlap` tokens to the strongest break there, earliest among
        // equals; no break (one very long word) means no overlap.
        let earliest = cut.saturating_sub(overlap).max(start + 1);
        start = (earliest..cut)
            .filter(|&i| strength(i) > 0)
            .max_by_key(|&i| (strength(i), std::cmp::Reverse(i)))
            .unwrap_or(cut);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits on whitespace: one "token" per word, enough to test where cuts fall.
    fn word_spans(text: &str) -> Vec<Range<usize>> {
        let mut spans = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices() {
            match (c.is_whitespace(), start) {
                (true, Some(s)) => {
                    spans.push(s..i);
                    start = None;
                }
                (false, None) => start = Some(i),
                _ => {}
            }
        }
        if let Some(s) = start {
            spans.push(s..text.len());
        }
        spans
    }

    #[test]
    fn short_text_is_one_chunk() {
        let text = "one two three";
        assert_eq!(split(text, &word_spans(text), 10, 2), vec![0..3]);
    }

    #[test]
    fn cuts_prefer_sentence_ends_and_overlap_backs_up_to_a_break() {
        let text = "a b c d. e f g h i j k. l m n o p q r s t u v w x y z";
        let spans = word_spans(text);
        let chunks = split(text, &spans, 10, 3);
        // The first window is tokens 0..10; the last sentence end inside it is after "k.".
        assert_eq!(chunks[0], 0..11.min(chunks[0].end));
        for w in chunks.windows(2) {
            assert!(w[1].start < w[0].end, "overlap: {chunks:?}");
            assert!(w[0].end - w[1].start <= 3);
        }
        assert!(chunks.iter().all(|c| c.len() <= 10));
        assert_eq!(chunks.last().unwrap().end, spans.len());
    }

    #[test]
    fn every_token_is_covered_and_windows_respect_the_budget() {
        let text = (0..500)
            .map(|i| {
                if i % 7 == 6 {
                    "end.".to_string()
                } else {
                    format!("w{i}")
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        let spans = word_spans(&text);
        for (budget, overlap) in [(16, 0), (16, 4), (50, 10), (499, 32), (1, 0)] {
            let chunks = split(&text, &spans, budget, overlap);
            assert_eq!(chunks[0].start, 0);
            assert_eq!(chunks.last().unwrap().end, spans.len());
            for w in chunks.windows(2) {
                assert!(w[1].start <= w[0].end && w[1].start > w[0].start);
            }
            assert!(chunks.iter().all(|c| !c.is_empty() && c.len() <= budget));
        }
    }

    #[test]
    fn a_word_longer_than_the_budget_is_still_cut() {
        // Word pieces of one long word: no whitespace between tokens.
        let text = "x".repeat(40);
        let spans: Vec<_> = (0..40).map(|i| i..i + 1).collect();
        let chunks = split(&text, &spans, 8, 4);
        assert!(chunks.iter().all(|c| c.len() <= 8));
        assert_eq!(chunks.last().unwrap().end, 40);
    }
}
