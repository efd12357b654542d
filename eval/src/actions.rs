//! Evaluating the `actions` strategy on API requests (`walkrag eval --spec --requests`).
//!
//! The harness plays the user: it confirms every confirmation it is asked for, supplies
//! nothing that is missing (a question ends the request), and sends nothing — the executor
//! runs dry, still asking for confirmation where a real run would, and its audit log records
//! every request that would have gone out and whether it was confirmed.
//!
//! Metrics, per request, then means over requests (`summary.json`):
//!
//! - `operation_accuracy`: the operation the model last called (an `execute_action` naming an
//!   operation of the spec, whether or not its inputs were accepted) is the expected one or
//!   one of `also_acceptable`. No call: wrong.
//! - `operation_recall@5`, `@10`: the expected (or an acceptable) operation is among the
//!   first 5 / 10 distinct operations of `ranked` (the operations retrieved, in the order
//!   found): retrieval alone, whatever the model picked.
//! - `param_accuracy`: over requests whose `required_params` give at least one value: every
//!   given required value was filled in the last call under that name (up to case, `_`, `-`)
//!   with the expected value, compared after normalisation (strings trimmed, lower-cased,
//!   spaces collapsed; numbers as numbers, `"12"` = `12`; lists and objects item by item).
//! - `ask_accuracy`: a request with `missing_required` is right when the user was asked for
//!   exactly those names (by the strategy or the model's own `ask_user`, names compared up
//!   to case, `_`, `-`) and no request was built to send; any other request is right when
//!   the user was asked nothing.
//! - `confirm_accuracy`: confirmation is expected for a `mutating` request without
//!   `missing_required` (a request asking for missing inputs builds nothing to confirm); right
//!   when the executor asked for confirmation exactly when expected.
//! - `unconfirmed_mutations`: the number of requests (summed, not a mean) the executor built
//!   to send with a method that needs confirmation without asking for it, counted from its
//!   audit log. 0 by construction; counted, not assumed.
//! - `llm_calls`, `prompt_tokens`, `completion_tokens`, `seconds`: means per request.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use walkrag_actions::{
    Actions, AlwaysYes, AuditLog, Catalog, Dispatch, Executor, ExecutorConfig, Probes,
    RequestPreview,
};
use walkrag_core::ChatModel;
use walkrag_engine::Index;
use walkrag_walker::jsonl::squash;
use walkrag_walker::{Answer, Cost, Env, Step, Strategy};

use crate::dataset::DatasetError;
use crate::report;
use crate::runner::{
    discard, io_error, kept_results, merge_record, to_json_pretty, write_atomic, write_trace,
    EvalError, ResultsFile, RunRecord, REPORT_FILE, RESULTS_FILE, RUN_FILE, SUMMARY_FILE,
};

/// The strategy's name in the files.
pub const STRATEGY: &str = "actions";

/// One request of a request set (the format of ../shared/INTERFACE.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRequest {
    pub id: String,
    /// What the user asks, in their words.
    pub request: String,
    /// The operation that carries it out.
    pub operation_id: String,
    pub method: String,
    pub path: String,
    /// Required inputs with the value the request gives, `null` where it gives none.
    #[serde(default)]
    pub required_params: BTreeMap<String, Value>,
    /// The required inputs the request leaves out: the user must be asked for them.
    #[serde(default)]
    pub missing_required: Vec<String>,
    /// Whether carrying it out changes something (confirmation expected).
    pub mutating: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub optional_params: BTreeMap<String, Value>,
    /// Other operations that carry it out as well.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_acceptable: Vec<String>,
}

impl ActionRequest {
    /// Whether `operation` carries the request out.
    pub fn accepts(&self, operation: &str) -> bool {
        self.operation_id == operation || self.also_acceptable.iter().any(|o| o == operation)
    }

    /// Whether the executor should ask for confirmation.
    pub fn expects_confirmation(&self) -> bool {
        self.mutating && self.missing_required.is_empty()
    }
}

