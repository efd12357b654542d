//! `walkrag bench`: throughput and latency of walkrag's components on real data.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{ensure, Context};
use serde::{Deserialize, Serialize};
use walkrag_embed::{BatchPolicy, Embedder, SentenceEmbedder, DEFAULT_EMBEDDER};

/// Measure speed on this machine. Compare against a baseline run back to back, in the same
/// session: absolute figures vary by tens of percent between machines of one kind.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Embedding throughput over a corpus, and the latency of one short query.
    ///
    /// Embeds `title\ntext` of every record of a JSON Lines corpus ({"id", "title", "text"}):
    /// one warm-up pass over a sample, then --runs full passes; reports the median.
    /// Thread count follows RAYON_NUM_THREADS (default: all cores).
    ///
    /// Example: walkrag bench embed --corpus ../shared/data/hotpotqa-100/corpus.jsonl
    Embed(EmbedArgs),
    /// HNSW against exact search on a saved index, and single-shot retrieval recall.
    Search(super::bench_search::Args),
    /// Bulk load, index build and queries over N vectors in the folder store and Postgres.
    Store(super::bench_store::Args),
    /// Prompt processing and generation speed of a local chat model (pp512 / tg128).
    Llm(super::bench_llm::Args),
}

#[derive(clap::Args)]
pub struct EmbedArgs {
    /// JSON Lines corpus with "title" and "text" fields.
    #[arg(long)]
    corpus: PathBuf,
    /// Embedding model: `minilm`, a sentence-transformers folder, or a hub id.
    #[arg(long, default_value = DEFAULT_EMBEDDER)]
    embedder: String,
    /// Full passes over the corpus; the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Most texts per forward pass.
    #[arg(long, default_value_t = BatchPolicy::default().max_batch)]
    batch: usize,
    /// Most padded tokens per forward pass.
    #[arg(long, default_value_t = BatchPolicy::default().max_batch_tokens)]
    batch_tokens: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Deserialize)]
struct Passage {
    #[serde(default)]
    title: String,
    text: String,
}

#[derive(Serialize)]
struct EmbedReport {
    passages: usize,
    tokens: usize,
    seconds: f64,
    passages_per_s: f64,
    tokens_per_s: f64,
    query_ms_p50: f64,
    query_ms_p90: f64,
    threads: usize,
    batch: usize,
    batch_tokens: usize,
    runs_s: Vec<f64>,
}

/// The query timed for latency: the one sentence-transformers' baseline times.
const QUERY: &str = "Who directed the film that won Best Picture in 1998?";
const QUERY_RUNS: usize = 50;

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Embed(args) => embed(args),
        Command::Search(args) => super::bench_search::run(args),
        Command::Store(args) => super::bench_store::run(args),
        Command::Llm(args) => super::bench_llm::run(args),
    }
}

fn embed(args: EmbedArgs) -> anyhow::Result<ExitCode> {
    ensure!(args.runs > 0, "--runs must be at least 1");
    let passages: Vec<Passage> = super::read_jsonl(Some(&args.corpus))?;
    ensure!(
        !passages.is_empty(),
        "{} holds no passages",
        args.corpus.display()
    );
    let texts: Vec<String> = passages
        .iter()
        .map(|p| format!("{}\n{}", p.title, p.text))
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();

    let policy = BatchPolicy {
        max_batch: args.batch,
        max_batch_tokens: args.batch_tokens,
    };
    let embedder = SentenceEmbedder::load(&args.embedder)
        .context("cannot load the embedder")?
        .with_batch_policy(policy);
    let tokens: usize = texts
        .iter()
        .map(|t| {
            embedder
                .count_tokens(t)
                .map(|n| n.min(embedder.max_tokens()))
        })
        .sum::<Result<_, _>>()?;

    eprintln!("warming up on {} passages ...", texts.len().min(64));
    embedder.embed(&texts[..texts.len().min(64)])?;
    let mut runs_s = Vec::with_capacity(args.runs);
    for run in 1..=args.runs {
        let start = Instant::now();
        let out = embedder.embed(&texts)?;
        let secs = start.elapsed().as_secs_f64();
        ensure!(
            out.len() == texts.len(),
            "embedder returned {} rows for {} texts",
            out.len(),
            texts.len()
        );
        eprintln!(
            "run {run}/{}: {secs:.2} s ({:.1} passages/s)",
            args.runs,
            texts.len() as f64 / secs
        );
        runs_s.push(secs);
    }
    let seconds = median(&runs_s);

    let mut query_ms = Vec::with_capacity(QUERY_RUNS);
    for _ in 0..QUERY_RUNS {
        let start = Instant::now();
        embedder.embed_one(QUERY)?;
        query_ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    query_ms.sort_by(f64::total_cmp);

    let report = EmbedReport {
        passages: texts.len(),
        tokens,
        seconds,
        passages_per_s: texts.len() as f64 / seconds,
        tokens_per_s: tokens as f64 / seconds,
        query_ms_p50: median(&query_ms),
        query_ms_p90: query_ms[query_ms.len() * 9 / 10],
        threads: walkrag_embed::compute_threads(),
        batch: policy.max_batch,
        batch_tokens: policy.max_batch_tokens,
        runs_s,
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!("embedder        {}", embedder.id());
        println!("passages        {}", report.passages);
        println!("tokens          {}", report.tokens);
        println!(
            "seconds         {:.3} (median of {})",
            report.seconds, args.runs
        );
        println!("passages/s      {:.1}", report.passages_per_s);
        println!("tokens/s        {:.0}", report.tokens_per_s);
        println!("query p50       {:.2} ms", report.query_ms_p50);
        println!("query p90       {:.2} ms", report.query_ms_p90);
        println!("threads         {}", report.threads);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}
