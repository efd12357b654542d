//! `walkrag bench search`: HNSW against exact search on a saved index, and single-shot
//! retrieval recall of a question set.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::ensure;
use serde::{Deserialize, Serialize};
use walkrag_engine::ann::{self, AnnParams, Graph};
use walkrag_engine::Index;
use walkrag_eval::metrics::recall_at;

/// Searches a saved index with real queries: recall@k of HNSW against exact search, query
/// latency p50/p99, graph build time and memory for each parameter set, the time to open
/// the index, and (with --questions) recall@2/5/10 of each question's `supporting_ids`.
///
/// Queries are the questions, then titles of every n-th document up to --queries.
///
/// Example:
///   walkrag index ../shared/data/hotpotqa-100/corpus.jsonl \
///       ../shared/data/wiki-distractors/corpus.jsonl --index /tmp/big
///   walkrag bench search --index /tmp/big \
///       --questions ../shared/data/hotpotqa-100/questions.jsonl --m 8,16,32 --ef-search 16,32,64,128
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Index directory (built by `walkrag index`).
    #[arg(long, default_value = super::DEFAULT_INDEX)]
    index: PathBuf,
    /// Questions with `supporting_ids` (the format of ../shared/data).
    #[arg(long)]
    questions: Option<PathBuf>,
    /// Queries in all: the questions, then document titles.
    #[arg(long, default_value_t = 1000)]
    queries: usize,
    /// Neighbours compared (recall@k against exact search).
    #[arg(short, default_value_t = 10)]
    k: usize,
    /// HNSW M values to build, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "16")]
    m: Vec<usize>,
    /// HNSW ef_construction values, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "200")]
    ef_construction: Vec<usize>,
    /// HNSW ef_search values, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "16,32,64,128")]
    ef_search: Vec<usize>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Deserialize)]
struct Question {
    question: String,
    #[serde(default)]
    supporting_ids: Vec<String>,
}

#[derive(Serialize)]
struct Report {
    chunks: usize,
    documents: usize,
    queries: usize,
    k: usize,
    open_ms_p50: f64,
    /// Resident memory of this process with the index open and the model loaded.
    rss_open_mib: f64,
    query_embed_ms_p50: f64,
    exact: Latency,
    hnsw: Vec<HnswRun>,
    #[serde(skip_serializing_if = "Option::is_none")]
    questions: Option<QuestionRecall>,
    threads: usize,
}

#[derive(Serialize, Clone, Copy)]
struct Latency {
    p50_ms: f64,
    p99_ms: f64,
}

#[derive(Serialize)]
struct HnswRun {
    m: usize,
    ef_construction: usize,
    build_s: f64,
    /// Size of the saved neighbour lists (`*.hnsw.graph`).
    graph_mib: f64,
    /// Size of the saved vector copy hnsw_rs keeps beside them (`*.hnsw.data`).
    data_mib: f64,
    searches: Vec<HnswSearch>,
}

#[derive(Serialize)]
struct HnswSearch {
    ef_search: usize,
    recall_vs_exact: f64,
    #[serde(flatten)]
    latency: Latency,
}

#[derive(Serialize)]
struct QuestionRecall {
    questions: usize,
    exact: [f64; 3],
    hnsw_default: [f64; 3],
}