/// Reads a request set, the first `limit` requests when set. Each `missing_required` name
/// must be a `required_params` key with a `null` value; ids are unique.
pub fn load_requests(
    path: &Path,
    limit: Option<usize>,
) -> Result<Vec<ActionRequest>, DatasetError> {
    let text = fs::read_to_string(path).map_err(|source| DatasetError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut requests = Vec::new();
    let mut seen = HashSet::new();
    for (i, line) in text.lines().enumerate() {
        if limit.is_some_and(|n| requests.len() >= n) {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| DatasetError::Line {
            path: path.to_path_buf(),
            line: i + 1,
            message,
        };
        let request: ActionRequest = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        for name in &request.missing_required {
            if request.required_params.get(name) != Some(&Value::Null) {
                return Err(bad(format!(
                    "missing_required names {name:?}, which required_params must hold as null"
                )));
            }
        }
        if !seen.insert(request.id.clone()) {
            return Err(DatasetError::Duplicate {
                path: path.to_path_buf(),
                line: i + 1,
                id: request.id,
            });
        }
        requests.push(request);
    }
    if requests.is_empty() {
        return Err(DatasetError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(requests)
}

/// How the strategy is set up for the run.
#[derive(Clone)]
pub struct ActionSettings {
    pub dataset: String,
    /// The command line, quoted in the report.
    pub command: String,
    /// Where URLs point in the recorded requests [default: the spec's first absolute server,
    /// else `http://api.example`]; nothing is sent.
    pub base_url: Option<String>,
    /// Cards shown per search (the strategy's default when `None`).
    pub k: Option<usize>,
    /// Most model turns per request (the strategy's default when `None`).
    pub max_turns: Option<usize>,
    /// Ask the model for the operation ids it expects before each search
    /// ([`Actions::guess`]).
    pub guess: bool,
    /// Weigh the operations found instead of having the model write its pick, where the
    /// model can weigh ([`Actions::weigh`]).
    pub weigh: bool,
    /// The value check's margin ([`Actions::value_margin`]); `None`: off.
    pub value_margin: Option<f32>,
    /// The model that writes the guess and weighs the pick ([`Actions::pick_model`]; the chat
    /// model when `None`).
    pub pick_model: Option<Arc<dyn ChatModel>>,
    /// Retries of a request whose model call failed transiently.
    pub retries: usize,
    /// Also write each trace to `out/traces/actions/ID.json`.
    pub traces: bool,
}

impl std::fmt::Debug for ActionSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionSettings")
            .field("dataset", &self.dataset)
            .field("base_url", &self.base_url)
            .field("k", &self.k)
            .field("max_turns", &self.max_turns)
            .field("guess", &self.guess)
            .field("weigh", &self.weigh)
            .field("value_margin", &self.value_margin)
            .field("pick_model", &self.pick_model.as_ref().map(|m| m.id()))
            .field("retries", &self.retries)
            .field("traces", &self.traces)
            .finish_non_exhaustive()
    }
}

/// Progress hooks; every method has a no-op default.
pub trait ActionProgress {
    fn start(&self, _todo: usize, _done: usize) {}
    fn finished(&self, _result: &ActionResult) {}
    fn retry(&self, _id: &str, _error: &str) {}
}

pub struct NoActionProgress;
impl ActionProgress for NoActionProgress {}

/// One request's result: a line of `results.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionResult {
    pub id: String,
    pub strategy: String,
    pub request: String,
    pub expected_operation: String,
    /// The operation the model last called (one of the spec's), if any.
    pub picked: Option<String>,
    /// That call's inputs as checked (after the strategy dropped what the user never gave).
    pub params: Option<Value>,
    /// The inputs the user was asked for.
    pub asked: Vec<String>,
    /// What the user was asked, if anything.
    pub question: Option<String>,
    /// Whether the executor asked for confirmation.
    pub confirmation_asked: bool,
    /// The requests that would have been sent (dry run), in order; never credentials.
    pub would_send: Vec<RequestPreview>,
    pub answer: String,
    pub found: bool,
    pub ranked: Vec<String>,
    /// The operation of each entry of `ranked`.
    pub ranked_operations: Vec<String>,
    pub termination: String,
    pub cycles: usize,
    pub usage: Cost,
    pub elapsed_ms: u64,
    pub metrics: ActionMetrics,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One request's scores (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ActionMetrics {
    pub operation: bool,
    #[serde(rename = "recall@5")]
    pub recall_5: f64,
    #[serde(rename = "recall@10")]
    pub recall_10: f64,
    /// `None` when the request gives no required value.
    pub params: Option<bool>,
    pub ask: bool,
    pub confirm: bool,
    pub unconfirmed_mutations: usize,
}

/// Means over the requests (`summary.json`'s `strategies.actions`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ActionSummary {
    pub operation_accuracy: f64,
    #[serde(rename = "operation_recall@5")]
    pub operation_recall_5: f64,
    #[serde(rename = "operation_recall@10")]
    pub operation_recall_10: f64,
    pub param_accuracy: f64,
    pub ask_accuracy: f64,
    pub confirm_accuracy: f64,
    /// A count over all requests, not a mean.
    pub unconfirmed_mutations: usize,
    pub llm_calls: f64,
    pub prompt_tokens: f64,
    pub completion_tokens: f64,
    pub seconds: f64,
    /// Requests answered (or failed) so far.
    pub answered: usize,
    pub errors: usize,
    /// Requests that give a required value (what `param_accuracy` is over).
    pub param_requests: usize,
    /// How many requests ended for each reason.
    pub terminations: BTreeMap<String, usize>,
}

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionsRunSummary {
    pub dataset: String,
    pub requests: usize,
    pub strategies: BTreeMap<String, ActionSummary>,
}

