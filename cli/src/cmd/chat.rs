//! `walkrag chat`: talk to any chat model, streaming; a quick way to check a model works.
//! With `--strategy actions`, a conversation that carries out requests with an indexed API;
//! with another strategy, questions about the index (with `roam`, opened sections stay open).

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail, Context};
use walkrag_actions::Conversation;
use walkrag_core::chat::next;
use walkrag_core::{ChatModel, ChatRequest, Constraint, Delta, Message, Sampling};
use walkrag_walker::{by_name, Answer, AnswerModel, Event, Options, Roam, Strategy};

/// Chat with a model: interactive (one line per turn, Ctrl-D to leave), or one-shot with
/// --prompt. Answers stream as they are generated.
///
/// Models: local:NAME (from the models directory, see `walkrag models list`), local:PATH.gguf,
/// or openai:MODEL (OPENAI_BASE_URL and OPENAI_API_KEY from the environment; works with
/// OpenAI, llama.cpp's server, vLLM, Ollama).
///
/// With --strategy actions, each message is a request to an API whose OpenAPI spec is in the
/// index (see `walkrag ask --help`): the operations found stay available for the rest of the
/// conversation, a question for a missing input is answered by the next message, and every
/// change is confirmed on the terminal first (--yes confirms all; --dry-run sends nothing).
///
/// With --strategy single, walk, toc, roam or docs, each message is a question about the
/// index, answered by that strategy (see `walkrag ask --help`). With roam the sections
/// opened stay open for the follow-up questions, and past a 1,200-token budget the least
/// recently used close.
///
/// With --json-schema FILE every reply is one JSON value valid under that JSON Schema, and
/// with --grammar FILE text of that Lark grammar (top rule `start`): local models enforce it
/// token by token; OpenAI-compatible servers get the schema as `response_format`. With
/// --json, each reply is one line {"type": "reply", "text": ..., "valid": true|false|null}
/// where valid says whether the text parses and validates against the schema (null without
/// one).
///
/// Examples:
///   walkrag chat --prompt "What is the capital of France?"
///   walkrag chat --json-schema city.schema.json --json --prompt "The capital of France?"
///   walkrag chat --model local:smollm2-135m
///   OPENAI_BASE_URL=http://127.0.0.1:8080/v1 walkrag chat --model openai:any
///   walkrag chat --strategy actions --base-url http://localhost:8080/api
///   walkrag chat --strategy roam --index report.walkrag
///   walkrag chat --strategy toc --index report.walkrag
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[command(flatten)]
    model: super::ModelArg,
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
    /// `actions`: carry out requests with an API whose spec is in the index; `single`,
    /// `walk`, `toc`, `roam`, `docs`: answer questions about the index (`roam` keeps opened
    /// sections open).
    #[arg(long)]
    strategy: Option<String>,
    /// Index directory (with --strategy).
    #[arg(long, default_value = super::DEFAULT_INDEX)]
    index: PathBuf,
    #[command(flatten)]
    store: super::query::StoreArg,
    /// Embedding model [default: the one the index was built with] (with --strategy).
    #[arg(long)]
    embedder: Option<String>,
    #[command(flatten)]
    remote: super::query::RemoteEmbedArgs,
    /// The model that reads whole documents (--strategy docs) [default: --model].
    #[arg(long, value_name = "SPEC")]
    doc_reader_model: Option<String>,
    /// The model that writes the answers (--strategy but actions and roam; --answer-model
    /// is another name for it) [default: --model where given, else local:qwen2.5-coder-1.5b
    /// where installed, else the default --model].
    #[arg(long, value_name = "SPEC", alias = "answer-model")]
    reader_model: Option<String>,
    /// One JSON line per reply ({"type": "reply", "text", "valid"}); with --strategy, one
    /// JSON event per line, each turn ending with its answer line.
    #[arg(long)]
    json: bool,
    /// Replies follow this JSON Schema (a JSON file).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["grammar", "strategy"])]
    json_schema: Option<PathBuf>,
    /// Replies follow this Lark grammar (a text file whose top rule is `start`).
    #[arg(long, value_name = "FILE", conflicts_with = "strategy")]
    grammar: Option<PathBuf>,
    #[command(flatten)]
    actions: super::actions::ActionFlags,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Roam's conversation keeps its own settings: it answers with --model.
    let answers = |s: &str| s != "roam" && super::ANSWERED_BY_ONE_MODEL.contains(&s);
    if args.reader_model.is_some() && !args.strategy.as_deref().is_some_and(answers) {
        bail!("--reader-model works with --strategy single, walk, links, sections, toc or docs");
    }
    match args.strategy.as_deref() {
        None => {}
        Some("actions") => return run_actions(args),
        Some(name) => {
            let name = name.to_string();
            return run_questions(args, &name);
        }
    }
    let shape = Shape::read(&args)?;
    let model = super::load_chat_model(args.model.spec())?;
    let runtime = super::runtime()?;
    let mut messages = vec![Message::system(args.system.clone())];
    if let Some(prompt) = &args.prompt {
        messages.push(Message::user(prompt.clone()));
        let valid = runtime.block_on(turn(&model, &args, &shape, &mut messages))?;
        return Ok(if valid == Some(false) {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        });
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
        runtime.block_on(turn(&model, &args, &shape, &mut messages))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What replies must follow (--json-schema, --grammar), and the validator of the schema.
struct Shape {
    constraint: Option<Constraint>,
    validator: Option<jsonschema::Validator>,
}

impl Shape {
    fn read(args: &Args) -> anyhow::Result<Self> {
        if let Some(path) = &args.json_schema {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the JSON Schema {}", path.display()))?;
            let schema: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not JSON", path.display()))?;
            let validator = jsonschema::validator_for(&schema)
                .map_err(|e| anyhow!("{} is not a valid JSON Schema: {e}", path.display()))?;
            return Ok(Self {
                constraint: Some(Constraint::JsonSchema(schema)),
                validator: Some(validator),
            });
        }
        if let Some(path) = &args.grammar {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the grammar {}", path.display()))?;
            return Ok(Self {
                constraint: Some(Constraint::Lark(text)),
                validator: None,
            });
        }
        Ok(Self {
            constraint: None,
            validator: None,
        })
    }

    /// Whether `text` is JSON valid under the schema; `None` without a schema.
    fn valid(&self, text: &str) -> Option<bool> {
        let validator = self.validator.as_ref()?;
        Some(
            serde_json::from_str::<serde_json::Value>(text)
                .is_ok_and(|value| validator.is_valid(&value)),
        )
    }
}

/// The line `--json` prints for a reply.
#[derive(serde::Serialize)]
struct ReplyLine<'a> {
    r#type: &'static str,
    text: &'a str,
    valid: Option<bool>,
    /// Why the constraint was not enforced (a server that refused it).
    #[serde(skip_serializing_if = "Option::is_none")]
    unconstrained: Option<&'a str>,
}

