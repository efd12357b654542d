//! `walkrag bench`: throughput and latency of walkrag's components on real data.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{ensure, Context};
use serde::{Deserialize, Serialize};
use walkrag_embed::{remote_model, BatchPolicy, Embedder, SentenceEmbedder, DEFAULT_EMBEDDER};

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
    /// Embedding model: `minilm`, a sentence-transformers folder, a hub id, or `openai:MODEL`
    /// on an OpenAI-compatible server (then measured at each --sweep concurrency, beside the
    /// local --local model in the same run).
    #[arg(long, default_value = DEFAULT_EMBEDDER)]
    embedder: String,
    /// With an `openai:` embedder: the local model measured beside it, as the baseline.
    #[arg(long, value_name = "SPEC", default_value = DEFAULT_EMBEDDER)]
    local: String,
    /// With an `openai:` embedder: the requests in flight to measure, comma-separated.
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', default_values_t = [1, 2, 4, 8])]
    sweep: Vec<usize>,
    #[command(flatten)]
    remote: super::query::RemoteEmbedArgs,
    /// Full passes over the corpus; the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Most texts per forward pass (local models).
    #[arg(long, default_value_t = BatchPolicy::default().max_batch)]
    batch: usize,
    /// Most padded tokens per forward pass (local models).
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

/// One embedder's figures. With an `openai:` embedder the top level is its run at
/// --embed-concurrency, `sweep` every measured concurrency and `local` the baseline.
#[derive(Serialize)]
struct EmbedReport {
    embedder: String,
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
    /// Requests in flight (`openai:` embedders only).
    #[serde(skip_serializing_if = "Option::is_none")]
    concurrency: Option<usize>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sweep: Vec<EmbedReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    local: Option<Box<EmbedReport>>,
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
    let local = |spec: &str| -> anyhow::Result<EmbedReport> {
        let embedder = SentenceEmbedder::load(spec)
            .context("cannot load the embedder")?
            .with_batch_policy(policy);
        let mut report = measure(&embedder, &texts, args.runs)?;
        report.threads = walkrag_embed::compute_threads();
        report.batch = policy.max_batch;
        report.batch_tokens = policy.max_batch_tokens;
        Ok(report)
    };
    let report = if remote_model(&args.embedder).is_some() {
        ensure!(
            !args.sweep.is_empty() && !args.sweep.contains(&0),
            "--sweep takes concurrencies of at least 1"
        );
        eprintln!("local baseline: {}", args.local);
        let baseline = local(&args.local)?;
        let mut concurrencies = args.sweep.clone();
        if !concurrencies.contains(&args.remote.embed_concurrency) {
            concurrencies.push(args.remote.embed_concurrency);
        }
        let mut sweep = Vec::new();
        for concurrency in concurrencies {
            eprintln!("{}: {concurrency} requests in flight", args.embedder);
            let settings = super::query::RemoteEmbedArgs {
                embed_concurrency: concurrency,
                ..args.remote.clone()
            };
            let embedder = settings.load(&args.embedder)?;
            let mut report = measure(embedder.as_ref(), &texts, args.runs)?;
            report.concurrency = Some(concurrency);
            report.batch = args.remote.embed_batch;
            sweep.push(report);
        }
        let at = sweep
            .iter()
            .position(|r| r.concurrency == Some(args.remote.embed_concurrency))
            .expect("measured above");
        let mut top = sweep.remove(at);
        sweep.insert(at, measured_copy(&top));
        sweep.sort_by_key(|r| r.concurrency);
        top.sweep = sweep;
        top.local = Some(Box::new(baseline));
        top
    } else {
        local(&args.embedder)?
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(local) = &report.local {
        println!(
            "{:<44} {:>11} {:>12} {:>11}",
            "embedder", "in flight", "passages/s", "query p50"
        );
        let row = |r: &EmbedReport| {
            println!(
                "{:<44} {:>11} {:>12.1} {:>8.2} ms",
                r.embedder,
                r.concurrency.map_or("-".into(), |c| c.to_string()),
                r.passages_per_s,
                r.query_ms_p50
            )
        };
        row(local);
        report.sweep.iter().for_each(row);
        println!(
            "passages {}, tokens {}, median of {} runs; local threads {}",
            report.passages, report.tokens, args.runs, local.threads
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("embedder        {}", report.embedder);
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
    Ok(ExitCode::SUCCESS)
}

/// The figures of `report` without its nested reports.
fn measured_copy(report: &EmbedReport) -> EmbedReport {
    EmbedReport {
        embedder: report.embedder.clone(),
        runs_s: report.runs_s.clone(),
        sweep: Vec::new(),
        local: None,
        ..*report
    }
}

/// One warm-up pass over a sample, `runs` timed passes over `texts`, then the latency of one
/// query embedded alone (never from a cache).
fn measure(embedder: &dyn Embedder, texts: &[&str], runs: usize) -> anyhow::Result<EmbedReport> {
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
    let mut runs_s = Vec::with_capacity(runs);
    for run in 1..=runs {
        let start = Instant::now();
        let out = embedder.embed(texts)?;
        let secs = start.elapsed().as_secs_f64();
        ensure!(
            out.len() == texts.len(),
            "embedder returned {} rows for {} texts",
            out.len(),
            texts.len()
        );
        eprintln!(
            "run {run}/{runs}: {secs:.2} s ({:.1} passages/s)",
            texts.len() as f64 / secs
        );
        runs_s.push(secs);
    }
    let seconds = median(&runs_s);

    let mut query_ms = Vec::with_capacity(QUERY_RUNS);
    for _ in 0..QUERY_RUNS {
        let start = Instant::now();
        embedder.embed(&[QUERY])?;
        query_ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    query_ms.sort_by(f64::total_cmp);
    Ok(EmbedReport {
        embedder: embedder.id().to_string(),
        passages: texts.len(),
        tokens,
        seconds,
        passages_per_s: texts.len() as f64 / seconds,
        tokens_per_s: tokens as f64 / seconds,
        query_ms_p50: median(&query_ms),
        query_ms_p90: query_ms[query_ms.len() * 9 / 10],
        threads: 0,
        batch: 0,
        batch_tokens: 0,
        runs_s,
        concurrency: None,
        sweep: Vec::new(),
        local: None,
    })
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
