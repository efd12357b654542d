//! `walkrag bench store`: bulk load, index build and queries over N vectors in the folder
//! store (hnsw_rs) and in PostgreSQL (pgvector), side by side, with recall against exact
//! search.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{ensure, Context};
use serde::Serialize;
use walkrag_core::SplitMix64;
use walkrag_engine::ann::{self, AnnParams, Graph};
use walkrag_engine::Index;
use walkrag_pgstore::bench::{ServerInfo, VectorTable};

/// Bulk load, index build and queries over N vectors in either store, side by side: rows
/// loaded per second, build seconds, disk, memory, and for each ef_search the recall@k of the
/// HNSW search against exact search with its latency p50/p99.
///
/// The vectors: the first are the real vectors of --seeds (a folder index: MiniLM embeddings
/// of a corpus). The rest are generated around them, each a point on the segment between a
/// real vector and one of its 8 nearest real neighbours (at a uniform position) plus Gaussian
/// noise of --noise per coordinate, normalised. The queries are generated the same way from
/// another random stream, so none is in the set. Sizes run in order over one growing set, so
/// the first 100,000 of 1,000,000 are the 100,000.
///
/// The folder store's side is what `walkrag index` writes for the vectors (vectors.f32 and
/// the hnsw_rs graph files, synced), built in this process. The Postgres side is a table of
/// ids and vectors in the schema walkrag_bench (dropped first and at the end) with the HNSW
/// index the Postgres store builds (vector_cosine_ops, the same M and ef_construction),
/// loaded by binary COPY; its latency includes the round trip to the server.
///
/// Example:
///   walkrag index ../shared/data/hotpotqa-100/corpus.jsonl --index /tmp/seeds
///   walkrag bench store --seeds /tmp/seeds --vectors 100000,1000000 \
///       --store "$(scripts/postgres.sh start)"
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// A folder index whose vectors seed the set.
    #[arg(long, default_value = super::DEFAULT_INDEX)]
    seeds: PathBuf,
    /// Set sizes, comma-separated, e.g. 100000,1000000.
    #[arg(long, value_delimiter = ',', default_value = "100000")]
    vectors: Vec<usize>,
    /// The PostgreSQL database with pgvector to measure beside the folder store (its schema
    /// walkrag_bench is dropped and rewritten); without it, the folder store only.
    #[arg(
        long,
        env = "WALKRAG_STORE",
        value_name = "URL",
        hide_env_values = true
    )]
    store: Option<String>,
    /// Leave out the folder store (measure Postgres only).
    #[arg(long, requires = "store")]
    no_folder: bool,
    /// Queries per size (exact search of each gives the truth).
    #[arg(long, default_value_t = 200)]
    queries: usize,
    /// Neighbours compared (recall@k against exact search).
    #[arg(short, default_value_t = 10)]
    k: usize,
    /// HNSW M [default: the index's default].
    #[arg(long)]
    m: Option<usize>,
    /// HNSW ef_construction [default: the index's default].
    #[arg(long)]
    ef_construction: Option<usize>,
    /// ef_search values to query with, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "40,64,100,200")]
    ef_search: Vec<usize>,
    /// Standard deviation of the noise added to each coordinate of a generated vector.
    #[arg(long, default_value_t = 0.01)]
    noise: f32,
    /// Postgres maintenance_work_mem for the index build, in MiB (the graph should fit).
    #[arg(long, default_value_t = 4096)]
    pg_build_mib: usize,
    /// Postgres parallel workers for the index build.
    #[arg(long, default_value_t = 1)]
    pg_workers: usize,
    /// Where the folder store's files go [default: a temporary directory].
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report {
    seeds: usize,
    dim: usize,
    noise: f32,
    queries: usize,
    k: usize,
    m: usize,
    ef_construction: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    postgres: Option<ServerInfo>,
    threads: usize,
    runs: Vec<Run>,
}

#[derive(Serialize)]
struct Run {
    store: &'static str,
    vectors: usize,
    /// Rows written per second (the rows this size added).
    load_rows_per_s: f64,
    build_s: f64,
    disk_mib: f64,
    /// Folder: this process's resident memory with the graph built. Postgres: the size of the
    /// HNSW index, which a server keeps in its buffers to search fast.
    memory_mib: f64,
    exact_ms_p50: f64,
    searches: Vec<Search>,
}

#[derive(Serialize)]
struct Search {
    ef_search: usize,
    recall: f64,
    p50_ms: f64,
    p99_ms: f64,
}