impl ActionSummary {
    /// Means over `results`; failed requests count as wrong everywhere.
    pub fn of(results: &[&ActionResult]) -> Self {
        let n = results.len().max(1) as f64;
        let mean = |f: &dyn Fn(&ActionResult) -> f64| results.iter().map(|r| f(r)).sum::<f64>() / n;
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        let params: Vec<bool> = results.iter().filter_map(|r| r.metrics.params).collect();
        let mut terminations = BTreeMap::new();
        for result in results {
            *terminations.entry(result.termination.clone()).or_default() += 1;
        }
        Self {
            operation_accuracy: mean(&|r| flag(r.metrics.operation)),
            operation_recall_5: mean(&|r| r.metrics.recall_5),
            operation_recall_10: mean(&|r| r.metrics.recall_10),
            param_accuracy: if params.is_empty() {
                0.0
            } else {
                params.iter().filter(|&&ok| ok).count() as f64 / params.len() as f64
            },
            ask_accuracy: mean(&|r| flag(r.metrics.ask)),
            confirm_accuracy: mean(&|r| flag(r.metrics.confirm)),
            unconfirmed_mutations: results
                .iter()
                .map(|r| r.metrics.unconfirmed_mutations)
                .sum(),
            llm_calls: mean(&|r| r.usage.llm_calls as f64),
            prompt_tokens: mean(&|r| r.usage.prompt_tokens as f64),
            completion_tokens: mean(&|r| r.usage.completion_tokens as f64),
            seconds: mean(&|r| r.elapsed_ms as f64 / 1000.0),
            answered: results.len(),
            errors: results.iter().filter(|r| r.error.is_some()).count(),
            param_requests: params.len(),
            terminations,
        }
    }
}

/// The strategy for one request: a dry-run executor that asks for confirmation as a real
/// run would and records every request in `audit`.
fn strategy_for(
    catalog: &Catalog,
    settings: &ActionSettings,
    audit: &AuditLog,
    probes: &Probes,
) -> Result<Actions, EvalError> {
    let base_url = settings.base_url.clone().or_else(|| {
        let absolute = catalog
            .servers
            .iter()
            .any(|s| s.url.starts_with("http://") || s.url.starts_with("https://"));
        (!absolute).then(|| "http://api.example".to_string())
    });
    let config = ExecutorConfig {
        base_url,
        dry_run: true,
        confirm_dry_runs: true,
        audit: Some(audit.clone()),
        ..ExecutorConfig::default()
    };
    let executor = Executor::new(catalog, config).map_err(|e| EvalError::Corrupt {
        path: PathBuf::from("--spec"),
        message: e.to_string(),
    })?;
    // The harness confirms everything; whether it was asked is read from the audit log.
    let mut actions = Actions::new(catalog.clone(), executor, Arc::new(AlwaysYes));
    actions.probes = probes.clone();
    if let Some(k) = settings.k {
        actions.k = k;
    }
    if let Some(turns) = settings.max_turns {
        actions.max_turns = turns;
    }
    actions.guess = settings.guess;
    actions.weigh = settings.weigh;
    actions.value_margin = settings.value_margin;
    actions.pick_model = settings.pick_model.clone();
    Ok(actions)
}

