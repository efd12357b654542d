//! The eval loop: every strategy on every question, results appended as they come, so an
//! interrupted run resumes where it stopped.

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use walkrag_engine::jsonl_file;
use walkrag_walker::{Env, Strategy, Trace};

use crate::dataset::Question;
use crate::report::{self, RunInfo};
use crate::results::ResultLine;
use crate::summary::Summary;

/// What the run compares; a resumed run must match what is recorded in `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub dataset: String,
    pub model: String,
    pub embedder: String,
    /// Settings of every strategy run so far in this directory.
    pub strategies: BTreeMap<String, serde_json::Value>,
}

/// How to run.
pub struct Settings {
    pub dataset: String,
    /// The command line, quoted in the report.
    pub command: String,
    /// Questions answered at the same time.
    pub jobs: usize,
    /// Retries of a question whose model call failed transiently.
    pub retries: usize,
    /// Also write each answer's whole trace to `out/traces/STRATEGY/ID.json`.
    pub traces: bool,
}

/// Hooks for progress; every method has a no-op default.
pub trait EvalProgress {
    /// `todo` runs (question × strategy) ahead, `done` already in the results from before.
    fn start(&self, _todo: usize, _done: usize) {}
    /// One question answered (or failed) by one strategy.
    fn finished(&self, _line: &ResultLine) {}
    /// A question will be tried again after a transient failure.
    fn retry(&self, _id: &str, _strategy: &str, _error: &str) {}
}

pub struct NoProgress;
impl EvalProgress for NoProgress {}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path} holds a run with other settings ({what}); use another --out directory, or --restart to discard it")]
    Mismatch { path: PathBuf, what: String },
    #[error("{path}: {message}")]
    Corrupt { path: PathBuf, message: String },
}

pub(crate) fn io_error(path: &Path) -> impl FnOnce(io::Error) -> EvalError + '_ {
    move |source| EvalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// File names in the output directory.
pub const RUN_FILE: &str = "run.json";
pub const RESULTS_FILE: &str = "results.jsonl";
pub const SUMMARY_FILE: &str = "summary.json";
pub const REPORT_FILE: &str = "report.md";
pub const CHART_FILE: &str = "chart.svg";
pub const TRACES_DIR: &str = "traces";

/// Runs `strategies` over `questions`, writing `out/{results.jsonl, summary.json, report.md,
/// chart.svg}`. Results already in `out` from an earlier run with the same settings are kept
/// and not run again (failed ones are); `restart` discards them.
pub async fn run(
    env: Env<'_>,
    strategies: &[Box<dyn Strategy>],
    questions: &[Question],
    out: &Path,
    settings: &Settings,
    restart: bool,
    progress: &dyn EvalProgress,
) -> Result<Summary, EvalError> {
    fs::create_dir_all(out).map_err(io_error(out))?;
    let record = RunRecord {
        dataset: settings.dataset.clone(),
        model: env.model.id().to_string(),
        embedder: env.embedder.id().to_string(),
        strategies: strategies
            .iter()
            .map(|s| (s.name().to_string(), s.config()))
            .collect(),
    };
    let results_path = out.join(RESULTS_FILE);
    if restart {
        discard(
            out,
            &[
                RUN_FILE,
                RESULTS_FILE,
                SUMMARY_FILE,
                REPORT_FILE,
                CHART_FILE,
            ],
        )?;
    }
    let record = merge_record(&out.join(RUN_FILE), record)?;
    write_atomic(&out.join(RUN_FILE), &to_json(&record))?;

    // Failed questions are tried again; their old lines go.
    let mut lines = kept_results(&results_path, |l: &ResultLine| l.error.is_some())?;

    let done: HashSet<(String, String)> = lines
        .iter()
        .map(|l| (l.id.clone(), l.strategy.clone()))
        .collect();
    let wanted: HashSet<&str> = questions.iter().map(|q| q.id.as_str()).collect();
    let todo: Vec<(&Question, &dyn Strategy)> = questions
        .iter()
        .flat_map(|q| strategies.iter().map(move |s| (q, s.as_ref())))
        .filter(|(q, s)| !done.contains(&(q.id.clone(), s.name().to_string())))
        .collect();
    let already = lines
        .iter()
        .filter(|l| wanted.contains(l.id.as_str()))
        .count();
    progress.start(todo.len(), already);

    let order: Vec<&str> = strategies.iter().map(|s| s.name()).collect();
    let date = report::today();
    let write_reports = |lines: &[ResultLine]| -> Result<Summary, EvalError> {
        let current: Vec<&ResultLine> = lines
            .iter()
            .filter(|l| wanted.contains(l.id.as_str()))
            .collect();
        let summary = Summary::of(&settings.dataset, questions.len(), &order, &current);
        let info = RunInfo {
            model: &record.model,
            embedder: &record.embedder,
            command: &settings.command,
            date: &date,
        };
        write_atomic(&out.join(SUMMARY_FILE), &to_json_pretty(&summary))?;
        write_atomic(
            &out.join(REPORT_FILE),
            &report::markdown(&summary, &order, &info),
        )?;
        write_atomic(&out.join(CHART_FILE), &report::chart_svg(&summary, &order))?;
        Ok(summary)
    };

    let mut file = ResultsFile::open(&results_path)?;
    let mut results = stream::iter(todo)
        .map(|(question, strategy)| answer_one(env, question, strategy, settings, out, progress))
        .buffer_unordered(settings.jobs.max(1));
    while let Some(line) = results.next().await {
        file.append(&line)?;
        progress.finished(&line);
        lines.push(line);
        write_reports(&lines)?;
    }
    write_reports(&lines)
}

