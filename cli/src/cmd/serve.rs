//! `walkrag serve` and `walkrag mcp`: the index and the models behind an HTTP API and MCP
//! tools (the `walkrag-serve` crate).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use walkrag_engine::Store;
use walkrag_models::ModelSpec;
use walkrag_serve::{Config, Engine};
use walkrag_walker::SearchParams;

/// Serve the index over HTTP: questions stream their events live, models loaded once.
///
/// POST /v1/ask streams server-sent events whose `data:` lines are the JSON objects of
/// `walkrag ask --json` (cycle, retrieved, fact, next_source, token, note), the last one the
/// answer; a `queued` event tells a waiting question its place in line. With
/// `Accept: application/json` only the answer object comes back. A client that disconnects
/// cancels its question. The page at http://ADDR/ asks questions and shows the events.
///
/// Routes: POST /v1/ask {"question", "strategy"?, "k"?, "max_cycles"?} · POST /v1/search
/// {"query", "k"?} · GET /v1/outline[/DOC] · GET /v1/show/ID · GET /v1/trace/RUN[?format=html]
/// (RUN is the x-walkrag-run header of the ask) · GET /healthz. Errors are
/// {"error": {"code", "message"}}; a full queue answers 429 with Retry-After.
///
/// A local model answers one question at a time (--parallel), up to --queue more wait.
/// It listens on 127.0.0.1 only unless --addr says otherwise, which needs --token (16
/// characters or more): every request but the page must then carry
/// `Authorization: Bearer TOKEN`. The token is never logged. It answers only to loopback
/// names, the address a client reached it at and --allow-host names (DNS rebinding), refuses
/// other sites' pages unless --cors names one, and takes bodies as application/json only.
/// SIGTERM or Ctrl-C stops it: running questions get --drain-seconds to finish, then it
/// exits 0.
///
/// Examples:
///   walkrag serve --model local:qwen2.5-coder-0.5b
///   curl -N localhost:8080/v1/ask -H 'Content-Type: application/json' \
///        -d '{"question": "Who chairs the board?"}'
///   curl localhost:8080/v1/ask --json '{"question": "Who chairs the board?", "k": 3}'
///   curl localhost:8080/v1/search --json '{"query": "board members", "k": 5}'
///   WALKRAG_TOKEN=$(openssl rand -hex 16) walkrag serve --addr 0.0.0.0:8080 --allow-host host
///   curl -N -H "Authorization: Bearer $WALKRAG_TOKEN" -H 'Content-Type: application/json' \
///        host:8080/v1/ask -d '{"question": "..."}'
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[command(flatten)]
    engine: EngineArgs,
    /// Address to listen on (port 0: any free port, printed on stderr).
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Require `Authorization: Bearer TOKEN` on every route (needed beyond loopback).
    #[arg(long, env = "WALKRAG_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Let pages from ORIGIN (https://example.org) call the API from a browser.
    #[arg(long, value_name = "ORIGIN")]
    cors: Option<String>,
    /// Answer to Host NAME too (loopback names and the address reached are always answered);
    /// repeat for more.
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_hosts: Vec<String>,
    /// Seconds running questions get to finish after SIGTERM or Ctrl-C.
    #[arg(long, default_value_t = 30)]
    drain_seconds: u64,
    /// Questions that may wait for the model; more get 429.
    #[arg(long, default_value_t = Config::default().queue)]
    queue: usize,
    /// Questions answered at once [default: 1 for a local model, 4 for a server].
    #[arg(long)]
    parallel: Option<usize>,
    /// Largest request body, in bytes.
    #[arg(long, default_value_t = Config::default().max_body)]
    max_body: usize,
}