/// Streams one answer to stdout (with --json, prints it as one line when it is complete),
/// appends it to the conversation, and says whether it follows the schema.
async fn turn(
    model: &Arc<dyn ChatModel>,
    args: &Args,
    shape: &Shape,
    messages: &mut Vec<Message>,
) -> anyhow::Result<Option<bool>> {
    let request = ChatRequest {
        messages: messages.clone(),
        sampling: Sampling {
            temperature: args.temperature,
            seed: args.seed,
            max_tokens: args.max_tokens,
            ..Sampling::default()
        },
        constraint: shape.constraint.clone(),
        ..ChatRequest::default()
    };
    let started = Instant::now();
    let mut first_token = None;
    let mut stream = model.stream(request);
    let mut answer = String::new();
    let mut unconstrained = None;
    let mut out = std::io::stdout();
    while let Some(delta) = next(&mut stream).await {
        match delta? {
            Delta::Text { text } => {
                first_token.get_or_insert_with(|| started.elapsed());
                answer.push_str(&text);
                if !args.json {
                    out.write_all(text.as_bytes())?;
                    out.flush()?;
                }
            }
            Delta::ToolCall { .. } => {}
            Delta::Unconstrained { reason } => {
                if !args.json {
                    eprintln!("[{} did not enforce the constraint: {reason}]", model.id());
                }
                unconstrained = Some(reason);
            }
            Delta::Done { usage, finish } => {
                if !args.json {
                    writeln!(out)?;
                }
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
                    if usage.forced_tokens > 0 {
                        eprintln!(
                            "[{} of the generated tokens forced by the constraint]",
                            usage.forced_tokens
                        );
                    }
                }
            }
        }
    }
    let valid = shape.valid(&answer);
    if args.json {
        print_json(&ReplyLine {
            r#type: "reply",
            text: &answer,
            valid,
            unconstrained: unconstrained.as_deref(),
        });
    } else if valid == Some(false) {
        eprintln!("[the reply does not follow the JSON Schema]");
    }
    messages.push(Message::assistant(answer));
    Ok(valid)
}

