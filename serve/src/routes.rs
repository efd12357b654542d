//! The read-only routes: health, search, outline, show, a finished run's trace, and the JSON
//! answers for unknown routes and methods.

use std::sync::atomic::Ordering;

use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use walkrag_engine::{outline, Item};
use walkrag_walker::html;
use walkrag_walker::output::{SearchHit, Shown, TraceFile};

use crate::error::{ApiError, JsonBody};
use crate::Shared;

/// Most hits a search may ask for.
pub const MAX_SEARCH_K: usize = 100;

/// A value as JSON text.
fn to_json(value: &impl Serialize) -> Result<String, ApiError> {
    serde_json::to_string(value)
        .map_err(|e| ApiError::internal(format!("cannot write the response: {e}")))
}

/// A JSON response from JSON text.
fn json_text(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A JSON response from a value.
fn json(value: &impl Serialize) -> Response {
    match to_json(value) {
        Ok(body) => json_text(body),
        Err(e) => e.into_response(),
    }
}

pub(crate) async fn healthz(State(state): State<Shared>) -> Response {
    #[derive(Serialize)]
    struct Health<'a> {
        status: &'static str,
        model: &'a str,
        embedder: &'a str,
        documents: usize,
        #[serde(flatten)]
        load: crate::queue::Load,
        completed: u64,
        cancelled: u64,
        failed: u64,
        rejected: u64,
    }
    let engine = &state.engine;
    json(&Health {
        status: "ok",
        model: engine.model.id(),
        embedder: engine.embedder.id(),
        documents: state.index().documents().len(),
        load: state.queue.load(),
        completed: state.stats.completed.load(Ordering::Relaxed),
        cancelled: state.stats.cancelled.load(Ordering::Relaxed),
        failed: state.stats.failed.load(Ordering::Relaxed),
        rejected: state.stats.rejected.load(Ordering::Relaxed),
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchRequest {
    query: String,
    /// Hits wanted [default: 10, as `walkrag search`].
    #[serde(default)]
    k: Option<usize>,
}

/// `POST /v1/search` → `{"hits": [hit as in search --json]}`.
pub(crate) async fn search(
    State(state): State<Shared>,
    JsonBody(request): JsonBody<SearchRequest>,
) -> Result<Response, ApiError> {
    // Embedding is a few milliseconds of CPU: off the async threads.
    let body = tokio::task::spawn_blocking(move || search_json(&state, &request.query, request.k))
        .await
        .map_err(|e| ApiError::internal(format!("the search failed: {e}")))??;
    Ok(json_text(body))
}

/// `{"hits": [...]}` for `query`: the `k` (default 10, as `walkrag search`) nearest chunks,
/// as `search --json` prints them.
pub(crate) fn search_json(
    state: &Shared,
    query: &str,
    k: Option<usize>,
) -> Result<String, ApiError> {
    let k = k.unwrap_or(10);
    if !(1..=MAX_SEARCH_K).contains(&k) {
        return Err(ApiError::invalid(format!("k must be 1 to {MAX_SEARCH_K}")));
    }
    if query.trim().is_empty() {
        return Err(ApiError::invalid("the query is empty"));
    }
    #[derive(Serialize)]
    struct Hits<'a> {
        hits: Vec<SearchHit<'a>>,
    }
    let engine = &state.engine;
    let vector = engine
        .embedder
        .embed_one(query)
        .map_err(|e| ApiError::internal(format!("cannot embed the query: {e}")))?;
    let index = state.index();
    let hits = index.search_with(&vector, k, &engine.search.options(None));
    let hits = hits
        .iter()
        .enumerate()
        .map(|(i, hit)| SearchHit::new(&index, i + 1, hit))
        .collect();
    to_json(&Hits { hits })
}

/// `{"documents": [...]}` without `doc`, else that document's outline.
pub(crate) fn outline_json(state: &Shared, doc: Option<&str>) -> Result<String, ApiError> {
    #[derive(Serialize)]
    struct Outlines {
        documents: Vec<outline::Outline>,
    }
    let index = state.index();
    match doc {
        None => to_json(&Outlines {
            documents: index
                .documents()
                .iter()
                .map(|d| outline::outline(&d.doc))
                .collect(),
        }),
        Some(doc) => match index.resolve(doc) {
            Some(Item::Document(d)) => to_json(&outline::outline(&d.doc)),
            _ => Err(ApiError::not_found(format!(
                "no document {doc:?}; the outline of every document lists them all"
            ))),
        },
    }
}

/// The section, chunk or document `id` names, as `show --json` prints it.
pub(crate) fn show_json(state: &Shared, id: &str) -> Result<String, ApiError> {
    let index = state.index();
    match index.resolve(id.trim()) {
        Some(item) => to_json(&Shown::of(item)),
        None => Err(ApiError::not_found(format!(
            "no document, section or chunk {id:?}; ids come from the outline and from search"
        ))),
    }
}

/// `GET /v1/outline` → `{"documents": [outline as in outline --json]}`.
pub(crate) async fn outline_all(State(state): State<Shared>) -> Result<Response, ApiError> {
    outline_json(&state, None).map(json_text)
}

/// `GET /v1/outline/{doc}` → the document's outline.
pub(crate) async fn outline_one(
    State(state): State<Shared>,
    Path(doc): Path<String>,
) -> Result<Response, ApiError> {
    outline_json(&state, Some(&doc)).map(json_text)
}

/// `GET /v1/show/{id}` → the section, chunk or document as `show --json` prints it.
pub(crate) async fn show(
    State(state): State<Shared>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    show_json(&state, &id).map(json_text)
}

#[derive(Deserialize)]
pub(crate) struct TraceQuery {
    /// `json` (default) or `html`.
    #[serde(default)]
    format: Option<String>,
}

/// `GET /v1/trace/{run}[?format=html]` → what `ask --trace FILE.json` (or `.html`) writes.
pub(crate) async fn trace(
    State(state): State<Shared>,
    Path(run): Path<String>,
    Query(query): Query<TraceQuery>,
) -> Result<Response, ApiError> {
    let Some(finished) = state.runs.get(&run) else {
        return Err(ApiError::not_found(format!(
            "no finished run {run:?} (the server keeps the last {} runs; a run's id is in the \
             {} header of its /v1/ask response)",
            state.config.runs_kept,
            crate::ask::RUN_HEADER
        )));
    };
    match query.format.as_deref() {
        None | Some("json") => Ok(json(&TraceFile {
            trace: &finished.answer.trace,
            answer: &finished.answer,
            graph: &finished.graph,
        })),
        Some("html") => Ok((
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            html::render(&finished.answer, &finished.graph),
        )
            .into_response()),
        Some(other) => Err(ApiError::invalid(format!(
            "format is json or html, not {other:?}"
        ))),
    }
}

pub(crate) async fn no_route() -> ApiError {
    ApiError::not_found(
        "no such route; try GET /healthz, POST /v1/ask, POST /v1/search, GET /v1/outline, \
         GET /v1/show/{id}, GET /v1/trace/{run}",
    )
}

pub(crate) async fn wrong_method() -> ApiError {
    ApiError::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method (questions and searches are POSTed as JSON)",
    )
}