/// One question with one strategy, retried after transient failures.
async fn answer_one(
    env: Env<'_>,
    question: &Question,
    strategy: &dyn Strategy,
    settings: &Settings,
    out: &Path,
    progress: &dyn EvalProgress,
) -> ResultLine {
    let started = Instant::now();
    let mut attempt = 0;
    loop {
        match strategy.run(&question.question, env, &mut |_| {}).await {
            Ok(answer) => {
                if settings.traces {
                    write_trace(out, strategy.name(), &question.id, &answer.trace);
                }
                return ResultLine::new(question, strategy.name(), &answer, env.index);
            }
            Err(e) if e.is_transient() && attempt < settings.retries => {
                attempt += 1;
                progress.retry(&question.id, strategy.name(), &e.to_string());
                tokio::time::sleep(Duration::from_secs(1 << attempt.min(5))).await;
            }
            Err(e) => {
                tracing::warn!("{} on {}: {e}", strategy.name(), question.id);
                let ms = started.elapsed().as_millis() as u64;
                return ResultLine::failed(question, strategy.name(), e.to_string(), ms);
            }
        }
    }
}

/// The record to write: the old one extended with new strategies, or a mismatch error.
pub(crate) fn merge_record(path: &Path, new: RunRecord) -> Result<RunRecord, EvalError> {
    let old = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(new),
        Err(e) => return Err(io_error(path)(e)),
    };
    let old: RunRecord = serde_json::from_str(&old).map_err(|e| EvalError::Corrupt {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let mismatch = |what: String| EvalError::Mismatch {
        path: path.parent().unwrap_or(path).to_path_buf(),
        what,
    };
    for (what, a, b) in [
        ("dataset", &old.dataset, &new.dataset),
        ("model", &old.model, &new.model),
        ("embedder", &old.embedder, &new.embedder),
    ] {
        if a != b {
            return Err(mismatch(format!("{what} {a:?}, now {b:?}")));
        }
    }
    let mut merged = old;
    for (name, config) in new.strategies {
        match merged.strategies.get(&name) {
            Some(old) if *old != config => {
                return Err(mismatch(format!("{name} with {old}, now {config}")))
            }
            _ => {
                merged.strategies.insert(name, config);
            }
        }
    }
    Ok(merged)
}

/// The lines of `results.jsonl`. A last line cut short by a crash is dropped; any other bad
/// line is an error (the file is not ours to guess about).
fn read_results<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, EvalError> {
    let file = jsonl_file::read::<T>(path).map_err(io_error(path))?;
    for bad in &file.bad {
        if !bad.is_cut_tail(&file) {
            return Err(EvalError::Corrupt {
                path: path.to_path_buf(),
                message: format!("line {}: {}", bad.line, bad.error),
            });
        }
        tracing::warn!("{}: dropping a last line cut short", path.display());
    }
    Ok(file.records)
}

/// The results in `path` except the `failed` ones (they run again), the file rewritten to
/// hold just those.
pub(crate) fn kept_results<T: Serialize + DeserializeOwned>(
    path: &Path,
    failed: impl Fn(&T) -> bool,
) -> Result<Vec<T>, EvalError> {
    let mut lines: Vec<T> = read_results(path)?;
    lines.retain(|l| !failed(l));
    let body: String = lines.iter().map(|l| to_json(l) + "\n").collect();
    write_atomic(path, &body)?;
    Ok(lines)
}

/// Removes the files `names` of a run in `out`, and its traces (`--restart`).
pub(crate) fn discard(out: &Path, names: &[&str]) -> Result<(), EvalError> {
    for name in names {
        match fs::remove_file(out.join(name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(io_error(&out.join(name))(e))
            }
            _ => {}
        }
    }
    let traces = out.join(TRACES_DIR);
    match fs::remove_dir_all(&traces) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_error(&traces)(e)),
        _ => Ok(()),
    }
}

/// `results.jsonl` open for appending: one line per result, synced before the next.
pub(crate) struct ResultsFile {
    file: File,
    path: PathBuf,
}

impl ResultsFile {
    pub(crate) fn open(path: &Path) -> Result<Self, EvalError> {
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(io_error(path))?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
        })
    }

    pub(crate) fn append<T: Serialize>(&mut self, result: &T) -> Result<(), EvalError> {
        self.file
            .write_all((to_json(result) + "\n").as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(io_error(&self.path))
    }
}

/// Writes `trace` to `out/traces/STRATEGY/ID.json`. A trace is an aid for reading the run: a
/// failure to write it is logged and the result still counts.
pub(crate) fn write_trace(out: &Path, strategy: &str, id: &str, trace: &Trace) {
    let dir = out.join(TRACES_DIR).join(strategy);
    let path = dir.join(format!("{id}.json"));
    let written = fs::create_dir_all(&dir)
        .map_err(io_error(&dir))
        .and_then(|()| write_atomic(&path, &to_json_pretty(trace)));
    if let Err(e) = written {
        tracing::warn!("trace of {id} not written: {e}");
    }
}

pub(crate) fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("results serialize")
}

pub(crate) fn to_json_pretty<T: Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).expect("results serialize") + "\n"
}

/// Writes `path` through a temporary file and a rename, so readers never see half a file.
pub(crate) fn write_atomic(path: &Path, contents: &str) -> Result<(), EvalError> {
    let tmp = path.with_extension("tmp");
    let write = || -> io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(contents.as_bytes())?;
        f.sync_data()?;
        fs::rename(&tmp, path)
    };
    write().map_err(io_error(path))
}
