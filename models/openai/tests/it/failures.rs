//! Failures the caller must see, typed by what it can do about them.

use std::time::Duration;

use walkrag_core::ChatError;

use crate::server::{self, chunk, finish, reply, sse, sse_head, Server, Step, DONE};
use crate::{collect, config, hello, model, text};

fn ok() -> Vec<Step> {
    sse(&[&server::text("ok"), &finish("stop"), DONE])
}

#[tokio::test]
async fn a_cut_after_deltas_ends_with_a_transient_error_and_no_retry() {
    let cut = vec![
        sse_head(),
        chunk(&server::text("The answer ")),
        Step::Pause(Duration::from_millis(5)),
        chunk(&server::text("is")),
    ];
    let server = Server::start(vec![cut, ok()]).await;

    let items = collect(&model(config(&server)), hello()).await;

    assert_eq!(items.len(), 3, "{items:?}");
    assert_eq!(items[..2], [text("The answer "), text("is")]);
    let Err(ChatError::Transient {
        message,
        retry_after: None,
    }) = &items[2]
    else {
        panic!("{items:?}")
    };
    assert!(
        message.starts_with("stream cut: the connection to http://127.0.0.1:"),
        "{message}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn malformed_json_is_permanent_and_quoted() {
    let broken = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}\n\n";
    let after_a_delta = Server::start(vec![sse(&[&server::text("ok "), broken, DONE]), ok()]).await;
    let first = Server::start(vec![sse(&[broken, DONE]), ok()]).await;

    let items = collect(&model(config(&after_a_delta)), hello()).await;
    let at_once = collect(&model(config(&first)), hello()).await;

    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0], text("ok "));
    for outcome in [&items[1], &at_once[0]] {
        let Err(ChatError::Permanent(message)) = outcome else {
            panic!("{outcome:?}")
        };
        assert!(
            message.starts_with("the server sent malformed stream data"),
            "{message}"
        );
        assert!(
            message.ends_with(r#": {"choices":[{"delta":{"content":"x"}"#),
            "{message}"
        );
    }
    assert_eq!(at_once.len(), 1);
    assert_eq!(
        after_a_delta.requests().len() + first.requests().len(),
        2,
        "no retries"
    );
}

#[tokio::test]
async fn an_error_event_mid_stream_ends_it() {
    let failure = r#"data: {"error":{"message":"model crashed","type":"server_error"}}"#;
    let server = Server::start(vec![
        sse(&[&server::text("so"), &format!("{failure}\n\n")]),
        ok(),
    ])
    .await;

    let items = collect(&model(config(&server)), hello()).await;

    let crashed = ChatError::Transient {
        message: "the server failed mid-stream: model crashed".into(),
        retry_after: None,
    };
    assert_eq!(items, [text("so"), Err(crashed)]);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn context_too_long_carries_the_numbers() {
    let vllm = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4488 in the messages, 512 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#;
    let openai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;
    let cases = [
        (vllm, 5000, 4096),
        (openai, 130_412, 128_000),
        (llama, 9000, 8192),
    ];
    for (body, needed, limit) in cases {
        let server = Server::start(vec![reply(400, &[], body), ok()]).await;

        let items = collect(&model(config(&server)), hello()).await;

        assert_eq!(items, [Err(ChatError::ContextTooLong { needed, limit })]);
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn not_found_names_the_url_and_the_model() {
    let body =
        r#"{"error":{"message":"The model `test-model` does not exist","code":"model_not_found"}}"#;
    let server = Server::start(vec![reply(404, &[], body)]).await;

    let items = collect(&model(config(&server)), hello()).await;

    let expected = format!(
        "{}/chat/completions answered 404 for model `test-model` (The model `test-model` does \
         not exist); check OPENAI_BASE_URL (most servers want it to end in /v1) and the model name",
        server.base_url
    );
    assert_eq!(items, [Err(ChatError::Permanent(expected))]);
}

#[tokio::test]
async fn other_client_errors_carry_the_servers_message() {
    let body =
        r#"{"error":{"message":"'temperature' must be at most 2","type":"invalid_request_error"}}"#;
    let server = Server::start(vec![reply(400, &[], body), ok()]).await;

    let items = collect(&model(config(&server)), hello()).await;

    let expected = "the server answered 400 Bad Request: 'temperature' must be at most 2";
    assert_eq!(items, [Err(ChatError::Permanent(expected.into()))]);
    assert_eq!(server.requests().len(), 1);
}
