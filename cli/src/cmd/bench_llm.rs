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
///
/// Example: walkrag bench llm --model local:qwen2.5-coder-0.5b
#[derive(clap::Args)]
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
}

#[derive(Serialize)]
struct Report {
    model: String,
    prompt_tokens: usize,
    prompt_tokens_per_s: f64,
    generated_tokens: usize,
    gen_tokens_per_s: f64,
    threads: usize,
    prompt_runs_s: Vec<f64>,
    gen_runs_s: Vec<f64>,
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
    let time_prompt = |session: &mut walkrag_models::local::Session<'_>| -> anyhow::Result<f64> {
        let start = Instant::now();
        session.forward(&prompt, 0)?;
        Ok(start.elapsed().as_secs_f64())
    };
    let time_gen = |session: &mut walkrag_models::local::Session<'_>| -> anyhow::Result<f64> {
        let start = Instant::now();
        for pos in 0..args.gen_tokens {
            session.forward(&[token], pos)?;
        }
        Ok(start.elapsed().as_secs_f64())
    };
    eprintln!("warming up ...");
    session.forward(&prompt[..prompt.len().min(32)], 0)?;
    let mut prompt_runs_s = Vec::new();
    let mut gen_runs_s = Vec::new();
    for run in 1..=args.runs {
        prompt_runs_s.push(time_prompt(&mut session)?);
        gen_runs_s.push(time_gen(&mut session)?);
        eprintln!(
            "run {run}/{}: pp{} {:.1} tokens/s, tg{} {:.1} tokens/s",
            args.runs,
            args.prompt_tokens,
            args.prompt_tokens as f64 / prompt_runs_s[run - 1],
            args.gen_tokens,
            args.gen_tokens as f64 / gen_runs_s[run - 1]
        );
    }
    let report = Report {
        model: args.model.clone(),
        prompt_tokens: args.prompt_tokens,
        prompt_tokens_per_s: args.prompt_tokens as f64 / super::bench::median(&prompt_runs_s),
        generated_tokens: args.gen_tokens,
        gen_tokens_per_s: args.gen_tokens as f64 / super::bench::median(&gen_runs_s),
        threads: walkrag_embed::compute_threads(),
        prompt_runs_s,
        gen_runs_s,
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
    }
    Ok(ExitCode::SUCCESS)
}
