//! Transient failures before the first delta are retried; the caller sees only the outcome.

use std::time::{Duration, Instant};

use walkrag_core::{ChatError, Delta, FinishReason, Usage};
use walkrag_openai::OpenAiConfig;

use crate::server::{self, chunk, finish, reply, sse, sse_head, Server, Step, DONE};
use crate::{collect, config, hello, model, text};

fn ok(content: &str) -> Vec<Step> {
    sse(&[&server::text(content), &finish("stop"), DONE])
}

fn done_after_one_delta() -> Result<Delta, ChatError> {
    Ok(Delta::Done {
        usage: Usage {
            prompt_tokens: 0,
            completion_tokens: 1,
            forced_tokens: 0,
        },
        finish: FinishReason::Stop,
    })
}

#[tokio::test]
async fn a_429_is_retried_after_the_wait_the_server_asks_for() {
    let limited = r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#;
    let server = Server::start(vec![
        reply(429, &[("Retry-After", "1")], limited),
        ok("hello"),
    ])
    .await;

    let start = Instant::now();
    let items = collect(&model(config(&server)), hello()).await;
    let waited = start.elapsed();

    assert_eq!(items, [text("hello"), done_after_one_delta()]);
    assert_eq!(server.requests().len(), 2);
    assert!(
        waited >= Duration::from_millis(950),
        "retried after {waited:?}"
    );
    assert!(
        waited < Duration::from_millis(2500),
        "retried after {waited:?}"
    );
}

#[tokio::test]
async fn a_500_is_retried() {
    let server = Server::start(vec![reply(500, &[], "Internal Server Error"), ok("fine")]).await;

    let items = collect(&model(config(&server)), hello()).await;

    assert_eq!(items, [text("fine"), done_after_one_delta()]);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_stream_cut_before_any_delta_is_retried() {
    let cut = vec![sse_head(), chunk(": warming up\n\n")];
    let server = Server::start(vec![cut, ok("again")]).await;

    let items = collect(&model(config(&server)), hello()).await;

    assert_eq!(items, [text("again"), done_after_one_delta()]);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn exhausted_retries_return_the_last_transient_error() {
    let slow_down = r#"{"error":{"message":"slow down"}}"#;
    let server = Server::start(vec![
        reply(500, &[], "oops"),
        reply(503, &[], "busy"),
        reply(429, &[("Retry-After", "7")], slow_down),
        ok("never"),
    ])
    .await;

    let start = Instant::now();
    let items = collect(&model(config(&server)), hello()).await;

    let last = ChatError::Transient {
        message: "the server answered 429 Too Many Requests: slow down".into(),
        retry_after: Some(Duration::from_secs(7)),
    };
    assert_eq!(items, [Err(last)]);
    assert_eq!(
        server.requests().len(),
        3,
        "one try and max_retries = 2 retries"
    );
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "the last Retry-After is not waited for"
    );
}

#[tokio::test]
async fn a_retry_after_beyond_the_longest_delay_goes_to_the_caller() {
    let server = Server::start(vec![reply(503, &[("Retry-After", "120")], ""), ok("no")]).await;

    let items = collect(&model(config(&server)), hello()).await;

    let [Err(ChatError::Transient { retry_after, .. })] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!(*retry_after, Some(Duration::from_secs(120)));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn no_retries_when_max_retries_is_zero() {
    let server = Server::start(vec![reply(502, &[], "bad gateway"), ok("no")]).await;
    let config = OpenAiConfig {
        max_retries: 0,
        ..config(&server)
    };

    let items = collect(&model(config), hello()).await;

    assert!(
        matches!(items.as_slice(), [Err(ChatError::Transient { .. })]),
        "{items:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_transient() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let config = OpenAiConfig {
        max_retries: 2,
        retry_base_delay: Duration::from_millis(10),
        ..OpenAiConfig::new(base_url, "test-model")
    };

    let start = Instant::now();
    let items = collect(&model(config), hello()).await;

    let [Err(ChatError::Transient { message, .. })] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert!(
        message.starts_with("could not connect to http://127.0.0.1:"),
        "{message}"
    );
    assert!(start.elapsed() < Duration::from_secs(2));
}
