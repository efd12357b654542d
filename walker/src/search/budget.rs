//! What of the sections a model chose fits the answer's token budget, and how they rank
//! (`toc`, `roam`).

use walkrag_engine::ChunkId;

use super::dot;
use crate::run::Run;

/// The chunks of `groups` (each a chosen section's chunks in document order, most useful
/// section first): those shown within `budget` tokens (counted with the embedder's
/// tokenizer; at least one chunk), and all of them, each once. A group that fits is shown
/// whole; the first that does not shows its chunks nearest `question` that fit (in document
/// order), and ends what is shown.
pub(crate) fn fit(
    run: &Run<'_>,
    groups: &[Vec<ChunkId>],
    question: &[f32],
    budget: usize,
) -> (Vec<ChunkId>, Vec<ChunkId>) {
    let index = run.env.index;
    let tokens_of = |row: usize| {
        let text = index.chunk(row).text();
        run.env
            .embedder
            .count_tokens(text)
            .unwrap_or(text.len() / 4)
    };
    let mut all: Vec<ChunkId> = Vec::new();
    let mut shown: Vec<ChunkId> = Vec::new();
    let mut used = 0;
    let mut full = false;
    for group in groups {
        // (id, row, tokens) of the group's chunks not listed yet.
        let chunks: Vec<(ChunkId, usize, usize)> = group
            .iter()
            .filter(|id| !all.contains(id))
            .filter_map(|&id| index.row_of(id).map(|row| (id, row, tokens_of(row))))
            .collect();
        all.extend(chunks.iter().map(|c| c.0));
        if full {
            continue;
        }
        let total: usize = chunks.iter().map(|c| c.2).sum();
        if used + total <= budget {
            shown.extend(chunks.iter().map(|c| c.0));
            used += total;
            continue;
        }
        let score = |c: &(ChunkId, usize, usize)| dot(index.vector(c.1), question);
        let mut nearest: Vec<usize> = (0..chunks.len()).collect();
        nearest.sort_by(|&a, &b| score(&chunks[b]).total_cmp(&score(&chunks[a])));
        let mut take = vec![false; chunks.len()];
        for i in nearest {
            let first = shown.is_empty() && !take.contains(&true);
            if first || used + chunks[i].2 <= budget {
                take[i] = true;
                used += chunks[i].2;
            }
        }
        shown.extend(
            chunks
                .iter()
                .zip(&take)
                .filter(|(_, &t)| t)
                .map(|(c, _)| c.0),
        );
        full = true;
    }
    (shown, all)
}

/// The ranking of a strategy that answers from chosen sections: the chunks the answer cites,
/// then those shown, then the rest of the chosen sections', each once.
pub(crate) fn ranked(cited: &[ChunkId], shown: Vec<ChunkId>, all: Vec<ChunkId>) -> Vec<ChunkId> {
    let mut ranked = cited.to_vec();
    for id in shown.into_iter().chain(all) {
        if !ranked.contains(&id) {
            ranked.push(id);
        }
    }
    ranked
}
