//! Embedding throughput (a batch of real passages) and single-query latency with MiniLM.
//!
//! Passages come from `$WALKRAG_DATA/hotpotqa-100/corpus.jsonl` (default: ../shared/data).
//! Run: cargo bench -p walkrag-benches --bench embed

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use walkrag_embed::{Embedder, SentenceEmbedder};

fn passages(n: usize) -> Vec<String> {
    let root = std::env::var_os("WALKRAG_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    let path = root.join("hotpotqa-100/corpus.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {} (set WALKRAG_DATA): {e}", path.display()));
    text.lines()
        .take(n)
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("corpus line is JSON");
            format!(
                "{}\n{}",
                v["title"].as_str().unwrap_or(""),
                v["text"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn embed(c: &mut Criterion) {
    let model =
        SentenceEmbedder::load("minilm").expect("minilm is installed (scripts/fetch-models.sh)");
    let texts = passages(128);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let tokens: usize = refs
        .iter()
        .map(|t| model.count_tokens(t).unwrap().min(model.max_tokens()))
        .sum();

    let mut group = c.benchmark_group("minilm");
    group.sample_size(10);
    group.throughput(Throughput::Elements(tokens as u64));
    group.bench_function("128 passages (throughput in tokens)", |b| {
        b.iter(|| model.embed(&refs).unwrap())
    });
    group.finish();

    c.bench_function("minilm/one short query", |b| {
        b.iter(|| {
            model
                .embed_one("Who directed the film that won Best Picture in 1998?")
                .unwrap()
        })
    });
}

criterion_group!(benches, embed);
criterion_main!(benches);
