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
//! Every request must name this server in `Host` (loopback, the address it arrived at, or an
//! `--allow-host` name), come from no other site's page unless `--cors` names it, and post
//! only JSON. A token, when set, is required on every route but the page; it is never logged. The same engine is
//! also a Model Context Protocol server ([`serve_mcp_stdio`], and `/mcp` over HTTP).

mod ask;
mod error;
mod guard;
mod mcp;
mod page;
pub mod queue;
mod routes;
mod runs;

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{header, HeaderValue, Method};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use walkrag_core::{ChatModel, Embedder};
use walkrag_engine::{Index, Store, StoreError};
use walkrag_walker::SearchParams;

pub use ask::{MAX_CYCLES, MAX_K, RUN_HEADER};
pub use error::{ApiError, JsonBody, ServeError};
pub use routes::MAX_SEARCH_K;

/// What every request runs against, loaded once: the models, and the index, which is
/// replaced whole when its store has a new generation ([`Engine::watching`]).
pub struct Engine {
    index: RwLock<Arc<Index>>,
    /// The embedder the index was built with.
    pub embedder: Arc<dyn Embedder>,
    pub model: Arc<dyn ChatModel>,
    /// The model that writes the answers, where another than `model`.
    pub answer_model: Option<Arc<dyn ChatModel>>,
    pub search: SearchParams,
    watch: Option<Watch>,
}

/// Where a newer index may come from, and what was seen there.
struct Watch {
    store: Arc<dyn Store>,
    /// The generation the index in use was loaded at.
    seen: Mutex<Option<String>>,
    every: Duration,
    last_check: Mutex<Instant>,
    /// A check or a reload is under way (one at a time).
    busy: AtomicBool,
}

/// How often a serving engine looks for a new generation, at most (and only while requests
/// come): a file read or one query, cheap at this rate; an index run takes far longer.
pub const RELOAD_CHECK: Duration = Duration::from_secs(2);

impl Engine {
    pub fn new(
        index: Index,
        embedder: Arc<dyn Embedder>,
        model: Arc<dyn ChatModel>,
        search: SearchParams,
    ) -> Self {
        Self {
            index: RwLock::new(Arc::new(index)),
            embedder,
            model,
            answer_model: None,
            search,
            watch: None,
        }
    }

    /// The engine with `model` writing the answers (`walkrag serve --reader-model`).
    pub fn answering_with(mut self, model: Option<Arc<dyn ChatModel>>) -> Self {
        self.answer_model = model;
        self
    }

    /// Reloads the index from `store` once its generation moves from `generation` (read
    /// before the index in use was loaded), looking at most every `every` while requests come.
    pub fn watching(
        mut self,
        store: Arc<dyn Store>,
        generation: Option<String>,
        every: Duration,
    ) -> Self {
        self.watch = Some(Watch {
            store,
            seen: Mutex::new(generation),
            every,
            last_check: Mutex::new(Instant::now()),
            busy: AtomicBool::new(false),
        });
        self
    }

    /// The index now. A run keeps the one it started with to its end.
    pub fn index(&self) -> Arc<Index> {
        self.index.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Looks at the store's generation and, if it moved, loads the index anew and swaps it in
    /// (blocking: the load reads the whole index). `Ok(true)` when it did. An index built
    /// with another embedder is not taken (the server's embedder could not search it).
    pub fn refresh(&self) -> Result<bool, StoreError> {
        let Some(watch) = &self.watch else {
            return Ok(false);
        };
        let generation = watch.store.generation()?;
        let seen = watch.seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if generation.is_none() || generation == seen {
            return Ok(false);
        }
        let index = watch.store.clone().load()?;
        *watch.seen.lock().unwrap_or_else(|e| e.into_inner()) = generation;
        if index.manifest().embedder.id != self.embedder.id() {
            tracing::warn!(
                "the index at {} is now built with {}, not {}: keeping the one loaded; restart \
                 to serve it",
                watch.store.location(),
                index.manifest().embedder.id,
                self.embedder.id()
            );
            return Ok(false);
        }
        tracing::info!(
            documents = index.documents().len(),
            "new index generation at {}: reloaded",
            watch.store.location()
        );
        *self.index.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(index);
        Ok(true)
    }

    /// Starts [`Engine::refresh`] off the async threads when the last look is older than the
    /// watch's period and none is under way; requests never wait for it.
    fn refresh_soon(self: &Arc<Self>) {
        let Some(watch) = &self.watch else {
            return;
        };
        {
            let mut last = watch.last_check.lock().unwrap_or_else(|e| e.into_inner());
            if last.elapsed() < watch.every {
                return;
            }
            if watch.busy.swap(true, Ordering::AcqRel) {
                return;
            }
            *last = Instant::now();
        }
        let engine = self.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = engine.refresh() {
                tracing::warn!("cannot reload the index: {e}");
            }
            if let Some(watch) = &engine.watch {
                watch.busy.store(false, Ordering::Release);
            }
        });
    }
}

