//! Stopping (what SIGTERM and Ctrl-C do in `walkrag serve`): no new connections, running
//! answers finish, and past the drain deadline the server ends anyway.

use std::time::{Duration, Instant};

use serde_json::json;
use walkrag_serve::Config;

use crate::{Events, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_server_lets_running_answers_finish() {
    let mut server = TestServer::start(Config::default(), 0).await;
    let mut events = Events::new(
        server
            .ask(json!({"question": "Who is the mayor of Velmora?", "strategy": "single"}))
            .await,
    );
    events.until("retrieved").await;
    server.until("the generation", |h| h["running"] == 1).await;

    server.stop();
    // No new connection is accepted (a fresh client: the other's connection is kept alive).
    let mut refused = false;
    for _ in 0..200 {
        if reqwest::Client::new()
            .get(format!("{}/healthz", server.url))
            .send()
            .await
            .is_err()
        {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(refused, "a stopping server takes no new connections");
    let served = server.served.take().unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!served.is_finished(), "it waits for the running answer");

    server.model.gate.add_permits(1);
    let rest = events.until("answer").await;
    assert_eq!(
        rest.last().unwrap()["text"],
        "Velmora's mayor is Ilsa Brandt."
    );
    assert!(events.next().await.is_none());
    tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("the server ends once its answers are out")
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_drain_deadline_the_server_ends_anyway() {
    let config = Config {
        drain: Duration::from_millis(300),
        ..Config::default()
    };
    let mut server = TestServer::start(config, 0).await;
    let mut events = Events::new(
        server
            .ask(json!({"question": "Who is the mayor of Velmora?", "strategy": "single"}))
            .await,
    );
    events.until("retrieved").await;
    server.until("the generation", |h| h["running"] == 1).await;
    let stopped = Instant::now();
    server.stop();
    let served = server.served.take().unwrap();
    tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("the deadline ends the server though the model never answers")
        .unwrap()
        .unwrap();
    assert!(stopped.elapsed() >= Duration::from_millis(300));
}