/// `--strategy actions`: each line is a request; found operations and the history stay for
/// the next one.
fn run_actions(args: Args) -> anyhow::Result<ExitCode> {
    let (index, embedder) = super::query::open_with_embedder(
        &args.index,
        &args.store,
        args.embedder.as_deref(),
        &args.remote,
    )?;
    let model = super::load_chat_model(args.model.spec())?;
    let confirm = super::actions::confirmation(&args.actions);
    let strategy = super::actions::strategy(&index, &args.actions, args.model.spec(), confirm)?;
    let env = super::env(&index, embedder.as_ref(), model.as_ref(), false);
    let runtime = super::runtime()?;
    let mut conversation = Conversation::new();
    let intro = format!(
        "carrying out requests with {} through {}",
        strategy
            .apis()
            .iter()
            .map(|api| api.catalog.title.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        model.id()
    );
    converse(&args, &intro, &mut |request: &str| {
        let answer = if args.json {
            let mut sink = |event: Event| print_json(&event);
            runtime.block_on(strategy.turn(&mut conversation, request, env, &mut sink))?
        } else {
            let mut human = super::ask::Human::default();
            let mut sink = |event: Event| human.show(event);
            runtime.block_on(strategy.turn(&mut conversation, request, env, &mut sink))?
        };
        if args.json {
            print_answer_json(&answer);
        } else {
            println!();
            if args.verbose {
                eprintln!(
                    "[{} · {} LLM calls · {} prompt + {} completion tokens · {:.1} s]",
                    answer.termination,
                    answer.usage.llm_calls,
                    answer.usage.prompt_tokens,
                    answer.usage.completion_tokens,
                    answer.elapsed_ms as f64 / 1000.0
                );
            }
        }
        Ok(answer)
    })
}

/// `--strategy NAME` (but actions): each line is a question about the index. With roam the
/// sections opened stay open for the next one, within the strategy's token budget.
fn run_questions(args: Args, name: &str) -> anyhow::Result<ExitCode> {
    if args.doc_reader_model.is_some() && name != "docs" {
        bail!("--doc-reader-model works with the docs strategy (its readers read whole documents)");
    }
    let strategy: Box<dyn Strategy> = if name == "roam" {
        Box::new(Roam::conversation())
    } else {
        let options = Options {
            reader: super::load_other_model(
                args.doc_reader_model.as_deref(),
                args.model.spec(),
                "document reader",
            )?,
            answer_model: super::load_answer_model(args.reader_model.as_deref(), &args.model)?
                .map(AnswerModel),
            ..Options::default()
        };
        by_name(name, &options)?
    };
    let (index, embedder) = super::query::open_with_embedder(
        &args.index,
        &args.store,
        args.embedder.as_deref(),
        &args.remote,
    )?;
    let model = super::load_chat_model(args.model.spec())?;
    let env = super::env(&index, embedder.as_ref(), model.as_ref(), false);
    let runtime = super::runtime()?;
    let documents = index.documents().len();
    let intro = format!(
        "answering questions about {documents} document{} with {name} and {}{}",
        if documents == 1 { "" } else { "s" },
        model.id(),
        if name == "roam" {
            "; open sections stay open between questions"
        } else {
            ""
        }
    );
    converse(&args, &intro, &mut |question: &str| {
        if args.json {
            let mut sink = |event: Event| print_json(&event);
            let answer = runtime.block_on(strategy.run(question, env, &mut sink))?;
            print_answer_json(&answer);
            Ok(answer)
        } else {
            let mut human = super::ask::Human::default();
            let mut sink = |event: Event| human.show(event);
            let answer = runtime.block_on(strategy.run(question, env, &mut sink))?;
            human.finish(&answer, &index)?;
            Ok(answer)
        }
    })
}

/// A conversation of `turn`s: the --prompt message alone (exit code 1 when it was not
/// answered or carried out), or one message per line of stdin until it ends.
fn converse(
    args: &Args,
    intro: &str,
    turn: &mut dyn FnMut(&str) -> anyhow::Result<Answer>,
) -> anyhow::Result<ExitCode> {
    if let Some(prompt) = &args.prompt {
        let answer = turn(prompt)?;
        return Ok(if answer.found {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        eprintln!("{intro} — one line per message, Ctrl-D to leave");
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
        turn(line)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print_answer_json(answer: &Answer) {
    print_json(&walkrag_walker::output::AnswerLine::new(answer));
}

/// One JSON object on its own line of stdout (a closed stdout ends the output quietly).
fn print_json<T: serde::Serialize>(value: &T) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(out))
        .and_then(|()| out.flush());
}
