//! `POST /v1/ask`: one run of a strategy, streamed as server-sent events whose `data:` lines
//! are the objects of `walkrag ask --json`, or only its answer object for
//! `Accept: application/json`. A client that goes away cancels its run.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use walkrag_walker::output::AnswerLine;
use walkrag_walker::{by_name, AnswerModel, Control, Env, Event, Options, Strategy};

use crate::error::{ApiError, JsonBody};
use crate::queue::Ticket;
use crate::runs::RunId;
use crate::Shared;

/// The header that names a run, for `GET /v1/trace/{run}`.
pub const RUN_HEADER: &str = "x-walkrag-run";

/// Most chunks per search a request may ask for: more would not fit a small model's context.
pub const MAX_K: usize = 50;
/// Most cycles a request may ask for: each is a model call over k passages.
pub const MAX_CYCLES: usize = 20;

/// The body of `POST /v1/ask`; what is left out keeps the strategy's default.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AskRequest {
    pub question: String,
    /// `walk` (default), `single`, `roam`, `toc` or `docs`.
    #[serde(default)]
    pub strategy: Option<String>,
    #[serde(default)]
    pub k: Option<usize>,
    #[serde(default)]
    pub max_cycles: Option<usize>,
}

/// What the run sends its client: an event or the answer (already JSON), or the error that
/// ended it.
pub(crate) enum Line {
    Event(String),
    Answer(String),
    Error(ApiError),
}

/// A run admitted to the queue: its id, its lines as they come, and the guard that cancels it
/// when dropped before its last line.
pub(crate) struct Started {
    pub run: RunId,
    lines: mpsc::UnboundedReceiver<Line>,
    guard: CancelOnDrop,
}

impl Started {
    /// The next line; the answer or an error is the last.
    pub async fn next(&mut self) -> Option<Line> {
        let line = self.lines.recv().await;
        if matches!(line, None | Some(Line::Answer(_) | Line::Error(_))) {
            self.guard.finished = true;
        }
        line
    }

    /// Waits for the answer line, handing each event before it to `on_event`.
    pub async fn answer(mut self, mut on_event: impl FnMut(&str)) -> Result<String, ApiError> {
        while let Some(line) = self.next().await {
            match line {
                Line::Event(json) => on_event(&json),
                Line::Answer(json) => return Ok(json),
                Line::Error(error) => return Err(error),
            }
        }
        Err(ApiError::internal("the run ended without an answer"))
    }
}

/// Checks `request`, builds its strategy and takes a place in the queue (or is refused), then
/// starts the run in a task of its own.
pub(crate) fn start(state: &Shared, request: AskRequest) -> Result<Started, ApiError> {
    let question = request.question.trim().to_string();
    if question.is_empty() {
        return Err(ApiError::invalid("the question is empty"));
    }
    if let Some(k) = request.k {
        if !(1..=MAX_K).contains(&k) {
            return Err(ApiError::invalid(format!("k must be 1 to {MAX_K}")));
        }
    }
    if let Some(cycles) = request.max_cycles {
        if !(1..=MAX_CYCLES).contains(&cycles) {
            return Err(ApiError::invalid(format!(
                "max_cycles must be 1 to {MAX_CYCLES}"
            )));
        }
    }
    let control = Control::new();
    let options = Options {
        k: request.k,
        max_cycles: request.max_cycles,
        control: control.clone(),
        answer_model: state.engine.answer_model.clone().map(AnswerModel),
        ..Options::default()
    };
    let strategy = by_name(request.strategy.as_deref().unwrap_or("walk"), &options)?;
    let ticket = state.queue.enter().map_err(|full| {
        tracing::info!(waiting = full.waiting, "queue full: question refused");
        ApiError::queue_full(full.retry_after, full.waiting)
    })?;
    let run = RunId::new();
    let (tx, lines) = mpsc::unbounded_channel();
    let task = tokio::spawn(work(
        state.clone(),
        run.clone(),
        strategy,
        question,
        ticket,
        tx,
    ));
    let guard = CancelOnDrop {
        state: state.clone(),
        run: run.clone(),
        control,
        task: task.abort_handle(),
        finished: false,
    };
    Ok(Started { run, lines, guard })
}

