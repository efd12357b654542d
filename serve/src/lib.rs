//! walkrag over HTTP (`walkrag serve`).
//!
//! `POST /v1/ask` runs a strategy and streams its events as server-sent events whose `data:`
//! lines are exactly the objects `walkrag ask --json` prints (from the same types,
//! [`walkrag_walker::output`]), the last one the `answer` object; `Accept: application/json`
//! gets only that object. `POST /v1/search`, `GET /v1/outline[/{doc}]`, `GET /v1/show/{id}`,
//! `GET /v1/trace/{run}` and `GET /healthz` answer JSON. Every error is
//! `{"error": {"code", "message"}}` ([`ApiError`]).
//!
//! The models are loaded once by the caller and shared ([`Engine`]). Runs generate `slots`
//! at a time behind a bounded queue ([`queue`]); a client that disconnects cancels its run.
//! A token, when set, is required on every route; it is never logged. The same engine is
//! also a Model Context Protocol server ([`serve_mcp_stdio`], and `/mcp` over HTTP).

mod ask;
mod error;
mod mcp;
mod page;
pub mod queue;
mod routes;
mod runs;

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderValue, Method};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use walkrag_core::{ChatModel, Embedder};
use walkrag_engine::Index;
use walkrag_walker::SearchParams;

pub use ask::{MAX_CYCLES, MAX_K, RUN_HEADER};
pub use error::{ApiError, JsonBody, ServeError};
pub use routes::MAX_SEARCH_K;

/// What every request runs against, loaded once.
pub struct Engine {
    pub index: Index,
    /// The embedder the index was built with.
    pub embedder: Arc<dyn Embedder>,
    pub model: Arc<dyn ChatModel>,
    pub search: SearchParams,
}

/// How the server behaves.
#[derive(Clone)]
pub struct Config {
    /// Required as `Authorization: Bearer TOKEN` on every route when set.
    pub token: Option<String>,
    /// The one origin browsers may call from (CORS); `None`: CORS headers never sent.
    pub cors: Option<String>,
    /// Runs generating at once: 1 for a local model (it generates one at a time anyway).
    pub slots: usize,
    /// Runs that may wait for a slot; past them a question gets 429 with `Retry-After`.
    pub queue: usize,
    /// Largest request body in bytes: questions are short, 64 KiB is generous.
    pub max_body: usize,
    /// A comment line this often on a quiet stream, so proxies keep it open and a client that
    /// left is noticed while a long prompt is being read.
    pub keep_alive: Duration,
    /// Finished runs whose traces are kept for `GET /v1/trace/{run}`.
    pub runs_kept: usize,
    /// Longest a question may run once it has the model: a walk on a small CPU model takes a
    /// minute or two; ten stops one that will not end without holding the queue forever.
    pub run_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            token: None,
            cors: None,
            slots: 1,
            queue: 8,
            max_body: 64 * 1024,
            keep_alive: Duration::from_secs(5),
            runs_kept: 100,
            run_timeout: Duration::from_secs(600),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("token", &self.token.as_ref().map(|_| "<hidden>"))
            .field("cors", &self.cors)
            .field("slots", &self.slots)
            .field("queue", &self.queue)
            .field("max_body", &self.max_body)
            .field("keep_alive", &self.keep_alive)
            .field("runs_kept", &self.runs_kept)
            .field("run_timeout", &self.run_timeout)
            .finish()
    }
}

impl Config {
    /// Refuses to listen on `addr` if other machines could reach it and there is no token,
    /// and refuses an empty token or a CORS origin that is not one header value.
    pub fn check(&self, addr: SocketAddr) -> Result<(), ServeError> {
        if self.token.as_deref() == Some("") {
            return Err(ServeError::EmptyToken);
        }
        if !addr.ip().is_loopback() && self.token.is_none() {
            return Err(ServeError::NeedsToken { addr });
        }
        if let Some(origin) = &self.cors {
            if origin == "*" || origin.contains(',') || HeaderValue::from_str(origin).is_err() {
                return Err(ServeError::BadOrigin(origin.clone()));
            }
        }
        Ok(())
    }
}

/// Counters shown by `/healthz`.
#[derive(Default)]
struct Stats {
    completed: AtomicU64,
    cancelled: AtomicU64,
    failed: AtomicU64,
}

