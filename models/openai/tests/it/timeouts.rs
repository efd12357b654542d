//! A silent server is given up on after `idle_timeout`, with a transient error.

use std::time::{Duration, Instant};

use walkrag_core::ChatError;
use walkrag_openai::OpenAiConfig;

use crate::server::{self, chunk, end, finish, sse_head, Server, Step};
use crate::{collect, config, hello, model, text};

const IDLE: Duration = Duration::from_millis(300);

#[tokio::test]
async fn response_headers_that_never_come_time_out() {
    let server = Server::start(vec![vec![Step::AwaitClose], vec![Step::AwaitClose]]).await;
    let config = OpenAiConfig {
        idle_timeout: IDLE,
        max_retries: 1,
        ..config(&server)
    };

    let start = Instant::now();
    let items = collect(&model(config), hello()).await;
    let took = start.elapsed();

    let [Err(ChatError::Transient { message, .. })] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert!(
        message.starts_with("timed out: no response headers from"),
        "{message}"
    );
    assert_eq!(
        server.requests().len(),
        2,
        "a timeout before any delta is retried once"
    );
    assert!(
        took >= IDLE * 2 && took < Duration::from_secs(2),
        "gave up after {took:?}"
    );
    assert!(
        server.saw_close_within(Duration::from_secs(1)).await,
        "the client hung up"
    );
}

#[tokio::test]
async fn a_pause_between_chunks_times_out_after_the_deltas() {
    let stalled = vec![
        sse_head(),
        chunk(&server::text("Hi")),
        Step::Pause(Duration::from_secs(5)),
        chunk(&finish("stop")),
        end(),
    ];
    let server = Server::start(vec![stalled]).await;
    let config = OpenAiConfig {
        idle_timeout: IDLE,
        ..config(&server)
    };

    let start = Instant::now();
    let items = collect(&model(config), hello()).await;
    let took = start.elapsed();

    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0], text("Hi"));
    let Err(ChatError::Transient { message, .. }) = &items[1] else {
        panic!("{items:?}")
    };
    assert!(message.starts_with("timed out: no data from"), "{message}");
    assert!(
        took >= IDLE && took < Duration::from_millis(1500),
        "gave up after {took:?}"
    );
    assert_eq!(server.requests().len(), 1);
}
