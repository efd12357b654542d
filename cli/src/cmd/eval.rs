//! `walkrag eval`: accuracy benchmarking of strategies over a question set.

use std::future::Future;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{bail, ensure, Context};
use indicatif::ProgressBar;
use walkrag_core::ChatModel;
use walkrag_embed::Embedder;
use walkrag_engine::{ChunkSpec, FolderStore, Index, Store, UpdateOptions};
use walkrag_eval::actions::{self, ActionProgress, ActionResult, ActionSettings};
use walkrag_eval::{load_questions, runner, EvalProgress, ResultLine, Settings, Summary};
use walkrag_models::DEFAULT_MODEL;
use walkrag_walker::{by_name, Strategy};

/// Benchmark strategies on a question set: retrieval recall, answer EM/F1 and cost.
///
/// Indexes the corpus (or brings --index up to date with it), runs every strategy on every
/// question, and writes to --out: results.jsonl (one line per question and strategy, written
/// as each finishes), summary.json (means per strategy), report.md (strategies side by side)
/// and chart.svg (recall@k; seconds per question against recall@5).
///
/// Interrupted runs resume: run the same command again and only the questions without a
/// result (or whose result was an error) run. A run directory holds one model, embedder and
/// setting per strategy; new strategies can be added to it later.
///
/// Questions are JSON Lines with "id", "question", "answer", optional "answer_aliases", and
/// "supporting_ids" (documents of the corpus holding the evidence).
///
/// With --spec and --requests, the actions strategy is evaluated on API requests instead:
/// the spec's operations are indexed, each request is run with a dry-run executor (nothing
/// is sent), every confirmation is given, nothing missing is supplied, and summary.json
/// holds operation_accuracy, operation_recall@5/@10, param_accuracy, ask_accuracy,
/// confirm_accuracy, unconfirmed_mutations (a count; must be 0) and costs; results.jsonl the
/// operation picked, the inputs filled, what was asked, whether confirmation was asked and
/// the requests that would have been sent. Requests are JSON Lines: {"id", "request",
/// "operation_id", "method", "path", "required_params": {name: value or null},
/// "missing_required": [name], "mutating", "optional_params"?, "also_acceptable"?}.
///
/// Example (start small, then go on with a larger --limit; results are kept):
///   walkrag eval --corpus data/hotpotqa-100/corpus.jsonl \
///       --questions data/hotpotqa-100/questions.jsonl --strategies single --limit 10
///   walkrag eval --spec docs/data/actions/spec.yaml \
///       --requests docs/data/actions/requests.jsonl --limit 5
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The material: a .jsonl corpus, or files and folders of documents.
    #[arg(long, required_unless_present = "spec")]
    corpus: Vec<PathBuf>,
    /// Questions, JSON Lines.
    #[arg(long, required_unless_present = "spec")]
    questions: Option<PathBuf>,
    /// An OpenAPI spec: evaluate the actions strategy on --requests (instead of --corpus
    /// and --questions).
    #[arg(long, conflicts_with_all = ["corpus", "questions"], requires = "requests")]
    spec: Option<PathBuf>,
    /// API requests to carry out, JSON Lines (with --spec).
    #[arg(long, requires = "spec")]
    requests: Option<PathBuf>,
    /// With --spec: the base URL of the requests recorded [default: the spec's server].
    #[arg(long, requires = "spec")]
    base_url: Option<String>,
    /// With --spec: check each required input a local model filled with the user's words, and
    /// ask for a value whose log-probability falls more than NATS below NONE's when the model
    /// reads the request again (-4.5: chosen on development requests) [default: off].
    #[arg(long, requires = "spec", value_name = "NATS", value_parser = super::actions::margin)]
    value_margin: Option<f32>,
    /// With --spec: the model that finds the operation (guesses its id before the search and
    /// weighs the pick), where another than --model, which still writes every turn [default:
    /// --model].
    #[arg(long, requires = "spec", value_name = "SPEC")]
    pick_model: Option<String>,
    /// With --spec: first have --examples-model write example requests for each operation
    /// that has none in the index (see `walkrag index --help`); an index that has them keeps
    /// using them without this flag.
    #[arg(long, requires = "spec")]
    examples: bool,
    /// With --examples: the model that writes them.
    #[arg(long, value_name = "SPEC", default_value = DEFAULT_MODEL, requires = "examples")]
    examples_model: String,
    /// Strategies to compare, comma-separated.
    #[arg(long, default_value = "single,walk", value_delimiter = ',')]
    strategies: Vec<String>,
    #[command(flatten)]
    model: super::ModelArg,
    #[command(flatten)]
    strategy_flags: super::strategy_flags::StrategyFlags,
    /// Only the first N questions.
    #[arg(long)]
    limit: Option<usize>,
    /// Output directory.
    #[arg(long, default_value = "eval-out")]
    out: PathBuf,
    /// Index directory [default: OUT/index].
    #[arg(long)]
    index: Option<PathBuf>,
    #[command(flatten)]
    store: super::query::StoreArg,
    /// Embedding model [default: the index's own, else minilm].
    #[arg(long)]
    embedder: Option<String>,
    #[command(flatten)]
    remote: super::query::RemoteEmbedArgs,
    /// Questions answered at the same time (useful with a server that batches; a local model
    /// answers one at a time anyway).
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Tries again after a transient model failure (rate limit, timeout) this many times.
    #[arg(long, default_value_t = 2)]
    retries: usize,
    /// Also write every answer's whole trace (retrievals, prompts, completions, facts) to
    /// OUT/traces/STRATEGY/ID.json.
    #[arg(long)]
    traces: bool,
    /// Discard the results already in --out and start over.
    #[arg(long)]
    restart: bool,
    /// Dataset name in reports [default: the questions file's folder name].
    #[arg(long)]
    dataset: Option<String>,
    /// Scan every vector instead of walking the HNSW graph.
    #[arg(long)]
    exact: bool,
    /// Send the models no constraint: every reply is free text, read tolerantly, as from a
    /// server that cannot constrain (to measure what constrained decoding gains).
    #[arg(long)]
    unconstrained: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    ensure!(args.jobs >= 1, "--jobs must be at least 1");
    let flags = &args.strategy_flags;
    let runs = |name: &str| match args.spec {
        Some(_) => name == "actions",
        None => args.strategies.iter().any(|s| s.trim() == name),
    };
    flags.check(runs)?;
    if let Some(spec) = args.spec.clone() {
        return run_actions(&args, &spec);
    }
    let questions_path = args
        .questions
        .clone()
        .context("--questions is needed with --corpus")?;
    let options = flags.options(&args.model, runs, |model| {
        unconstrained(model, args.unconstrained)
    })?;
    let mut strategies: Vec<Box<dyn Strategy>> = Vec::new();
    for name in &args.strategies {
        let strategy = by_name(name.trim(), &options)?;
        if strategies.iter().any(|s| s.name() == strategy.name()) {
            bail!("--strategies names {name} twice");
        }
        strategies.push(strategy);
    }
    let questions = load_questions(&questions_path, args.limit)?;
    let dataset = args
        .dataset
        .clone()
        .unwrap_or_else(|| dataset_name(&questions_path));

    let index_dir = args.index.clone().unwrap_or_else(|| args.out.join("index"));
    let store: Arc<dyn Store> = super::query::open_store(&index_dir, &args.store)?.into();
    let (index, embedder) =
        index_corpus(store, &args.corpus, args.embedder.as_deref(), &args.remote)?;
    let model = unconstrained(
        super::load_chat_model(args.model.spec())?,
        args.unconstrained,
    );
    let env = super::env(&index, embedder.as_ref(), model.as_ref(), args.exact);
    let settings = Settings {
        dataset,
        command: command_line(),
        jobs: args.jobs,
        retries: args.retries,
        traces: args.traces,
    };
    let progress = Progress::new("questions");
    let summary = progress.run_to_end(runner::run(
        env,
        &strategies,
        &questions,
        &args.out,
        &settings,
        args.restart,
        &progress,
    ))?;
    print_summary(&summary, &strategies, &args.out);
    Ok(ExitCode::SUCCESS)
}

