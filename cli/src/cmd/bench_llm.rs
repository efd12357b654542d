//! `walkrag bench llm`: prompt processing and generation speed of a local model, measured
//! like llama.cpp's `llama-bench` (pp512 / tg128).

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, ensure};
use serde::Serialize;
use walkrag_models::{load_local, ModelSpec, DEFAULT_MODEL};

/// Prompt processing: --prompt-tokens tokens in one forward pass from an empty context.
/// Generation: --gen-tokens forward passes of one token each, from an empty context, with
/// the KV cache. One warm-up, then --runs runs of each; medians are reported. Compare with
/// `../shared/baselines/llama-bench.sh MODEL.gguf` run back to back on the same machine.
/// The int8 kernels are the best the CPU has; WALKRAG_CPU=avx512|avxvnni|avx2|scalar forces
/// one (an error where the CPU lacks it); the report names the kernels that ran.
///
/// With --json-schema FILE, also constrained generation through the real generation path:
/// the same chat prompt (--prompt) answered freely and under the schema, --runs times each,
/// reporting generation speed, the share of time spent on the constraint's masks, and the
/// tokens sampled against those the schema forced (run through the model in batches).
///
/// Each phase also reports how busy the cores were: the process's CPU seconds over the
/// wall-clock seconds (2.0 = two cores busy throughout; Linux only, else absent).
///
/// With --perplexity FILE, also the perplexity of the model on the first
/// --perplexity-tokens tokens of FILE's text, read from an empty context: a check that a
/// kernel path or a weight format computes the same model (compare the paths with
/// WALKRAG_CPU).
///
/// Examples:
///   walkrag bench llm --model local:qwen2.5-coder-0.5b
///   walkrag bench llm --perplexity docs/data/docs-bench/corpus/kvw-1002.md --runs 1
///   walkrag bench llm --json-schema docs/data/structured/enum100.schema.json --gen-tokens 200
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// A local model (local:NAME or local:PATH.gguf).
    #[arg(long, default_value = DEFAULT_MODEL)]
    model: String,
    #[arg(long, default_value_t = 512)]
    prompt_tokens: usize,
    #[arg(long, default_value_t = 128)]
    gen_tokens: usize,
    /// Timed runs of each test; the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Also measure generation constrained by this JSON Schema, beside the free one.
    #[arg(long, value_name = "FILE")]
    json_schema: Option<std::path::PathBuf>,
    /// The chat prompt of the constrained comparison.
    #[arg(
        long,
        default_value = "List facts about the Vennick cooperative's creamery as JSON, with a \
                         source for each."
    )]
    prompt: String,
    /// Also the model's perplexity on this text file.
    #[arg(long, value_name = "FILE")]
    perplexity: Option<std::path::PathBuf>,
    /// How many of the file's tokens the perplexity reads.
    #[arg(long, default_value_t = 1024)]
    perplexity_tokens: usize,
    /// Tokens run per pass while measuring perplexity: 1 runs the text token by token, the
    /// way generation does (a model may read some weights another way then), more as a
    /// prompt is run.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=4096))]
    perplexity_window: u32,
}

/// One way of answering the chat prompt, over the timed runs (medians).
#[derive(Serialize)]
struct Generation {
    /// Tokens of the completion (sampled and forced).
    tokens: usize,
    sampled: usize,
    forced: usize,
    /// Completion tokens per second of the whole generation (prompt excluded).
    tokens_per_s: f64,
    /// Seconds of the constraint's masks and forced-token computation per sampled token.
    mask_ms_per_token: f64,
    /// The share of the generation's time spent on the constraint.
    mask_share: f64,
    /// Compiling the schema (once per request).
    compile_ms: f64,
    text: String,
}

#[derive(Serialize)]
struct Constrained {
    schema: String,
    free: Generation,
    constrained: Generation,
}

#[derive(Serialize)]
struct Report {
    model: String,
    prompt_tokens: usize,
    prompt_tokens_per_s: f64,
    generated_tokens: usize,
    gen_tokens_per_s: f64,
    threads: usize,
    /// The int8 kernels that ran (`avx512`, `avxvnni`, `avx2`, `scalar`).
    cpu: &'static str,
    prompt_runs_s: Vec<f64>,
    gen_runs_s: Vec<f64>,
    /// Cores busy in prompt processing: CPU seconds over wall seconds, median of the runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cores_busy: Option<f64>,
    /// Cores busy in generation, likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    gen_cores_busy: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    perplexity: Option<Perplexity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    json_schema: Option<Constrained>,
}

