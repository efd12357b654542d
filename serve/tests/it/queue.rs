//! One generation at a time: a second question waits and hears its place, a third is refused
//! with 429 and `Retry-After`, and a client that leaves cancels its run (its generation is
//! dropped) and frees the slot.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;
use walkrag_serve::Config;

use crate::{assert_error, Events, TestServer};

fn one_slot_one_waiting() -> Config {
    Config {
        slots: 1,
        queue: 1,
        keep_alive: Duration::from_millis(100),
        ..Config::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_question_waits_its_turn_and_a_third_gets_429() {
    let server = TestServer::start(one_slot_one_waiting(), 0).await;
    let question = json!({"question": "Who is the mayor of Velmora?", "strategy": "single"});

    // The first run retrieves, then its generation waits at the closed gate.
    let mut first = Events::new(server.ask(question.clone()).await);
    first.until("retrieved").await;
    server
        .until("the first generation", |h| h["running"] == 1)
        .await;

    let mut second = Events::new(server.ask(question.clone()).await);
    assert_eq!(
        second.next().await.unwrap(),
        json!({"type": "queued", "position": 1})
    );
    assert_eq!(server.health().await["waiting"], 1);

    let third = server.ask(question.clone()).await;
    let retry_after: u64 = third.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry_after >= 1);
    assert_error(third, 429, "queue_full").await;

    // Open the gate once: the first answers, then the second runs (and waits at the gate).
    server.model.gate.add_permits(1);
    let rest = first.until("answer").await;
    assert_eq!(
        rest.last().unwrap()["text"],
        "Velmora's mayor is Ilsa Brandt."
    );
    assert!(first.next().await.is_none(), "the answer ends the stream");
    let started = second.until("retrieved").await;
    assert_eq!(
        started[0]["type"], "cycle",
        "no second queued event: {started:?}"
    );
    server.model.gate.add_permits(1);
    second.until("answer").await;

    let health = server
        .until("both runs done", |h| h["completed"] == 2)
        .await;
    assert_eq!(health["running"], 0);
    assert_eq!(health["waiting"], 0);
    assert_eq!(health["cancelled"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_cancels_its_run_and_frees_the_slot() {
    let server = TestServer::start(one_slot_one_waiting(), 0).await;
    let question = json!({"question": "Who is the mayor of Velmora?", "strategy": "single"});

    let mut first = Events::new(server.ask(question.clone()).await);
    first.until("retrieved").await;
    server
        .until("the generation starts", |h| h["running"] == 1)
        .await;
    assert_eq!(server.model.started.load(Ordering::SeqCst), 1);
    drop(first);

    let health = server
        .until("the run is cancelled", |h| {
            h["cancelled"] == 1 && h["running"] == 0
        })
        .await;
    assert_eq!(health["completed"], 0);
    assert_eq!(
        server.model.dropped.load(Ordering::SeqCst),
        1,
        "the generation was dropped, not finished"
    );

    // A waiting client that leaves gives up its place too.
    let mut holder = Events::new(server.ask(question.clone()).await);
    holder.until("retrieved").await;
    let mut waiting = Events::new(server.ask(question.clone()).await);
    waiting.until("queued").await;
    drop(waiting);
    server
        .until("the waiting run leaves the line", |h| {
            h["waiting"] == 0 && h["cancelled"] == 2
        })
        .await;

    // The slot works for the next question: the JSON answer alone.
    server.model.gate.add_permits(2);
    holder.until("answer").await;
    let response = server
        .client
        .post(format!("{}/v1/ask", server.url))
        .header("accept", "application/json")
        .json(&question)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let answer: serde_json::Value = response.json().await.unwrap();
    assert_eq!(answer["type"], "answer");
    assert_eq!(answer["text"], "Velmora's mayor is Ilsa Brandt.");
}