/// Runs the `actions` strategy on `requests` against the operations of `catalog` indexed in
/// `env.index`, writing `out/{run.json, results.jsonl, summary.json, report.md}`. Results
/// already in `out` from a run with the same settings are kept (failed ones run again);
/// `restart` discards them.
pub async fn run(
    env: Env<'_>,
    catalog: &Catalog,
    requests: &[ActionRequest],
    out: &Path,
    settings: &ActionSettings,
    restart: bool,
    progress: &dyn ActionProgress,
) -> Result<ActionsRunSummary, EvalError> {
    let unknown: Vec<String> = requests
        .iter()
        .flat_map(|r| std::iter::once(&r.operation_id).chain(&r.also_acceptable))
        .filter(|id| catalog.get(id).is_none())
        .map(|id| id.to_string())
        .collect();
    if !unknown.is_empty() {
        return Err(EvalError::Corrupt {
            path: PathBuf::from("--requests"),
            message: format!("operations not in the spec: {}", unknown.join(", ")),
        });
    }
    fs::create_dir_all(out).map_err(io_error(out))?;
    if restart {
        discard(out, &[RUN_FILE, RESULTS_FILE, SUMMARY_FILE, REPORT_FILE])?;
    }
    // Each request gets a strategy of its own; the probe fit on the index's examples is
    // fit for the first and shared with the rest.
    let probes = Probes::default();
    let first = strategy_for(catalog, settings, &AuditLog::new(), &probes)?;
    let record = RunRecord {
        dataset: settings.dataset.clone(),
        model: env.model.id().to_string(),
        embedder: env.embedder.id().to_string(),
        strategies: [(STRATEGY.to_string(), first.config())].into(),
    };
    let record = merge_record(&out.join(RUN_FILE), record)?;
    write_atomic(&out.join(RUN_FILE), &to_json_pretty(&record))?;

    let results_path = out.join(RESULTS_FILE);
    let mut results = kept_results(&results_path, |r: &ActionResult| r.error.is_some())?;
    let done: HashSet<String> = results.iter().map(|r| r.id.clone()).collect();
    let wanted: HashSet<&str> = requests.iter().map(|r| r.id.as_str()).collect();
    let todo: Vec<&ActionRequest> = requests.iter().filter(|r| !done.contains(&r.id)).collect();
    progress.start(
        todo.len(),
        results
            .iter()
            .filter(|r| wanted.contains(r.id.as_str()))
            .count(),
    );

    let date = report::today();
    let write_reports = |results: &[ActionResult]| -> Result<ActionsRunSummary, EvalError> {
        let current: Vec<&ActionResult> = results
            .iter()
            .filter(|r| wanted.contains(r.id.as_str()))
            .collect();
        let summary = ActionsRunSummary {
            dataset: settings.dataset.clone(),
            requests: requests.len(),
            strategies: [(STRATEGY.to_string(), ActionSummary::of(&current))].into(),
        };
        write_atomic(&out.join(SUMMARY_FILE), &to_json_pretty(&summary))?;
        let info = report::RunInfo {
            model: &record.model,
            embedder: &record.embedder,
            command: &settings.command,
            date: &date,
        };
        write_atomic(
            &out.join(REPORT_FILE),
            &markdown(&summary, &current, requests, &info),
        )?;
        Ok(summary)
    };

    let mut file = ResultsFile::open(&results_path)?;
    for request in todo {
        let result = run_one(env, catalog, request, settings, &probes, out, progress).await?;
        file.append(&result)?;
        progress.finished(&result);
        results.push(result);
        write_reports(&results)?;
    }
    write_reports(&results)
}

/// One request, retried after transient model failures.
async fn run_one(
    env: Env<'_>,
    catalog: &Catalog,
    request: &ActionRequest,
    settings: &ActionSettings,
    probes: &Probes,
    out: &Path,
    progress: &dyn ActionProgress,
) -> Result<ActionResult, EvalError> {
    let started = Instant::now();
    let mut attempt = 0;
    loop {
        let audit = AuditLog::new();
        let strategy = strategy_for(catalog, settings, &audit, probes)?;
        match strategy.run(&request.request, env, &mut |_| {}).await {
            Ok(answer) => {
                if settings.traces {
                    write_trace(out, STRATEGY, &request.id, &answer.trace);
                }
                return Ok(score(request, &answer, &audit.entries(), env.index));
            }
            Err(e) if e.is_transient() && attempt < settings.retries => {
                attempt += 1;
                progress.retry(&request.id, &e.to_string());
                tokio::time::sleep(Duration::from_secs(1 << attempt.min(5))).await;
            }
            Err(e) => {
                tracing::warn!("actions on {}: {e}", request.id);
                return Ok(failed(request, e.to_string(), started.elapsed()));
            }
        }
    }
}