#[derive(Serialize)]
struct Perplexity {
    file: String,
    tokens: usize,
    /// Tokens run per pass.
    window: usize,
    perplexity: f64,
    seconds: f64,
}

/// CPU seconds (user and system) of this process so far, all threads, from
/// `/proc/self/stat`; `None` where that cannot be read.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) in parentheses; utime and stime
    // are the 14th and 15th fields, in clock ticks (USER_HZ, 100 on Linux).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Runs `f`, returning its result, wall seconds and cores busy (CPU over wall seconds).
fn timed<T>(f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<(T, f64, Option<f64>)> {
    let cpu = cpu_seconds();
    let start = Instant::now();
    let out = f()?;
    let wall = start.elapsed().as_secs_f64();
    let busy = cpu.zip(cpu_seconds()).map(|(a, b)| (b - a) / wall);
    Ok((out, wall, busy))
}

/// Text whose tokens fill the prompt (its content does not change the cost of a pass).
const FILLER: &str = "The quick brown fox jumps over the lazy dog while the committee reviews \
    the quarterly figures, the river floods the lower fields, and 42 engineers debug a parser. ";

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    ensure!(
        args.runs > 0 && args.prompt_tokens > 0 && args.gen_tokens > 0,
        "counts must be positive"
    );
    let spec = ModelSpec::parse(&args.model)?;
    if matches!(spec, ModelSpec::OpenAi(_)) {
        bail!("bench llm measures local models (local:NAME or local:PATH.gguf)");
    }
    let model = load_local(&spec)?;
    let filler = model
        .tokenizer()
        .encode(FILLER)
        .map_err(anyhow::Error::msg)?;
    let prompt: Vec<u32> = filler
        .iter()
        .copied()
        .cycle()
        .take(args.prompt_tokens)
        .collect();
    let token = prompt[0];

    let mut session = model.session()?;
    eprintln!("warming up ...");
    session.forward(&prompt[..prompt.len().min(32)], 0)?;
    let mut prompt_runs_s = Vec::new();
    let mut gen_runs_s = Vec::new();
    let mut prompt_busy = Vec::new();
    let mut gen_busy = Vec::new();
    for run in 1..=args.runs {
        let ((), wall, busy) = timed(|| Ok(session.forward(&prompt, 0).map(drop)?))?;
        prompt_runs_s.push(wall);
        prompt_busy.extend(busy);
        let ((), wall, busy) = timed(|| {
            for pos in 0..args.gen_tokens {
                session.forward(&[token], pos)?;
            }
            Ok(())
        })?;
        gen_runs_s.push(wall);
        gen_busy.extend(busy);
        eprintln!(
            "run {run}/{}: pp{} {:.1} tokens/s, tg{} {:.1} tokens/s",
            args.runs,
            args.prompt_tokens,
            args.prompt_tokens as f64 / prompt_runs_s[run - 1],
            args.gen_tokens,
            args.gen_tokens as f64 / gen_runs_s[run - 1]
        );
    }
    let perplexity = match &args.perplexity {
        Some(path) => Some(perplexity(
            &model,
            &mut session,
            path,
            args.perplexity_tokens,
            args.perplexity_window as usize,
        )?),
        None => None,
    };
    drop(session);
    let json_schema = match &args.json_schema {
        Some(path) => Some(constrained(&model, &args, path)?),
        None => None,
    };
    let report = Report {
        model: args.model.clone(),
        prompt_tokens: args.prompt_tokens,
        prompt_tokens_per_s: args.prompt_tokens as f64 / super::bench::median(&prompt_runs_s),
        generated_tokens: args.gen_tokens,
        gen_tokens_per_s: args.gen_tokens as f64 / super::bench::median(&gen_runs_s),
        threads: walkrag_embed::compute_threads(),
        cpu: walkrag_models::local::cpu()?.name(),
        prompt_runs_s,
        gen_runs_s,
        prompt_cores_busy: (!prompt_busy.is_empty()).then(|| super::bench::median(&prompt_busy)),
        gen_cores_busy: (!gen_busy.is_empty()).then(|| super::bench::median(&gen_busy)),
        perplexity,
        json_schema,
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!("model           {}", report.model);
        println!(
            "prompt          {:.1} tokens/s (pp{})",
            report.prompt_tokens_per_s, report.prompt_tokens
        );
        println!(
            "generation      {:.1} tokens/s (tg{})",
            report.gen_tokens_per_s, report.generated_tokens
        );
        println!("threads         {}", report.threads);
        if let (Some(p), Some(g)) = (report.prompt_cores_busy, report.gen_cores_busy) {
            println!("cores busy      {p:.2} in prompt processing, {g:.2} in generation");
        }
        if let Some(p) = &report.perplexity {
            println!(
                "perplexity      {:.4} ({} tokens of {}, {} a pass, {:.1} s)",
                p.perplexity, p.tokens, p.file, p.window, p.seconds
            );
        }
        println!("kernels         {}", report.cpu);
        if let Some(c) = &report.json_schema {
            println!("json schema     {}", c.schema);
            for (name, g) in [("free", &c.free), ("constrained", &c.constrained)] {
                println!(
                    "  {name:<13} {:.1} tokens/s, {} tokens ({} sampled, {} forced), masks {:.2} ms/token = {:.1}% of generation, compile {:.0} ms",
                    g.tokens_per_s,
                    g.tokens,
                    g.sampled,
                    g.forced,
                    g.mask_ms_per_token,
                    100.0 * g.mask_share,
                    g.compile_ms
                );
            }
            println!("  constrained output: {}", c.constrained.text);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The perplexity of `model` on the first `tokens` tokens of the text file at `path`.
fn perplexity(
    model: &walkrag_models::LocalModel,
    session: &mut walkrag_models::local::Session<'_>,
    path: &std::path::Path,
    tokens: usize,
    window: usize,
) -> anyhow::Result<Perplexity> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let mut ids = model
        .tokenizer()
        .encode(&text)
        .map_err(anyhow::Error::msg)?;
    ids.truncate(tokens);
    ensure!(
        ids.len() >= 2,
        "{} has fewer than two tokens: no perplexity to measure",
        path.display()
    );
    eprintln!("perplexity on {} tokens ...", ids.len());
    let (perplexity, seconds, _) = timed(|| Ok(session.perplexity(&ids, window)?))?;
    Ok(Perplexity {
        file: path.display().to_string(),
        tokens: ids.len(),
        window,
        perplexity,
        seconds,
    })
}

/// The chat prompt answered freely and under the schema at `path`, `args.runs` times each
/// after a warm-up (which also builds the vocabulary's trie).
fn constrained(
    model: &walkrag_models::LocalModel,
    args: &Args,
    path: &std::path::Path,
) -> anyhow::Result<Constrained> {
    use walkrag_core::{ChatRequest, Constraint, Delta, Message, Sampling};
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let schema: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{} is not JSON: {e}", path.display()))?;
    let request = |constraint: Option<Constraint>| ChatRequest {
        messages: vec![
            Message::system("You are a helpful assistant. Answer in JSON."),
            Message::user(args.prompt.clone()),
        ],
        sampling: Sampling {
            max_tokens: args.gen_tokens,
            ..Sampling::default()
        },
        constraint,
        ..ChatRequest::default()
    };
    let measure = |request: &ChatRequest| -> anyhow::Result<Generation> {
        let mut runs = Vec::new();
        for run in 0..=args.runs {
            let mut text = String::new();
            let mut tokens = 0;
            let stats = model.generate(request, &mut |d| {
                match d {
                    Delta::Text { text: t } => text.push_str(&t),
                    Delta::Done { usage, .. } => tokens = usage.completion_tokens,
                    _ => {}
                }
                true
            })?;
            if run > 0 {
                runs.push((stats, tokens, text));
            }
        }
        runs.sort_by(|a, b| {
            let rate = |r: &(walkrag_models::GenerationStats, usize, String)| {
                r.1 as f64 / (r.0.forward_seconds + r.0.mask_seconds)
            };
            rate(a).total_cmp(&rate(b))
        });
        let (stats, tokens, text) = runs.swap_remove(runs.len() / 2);
        let busy = stats.forward_seconds + stats.mask_seconds;
        Ok(Generation {
            tokens,
            sampled: stats.sampled,
            forced: stats.forced,
            tokens_per_s: tokens as f64 / busy,
            mask_ms_per_token: 1e3 * stats.mask_seconds / stats.sampled.max(1) as f64,
            mask_share: stats.mask_seconds / busy,
            compile_ms: 1e3 * stats.compile_seconds,
            text,
        })
    };
    eprintln!("free and constrained generation ...");
    let free = measure(&request(None))?;
    let constrained = measure(&request(Some(Constraint::JsonSchema(schema))))?;
    Ok(Constrained {
        schema: path.display().to_string(),
        free,
        constrained,
    })
}
