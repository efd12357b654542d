//! What the server receives.

use serde_json::json;
use walkrag_core::{ChatRequest, Constraint, Delta, Message, Sampling, ToolDef};
use walkrag_openai::{ApiKey, OpenAiConfig};

use crate::server::{self, finish, sse, Server, Step, DONE};
use crate::{collect, config, hello, model};

fn ok() -> Vec<Step> {
    sse(&[&server::text("ok"), &finish("stop"), DONE])
}

#[tokio::test]
async fn the_request_carries_model_messages_sampling_tools_and_the_key() {
    let server = Server::start(vec![ok()]).await;
    let config = OpenAiConfig {
        api_key: Some(ApiKey::new("sk-test-key")),
        ..config(&server)
    };
    let request = ChatRequest {
        messages: vec![
            Message::system("Answer from the sources."),
            Message::user("What is SSE?"),
        ],
        sampling: Sampling {
            temperature: 0.2,
            top_p: 0.95,
            seed: 42,
            max_tokens: 128,
            stop: vec!["</answer>".into()],
        },
        json: true,
        tools: vec![ToolDef {
            name: "search".into(),
            description: "Searches the index.".into(),
            parameters: json!({"type": "object", "properties": {"query": {"type": "string"}}}),
        }],
        // The chat API has no way to force an opening: it is not sent.
        openings: vec!["{\"answer\"".into()],
        constraint: None,
    };

    let items = collect(&model(config), request).await;

    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let [received] = <[_; 1]>::try_from(server.requests()).unwrap();
    assert_eq!(
        (received.method.as_str(), received.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(received.header("authorization"), Some("Bearer sk-test-key"));
    assert_eq!(received.header("accept"), Some("text/event-stream"));
    assert_eq!(received.header("content-type"), Some("application/json"));
    assert_eq!(
        received.json(),
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "Answer from the sources."},
                {"role": "user", "content": "What is SSE?"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.2,
            "top_p": 0.95,
            "seed": 42,
            "max_tokens": 128,
            "stop": ["</answer>"],
            "response_format": {"type": "json_object"},
            "tools": [{"type": "function", "function": {
                "name": "search",
                "description": "Searches the index.",
                "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
            }}],
        })
    );
}

#[tokio::test]
async fn without_a_key_no_authorization_is_sent() {
    let server = Server::start(vec![ok()]).await;
    let config = OpenAiConfig {
        base_url: format!("{}/", server.base_url),
        ..config(&server)
    };

    let items = collect(&model(config), hello()).await;

    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let [received] = <[_; 1]>::try_from(server.requests()).unwrap();
    assert_eq!(
        received.path, "/v1/chat/completions",
        "a trailing slash is dropped"
    );
    assert_eq!(received.header("authorization"), None);
}

fn schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"source": {"enum": ["0a1b2c3d", "4e5f6a7b"]}},
        "required": ["source"],
        "additionalProperties": false
    })
}

fn constrained(constraint: Constraint) -> ChatRequest {
    ChatRequest {
        constraint: Some(constraint),
        ..hello()
    }
}

fn texts(items: &[Result<Delta, walkrag_core::ChatError>]) -> Vec<&Delta> {
    items.iter().map(|i| i.as_ref().unwrap()).collect()
}

#[tokio::test]
async fn a_json_schema_goes_out_as_a_strict_response_format() {
    let server = Server::start(vec![ok()]).await;
    let items = collect(
        &model(config(&server)),
        constrained(Constraint::JsonSchema(schema())),
    )
    .await;
    assert!(
        !texts(&items)
            .iter()
            .any(|d| matches!(d, Delta::Unconstrained { .. })),
        "{items:?}"
    );
    let [received] = <[_; 1]>::try_from(server.requests()).unwrap();
    assert_eq!(
        received.json()["response_format"],
        json!({
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": schema(), "strict": true}
        })
    );
}

#[tokio::test]
async fn a_server_that_refuses_the_schema_is_asked_once_more_without_it() {
    let refusal = r#"{"error": {"message": "Unrecognized request argument supplied: response_format.json_schema", "type": "invalid_request_error"}}"#;
    let server = Server::start(vec![
        server::reply(400, &[("Content-Type", "application/json")], refusal),
        ok(),
    ])
    .await;
    let mut request = constrained(Constraint::JsonSchema(schema()));
    request.json = true;
    let items = collect(&model(config(&server)), request).await;
    let deltas = texts(&items);
    // The caller is told first, then the text comes.
    match deltas[0] {
        Delta::Unconstrained { reason } => assert!(
            reason.contains("refused the JSON Schema") && reason.contains("response_format"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(deltas[1], &Delta::Text { text: "ok".into() });
    let [first, second] = <[_; 2]>::try_from(server.requests()).unwrap();
    assert_eq!(first.json()["response_format"]["type"], "json_schema");
    // JSON mode, asked for beside the schema, stays.
    assert_eq!(
        second.json()["response_format"],
        json!({"type": "json_object"})
    );
}

#[tokio::test]
async fn a_grammar_cannot_be_sent_and_the_caller_is_told() {
    let server = Server::start(vec![ok()]).await;
    let items = collect(
        &model(config(&server)),
        constrained(Constraint::Lark("start: \"yes\" | \"no\"".into())),
    )
    .await;
    let deltas = texts(&items);
    assert!(
        matches!(deltas[0], Delta::Unconstrained { reason } if reason.contains("lark")),
        "{deltas:?}"
    );
    let [received] = <[_; 1]>::try_from(server.requests()).unwrap();
    assert!(received.json().get("response_format").is_none());
}
