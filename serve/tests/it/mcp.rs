//! MCP over streamable HTTP at `/mcp`, spoken as raw JSON-RPC (no MCP library on this side):
//! initialize, list the tools, call search, show and ask; the token guards it like every route.
//! serve/tests/mcp_client.py checks the same tools with the `mcp` Python SDK.

use serde_json::{json, Value};
use walkrag_serve::Config;

use crate::{assert_error, TestServer};

/// One MCP session over HTTP.
struct Session<'a> {
    server: &'a TestServer,
    id: Option<String>,
    token: Option<&'a str>,
    next: u64,
}

impl<'a> Session<'a> {
    fn new(server: &'a TestServer, token: Option<&'a str>) -> Self {
        Self {
            server,
            id: None,
            token,
            next: 1,
        }
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .server
            .client
            .post(format!("{}/mcp", self.server.url))
            .header("accept", "application/json, text/event-stream")
            .json(body);
        if let Some(id) = &self.id {
            request = request
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-06-18");
        }
        if let Some(token) = self.token {
            request = request.bearer_auth(token);
        }
        request
    }

    /// Sends a request and returns its JSON-RPC response (the last message that has an id),
    /// with every notification that came before it.
    async fn call(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        let id = self.next;
        self.next += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self.post(&body).send().await.unwrap();
        assert!(
            response.status().is_success(),
            "{method}: {}",
            response.status()
        );
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.id = Some(session.to_str().unwrap().to_string());
        }
        let text = response.text().await.unwrap();
        let messages: Vec<Value> = if text.trim_start().starts_with('{') {
            vec![serde_json::from_str(&text).unwrap()]
        } else {
            text.split("\n\n")
                .filter_map(|block| {
                    let data: Vec<&str> = block
                        .lines()
                        .filter_map(|l| l.strip_prefix("data:"))
                        .map(|l| l.trim_start())
                        .collect();
                    let data = data.join("\n");
                    (!data.is_empty()).then(|| serde_json::from_str(&data).unwrap())
                })
                .collect()
        };
        let (answers, notes): (Vec<Value>, Vec<Value>) =
            messages.into_iter().partition(|m| m["id"] == id);
        let answer = answers.into_iter().last().expect("a response");
        assert!(answer["error"].is_null(), "{method}: {answer}");
        (answer["result"].clone(), notes)
    }

    async fn start(&mut self) {
        let (init, _) = self
            .call(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "walkrag-tests", "version": "0"}}),
            )
            .await;
        assert_eq!(init["serverInfo"]["name"], "walkrag");
        assert!(init["capabilities"]["tools"].is_object());
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = self.post(&done).send().await.unwrap();
        assert!(response.status().is_success());
    }

    /// Calls `tool`; returns its text (JSON) and whether it is a tool error.
    async fn tool(&mut self, tool: &str, arguments: Value) -> (Value, bool, Vec<Value>) {
        let (result, notes) = self
            .call(
                "tools/call",
                json!({"name": tool, "arguments": arguments, "_meta": {"progressToken": 7}}),
            )
            .await;
        let text = result["content"][0]["text"].as_str().unwrap();
        (
            serde_json::from_str(text).unwrap(),
            result["isError"] == true,
            notes,
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_answer_over_streamable_http() {
    let server = TestServer::start(Config::default(), 10).await;
    let mut session = Session::new(&server, None);
    session.start().await;

    let (tools, _) = session.call("tools/list", json!({})).await;
    let mut names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["ask", "outline", "search", "show"]);

    let (hits, error, _) = session
        .tool("search", json!({"query": "cheese market", "k": 2}))
        .await;
    assert!(!error);
    assert_eq!(hits["hits"].as_array().unwrap().len(), 2);
    let section = hits["hits"][0]["section_id"].as_str().unwrap();
    let (shown, error, _) = session.tool("show", json!({"id": section})).await;
    assert!(!error);
    assert_eq!(shown["kind"], "section");
    let (missing, error, _) = session.tool("show", json!({"id": "0badc0de"})).await;
    assert!(error, "an unknown id is a tool error the model can read");
    assert_eq!(missing["error"]["code"], "not_found");

    let (answer, error, notes) = session
        .tool(
            "ask",
            json!({"question": "Who is the mayor of Velmora?", "strategy": "single", "k": 2}),
        )
        .await;
    assert!(!error, "{answer}");
    assert_eq!(answer["type"], "answer");
    assert_eq!(answer["text"], "Velmora's mayor is Ilsa Brandt.");
    let progress: Vec<&str> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .map(|n| n["params"]["message"].as_str().unwrap())
        .collect();
    assert_eq!(progress.first(), Some(&"cycle 1"), "{notes:?}");
    assert!(progress.iter().any(|m| m.starts_with("read 2 passages")));

    let (refused, error, _) = session
        .tool("ask", json!({"question": "q", "strategy": "telepathy"}))
        .await;
    assert!(error);
    assert_eq!(refused["error"]["code"], "unknown_strategy");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_guards_mcp_too() {
    let config = Config {
        token: Some("mcp-t0ken-0a1b2c3d".into()),
        ..Config::default()
    };
    let server = TestServer::start(config, 0).await;
    let refused = Session::new(&server, None)
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
        .send()
        .await
        .unwrap();
    assert_error(refused, 401, "unauthorized").await;
    let mut session = Session::new(&server, Some("mcp-t0ken-0a1b2c3d"));
    session.start().await;
    let (outline, error, _) = session.tool("outline", json!({"doc": "d1"})).await;
    assert!(!error, "{outline}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_check_arguments_as_the_routes_do() {
    let server = TestServer::start(Config::default(), 10).await;
    let mut session = Session::new(&server, None);
    session.start().await;

    // The schemas carry the limits the server enforces.
    let (tools, _) = session.call("tools/list", json!({})).await;
    let schema = |name: &str| -> Value {
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["inputSchema"]
            .clone()
    };
    let search = schema("search");
    assert_eq!(search["properties"]["k"]["minimum"], 1);
    assert_eq!(
        search["properties"]["k"]["maximum"],
        walkrag_serve::MAX_SEARCH_K
    );
    assert_eq!(search["additionalProperties"], false);
    let ask = schema("ask");
    assert_eq!(ask["properties"]["k"]["minimum"], 1);
    assert_eq!(ask["properties"]["k"]["maximum"], walkrag_serve::MAX_K);
    assert_eq!(ask["properties"]["max_cycles"]["minimum"], 1);
    assert_eq!(
        ask["properties"]["max_cycles"]["maximum"],
        walkrag_serve::MAX_CYCLES
    );
    let strategies: Vec<&Value> = ask["properties"]["strategy"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    for name in ["walk", "single", "links", "roam", "toc", "sections", "docs"] {
        assert!(strategies.contains(&&json!(name)), "{name}: {ask}");
    }
    assert!(
        !strategies.contains(&&json!("actions")),
        "not served: {ask}"
    );

    // Unknown arguments, wrong types, missing ones and values out of range: the error object.
    for (tool, arguments) in [
        ("search", json!({"query": "cheese", "colour": "red"})),
        ("search", json!({"query": "cheese", "k": "three"})),
        ("search", json!({"query": "cheese", "k": 0})),
        ("search", json!({})),
        ("ask", json!({"question": "q", "k": 51})),
        ("ask", json!({"question": "q", "max_cycles": 21})),
        ("ask", json!({"question": "q", "temperature": 0.2})),
        ("show", json!({"id": 7})),
        ("outline", json!({"document": "d1"})),
    ] {
        let (refused, error, _) = session.tool(tool, arguments.clone()).await;
        assert!(error, "{tool} {arguments}");
        assert_eq!(
            refused["error"]["code"], "invalid_request",
            "{tool} {arguments}: {refused}"
        );
        assert!(!refused["error"]["message"].as_str().unwrap().is_empty());
    }
    assert_eq!(server.health().await["completed"], 0, "no question ran");

    // Closing the session: 204, as the SDKs expect.
    let closed = server
        .client
        .delete(format!("{}/mcp", server.url))
        .header("mcp-session-id", session.id.clone().unwrap())
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 204);
}