/// `model`, or with `--unconstrained` the same model with its constraints taken off.
fn unconstrained(model: Arc<dyn ChatModel>, off: bool) -> Arc<dyn ChatModel> {
    if off {
        Arc::new(walkrag_core::Unconstrained(model))
    } else {
        model
    }
}

/// Brings the index in `store` up to date with the corpus, and opens it with its embedder.
fn index_corpus(
    store: Arc<dyn Store>,
    corpus: &[PathBuf],
    embedder: Option<&str>,
    remote: &super::query::RemoteEmbedArgs,
) -> anyhow::Result<(Index, Box<dyn Embedder>)> {
    for path in corpus {
        ensure!(
            path.exists(),
            "the corpus {} does not exist",
            path.display()
        );
    }
    let spec = super::index::embedder_spec(store.as_ref(), embedder);
    let model = remote.load(&spec)?;
    let options = UpdateOptions {
        chunking: Some(ChunkSpec::for_embedder(model.as_ref())),
        ..UpdateOptions::default()
    };
    let location = store.location();
    eprintln!("indexing the corpus in {location} ...");
    let bars = super::index::Bars::new();
    let summary = store.update(corpus, model.as_ref(), &spec, &options, &bars);
    bars.clear();
    let summary = summary?;
    ensure!(
        summary.documents > 0,
        "the corpus holds no readable document"
    );
    eprintln!(
        "index {location}: {} documents, {} chunks{}",
        summary.documents,
        summary.chunks,
        if summary.written { "" } else { " (up to date)" }
    );
    let index = store.load()?;
    index.check_embedder(model.as_ref())?;
    Ok((index, model))
}

