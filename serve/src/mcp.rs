//! The same engine as Model Context Protocol tools (`search`, `ask`, `outline`, `show`), with
//! the official Rust SDK: over stdio for desktop clients (`walkrag mcp`) and over streamable
//! HTTP at `/mcp` of `walkrag serve`. The tools answer the JSON the HTTP routes answer; `ask`
//! shares their queue and reports the walk as progress notifications while it runs.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ProgressNotificationParam, RequestMetaObject,
    ServerCapabilities, ServerConfig,
};
use rmcp::{tool, tool_handler, tool_router, Peer, RoleServer, ServerHandler};
use serde::Deserialize;
use serde_json::Value;

use crate::ask::{self, AskRequest};
use crate::error::ApiError;
use crate::routes;
use crate::Shared;

/// The MCP server: one per session, all sharing the engine and the queue.
#[derive(Clone)]
pub struct Tools {
    state: Shared,
}

#[derive(Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SearchArgs {
    /// What to look for, in words.
    query: String,
    /// How many passages (default 10, at most 100).
    #[serde(default)]
    k: Option<usize>,
}

#[derive(Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct AskArgs {
    /// The question.
    question: String,
    /// walk (default: reads, notes facts, searches again), single (one search), roam, toc or docs.
    #[serde(default)]
    strategy: Option<String>,
    /// Passages retrieved per search.
    #[serde(default)]
    k: Option<usize>,
    /// Most retrieval cycles.
    #[serde(default)]
    max_cycles: Option<usize>,
}

#[derive(Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct OutlineArgs {
    /// A document id; leave out for every document.
    #[serde(default)]
    doc: Option<String>,
}

#[derive(Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ShowArgs {
    /// A section id (8 hex digits), a chunk id (section.N) or a document id.
    id: String,
}

/// A tool's JSON, or its error (`{"error": {"code", "message"}}`) as a tool-level error the
/// calling model can read.
fn result(json: Result<String, ApiError>) -> CallToolResult {
    match json {
        Ok(json) => CallToolResult::success(vec![ContentBlock::text(json)]),
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_json())]),
    }
}

#[tool_router]
impl Tools {
    pub(crate) fn new(state: Shared) -> Self {
        Self { state }
    }

    #[tool(
        description = "Search the indexed documents: the passages nearest to the query, best \
                       first, each with its chunk id, document, section path and text."
    )]
    async fn search(&self, Parameters(args): Parameters<SearchArgs>) -> CallToolResult {
        let state = self.state.clone();
        let json =
            tokio::task::spawn_blocking(move || routes::search_json(&state, &args.query, args.k))
                .await
                .unwrap_or_else(|e| Err(ApiError::internal(format!("the search failed: {e}"))));
        result(json)
    }

    #[tool(
        description = "Answer a question from the indexed documents, citing passage ids. The \
                       walk strategy reads passages, notes facts and where to look next, and \
                       searches again; progress notifications report each step. Returns the \
                       answer object (answer, found, citations, ranked, termination, usage)."
    )]
    async fn ask(
        &self,
        Parameters(args): Parameters<AskArgs>,
        meta: RequestMetaObject,
        client: Peer<RoleServer>,
    ) -> CallToolResult {
        let request = AskRequest {
            question: args.question,
            strategy: args.strategy,
            k: args.k,
            max_cycles: args.max_cycles,
        };
        let started = match ask::start(&self.state, request) {
            Ok(started) => started,
            Err(error) => return result(Err(error)),
        };
        // Progress goes out in order from a task of its own; the run never waits for it.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let forward = meta.get_progress_token().map(|token| {
            tokio::spawn(async move {
                let mut step = 0.0;
                while let Some(message) = rx.recv().await {
                    step += 1.0;
                    let param =
                        ProgressNotificationParam::new(token.clone(), step).with_message(message);
                    if client.notify_progress(param).await.is_err() {
                        break;
                    }
                }
            })
        });
        let answer = started
            .answer(|event| {
                if let Some(message) = progress_message(event) {
                    let _ = tx.send(message);
                }
            })
            .await;
        drop(tx);
        if let Some(forward) = forward {
            let _ = forward.await;
        }
        result(answer)
    }

    #[tool(
        description = "The outline of one document (or of every document): its sections with \
                       their ids and the start of their text. Open a section with show."
    )]
    async fn outline(&self, Parameters(args): Parameters<OutlineArgs>) -> CallToolResult {
        result(routes::outline_json(&self.state, args.doc.as_deref()))
    }

    #[tool(
        description = "The text of a section (with its subsections), a chunk or a whole \
                       document, by the id search, outline or an answer's citation gave."
    )]
    async fn show(&self, Parameters(args): Parameters<ShowArgs>) -> CallToolResult {
        result(routes::show_json(&self.state, &args.id))
    }
}

#[tool_handler]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("walkrag", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "walkrag answers questions about the indexed documents. Use search for \
                 passages, outline and show to read sections, and ask for an answer with \
                 citations (it may take a while: the model reads and searches in cycles).",
            )
    }
}

/// One line for a progress notification: what a step of the run found (tokens of the answer
/// are left out: too many, and the answer comes whole at the end).
fn progress_message(event: &str) -> Option<String> {
    let event: Value = serde_json::from_str(event).ok()?;
    let text = |key: &str| event[key].as_str().unwrap_or_default().to_string();
    Some(match event["type"].as_str()? {
        "queued" => format!("waiting for the model: place {} in line", event["position"]),
        "cycle" => format!("cycle {}", event["cycle"]),
        "retrieved" => format!(
            "read {} passages for: {}",
            event["chunks"].as_array().map_or(0, Vec::len),
            text("query")
        ),
        "fact" => format!("fact: {}", text("fact")),
        "next_source" => format!("look for: {}", text("next_source")),
        "note" => format!("note: {}", text("message")),
        _ => return None,
    })
}

/// Serves the tools over stdin and stdout until the client closes them.
pub async fn serve_stdio(state: Shared) -> Result<(), crate::ServeError> {
    use rmcp::ServiceExt;
    let running = Tools::new(state)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| crate::ServeError::Mcp(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| crate::ServeError::Mcp(e.to_string()))?;
    Ok(())
}
