//! What `ask`, `chat` and `eval` share for the `actions` strategy: the flags that configure
//! an API (base URL, credential headers, confirmation, dry run), the specs an index's action
//! records come from, the terminal confirmation, and the human display of actions.

use std::collections::BTreeSet;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use walkrag_actions::{
    Actions, AlwaysNo, AlwaysYes, Catalog, Confirm, Credentials, ExamplesFile, Executor,
    ExecutorConfig, RequestPreview, ACTION_KIND,
};
use walkrag_engine::Index;
use walkrag_walker::ActionStep;

/// How the `actions` strategy reaches its API.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ActionFlags {
    /// actions: the API's base URL [default: the spec's first absolute server].
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// actions: a header sent with every request, e.g. --header "Authorization: Bearer
    /// $TOKEN" (repeatable). Added at send time, never shown to the model, a trace or a log.
    /// Per-scheme credentials also come from WALKRAG_AUTH_<SCHEME> variables.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// actions: the value of a credential input, e.g. --credential "token=$DOWNLOAD_TOKEN"
    /// (repeatable): an input in a query, header or cookie named like a key, token, secret or
    /// password, which the model never sees or fills. Sent wherever an operation takes an
    /// input of that name; never shown to the model, a trace or a log. Without it, a request
    /// that needs one in its query asks for it.
    #[arg(long = "credential", value_name = "NAME=VALUE")]
    pub credentials: Vec<String>,
    /// actions: send requests that change something without asking.
    #[arg(long)]
    pub yes: bool,
    /// actions: send nothing; show the request that would be sent.
    #[arg(long)]
    pub dry_run: bool,
    /// actions: the OpenAPI spec whose operations may be called [default: every spec whose
    /// operations are in the index].
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
    /// actions: check each required input a local model filled with the user's words: the
    /// model reads the request again ("what did the user give as this input? ... or NONE")
    /// and a value whose log-probability falls more than NATS below NONE's is taken back
    /// and asked for; -4.5 is the margin chosen on development requests
    /// (docs/results/actions-discourse/given: ask accuracy 0.667 → 0.767 with the 1.5B)
    /// [default: off; one scoring call more per filled request].
    #[arg(long, value_name = "NATS", value_parser = margin)]
    pub value_margin: Option<f32>,
    /// actions: the model that finds the operation (guesses its id before the search and
    /// weighs the pick), where another than --model, which still writes every turn: a larger
    /// local model such as local:qwen2.5-coder-1.5b tells near neighbours apart better (on
    /// blind sets, 24 and 23 of 30 picked right against 14 and 15, at twice the time per
    /// request; docs/results/actions-discourse) [default: --model].
    #[arg(long, value_name = "SPEC")]
    pub pick_model: Option<String>,
}

/// A margin of log-probabilities: a finite number.
pub fn margin(text: &str) -> Result<f32, String> {
    match text.trim().parse::<f32>() {
        Ok(m) if m.is_finite() => Ok(m),
        _ => Err(format!(
            "{text:?} is not a margin: give a number of nats, e.g. 0 or -1.5"
        )),
    }
}

/// The specs an index's action records were made from (their `spec` metadata).
pub fn indexed_specs(index: &Index) -> BTreeSet<PathBuf> {
    index
        .documents()
        .iter()
        .filter(|d| d.doc.metadata.get("kind").and_then(|k| k.as_str()) == Some(ACTION_KIND))
        .filter_map(|d| d.doc.metadata.get("spec").and_then(|s| s.as_str()))
        .map(PathBuf::from)
        .collect()
}

/// Reads an OpenAPI spec.
pub fn read_catalog(path: &Path) -> anyhow::Result<Catalog> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the spec {}", path.display()))?;
    Catalog::parse(&text)
        .with_context(|| format!("{} is not a usable OpenAPI spec", path.display()))
}

/// [`read_catalog`], each operation with the example requests the index `dir` keeps for it
/// (`walkrag index --examples`).
pub fn read_indexed_catalog(dir: &Path, path: &Path) -> anyhow::Result<Catalog> {
    let mut catalog = read_catalog(path)?;
    ExamplesFile::open(dir)?.attach(&mut catalog);
    Ok(catalog)
}

/// The executor for one spec: base URL from the flags or the spec, credentials from the
/// environment (per security scheme) and the flags' headers and credential inputs.
pub fn executor(
    catalog: &Catalog,
    flags: &ActionFlags,
    config: ExecutorConfig,
) -> anyhow::Result<Executor> {
    let mut given = Credentials::new();
    for line in &flags.headers {
        given = given.with_header_line(line)?;
    }
    for pair in &flags.credentials {
        given = given.with_input_pair(pair)?;
    }
    let credentials = Credentials::from_env(catalog).merge(given);
    let config = ExecutorConfig {
        base_url: flags.base_url.clone(),
        credentials,
        dry_run: flags.dry_run || config.dry_run,
        ..config
    };
    Ok(Executor::new(catalog, config)?)
}

