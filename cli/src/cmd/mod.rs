//! One module per subcommand, plus the helpers they share.

pub mod actions;
pub mod ask;
pub mod bench;
pub mod bench_llm;
pub mod bench_search;
pub mod bench_store;
pub mod chat;
pub mod embed;
pub mod eval;
pub mod index;
pub mod models;
pub mod query;
pub mod serve;
pub mod strategy_flags;

/// Where the index lives unless `--index` says otherwise.
pub const DEFAULT_INDEX: &str = ".walkrag";

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use std::sync::Arc;

use anyhow::{bail, Context};
use serde::de::DeserializeOwned;
use walkrag_core::{ChatModel, Embedder};
use walkrag_engine::Index;
use walkrag_models::ModelSpec;
use walkrag_walker::{Env, SearchParams};

/// Reads JSON Lines from `path` (stdin when `None`), failing on the first bad line with its
/// number. Blank lines are skipped.
pub fn read_jsonl<T: DeserializeOwned>(path: Option<&Path>) -> anyhow::Result<Vec<T>> {
    let (reader, name): (Box<dyn Read>, String) = match path {
        Some(p) => (
            Box::new(
                std::fs::File::open(p).with_context(|| format!("cannot open {}", p.display()))?,
            ),
            p.display().to_string(),
        ),
        None => (Box::new(std::io::stdin()), "<stdin>".to_string()),
    };
    let mut out = Vec::new();
    for (n, line) in BufReader::new(reader).lines().enumerate() {
        let line =
            line.with_context(|| format!("{name}:{}: cannot read (is it UTF-8 text?)", n + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(&line) {
            Ok(v) => out.push(v),
            Err(e) => bail!("{name}:{}: {e}", n + 1),
        }
    }
    Ok(out)
}

/// A progress bar on stderr, shown only when stderr is a terminal.
pub fn progress_bar(len: u64, what: &str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg:>10} [{bar:30}] {pos}/{len} ({per_sec}, eta {eta})",
        )
        .expect("template is valid")
        .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

/// `--model`: the chat model. Whether it was given decides the answer model's default
/// ([`load_answer_model`]).
#[derive(clap::Args, Clone, Debug)]
pub struct ModelArg {
    /// Chat model: local:NAME, local:PATH.gguf or openai:MODEL [default:
    /// local:qwen2.5-coder-0.5b].
    #[arg(long = "model", value_name = "SPEC")]
    given: Option<String>,
}

impl ModelArg {
    /// The spec given, else the default model's.
    pub fn spec(&self) -> &str {
        self.given
            .as_deref()
            .unwrap_or(walkrag_models::DEFAULT_MODEL)
    }
}

/// The strategies whose answer step `--reader-model` takes over: all but `actions`, whose
/// turns are not an answer from passages.
pub const ANSWERED_BY_ONE_MODEL: [&str; 7] =
    ["walk", "single", "links", "roam", "toc", "sections", "docs"];

/// The model that writes answers beside the chat model `model` (`--reader-model`, also
/// called `--answer-model`, of `ask`, `eval`, `chat` and `serve`), loaded: see
/// [`answer_model_spec`]; `None` where `model` answers itself.
pub fn load_answer_model(
    named: Option<&str>,
    model: &ModelArg,
) -> anyhow::Result<Option<Arc<dyn ChatModel>>> {
    let spec = answer_model_spec(named, model);
    load_other_model(spec.as_deref(), model.spec(), "answer")
}

/// The answer model's spec: `named`; else none where `--model` was given (it answers, as
/// the command-line contract says); else
/// [`DEFAULT_ANSWER_MODEL`](walkrag_models::DEFAULT_ANSWER_MODEL) beside the default chat
/// model where it is installed, else none (a warning says how to install the better
/// reader).
fn answer_model_spec(named: Option<&str>, model: &ModelArg) -> Option<String> {
    use walkrag_models::DEFAULT_ANSWER_MODEL;
    let model = match (named, &model.given) {
        (Some(spec), _) => return Some(spec.to_string()),
        (None, Some(_)) => return None,
        (None, None) => model.spec(),
    };
    let name = DEFAULT_ANSWER_MODEL.trim_start_matches("local:");
    let installed = walkrag_core::Catalog::builtin()
        .get(name)
        .is_some_and(|m| m.main_path().is_file());
    if installed {
        Some(DEFAULT_ANSWER_MODEL.to_string())
    } else {
        tracing::warn!(
            "{name} is not installed, so {model} writes the answers too; \
             scripts/fetch-models.sh {name} installs the better reader"
        );
        None
    }
}

/// A model for one `role` beside the chat model `model` (`--doc-reader-model` for `docs`,
/// `--pick-model` for `actions`): `None` without one or when it names the chat model itself
/// (loaded once, it does both).
pub fn load_other_model(
    other: Option<&str>,
    model: &str,
    role: &str,
) -> anyhow::Result<Option<Arc<dyn ChatModel>>> {
    match other {
        Some(other) if other != model => load_chat_model(other)
            .map(Some)
            .with_context(|| format!("cannot load the {role} model {other}")),
        _ => Ok(None),
    }
}

/// What a strategy runs against in one command: `index`, searched with the `embedder` it was
/// built with, and `model`; `exact` (`--exact`) scans every vector instead of walking the
/// graph.
pub fn env<'a>(
    index: &'a Index,
    embedder: &'a dyn Embedder,
    model: &'a dyn ChatModel,
    exact: bool,
) -> Env<'a> {
    Env {
        index,
        embedder,
        model,
        search: SearchParams {
            ef_search: None,
            exact,
        },
    }
}

/// A fresh async runtime for one command.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Runtime::new().context("cannot start the async runtime")
}

/// Loads a chat model from its spec (`local:NAME`, `local:PATH.gguf`, `openai:MODEL`).
pub fn load_chat_model(spec: &str) -> anyhow::Result<Arc<dyn ChatModel>> {
    let parsed = ModelSpec::parse(spec)?;
    match parsed {
        ModelSpec::OpenAi(model) => {
            let config = walkrag_openai::OpenAiConfig::from_env(model);
            Ok(Arc::new(walkrag_openai::OpenAiModel::new(config)?))
        }
        local => {
            let model = walkrag_models::load_local(&local)
                .with_context(|| format!("cannot load {spec}"))?;
            Ok(Arc::new(model))
        }
    }
}

/// The walk's `--next-sources` mode named `name` (clap has checked it is one).
pub fn next_sources(name: &str) -> walkrag_walker::NextSources {
    walkrag_walker::NextSources::ALL
        .into_iter()
        .find(|mode| mode.name() == name)
        .unwrap_or_default()
}