pub fn run(args: Args) -> anyhow::Result<std::process::ExitCode> {
    ensure!(
        args.k > 0 && args.queries > 0,
        "-k and --queries must be positive"
    );
    ensure!(
        args.vectors.windows(2).all(|w| w[0] < w[1]) && args.vectors[0] > 0,
        "--vectors must be positive sizes in increasing order"
    );
    let seeds_index = Index::open(&args.seeds).with_context(|| {
        format!(
            "--seeds needs a folder index (walkrag index CORPUS --index {})",
            args.seeds.display()
        )
    })?;
    ensure!(
        seeds_index.len() >= 2,
        "the index at {} holds fewer than 2 chunks",
        args.seeds.display()
    );
    let dim = seeds_index.manifest().embedder.dim;
    let seeds = seeds_index.vectors().to_vec();
    drop(seeds_index);
    let defaults = AnnParams::default();
    let params = AnnParams {
        m: args.m.unwrap_or(defaults.m),
        ef_construction: args.ef_construction.unwrap_or(defaults.ef_construction),
        ..defaults
    };
    ensure!(
        (2..=100).contains(&params.m),
        "--m must be between 2 and 100"
    );

    let largest = *args.vectors.last().expect("a size");
    eprintln!(
        "generating {largest} vectors of {dim} around {} real ones ...",
        seeds.len() / dim
    );
    let generator = Generator::new(&seeds, dim, args.noise);
    let vectors = generator.generate(largest, 1);
    let queries: Vec<Vec<f32>> = generator
        .generate(args.queries, 2)
        .chunks_exact(dim)
        .map(<[f32]>::to_vec)
        .collect();

    let table = match &args.store {
        Some(url) => Some(VectorTable::create(url, dim)?),
        None => None,
    };
    let postgres = table.as_ref().map(VectorTable::server).transpose()?;
    let dir = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("walkrag-bench-store-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir)?;

    let mut runs = Vec::new();
    let mut loaded = 0;
    for &n in &args.vectors {
        let set = &vectors[..n * dim];
        eprintln!("{n} vectors: exact search of {} queries ...", queries.len());
        let (truth, mut exact_ms) = exact_truth(set, dim, &queries, args.k);
        let exact_ms_p50 = latency(&mut exact_ms).0;
        if !args.no_folder {
            runs.push(folder_run(
                &args,
                &params,
                &dir,
                set,
                dim,
                &queries,
                &truth,
                exact_ms_p50,
            )?);
        }
        if let Some(table) = &table {
            runs.push(postgres_run(
                &args,
                &params,
                table,
                set,
                dim,
                loaded,
                &queries,
                &truth,
                exact_ms_p50,
            )?);
            loaded = n;
        }
    }
    if let Some(table) = table {
        table.drop_all()?;
    }
    if args.dir.is_none() {
        std::fs::remove_dir_all(&dir)?;
    }
    let report = Report {
        seeds: seeds.len() / dim,
        dim,
        noise: args.noise,
        queries: queries.len(),
        k: args.k,
        m: params.m,
        ef_construction: params.ef_construction,
        postgres,
        threads: walkrag_embed::compute_threads(),
        runs,
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_report(&report);
    }
    Ok(std::process::ExitCode::SUCCESS)
}

#[allow(clippy::too_many_arguments)]
fn folder_run(
    args: &Args,
    params: &AnnParams,
    dir: &std::path::Path,
    set: &[f32],
    dim: usize,
    queries: &[Vec<f32>],
    truth: &[Vec<usize>],
    exact_ms_p50: f64,
) -> anyhow::Result<Run> {
    let n = set.len() / dim;
    eprintln!("{n} vectors, folder store: writing and building the graph ...");
    let start = Instant::now();
    let path = dir.join("vectors.f32");
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path)?);
        for value in set {
            file.write_all(&value.to_le_bytes())?;
        }
        file.into_inner()?.sync_all()?;
    }
    let load_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let graph = Graph::build(set, dim, params);
    let saved = graph.save(dir, "graph").map_err(anyhow::Error::msg)?;
    for ext in ["hnsw.graph", "hnsw.data"] {
        std::fs::File::open(dir.join(format!("{saved}.{ext}")))?.sync_all()?;
    }
    let build_s = start.elapsed().as_secs_f64();
    let memory_mib = rss_mib();
    let mut disk = std::fs::metadata(&path)?.len();
    for ext in ["hnsw.graph", "hnsw.data"] {
        disk += std::fs::metadata(dir.join(format!("{saved}.{ext}")))?.len();
    }
    let searches = args
        .ef_search
        .iter()
        .map(|&ef| {
            measure(ef, queries, truth, |q| {
                Ok(graph
                    .search(q, args.k, ef, None)
                    .into_iter()
                    .map(|(row, _)| row)
                    .collect())
            })
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(Run {
        store: "folder",
        vectors: n,
        load_rows_per_s: n as f64 / load_s,
        build_s,
        disk_mib: disk as f64 / MIB,
        memory_mib,
        exact_ms_p50,
        searches,
    })
}

#[allow(clippy::too_many_arguments)]
fn postgres_run(
    args: &Args,
    params: &AnnParams,
    table: &VectorTable,
    set: &[f32],
    dim: usize,
    loaded: usize,
    queries: &[Vec<f32>],
    truth: &[Vec<usize>],
    exact_ms_p50: f64,
) -> anyhow::Result<Run> {
    let n = set.len() / dim;
    eprintln!("{n} vectors, postgres: loading {} rows ...", n - loaded);
    table.drop_index()?;
    let start = Instant::now();
    let last = std::cell::Cell::new(Instant::now());
    table.load(&set[loaded * dim..], loaded, &|done| {
        if last.get().elapsed().as_secs() >= 30 {
            eprintln!("  {} of {} rows", loaded + done, n);
            last.set(Instant::now());
        }
    })?;
    let load_s = start.elapsed().as_secs_f64();
    eprintln!("{n} vectors, postgres: building the HNSW index ...");
    let build_s = table.build(
        params.m,
        params.ef_construction,
        args.pg_build_mib,
        args.pg_workers,
    )?;
    let (table_bytes, index_bytes) = table.sizes()?;
    let searches = args
        .ef_search
        .iter()
        .map(|&ef| {
            table.set_ef_search(ef)?;
            measure(ef, queries, truth, |q| Ok(table.search(q, args.k)?))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(Run {
        store: "postgres",
        vectors: n,
        load_rows_per_s: (n - loaded) as f64 / load_s,
        build_s,
        disk_mib: (table_bytes + index_bytes) as f64 / MIB,
        memory_mib: index_bytes as f64 / MIB,
        exact_ms_p50,
        searches,
    })
}

const MIB: f64 = (1 << 20) as f64;

/// Recall@k against `truth` and latency of `search` over `queries`, after one warm-up pass.
fn measure(
    ef: usize,
    queries: &[Vec<f32>],
    truth: &[Vec<usize>],
    search: impl Fn(&[f32]) -> anyhow::Result<Vec<usize>>,
) -> anyhow::Result<Search> {
    for q in queries {
        search(q)?;
    }
    let mut ms = Vec::with_capacity(queries.len());
    let mut found = 0;
    for (q, truth) in queries.iter().zip(truth) {
        let start = Instant::now();
        let hits = search(q)?;
        ms.push(start.elapsed().as_secs_f64() * 1e3);
        found += hits.iter().filter(|row| truth.contains(row)).count();
    }
    let expected: usize = truth.iter().map(Vec::len).sum();
    let (p50_ms, p99_ms) = latency(&mut ms);
    Ok(Search {
        ef_search: ef,
        recall: found as f64 / expected.max(1) as f64,
        p50_ms,
        p99_ms,
    })
}

fn print_report(r: &Report) {
    println!(
        "{} real vectors of {} seed the set (noise {} per coordinate); {} queries, recall@{} \
         against exact search; HNSW M {}, ef_construction {}; {} threads",
        r.seeds, r.dim, r.noise, r.queries, r.k, r.m, r.ef_construction, r.threads
    );
    if let Some(pg) = &r.postgres {
        println!(
            "postgres {} with pgvector {}, shared_buffers {}",
            pg.version, pg.pgvector, pg.shared_buffers
        );
    }
    println!();
    println!(
        "{:<8} {:>9} {:>9} {:>8} {:>9} {:>8} {:>9} {:>5} {:>7} {:>8} {:>8}",
        "store",
        "vectors",
        "load r/s",
        "build s",
        "disk MiB",
        "mem MiB",
        "exact ms",
        "ef",
        "recall",
        "p50 ms",
        "p99 ms"
    );
    for run in &r.runs {
        for s in &run.searches {
            println!(
                "{:<8} {:>9} {:>9.0} {:>8.1} {:>9.0} {:>8.0} {:>9.1} {:>5} {:>7.4} {:>8.2} {:>8.2}",
                run.store,
                run.vectors,
                run.load_rows_per_s,
                run.build_s,
                run.disk_mib,
                run.memory_mib,
                run.exact_ms_p50,
                s.ef_search,
                s.recall,
                s.p50_ms,
                s.p99_ms
            );
        }
    }
}

/// Each query's `k` nearest rows by an exact scan, and the milliseconds each scan took.
pub(super) fn exact_truth(
    vectors: &[f32],
    dim: usize,
    queries: &[Vec<f32>],
    k: usize,
) -> (Vec<Vec<usize>>, Vec<f64>) {
    let all = |_: usize| true;
    let mut ms = Vec::with_capacity(queries.len());
    let truth = queries
        .iter()
        .map(|q| {
            let start = Instant::now();
            let hits = ann::exact(vectors, dim, q, k, &all);
            ms.push(start.elapsed().as_secs_f64() * 1e3);
            hits.into_iter().map(|(row, _)| row).collect()
        })
        .collect();
    (truth, ms)
}

/// The median and the 99th percentile.
pub(super) fn latency(ms: &mut [f64]) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    let at = |p: f64| ms[((ms.len() as f64 - 1.0) * p).round() as usize];
    (at(0.5), at(0.99))
}

/// Resident memory of this process in MiB (Linux), 0 elsewhere.
pub(super) fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// Vectors around real ones: see [`Args`].
struct Generator<'a> {
    seeds: &'a [f32],
    dim: usize,
    noise: f32,
    /// Each seed's nearest other seeds.
    neighbours: Vec<Vec<usize>>,
}

impl<'a> Generator<'a> {
    const NEIGHBOURS: usize = 8;

    fn new(seeds: &'a [f32], dim: usize, noise: f32) -> Self {
        let count = seeds.len() / dim;
        let neighbours = (0..count)
            .map(|i| {
                let others = |j: usize| j != i;
                ann::exact(
                    seeds,
                    dim,
                    &seeds[i * dim..(i + 1) * dim],
                    Self::NEIGHBOURS,
                    &others,
                )
                .into_iter()
                .map(|(j, _)| j)
                .collect()
            })
            .collect();
        Self {
            seeds,
            dim,
            noise,
            neighbours,
        }
    }

    /// `n` vectors from random stream `stream`. Stream 1 begins with the seeds themselves.
    fn generate(&self, n: usize, stream: u64) -> Vec<f32> {
        let dim = self.dim;
        let count = self.seeds.len() / dim;
        let mut rng = Draws(SplitMix64(stream.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
        let mut out = Vec::with_capacity(n * dim);
        let real = if stream == 1 { count.min(n) } else { 0 };
        out.extend_from_slice(&self.seeds[..real * dim]);
        let mut v = vec![0f32; dim];
        for _ in real..n {
            let a = rng.below(count);
            let b = self.neighbours[a][rng.below(self.neighbours[a].len())];
            let t = rng.unit() as f32;
            let (xa, xb) = (&self.seeds[a * dim..], &self.seeds[b * dim..]);
            for (i, value) in v.iter_mut().enumerate() {
                *value = t * xa[i] + (1.0 - t) * xb[i] + self.noise * rng.normal() as f32;
            }
            let norm = v
                .iter()
                .map(|x| x * x)
                .sum::<f32>()
                .sqrt()
                .max(f32::MIN_POSITIVE);
            out.extend(v.iter().map(|x| x / norm));
        }
        out
    }
}

/// Draws for [`Generator`], from one reproducible stream.
struct Draws(SplitMix64);

impl Draws {
    fn unit(&mut self) -> f64 {
        self.0.next_f64()
    }

    fn below(&mut self, n: usize) -> usize {
        (self.unit() * n as f64) as usize
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let u = 1.0 - self.unit();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * self.unit()).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_vectors_are_unit_length_reproducible_and_start_with_the_seeds() {
        let dim = 4;
        let seeds = [
            1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.6, 0.8, 0.0, 0.0,
        ];
        let generator = Generator::new(&seeds, dim, 0.01);
        let set = generator.generate(50, 1);
        assert_eq!(set.len(), 50 * dim);
        assert_eq!(&set[..seeds.len()], &seeds);
        for v in set.chunks_exact(dim) {
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
        }
        assert_eq!(set, generator.generate(50, 1));
        let queries = generator.generate(10, 2);
        assert!(queries
            .chunks_exact(dim)
            .all(|q| !set.chunks_exact(dim).any(|v| v == q)));
    }
}
