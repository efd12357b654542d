//! What the server receives.

use serde_json::json;
use walkrag_core::{ChatRequest, Message, Sampling, ToolDef};
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