pub(crate) async fn ask(
    State(state): State<Shared>,
    headers: HeaderMap,
    JsonBody(request): JsonBody<AskRequest>,
) -> Result<Response, ApiError> {
    let started = start(&state, request)?;
    let run = started.run.clone();
    let run_header = [(
        header::HeaderName::from_static(RUN_HEADER),
        HeaderValue::from_str(run.as_str()).expect("a run id is hex"),
    )];

    if wants_json(&headers) {
        let json = started.answer(|_| {}).await?;
        return Ok((
            run_header,
            [(header::CONTENT_TYPE, "application/json")],
            json,
        )
            .into_response());
    }

    let stream = futures_util::stream::unfold(started, |mut started| async move {
        let data = match started.next().await? {
            Line::Event(json) | Line::Answer(json) => json,
            Line::Error(error) => error.to_event(),
        };
        Some((Ok::<_, Infallible>(SseEvent::default().data(data)), started))
    });
    let sse = Sse::new(stream).keep_alive(KeepAlive::new().interval(state.config.keep_alive));
    Ok((run_header, sse).into_response())
}

/// `Accept: application/json` without `text/event-stream`.
fn wants_json(headers: &HeaderMap) -> bool {
    let accept = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    accept.contains("application/json") && !accept.contains("text/event-stream")
}

/// The run itself: waits for a slot (telling the client its place in line), runs the
/// strategy, keeps the trace and sends the answer line.
async fn work(
    state: Shared,
    run: RunId,
    strategy: Box<dyn Strategy>,
    question: String,
    ticket: Ticket,
    tx: mpsc::UnboundedSender<Line>,
) {
    let slot = ticket
        .wait(|position| {
            let _ = tx.send(Line::Event(format!(
                r#"{{"type":"queued","position":{position}}}"#
            )));
        })
        .await;
    let started = Instant::now();
    tracing::info!(run = run.as_str(), strategy = strategy.name(), "run starts");
    let engine = &state.engine;
    // The index as it is now, for the whole run, whatever generation comes meanwhile.
    let index = state.index();
    let env = Env {
        index: &index,
        embedder: engine.embedder.as_ref(),
        model: engine.model.as_ref(),
        search: engine.search,
    };
    let events = tx.clone();
    let mut sink = move |event: Event| {
        let json = serde_json::to_string(&event).expect("events serialize");
        let _ = events.send(Line::Event(json));
    };
    let limit = state.config.run_timeout;
    let result = match tokio::time::timeout(limit, strategy.run(&question, env, &mut sink)).await {
        Ok(result) => result.map_err(ApiError::from),
        Err(_) => Err(ApiError::new(
            axum::http::StatusCode::GATEWAY_TIMEOUT,
            "timeout",
            format!("the question took longer than {} s", limit.as_secs()),
        )),
    };
    drop(slot);
    state.queue.record(started.elapsed());
    match result {
        Ok(answer) => {
            let line = serde_json::to_string(&AnswerLine::new(&answer)).expect("answers serialize");
            tracing::info!(
                run = run.as_str(),
                termination = %answer.termination,
                ms = started.elapsed().as_millis() as u64,
                "run done"
            );
            state.runs.keep(run, answer, &index);
            state.stats.completed.fetch_add(1, Ordering::Relaxed);
            let _ = tx.send(Line::Answer(line));
        }
        Err(e) if e.is_rejection() => {
            tracing::info!(
                run = run.as_str(),
                code = e.code,
                "run rejected: {}",
                e.message
            );
            state.stats.rejected.fetch_add(1, Ordering::Relaxed);
            let _ = tx.send(Line::Error(e));
        }
        Err(e) => {
            tracing::warn!(
                run = run.as_str(),
                code = e.code,
                "run failed: {}",
                e.message
            );
            state.stats.failed.fetch_add(1, Ordering::Relaxed);
            let _ = tx.send(Line::Error(e));
        }
    }
}

/// Cancels the run when its client's response is dropped before the run's last line: the
/// connection closed. Stopping the walk and dropping its future cancels the generation.
struct CancelOnDrop {
    state: Shared,
    run: RunId,
    control: Control,
    task: AbortHandle,
    finished: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        self.control.stop();
        self.task.abort();
        self.state.stats.cancelled.fetch_add(1, Ordering::Relaxed);
        tracing::info!(run = self.run.as_str(), "client gone: run cancelled");
    }
}