pub fn run(args: Args) -> anyhow::Result<std::process::ExitCode> {
    ensure!(
        args.k > 0 && args.queries > 0,
        "-k and --queries must be positive"
    );
    let mut open_ms = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        drop(Index::open(&args.index)?);
        open_ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let (index, embedder) = super::query::open_with_embedder(
        &args.index,
        &Default::default(),
        None,
        &Default::default(),
    )?;
    ensure!(
        !index.is_empty(),
        "the index at {} holds no chunks",
        args.index.display()
    );
    let rss_open_mib = super::bench_store::rss_mib();
    let dim = index.manifest().embedder.dim;
    let vectors = index.vectors();

    let questions: Vec<Question> = match &args.questions {
        Some(path) => super::read_jsonl(Some(path))?,
        None => Vec::new(),
    };
    let mut texts: Vec<String> = questions
        .iter()
        .map(|q| q.question.clone())
        .take(args.queries)
        .collect();
    let docs = index.documents();
    let wanted = args.queries.saturating_sub(texts.len());
    if let Some(step) = docs.len().checked_div(wanted) {
        texts.extend(
            docs.iter()
                .step_by(step.max(1))
                .take(wanted)
                .map(|d| d.doc.title.clone()),
        );
    }
    eprintln!("embedding {} queries ...", texts.len());
    let mut embed_ms = Vec::new();
    let mut queries: Vec<Vec<f32>> = Vec::with_capacity(texts.len());
    for text in &texts {
        let start = Instant::now();
        queries.push(embedder.embed_one(text)?);
        embed_ms.push(start.elapsed().as_secs_f64() * 1e3);
    }

    let (truth, mut exact_ms) = super::bench_store::exact_truth(vectors, dim, &queries, args.k);

    let defaults = AnnParams::default();
    let mut runs = Vec::new();
    let mut default_graph: Option<Graph> = None;
    for &m in &args.m {
        for &ef_construction in &args.ef_construction {
            ensure!((2..=256).contains(&m), "--m must be between 2 and 256");
            let params = AnnParams {
                m,
                ef_construction,
                ..defaults
            };
            eprintln!("building HNSW m={m} ef_construction={ef_construction} ...");
            let start = Instant::now();
            let graph = Graph::build(vectors, dim, &params);
            let build_s = start.elapsed().as_secs_f64();
            let (graph_mib, data_mib) = dump_sizes(&graph)?;
            let mut searches = Vec::new();
            for &ef in &args.ef_search {
                let mut ms = Vec::new();
                let mut found = 0;
                for (q, truth) in queries.iter().zip(&truth) {
                    let start = Instant::now();
                    let hits = graph.search(q, args.k, ef, None);
                    ms.push(start.elapsed().as_secs_f64() * 1e3);
                    found += hits.iter().filter(|(row, _)| truth.contains(row)).count();
                }
                let expected: usize = truth.iter().map(Vec::len).sum();
                searches.push(HnswSearch {
                    ef_search: ef,
                    recall_vs_exact: found as f64 / expected as f64,
                    latency: latency(&mut ms),
                });
            }
            runs.push(HnswRun {
                m,
                ef_construction,
                build_s,
                graph_mib,
                data_mib,
                searches,
            });
            if m == defaults.m && ef_construction == defaults.ef_construction {
                default_graph = Some(graph);
            }
        }
    }

    let question_recall = (!questions.is_empty()).then(|| {
        let default_graph = default_graph.unwrap_or_else(|| Graph::build(vectors, dim, &defaults));
        let doc_of = |row: usize| index.chunk(row).doc.id.0.clone();
        let mut exact_sum = [0.0; 3];
        let mut hnsw_sum = [0.0; 3];
        // Enough chunks to reach 10 distinct documents even when documents have many chunks.
        let depth = 50.min(index.len());
        for (q, question) in queries.iter().zip(&questions) {
            let exact: Vec<String> = ann::exact(vectors, dim, q, depth, &|_| true)
                .into_iter()
                .map(|(r, _)| doc_of(r))
                .collect();
            let approx: Vec<String> = default_graph
                .search(q, depth, defaults.ef_search, None)
                .into_iter()
                .map(|(r, _)| doc_of(r))
                .collect();
            for (i, k) in [2, 5, 10].into_iter().enumerate() {
                exact_sum[i] += recall_at(&exact, &question.supporting_ids, k);
                hnsw_sum[i] += recall_at(&approx, &question.supporting_ids, k);
            }
        }
        let n = questions.len().min(queries.len()) as f64;
        QuestionRecall {
            questions: n as usize,
            exact: exact_sum.map(|s| s / n),
            hnsw_default: hnsw_sum.map(|s| s / n),
        }
    });

    let report = Report {
        chunks: index.len(),
        documents: docs.len(),
        queries: queries.len(),
        k: args.k,
        open_ms_p50: latency(&mut open_ms).p50_ms,
        rss_open_mib,
        query_embed_ms_p50: latency(&mut embed_ms).p50_ms,
        exact: latency(&mut exact_ms),
        hnsw: runs,
        questions: question_recall,
        threads: walkrag_embed::compute_threads(),
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_report(&report);
    }
    Ok(std::process::ExitCode::SUCCESS)
}

fn print_report(r: &Report) {
    println!(
        "index           {} chunks, {} documents; opens in {:.1} ms (p50 of 5)",
        r.chunks, r.documents, r.open_ms_p50
    );
    println!(
        "queries         {} (embedding one: {:.1} ms p50)",
        r.queries, r.query_embed_ms_p50
    );
    println!(
        "exact search    p50 {:.3} ms, p99 {:.3} ms",
        r.exact.p50_ms, r.exact.p99_ms
    );
    println!();
    println!(
        "resident        {:.0} MiB with the index open and the model loaded",
        r.rss_open_mib
    );
    println!();
    println!(
        "{:>4} {:>6} {:>8} {:>9} {:>6} {:>10} {:>9} {:>9}",
        "M", "ef_c", "build s", "graph MiB", "ef", "recall@k", "p50 ms", "p99 ms"
    );
    for run in &r.hnsw {
        for s in &run.searches {
            println!(
                "{:>4} {:>6} {:>8.2} {:>9.1} {:>6} {:>10.4} {:>9.3} {:>9.3}",
                run.m,
                run.ef_construction,
                run.build_s,
                run.graph_mib,
                s.ef_search,
                s.recall_vs_exact,
                s.latency.p50_ms,
                s.latency.p99_ms
            );
        }
    }
    if let Some(q) = &r.questions {
        println!();
        println!(
            "{} questions, share of supporting documents in the first k distinct documents:",
            q.questions
        );
        println!("              recall@2  recall@5  recall@10");
        println!(
            "  exact       {:>8.3}  {:>8.3}  {:>9.3}",
            q.exact[0], q.exact[1], q.exact[2]
        );
        println!(
            "  hnsw        {:>8.3}  {:>8.3}  {:>9.3}",
            q.hnsw_default[0], q.hnsw_default[1], q.hnsw_default[2]
        );
    }
}

fn latency(ms: &mut [f64]) -> Latency {
    let (p50_ms, p99_ms) = super::bench_store::latency(ms);
    Latency { p50_ms, p99_ms }
}

/// Sizes in MiB of a graph's two saved files: neighbour lists, and the vector copy.
fn dump_sizes(graph: &Graph) -> anyhow::Result<(f64, f64)> {
    let dir = std::env::temp_dir().join(format!("walkrag-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let saved = graph.save(&dir, "g").map_err(anyhow::Error::msg);
    let size = |ext: &str| -> f64 {
        let name = saved.as_deref().unwrap_or("g");
        std::fs::metadata(dir.join(format!("{name}.{ext}")))
            .map(|m| m.len() as f64 / (1 << 20) as f64)
            .unwrap_or(0.0)
    };
    let sizes = (size("hnsw.graph"), size("hnsw.data"));
    std::fs::remove_dir_all(&dir)?;
    saved?;
    Ok(sizes)
}
