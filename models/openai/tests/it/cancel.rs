//! Dropping a stream hangs up at once, whether or not the answer has started.

use std::time::Duration;

use walkrag_core::chat::next;
use walkrag_core::ChatModel;

use crate::server::{self, chunk, sse_head, Server, Step};
use crate::{config, hello, model, text};

#[tokio::test]
async fn dropping_the_stream_mid_answer_closes_the_connection() {
    let server = Server::start(vec![vec![
        sse_head(),
        chunk(&server::text("Once")),
        Step::AwaitClose,
    ]])
    .await;
    let model = model(config(&server));
    let mut stream = model.stream(hello());

    let first = tokio::time::timeout(Duration::from_secs(5), next(&mut stream))
        .await
        .unwrap();
    assert_eq!(first, Some(text("Once")));
    drop(stream);

    assert!(server.saw_close_within(Duration::from_secs(2)).await);
}

#[tokio::test]
async fn dropping_the_stream_before_the_headers_closes_the_connection() {
    let server = Server::start(vec![vec![Step::AwaitClose]]).await;
    let model = model(config(&server));
    let mut stream = model.stream(hello());

    let waited = tokio::time::timeout(Duration::from_millis(200), next(&mut stream)).await;
    assert!(waited.is_err(), "no answer yet");
    drop(stream);

    assert!(server.saw_close_within(Duration::from_secs(2)).await);
    assert_eq!(server.requests().len(), 1);
}