/// The strategy for an index: the APIs of `--spec`, else of every spec in the index; `model`
/// is the chat model's spec.
pub fn strategy(
    index: &Index,
    flags: &ActionFlags,
    model: &str,
    confirm: Arc<dyn Confirm>,
) -> anyhow::Result<Actions> {
    if index.searches_store() {
        bail!(
            "the actions strategy needs a folder index: an API's operation catalogue is kept \
             beside it (walkrag index openapi.yaml --index DIR, then --index DIR instead of --store)"
        );
    }
    let indexed = indexed_specs(index);
    let specs: Vec<PathBuf> = match &flags.spec {
        Some(spec) => {
            let absolute = std::fs::canonicalize(spec)
                .with_context(|| format!("cannot read the spec {}", spec.display()))?;
            if !indexed.contains(&absolute) {
                bail!(
                    "the operations of {} are not in the index {}: index the spec first \
                     (walkrag index {} --index {})",
                    spec.display(),
                    index.dir().display(),
                    spec.display(),
                    index.dir().display()
                );
            }
            vec![absolute]
        }
        None => indexed.into_iter().collect(),
    };
    if specs.is_empty() {
        bail!(
            "the index {} holds no API operations: index an OpenAPI spec first \
             (walkrag index openapi.yaml)",
            index.dir().display()
        );
    }
    let mut strategy: Option<Actions> = None;
    for spec in &specs {
        let catalog = read_indexed_catalog(index.dir(), spec)?;
        let executor = executor(&catalog, flags, ExecutorConfig::default())?;
        strategy = Some(match strategy {
            None => Actions::new(catalog, executor, Arc::clone(&confirm)),
            Some(actions) => actions.with_api(catalog, executor),
        });
    }
    let mut strategy = strategy.expect("at least one spec");
    strategy.value_margin = flags.value_margin;
    strategy.pick_model = super::load_other_model(flags.pick_model.as_deref(), model, "pick")?;
    Ok(strategy)
}

/// The confirmation for a run: `--yes` confirms all, a terminal asks, anything else refuses
/// (and says so).
pub fn confirmation(flags: &ActionFlags) -> Arc<dyn Confirm> {
    if flags.yes {
        Arc::new(AlwaysYes)
    } else if std::io::stdin().is_terminal() {
        Arc::new(TerminalConfirm)
    } else {
        Arc::new(Refuse)
    }
}

/// Asks on the terminal: the request on stderr, y/N from stdin.
pub struct TerminalConfirm;

impl Confirm for TerminalConfirm {
    fn confirm(&self, request: &RequestPreview) -> bool {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "\nThis request changes something:");
        for line in request.to_string().lines() {
            let _ = writeln!(err, "  {line}");
        }
        let _ = write!(err, "Send it? [y/N] ");
        let _ = err.flush();
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line).is_err() {
            return false;
        }
        matches!(line.trim().to_lowercase().as_str(), "y" | "yes")
    }
}

/// Refuses every change when nobody can be asked (stdin is not a terminal, no `--yes`).
struct Refuse;

impl Confirm for Refuse {
    fn confirm(&self, request: &RequestPreview) -> bool {
        eprintln!(
            "refused {} {}: stdin is not a terminal to confirm on (--yes confirms)",
            request.method, request.url
        );
        AlwaysNo.confirm(request)
    }
}

/// An action as the human output shows it, on stderr: the call, the request and the result.
pub fn show_action(err: &mut dyn Write, step: &ActionStep) {
    match step.action.as_str() {
        "execute_action" => {
            let params = step
                .checked_params
                .as_ref()
                .or(step.params.as_ref())
                .map(|p| p.to_string())
                .unwrap_or_default();
            let _ = writeln!(
                err,
                "→ {} {params}",
                step.operation_id.as_deref().unwrap_or("?")
            );
            for repair in &step.repairs {
                let _ = writeln!(err, "  note: {repair}");
            }
            if let Some(request) = &step.request {
                let line = format!(
                    "{} {}",
                    request["method"].as_str().unwrap_or(""),
                    request["url"].as_str().unwrap_or("")
                );
                let verdict = match step.confirmed {
                    Some(true) => " (confirmed)",
                    Some(false) => " (declined)",
                    None => "",
                };
                let _ = writeln!(err, "  request: {line}{verdict}");
            }
            if step.outcome == "dry_run" {
                // The answer shows the request in full.
                return;
            }
            let lines: Vec<&str> = step.result.lines().collect();
            for line in lines.iter().take(16) {
                let line: String = line.chars().take(200).collect();
                let _ = writeln!(err, "  {line}");
            }
            if lines.len() > 16 {
                let _ = writeln!(err, "  … ({} more lines)", lines.len() - 16);
            }
        }
        "unreadable" => {
            let _ = writeln!(
                err,
                "  (the model's reply could not be read; it was told so)"
            );
        }
        _ => {}
    }
}