/// Scores one answer from its trace and the executor's audit log.
pub fn score(
    request: &ActionRequest,
    answer: &Answer,
    audit: &[Dispatch],
    index: &Index,
) -> ActionResult {
    let steps: Vec<&walkrag_walker::ActionStep> = answer
        .trace
        .steps
        .iter()
        .filter_map(|step| match step {
            Step::Action(action) => Some(action),
            _ => None,
        })
        .collect();
    let last_call = steps
        .iter()
        .rev()
        .find(|s| s.action == "execute_action" && s.outcome != "unknown_operation");
    let picked = last_call.and_then(|s| s.operation_id.clone());
    let params = last_call.and_then(|s| s.checked_params.clone());
    let asking: Vec<&&walkrag_walker::ActionStep> = steps
        .iter()
        .filter(|s| s.outcome == "missing" || s.action == "ask_user")
        .collect();
    let mut asked: Vec<String> = Vec::new();
    for step in &asking {
        for name in &step.asked {
            if !asked.contains(name) {
                asked.push(name.clone());
            }
        }
    }
    let question = asking.last().and_then(|s| s.text.clone());
    let confirmation_asked = audit.iter().any(|d| d.confirmation_asked);
    let would_send: Vec<RequestPreview> = audit
        .iter()
        .filter(|d| !d.declined())
        .map(|d| d.request.clone())
        .collect();
    let unconfirmed = audit.iter().filter(|d| d.is_unconfirmed_change()).count();

    let mut ranked_operations: Vec<String> = Vec::new();
    let mut distinct: Vec<String> = Vec::new();
    for id in &answer.ranked {
        let doc = index
            .row_of(*id)
            .map(|row| {
                let c = index.chunk(row);
                c.doc
                    .metadata
                    .get("operation_id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| c.doc.id.0.clone())
            })
            .unwrap_or_default();
        if !distinct.contains(&doc) {
            distinct.push(doc.clone());
        }
        ranked_operations.push(doc);
    }
    let recall = |k: usize| {
        if distinct.iter().take(k).any(|op| request.accepts(op)) {
            1.0
        } else {
            0.0
        }
    };
    let given: Vec<(&String, &Value)> = request
        .required_params
        .iter()
        .filter(|(_, v)| !v.is_null())
        .collect();
    let params_ok = (!given.is_empty()).then(|| {
        let filled = params.as_ref().and_then(Value::as_object);
        given.iter().all(|(name, expected)| {
            filled
                .and_then(|map| {
                    map.iter()
                        .find(|(k, _)| squash(k) == squash(name))
                        .map(|(_, v)| v)
                })
                .is_some_and(|value| same_value(value, expected))
        })
    });
    let ask_ok = if request.missing_required.is_empty() {
        asking.is_empty()
    } else {
        let wanted: HashSet<String> = request.missing_required.iter().map(|n| squash(n)).collect();
        let got: HashSet<String> = asked.iter().map(|n| squash(n)).collect();
        !asking.is_empty() && wanted == got && audit.is_empty()
    };
    let metrics = ActionMetrics {
        operation: picked.as_deref().is_some_and(|op| request.accepts(op)),
        recall_5: recall(5),
        recall_10: recall(10),
        params: params_ok,
        ask: ask_ok,
        confirm: confirmation_asked == request.expects_confirmation(),
        unconfirmed_mutations: unconfirmed,
    };
    ActionResult {
        id: request.id.clone(),
        strategy: STRATEGY.into(),
        request: request.request.clone(),
        expected_operation: request.operation_id.clone(),
        picked,
        params,
        asked,
        question,
        confirmation_asked,
        would_send,
        answer: answer.answer.clone(),
        found: answer.found,
        ranked: answer.ranked.iter().map(|id| id.to_string()).collect(),
        ranked_operations,
        termination: answer.termination.to_string(),
        cycles: answer.cycles,
        usage: answer.usage,
        elapsed_ms: answer.elapsed_ms,
        metrics,
        error: None,
    }
}

fn failed(request: &ActionRequest, error: String, elapsed: Duration) -> ActionResult {
    ActionResult {
        id: request.id.clone(),
        strategy: STRATEGY.into(),
        request: request.request.clone(),
        expected_operation: request.operation_id.clone(),
        picked: None,
        params: None,
        asked: Vec::new(),
        question: None,
        confirmation_asked: false,
        would_send: Vec::new(),
        answer: String::new(),
        found: false,
        ranked: Vec::new(),
        ranked_operations: Vec::new(),
        termination: "error".into(),
        cycles: 0,
        usage: Cost::default(),
        elapsed_ms: elapsed.as_millis() as u64,
        metrics: ActionMetrics {
            params: request
                .required_params
                .values()
                .any(|v| !v.is_null())
                .then_some(false),
            ..ActionMetrics::default()
        },
        error: Some(error),
    }
}

/// Whether a filled value is the expected one: strings trimmed, lower-cased and with spaces
/// collapsed; numbers compared as numbers (a string holding a number counts as one); lists
/// and objects item by item.
pub fn same_value(got: &Value, expected: &Value) -> bool {
    match (got, expected) {
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && b.iter()
                    .all(|(k, v)| a.get(k).is_some_and(|x| same_value(x, v)))
        }
        // One value for a list of one.
        (x, Value::Array(b)) if b.len() == 1 => same_value(x, &b[0]),
        _ => match (number(got), number(expected)) {
            (Some(a), Some(b)) => (a - b).abs() < 1e-9,
            _ => text(got) == text(expected),
        },
    }
}

fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn text(value: &Value) -> String {
    let raw = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    raw.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// `report.md`: the summary, then one row per request.
fn markdown(
    summary: &ActionsRunSummary,
    results: &[&ActionResult],
    requests: &[ActionRequest],
    info: &report::RunInfo<'_>,
) -> String {
    use std::fmt::Write as _;
    let mut md = String::new();
    let _ = writeln!(md, "# walkrag eval: {} (actions)\n", summary.dataset);
    let _ = writeln!(
        md,
        "{} requests · model `{}` · embedder `{}` · {}\n",
        summary.requests, info.model, info.embedder, info.date
    );
    let _ = writeln!(md, "```\n{}\n```\n", info.command);
    if let Some(s) = summary.strategies.get(STRATEGY) {
        let _ = writeln!(md, "| metric | value |\n|---|---:|");
        let errors = if s.errors > 0 {
            format!(" ({} failed)", s.errors)
        } else {
            String::new()
        };
        let rows = [
            ("requests answered", format!("{}{errors}", s.answered)),
            ("operation accuracy", format!("{:.3}", s.operation_accuracy)),
            ("operation recall@5", format!("{:.3}", s.operation_recall_5)),
            (
                "operation recall@10",
                format!("{:.3}", s.operation_recall_10),
            ),
            (
                "param accuracy",
                format!("{:.3} (of {})", s.param_accuracy, s.param_requests),
            ),
            ("ask accuracy", format!("{:.3}", s.ask_accuracy)),
            ("confirm accuracy", format!("{:.3}", s.confirm_accuracy)),
            ("unconfirmed mutations", s.unconfirmed_mutations.to_string()),
            ("LLM calls / request", format!("{:.2}", s.llm_calls)),
            (
                "tokens / request",
                format!("{:.0}", s.prompt_tokens + s.completion_tokens),
            ),
            ("seconds / request", format!("{:.1}", s.seconds)),
        ];
        for (label, value) in rows {
            let _ = writeln!(md, "| {label} | {value} |");
        }
        let ends: Vec<String> = s
            .terminations
            .iter()
            .map(|(why, n)| format!("{why} {n}"))
            .collect();
        let _ = writeln!(md, "\nEnded: {}.\n", ends.join(", "));
    }
    let _ = writeln!(
        md,
        "| id | expected | picked | op | r@5 | params | asked | ask | confirm |\n|---|---|---|:-:|:-:|:-:|---|:-:|:-:|"
    );
    let mark = |ok: bool| if ok { "✓" } else { "✗" };
    for request in requests {
        let Some(r) = results.iter().find(|r| r.id == request.id) else {
            continue;
        };
        let m = &r.metrics;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.id,
            r.expected_operation,
            r.picked
                .as_deref()
                .unwrap_or(if r.error.is_some() { "(error)" } else { "—" }),
            mark(m.operation),
            mark(m.recall_5 > 0.0),
            m.params.map_or("", mark),
            r.asked.join(", "),
            mark(m.ask),
            mark(m.confirm),
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_are_compared_after_normalisation() {
        assert!(same_value(&json!("12"), &json!(12)));
        assert!(same_value(&json!(12.0), &json!(12)));
        assert!(same_value(
            &json!("  Weekly   Groceries "),
            &json!("weekly groceries")
        ));
        assert!(same_value(&json!("dog"), &json!(["dog"])));
        assert!(!same_value(&json!("cat"), &json!("dog")));
        assert!(same_value(&json!({"name": "Rex"}), &json!({"name": "rex"})));
        assert!(!same_value(&json!(true), &json!("yes")));
    }
}