/// How the server behaves.
#[derive(Clone)]
pub struct Config {
    /// Required as `Authorization: Bearer TOKEN` on every route but the page when set.
    pub token: Option<String>,
    /// The one origin browsers may call from (CORS); `None`: CORS headers never sent and
    /// requests from other origins refused.
    pub cors: Option<String>,
    /// `Host` names answered besides loopback and the address a connection arrived at (a
    /// server behind a name); any other `Host` is refused, so DNS rebinding finds nothing.
    pub allow_hosts: Vec<String>,
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
    /// How long running questions may finish once the server is told to stop (SIGTERM,
    /// Ctrl-C): long enough for most walks on a small model, short of the 30+ s after which
    /// supervisors (Kubernetes' default grace period is 30 s) kill anyway.
    pub drain: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            token: None,
            cors: None,
            allow_hosts: Vec::new(),
            slots: 1,
            queue: 8,
            max_body: 64 * 1024,
            keep_alive: Duration::from_secs(5),
            runs_kept: 100,
            run_timeout: Duration::from_secs(600),
            drain: Duration::from_secs(30),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("token", &self.token.as_ref().map(|_| "<hidden>"))
            .field("cors", &self.cors)
            .field("allow_hosts", &self.allow_hosts)
            .field("slots", &self.slots)
            .field("queue", &self.queue)
            .field("max_body", &self.max_body)
            .field("keep_alive", &self.keep_alive)
            .field("runs_kept", &self.runs_kept)
            .field("run_timeout", &self.run_timeout)
            .field("drain", &self.drain)
            .finish()
    }
}

impl Config {
    /// Refuses to listen on `addr` if other machines could reach it and there is no token,
    /// and refuses a guessable token, one with whitespace (a secret file's newline: no client
    /// would send it) or a CORS origin that is not one header value.
    pub fn check(&self, addr: SocketAddr) -> Result<(), ServeError> {
        if let Some(token) = &self.token {
            if token.chars().any(char::is_whitespace) {
                return Err(ServeError::TokenWhitespace);
            }
            if token.chars().count() < MIN_TOKEN_CHARS {
                return Err(ServeError::ShortToken {
                    chars: token.chars().count(),
                });
            }
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

/// The shortest token accepted: 16 characters from a generator are beyond guessing over HTTP.
pub const MIN_TOKEN_CHARS: usize = 16;

/// Counters shown by `/healthz`.
#[derive(Default)]
struct Stats {
    completed: AtomicU64,
    cancelled: AtomicU64,
    failed: AtomicU64,
    /// Questions refused for what they asked once they ran (a prompt past the model's
    /// context): the client's doing, not a failure.
    rejected: AtomicU64,
}

struct AppState {
    engine: Arc<Engine>,
    config: Config,
    queue: Arc<queue::Queue>,
    runs: runs::Runs,
    stats: Stats,
}

type Shared = Arc<AppState>;

impl AppState {
    /// The index for one request (and a look for a newer one, for the next requests).
    fn index(&self) -> Arc<Index> {
        self.engine.refresh_soon();
        self.engine.index()
    }
}

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
        // Host and Origin are checked for every route by `guard`, `--allow-host` included.
        let mcp_config = StreamableHttpServerConfig::default()
            .with_max_request_body_bytes(state.config.max_body)
            .with_sse_keep_alive(Some(state.config.keep_alive))
            .disable_allowed_hosts();
        let tools = state.clone();
        let service = StreamableHttpService::new(
            move || Ok(mcp::Tools::new(tools.clone())),
            LocalSessionManager::default().into(),
            mcp_config,
        );
        Router::new()
            .fallback_service(service)
            .layer(middleware::from_fn(mcp::session_closed))
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
        .layer(middleware::from_fn_with_state(
            state.clone(),
            guard::authorize,
        ))
        .layer(DefaultBodyLimit::max(state.config.max_body))
        .layer(middleware::from_fn(log))
        .with_state(state.clone());
    // Outside the token check: a browser's preflight carries no Authorization header.
    if let Some(cors) = cors {
        app = app.layer(cors);
    }
    // Outermost: a request for another Host or from another site's page reaches nothing.
    Ok(app.layer(middleware::from_fn_with_state(state, guard::origin)))
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

/// Serves `app` on `listener` until `shutdown` completes, then stops accepting and lets the
/// requests under way (questions streaming their answers) finish for up to `drain`; past it
/// the ones left are cut. Returns once every request ended or the deadline passed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    drain: Duration,
) -> Result<(), ServeError> {
    let app = app.into_make_service_with_connect_info::<guard::LocalAddr>();
    let (stopping, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            let _ = stopping.send(());
        })
        .into_future();
    let deadline = async move {
        match stopped.await {
            Ok(()) => tokio::time::sleep(drain).await,
            // The server ended by itself (an error): nothing to wait for.
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        served = server => served?,
        () = deadline => tracing::warn!(
            "requests still running after {} s of draining were cut",
            drain.as_secs_f64()
        ),
    }
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
