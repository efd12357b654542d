//! Prompt processing and generation speed of a local model, measured like llama.cpp's
//! `llama-bench` (pp512 / tg128) and like `walkrag bench llm`.
//!
//! cargo run --release -p walkrag-models --example bench_llm -- local:qwen2.5-coder-0.5b

use std::time::Instant;

use walkrag_models::{load_local, ModelSpec, DEFAULT_MODEL};

/// Text whose tokens fill the prompt (its content does not change the cost of a pass).
const FILLER: &str = "The quick brown fox jumps over the lazy dog while the committee reviews \
    the quarterly figures, the river floods the lower fields, and 42 engineers debug a parser. ";

fn median(runs: &[f64]) -> f64 {
    let mut v = runs.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let model = args.next().unwrap_or_else(|| DEFAULT_MODEL.to_string());
    let model = if model.starts_with("local:") {
        model
    } else {
        format!("local:{model}")
    };
    let prompt_tokens: usize = args.next().map_or(Ok(512), |a| a.parse())?;
    let gen_tokens: usize = args.next().map_or(Ok(128), |a| a.parse())?;
    let runs: usize = args.next().map_or(Ok(3), |a| a.parse())?;

    let name = model.clone();
    let model = load_local(&ModelSpec::parse(&model)?)?;
    let filler = model.tokenizer().encode(FILLER)?;
    let prompt: Vec<u32> = filler.iter().copied().cycle().take(prompt_tokens).collect();
    let token = prompt[0];
    let mut session = model.session()?;
    eprintln!("warming up ...");
    session.forward(&prompt[..prompt.len().min(32)], 0)?;
    let (mut pp, mut tg) = (Vec::new(), Vec::new());
    for run in 1..=runs {
        let start = Instant::now();
        session.forward(&prompt, 0)?;
        pp.push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        for pos in 0..gen_tokens {
            session.forward(&[token], pos)?;
        }
        tg.push(start.elapsed().as_secs_f64());
        eprintln!(
            "run {run}/{runs}: pp{prompt_tokens} {:.1} tokens/s, tg{gen_tokens} {:.1} tokens/s",
            prompt_tokens as f64 / pp[run - 1],
            gen_tokens as f64 / tg[run - 1]
        );
    }
    println!(
        "{{\"model\": \"{}\", \"prompt_tokens_per_s\": {:.2}, \"gen_tokens_per_s\": {:.2}, \"cpu\": \"{}\"}}",
        name,
        prompt_tokens as f64 / median(&pp),
        gen_tokens as f64 / median(&tg),
        walkrag_models::local::cpu()?.name()
    );
    Ok(())
}