/// `--spec --requests`: the actions strategy on API requests.
fn run_actions(args: &Args, spec: &Path) -> anyhow::Result<ExitCode> {
    ensure!(
        args.store.url.is_none(),
        "--spec needs a folder index (an API's operation catalogue is kept beside it): leave out --store"
    );
    let requests_path = args
        .requests
        .clone()
        .context("--requests is needed with --spec")?;
    let requests = actions::load_requests(&requests_path, args.limit)?;
    let dataset = args
        .dataset
        .clone()
        .unwrap_or_else(|| dataset_name(&requests_path));
    let index_dir = args.index.clone().unwrap_or_else(|| args.out.join("index"));
    let mut specs = [super::index::Spec {
        path: spec.to_path_buf(),
        catalog: super::actions::read_catalog(spec)?,
    }];
    if args.examples {
        super::index::write_examples(&index_dir, &specs, &args.examples_model)?;
    }
    let paths = super::index::specs_as_records(&index_dir, &[spec.to_path_buf()], &mut specs)?;
    let [super::index::Spec { catalog, .. }] = specs;
    let (index, embedder) = index_corpus(
        Arc::new(FolderStore::new(&index_dir)),
        &paths,
        args.embedder.as_deref(),
        &args.remote,
    )?;
    let model = super::load_chat_model(args.model.spec())?;
    let env = super::env(&index, embedder.as_ref(), model.as_ref(), args.exact);
    let settings = ActionSettings {
        dataset,
        command: command_line(),
        base_url: args.base_url.clone(),
        k: args.strategy_flags.k,
        max_turns: args.strategy_flags.max_cycles,
        guess: true,
        weigh: true,
        value_margin: args.value_margin,
        pick_model: super::load_other_model(args.pick_model.as_deref(), args.model.spec(), "pick")?,
        retries: args.retries,
        traces: args.traces,
    };
    let progress = Progress::new("requests");
    let summary = progress.run_to_end(actions::run(
        env,
        &catalog,
        &requests,
        &args.out,
        &settings,
        args.restart,
        &progress,
    ))?;
    println!("{}: {} requests", summary.dataset, summary.requests);
    if let Some(s) = summary.strategies.get(actions::STRATEGY) {
        println!(
            "operation accuracy {:.3} · recall@5 {:.3} · recall@10 {:.3} · params {:.3} · \
             ask {:.3} · confirm {:.3} · unconfirmed mutations {}",
            s.operation_accuracy,
            s.operation_recall_5,
            s.operation_recall_10,
            s.param_accuracy,
            s.ask_accuracy,
            s.confirm_accuracy,
            s.unconfirmed_mutations
        );
        println!(
            "{:.2} LLM calls, {:.0} tokens, {:.1} s per request",
            s.llm_calls,
            s.prompt_tokens + s.completion_tokens,
            s.seconds
        );
        if s.errors > 0 {
            println!("{} requests failed (run again to retry them)", s.errors);
        }
    }
    println!("report: {}", args.out.join(runner::REPORT_FILE).display());
    Ok(ExitCode::SUCCESS)
}

impl ActionProgress for Progress {
    fn start(&self, todo: usize, done: usize) {
        self.begin(todo, done);
    }

    fn finished(&self, result: &ActionResult) {
        let mark = |ok: bool| if ok { "ok" } else { "wrong" };
        let m = &result.metrics;
        self.line(
            &format!(
                "{}: picked {} (expected {}): operation {}, ask {}, confirm {}, {} LLM calls, \
                 {:.1} s",
                result.id,
                result.picked.as_deref().unwrap_or("nothing"),
                result.expected_operation,
                mark(m.operation),
                mark(m.ask),
                mark(m.confirm),
                result.usage.llm_calls,
                result.elapsed_ms as f64 / 1000.0,
            ),
            result.error.as_deref(),
        );
    }

    fn retry(&self, id: &str, error: &str) {
        eprintln!("actions {id}: {error}; trying again");
    }
}

fn dataset_name(questions: &Path) -> String {
    let parent = questions
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str());
    let stem = questions.file_stem().and_then(|n| n.to_str());
    match (parent, stem) {
        (Some(p), _) if !p.is_empty() => p.to_string(),
        (_, Some(s)) => s.to_string(),
        _ => "questions".to_string(),
    }
}

