//! The same engine as Model Context Protocol tools (`search`, `ask`, `outline`, `show`), with
//! the official Rust SDK: over stdio for desktop clients (`walkrag mcp`) and over streamable
//! HTTP at `/mcp` of `walkrag serve`. The tools answer the JSON the HTTP routes answer; `ask`
//! shares their queue and reports the walk as progress notifications while it runs.
//!
//! Arguments are checked as the HTTP routes check bodies: the schemas carry the limits the
//! server enforces (from the same constants), unknown arguments are refused, and a refusal is
//! a tool error whose text is the error object `{"error": {"code", "message"}}`.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ProgressNotificationParam, RequestMetaObject,
    ServerCapabilities, ServerConfig,
};
use rmcp::schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use rmcp::{tool, tool_handler, tool_router, Peer, RoleServer, ServerHandler};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::ask::{self, AskRequest, MAX_CYCLES, MAX_K};
use crate::error::ApiError;
use crate::routes::{self, MAX_SEARCH_K};
use crate::Shared;

/// A tool's arguments, read by the tool itself: a wrong type, a missing or an unknown
/// argument becomes the `invalid_request` error object, as over HTTP, instead of the SDK's
/// plain-text protocol error. Its schema is `T`'s.
pub struct Checked<T>(Result<T, ApiError>);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Checked<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(Checked(
            serde_json::from_value(value).map_err(|e| ApiError::invalid(e.to_string())),
        ))
    }
}

impl<T: JsonSchema> JsonSchema for Checked<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

/// The strategies a question may name: those this server runs (`actions` is not served).
fn served_strategies() -> Vec<&'static str> {
    let options = walkrag_walker::Options::default();
    walkrag_walker::AVAILABLE
        .into_iter()
        .filter(|name| walkrag_walker::by_name(name, &options).is_ok())
        .collect()
}

fn strategy_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": ["string", "null"],
        "enum": served_strategies().into_iter().map(Some).chain([None]).collect::<Vec<_>>(),
        "description": "walk (default: reads, notes facts, searches again), single (one search), \
                        links, roam, toc, sections or docs",
    })
}

/// The MCP server: one per session, all sharing the engine and the queue.
#[derive(Clone)]
pub struct Tools {
    state: Shared,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for, in words.
    query: String,
    /// How many passages (default 10).
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_SEARCH_K))]
    k: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct AskArgs {
    /// The question.
    question: String,
    #[serde(default)]
    #[schemars(schema_with = "strategy_schema")]
    strategy: Option<String>,
    /// Passages retrieved per search.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_K))]
    k: Option<usize>,
    /// Most retrieval cycles.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_CYCLES))]
    max_cycles: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct OutlineArgs {
    /// A document id; leave out for every document.
    #[serde(default)]
    doc: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
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
    async fn search(
        &self,
        Parameters(Checked(args)): Parameters<Checked<SearchArgs>>,
    ) -> CallToolResult {
        let args = match args {
            Ok(args) => args,
            Err(error) => return result(Err(error)),
        };
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
        Parameters(Checked(args)): Parameters<Checked<AskArgs>>,
        meta: RequestMetaObject,
        client: Peer<RoleServer>,
    ) -> CallToolResult {
        let args = match args {
            Ok(args) => args,
            Err(error) => return result(Err(error)),
        };
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
    async fn outline(
        &self,
        Parameters(Checked(args)): Parameters<Checked<OutlineArgs>>,
    ) -> CallToolResult {
        result(args.and_then(|args| routes::outline_json(&self.state, args.doc.as_deref())))
    }

    #[tool(
        description = "The text of a section (with its subsections), a chunk or a whole \
                       document, by the id search, outline or an answer's citation gave."
    )]
    async fn show(
        &self,
        Parameters(Checked(args)): Parameters<Checked<ShowArgs>>,
    ) -> CallToolResult {
        result(args.and_then(|args| routes::show_json(&self.state, &args.id)))
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

/// A closed HTTP session answers `204 No Content`: the MCP SDKs expect 200 or 204 where the
/// Rust SDK's service says `202 Accepted`, though the session is already gone.
pub(crate) async fn session_closed(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let closing = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if closing && response.status() == axum::http::StatusCode::ACCEPTED {
        *response.status_mut() = axum::http::StatusCode::NO_CONTENT;
    }
    response
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