/// What `serve` and `mcp` load once: the index, its embedder and the chat model.
#[derive(clap::Args)]
struct EngineArgs {
    /// Index directory.
    #[arg(long, default_value = super::DEFAULT_INDEX)]
    index: PathBuf,
    #[command(flatten)]
    store: super::query::StoreArg,
    #[command(flatten)]
    model: super::ModelArg,
    /// The model that writes the answers: --model walks, picks and reads (--answer-model is
    /// another name for it) [default: --model where given, else local:qwen2.5-coder-1.5b
    /// where installed, else the default --model].
    #[arg(long, value_name = "SPEC", alias = "answer-model")]
    reader_model: Option<String>,
    /// Embedding model [default: the one the index was built with].
    #[arg(long)]
    embedder: Option<String>,
    #[command(flatten)]
    remote: super::query::RemoteEmbedArgs,
    /// Scan every vector instead of walking the HNSW graph.
    #[arg(long)]
    exact: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let remote = matches!(
        ModelSpec::parse(args.engine.model.spec())?,
        ModelSpec::OpenAi(_)
    );
    let config = Config {
        token: args.token,
        cors: args.cors,
        allow_hosts: args.allow_hosts,
        slots: args.parallel.unwrap_or(if remote { 4 } else { 1 }).max(1),
        queue: args.queue,
        max_body: args.max_body,
        drain: Duration::from_secs(args.drain_seconds),
        ..Config::default()
    };
    // Refused before the models load: a mistake costs no wait.
    config.check(args.addr)?;
    let engine = load(&args.engine)?;
    let app = walkrag_serve::router(engine, config.clone())?;
    let runtime = super::runtime()?;
    runtime.block_on(async {
        let listener = walkrag_serve::bind(args.addr, &config).await?;
        let addr = listener
            .local_addr()
            .context("cannot read the bound address")?;
        // Listened for before "listening" is printed: a signal that comes after it is never
        // lost, nor left to a disposition the server inherited (a shell's background jobs
        // start with SIGINT ignored).
        let mut signals = StopSignals::listen()?;
        eprintln!("walkrag serve: listening on http://{addr} (Ctrl-C or SIGTERM stops)");
        let drain = config.drain;
        let shutdown = async move {
            let signal = signals.next().await;
            eprintln!(
                "walkrag serve: {signal}: stopping; running questions get {} s to finish \
                 (another signal quits at once)",
                drain.as_secs()
            );
            tokio::spawn(async move {
                signals.next().await;
                std::process::exit(130);
            });
        };
        walkrag_serve::serve(listener, app, shutdown, drain).await?;
        anyhow::Ok(())
    })?;
    // Runs cut at the deadline may still hold a thread in the model: do not wait for them.
    runtime.shutdown_background();
    eprintln!("walkrag serve: stopped");
    Ok(ExitCode::SUCCESS)
}

/// SIGINT (Ctrl-C) and SIGTERM (how systemd, Docker and Kubernetes stop a service), listened
/// for from [`StopSignals::listen`] on.
struct StopSignals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    /// Starts listening (inside the runtime).
    fn listen() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Self {
                interrupt: signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?,
                terminate: signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// Waits for the next signal and names it.
    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => "SIGINT",
                _ = self.terminate.recv() => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}

/// The index, its embedder and the chat model, loaded once; the index is loaded again when
/// its folder or database has a new generation (another `walkrag index` finished).
fn load(args: &EngineArgs) -> anyhow::Result<Arc<Engine>> {
    let store: Arc<dyn Store> = Arc::from(super::query::open_store(&args.index, &args.store)?);
    // Read before the load: an update finishing meanwhile moves it, and is loaded next.
    let generation = store.generation()?;
    let index = store.clone().load()?;
    let embedder = super::query::embedder_for(&index, args.embedder.as_deref(), &args.remote)?;
    let model = super::load_chat_model(args.model.spec())?;
    let answer_model = super::load_answer_model(args.reader_model.as_deref(), &args.model)?;
    let search = SearchParams {
        ef_search: None,
        exact: args.exact,
    };
    Ok(Arc::new(
        Engine::new(index, Arc::from(embedder), model, search)
            .answering_with(answer_model)
            .watching(store, generation, walkrag_serve::RELOAD_CHECK),
    ))
}

/// Serve the index as MCP tools over stdin and stdout, for desktop agents.
///
/// Tools: search (passages for a query), ask (an answer with citations; the walk's steps
/// come as progress notifications), outline (a document's sections and their ids) and show
/// (a section, chunk or document by id). Their results are the JSON of `walkrag serve`'s
/// routes. Logs go to stderr; stdout carries only the protocol. `walkrag serve` offers the
/// same tools over streamable HTTP at /mcp.
///
/// A client's configuration (Claude Desktop's claude_desktop_config.json, and others alike):
///   {"mcpServers": {"walkrag": {"command": "walkrag",
///     "args": ["mcp", "--index", "/path/to/.walkrag", "--model", "local:qwen2.5-coder-0.5b"]}}}
///
/// Example: walkrag mcp --index ~/notes/.walkrag
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct McpArgs {
    #[command(flatten)]
    engine: EngineArgs,
}

pub fn mcp(args: McpArgs) -> anyhow::Result<ExitCode> {
    let engine = load(&args.engine)?;
    let runtime = super::runtime()?;
    runtime.block_on(walkrag_serve::serve_mcp_stdio(engine, Config::default()))?;
    Ok(ExitCode::SUCCESS)
}