/// The command as typed, for the report (arguments with spaces quoted).
fn command_line() -> String {
    let mut args = std::env::args();
    let mut parts = vec!["walkrag".to_string()];
    args.next();
    for arg in args {
        if arg.contains(char::is_whitespace) || arg.is_empty() {
            parts.push(format!("'{}'", arg.replace('\'', "'\\''")));
        } else {
            parts.push(arg);
        }
    }
    parts.join(" ")
}

/// A progress bar on a terminal; one line per finished question (or request) otherwise, for
/// logs of runs in the background.
struct Progress {
    /// What is counted ("questions", "requests").
    unit: &'static str,
    bar: Mutex<Option<ProgressBar>>,
    counts: Mutex<(usize, usize)>,
}

impl Progress {
    fn new(unit: &'static str) -> Self {
        Self {
            unit,
            bar: Mutex::new(None),
            counts: Mutex::new((0, 0)),
        }
    }

    fn begin(&self, todo: usize, done: usize) {
        if done > 0 {
            eprintln!("resuming: {done} results kept, {todo} to run");
        }
        *self.counts.lock().expect("progress lock") = (0, todo);
        if std::io::stderr().is_terminal() {
            *self.bar.lock().expect("progress lock") =
                Some(super::progress_bar(todo as u64, self.unit));
        }
    }

    /// One finished: `text` printed as "[done/todo] text" (with the failure, if any) where
    /// there is no bar; on a bar, only failures are printed.
    fn line(&self, text: &str, error: Option<&str>) {
        let (done, todo) = {
            let mut counts = self.counts.lock().expect("progress lock");
            counts.0 += 1;
            *counts
        };
        let failed = error.map(|e| format!(" — failed: {e}")).unwrap_or_default();
        let text = format!("[{done}/{todo}] {text}{failed}");
        match self.bar.lock().expect("progress lock").as_ref() {
            Some(bar) => {
                if error.is_some() {
                    bar.suspend(|| eprintln!("{text}"));
                }
                bar.inc(1);
            }
            None => eprintln!("{text}"),
        }
    }

    fn clear(&self) {
        if let Some(bar) = self.bar.lock().expect("progress lock").take() {
            bar.finish_and_clear();
        }
    }

    /// Runs an eval that reports here to its end on a fresh runtime, then takes the bar
    /// away, failed or not.
    fn run_to_end<T, E>(&self, eval: impl Future<Output = Result<T, E>>) -> anyhow::Result<T>
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        let result = super::runtime().map(|runtime| runtime.block_on(eval));
        self.clear();
        Ok(result??)
    }
}

impl EvalProgress for Progress {
    fn start(&self, todo: usize, done: usize) {
        self.begin(todo, done);
    }

    fn finished(&self, line: &ResultLine) {
        self.line(
            &format!(
                "{} {}: F1 {:.2}, recall@5 {:.2}, {} LLM calls, {:.1} s",
                line.strategy,
                line.id,
                line.metrics.f1,
                line.metrics.recall_5,
                line.usage.llm_calls,
                line.elapsed_ms as f64 / 1000.0,
            ),
            line.error.as_deref(),
        );
    }

    fn retry(&self, id: &str, strategy: &str, error: &str) {
        eprintln!("{strategy} {id}: {error}; trying again");
    }
}

fn print_summary(summary: &Summary, strategies: &[Box<dyn Strategy>], out: &Path) {
    println!("{}: {} questions", summary.dataset, summary.questions);
    println!(
        "{:<10} {:>9} {:>9} {:>9} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>9} {:>7}",
        "strategy",
        "recall@2",
        "recall@5",
        "recall@10",
        "EM",
        "F1",
        "in ctx",
        "right",
        "reader",
        "calls",
        "tokens",
        "s/q"
    );
    let cell = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.3}"));
    for strategy in strategies {
        if let Some(s) = summary.strategies.get(strategy.name()) {
            println!(
                "{:<10} {:>9.3} {:>9.3} {:>9.3} {:>6.3} {:>6.3} {:>6} {:>6} {:>6} {:>6.2} {:>9.0} {:>7.1}",
                strategy.name(),
                s.scores.recall_2,
                s.scores.recall_5,
                s.scores.recall_10,
                s.scores.em,
                s.scores.f1,
                cell(s.scores.in_context),
                cell(s.scores.right),
                cell(s.reader_efficiency),
                s.llm_calls,
                s.prompt_tokens + s.completion_tokens,
                s.seconds
            );
            if s.errors > 0 {
                println!(
                    "           {} questions failed (run again to retry them)",
                    s.errors
                );
            }
        }
    }
    println!("report: {}", out.join(runner::REPORT_FILE).display());
}