struct AppState {
    engine: Arc<Engine>,
    config: Config,
    queue: Arc<queue::Queue>,
    runs: runs::Runs,
    stats: Stats,
}

type Shared = Arc<AppState>;

/// The whole HTTP API (and the page at `/`) over `engine`.
pub fn router(engine: Arc<Engine>, config: Config) -> Result<Router, ServeError> {
    let cors = match &config.cors {
        Some(origin) => Some(
            tower_http::cors::CorsLayer::new()
                .allow_origin(
                    HeaderValue::from_str(origin)
                        .map_err(|_| ServeError::BadOrigin(origin.clone()))?,
                )
                .allow_methods([Method::GET, Method::POST])
                .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE, header::ACCEPT])
                .expose_headers([header::HeaderName::from_static(RUN_HEADER)]),
        ),
        None => None,
    };
    let state = state(engine, config);
    let mcp = {
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService,
        };
        let mut mcp_config = StreamableHttpServerConfig::default()
            .with_max_request_body_bytes(state.config.max_body)
            .with_sse_keep_alive(Some(state.config.keep_alive));
        if state.config.token.is_some() {
            // Host checks guard a loopback server from DNS rebinding; with a token (required
            // beyond loopback) a page on another site cannot call it anyway.
            mcp_config = mcp_config.disable_allowed_hosts();
        }
        let tools = state.clone();
        StreamableHttpService::new(
            move || Ok(mcp::Tools::new(tools.clone())),
            LocalSessionManager::default().into(),
            mcp_config,
        )
    };
    let mut app = Router::new()
        .route("/", get(page::page))
        .route("/healthz", get(routes::healthz))
        .route("/v1/ask", post(ask::ask))
        .route("/v1/search", post(routes::search))
        .route("/v1/outline", get(routes::outline_all))
        .route("/v1/outline/{*doc}", get(routes::outline_one))
        .route("/v1/show/{*id}", get(routes::show))
        .route("/v1/trace/{run}", get(routes::trace))
        .nest_service("/mcp", mcp)
        .fallback(routes::no_route)
        .method_not_allowed_fallback(routes::wrong_method)
        .layer(middleware::from_fn_with_state(state.clone(), authorize))
        .layer(DefaultBodyLimit::max(state.config.max_body))
        .layer(middleware::from_fn(log))
        .with_state(state);
    // Outside the token check: a browser's preflight carries no Authorization header.
    if let Some(cors) = cors {
        app = app.layer(cors);
    }
    Ok(app)
}

fn state(engine: Arc<Engine>, config: Config) -> Shared {
    Arc::new(AppState {
        engine,
        queue: queue::Queue::new(config.slots, config.queue),
        runs: runs::Runs::new(config.runs_kept),
        stats: Stats::default(),
        config,
    })
}

/// The MCP tools (`search`, `ask`, `outline`, `show`) over stdin and stdout, until the client
/// closes them (`walkrag mcp`). Questions queue as they do over HTTP.
pub async fn serve_mcp_stdio(engine: Arc<Engine>, config: Config) -> Result<(), ServeError> {
    mcp::serve_stdio(state(engine, config)).await
}

/// Serves `app` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}

/// Binds `addr` after [`Config::check`].
pub async fn bind(
    addr: SocketAddr,
    config: &Config,
) -> Result<tokio::net::TcpListener, ServeError> {
    config.check(addr)?;
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

/// With a token configured, every request must carry `Authorization: Bearer TOKEN`.
async fn authorize(State(state): State<Shared>, request: Request, next: Next) -> Response {
    if let Some(token) = &state.config.token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        if !given.is_some_and(|given| same(given.as_bytes(), token.as_bytes())) {
            return ApiError::new(
                axum::http::StatusCode::UNAUTHORIZED,
                "unauthorized",
                "this server needs `Authorization: Bearer TOKEN` (the --token it was started with)",
            )
            .into_response();
        }
    }
    next.run(request).await
}

/// Compares in time that depends on the lengths only, not on where the bytes differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// One log line per request: method, path, status, time. Never headers or the query string
/// (a token or a key may be in them).
async fn log(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let started = Instant::now();
    let response = next.run(request).await;
    tracing::info!(
        %method,
        path,
        status = response.status().as_u16(),
        ms = started.elapsed().as_millis() as u64,
        "request"
    );
    response
}
