//! `walkrag serve` and `walkrag mcp`: the index and the models behind an HTTP API and MCP
//! tools (the `walkrag-serve` crate).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use walkrag_models::{ModelSpec, DEFAULT_MODEL};
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
/// It listens on 127.0.0.1 only unless --addr says otherwise, which needs --token: every
/// request must then carry `Authorization: Bearer TOKEN`. The token is never logged.
///
/// Examples:
///   walkrag serve --model local:qwen2.5-coder-0.5b
///   curl -N localhost:8080/v1/ask -d '{"question": "Who chairs the board?"}'
///   curl localhost:8080/v1/ask -H 'Accept: application/json' \
///        -d '{"question": "Who chairs the board?", "strategy": "single", "k": 3}'
///   curl localhost:8080/v1/search -d '{"query": "board members", "k": 5}'
///   WALKRAG_TOKEN=s3cret walkrag serve --addr 0.0.0.0:8080
///   curl -N -H 'Authorization: Bearer s3cret' host:8080/v1/ask -d '{"question": "..."}'
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
    /// Chat model: local:NAME, local:PATH.gguf or openai:MODEL.
    #[arg(long, default_value = DEFAULT_MODEL)]
    model: String,
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
    let remote = matches!(ModelSpec::parse(&args.engine.model)?, ModelSpec::OpenAi(_));
    let config = Config {
        token: args.token,
        cors: args.cors,
        slots: args.parallel.unwrap_or(if remote { 4 } else { 1 }).max(1),
        queue: args.queue,
        max_body: args.max_body,
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
        eprintln!("walkrag serve: listening on http://{addr} (Ctrl-C stops)");
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
            eprintln!("walkrag serve: stopping after the requests under way (Ctrl-C again quits)");
            tokio::spawn(async {
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(130);
                }
            });
        };
        walkrag_serve::serve(listener, app, shutdown).await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The index, its embedder and the chat model, loaded once.
fn load(args: &EngineArgs) -> anyhow::Result<Arc<Engine>> {
    let (index, embedder) = super::query::open_with_embedder(
        &args.index,
        &args.store,
        args.embedder.as_deref(),
        &args.remote,
    )?;
    let model = super::load_chat_model(&args.model)?;
    Ok(Arc::new(Engine {
        index,
        embedder: Arc::from(embedder),
        model,
        search: SearchParams {
            ef_search: None,
            exact: args.exact,
        },
    }))
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
