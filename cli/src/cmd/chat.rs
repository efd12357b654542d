//! `walkrag chat`: talk to any chat model, streaming; a quick way to check a model works.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use walkrag_core::chat::next;
use walkrag_core::{ChatModel, ChatRequest, Delta, Message, Sampling};
use walkrag_models::DEFAULT_MODEL;

/// Chat with a model: interactive (one line per turn, Ctrl-D to leave), or one-shot with
/// --prompt. Answers stream as they are generated.
///
/// Models: local:NAME (from the models directory, see `walkrag models list`), local:PATH.gguf,
/// or openai:MODEL (OPENAI_BASE_URL and OPENAI_API_KEY from the environment; works with
/// OpenAI, llama.cpp's server, vLLM, Ollama).
///
/// Examples:
///   walkrag chat --prompt "What is the capital of France?"
///   walkrag chat --model local:smollm2-135m
///   OPENAI_BASE_URL=http://127.0.0.1:8080/v1 walkrag chat --model openai:any
#[derive(clap::Args)]
pub struct Args {
    /// Chat model.
    #[arg(long, default_value = DEFAULT_MODEL)]
    model: String,
    /// Ask this one question, print the answer, and exit.
    #[arg(long)]
    prompt: Option<String>,
    /// System prompt.
    #[arg(long, default_value = "You are a helpful assistant.")]
    system: String,
    /// Most tokens per answer.
    #[arg(long, default_value_t = 512)]
    max_tokens: usize,
    /// Sampling temperature (0: greedy).
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    /// Random seed for sampling.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print token counts and speed after each answer (on stderr).
    #[arg(long, short)]
    verbose: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let model = super::load_chat_model(&args.model)?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let mut messages = vec![Message::system(args.system.clone())];
    if let Some(prompt) = &args.prompt {
        messages.push(Message::user(prompt.clone()));
        runtime.block_on(turn(&model, &args, &mut messages))?;
        return Ok(ExitCode::SUCCESS);
    }
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        eprintln!(
            "chatting with {} — one line per message, Ctrl-D to leave",
            model.id()
        );
    }
    let stdin = std::io::stdin();
    loop {
        if interactive {
            eprint!("> ");
            std::io::stderr().flush().ok();
        }
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        messages.push(Message::user(line));
        runtime.block_on(turn(&model, &args, &mut messages))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Streams one answer to stdout and appends it to the conversation.
async fn turn(
    model: &Arc<dyn ChatModel>,
    args: &Args,
    messages: &mut Vec<Message>,
) -> anyhow::Result<()> {
    let request = ChatRequest {
        messages: messages.clone(),
        sampling: Sampling {
            temperature: args.temperature,
            seed: args.seed,
            max_tokens: args.max_tokens,
            ..Sampling::default()
        },
        ..ChatRequest::default()
    };
    let started = Instant::now();
    let mut first_token = None;
    let mut stream = model.stream(request);
    let mut answer = String::new();
    let mut out = std::io::stdout();
    while let Some(delta) = next(&mut stream).await {
        match delta? {
            Delta::Text { text } => {
                first_token.get_or_insert_with(|| started.elapsed());
                answer.push_str(&text);
                out.write_all(text.as_bytes())?;
                out.flush()?;
            }
            Delta::ToolCall { .. } => {}
            Delta::Done { usage, finish } => {
                writeln!(out)?;
                if args.verbose {
                    let secs = started.elapsed().as_secs_f64();
                    let first = first_token.map(|d| d.as_secs_f64()).unwrap_or(secs);
                    eprintln!(
                        "[{} prompt + {} generated tokens, first token after {:.2} s, {:.1} tokens/s, finish: {finish:?}]",
                        usage.prompt_tokens,
                        usage.completion_tokens,
                        first,
                        usage.completion_tokens as f64 / (secs - first).max(1e-9)
                    );
                }
            }
        }
    }
    messages.push(Message::assistant(answer));
    Ok(())
}
