//! Sending requests to the notes server: reads go out at once, changes only when confirmed,
//! dry runs never; every answer or failure is an outcome.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};
use walkrag_actions::{
    AlwaysNo, AlwaysYes, Catalog, ConfigError, Cut, Executor, ExecutorConfig, FailureKind, Method,
    Outcome, RequestPreview, Response,
};

use crate::server::{export_body, Server};
use crate::{action, executor, notes};

/// The response of an outcome that must be one.
fn response(outcome: Outcome) -> Response {
    match outcome {
        Outcome::Response(response) => response,
        other => panic!("expected a response, got {other:#?}"),
    }
}

fn body_json(response: &Response) -> Value {
    serde_json::from_str(&response.body).expect("a JSON body")
}

#[tokio::test]
async fn a_read_is_sent_without_asking() {
    let server = Server::start().await;
    let executor = executor(&server, ExecutorConfig::default());
    let catalog = notes();

    let got = response(
        executor
            .call(
                &action(&catalog, "getNote"),
                &json!({ "noteId": "1" }),
                &AlwaysNo,
            )
            .await,
    );
    let listed = response(
        executor
            .call(
                &action(&catalog, "listNotes"),
                &json!({ "limit": 2, "tag": ["a b", "c"], "X-Request-Id": "r-1" }),
                &AlwaysNo,
            )
            .await,
    );

    assert_eq!((got.status, got.reason.as_str()), (200, "OK"));
    assert_eq!(got.content_type.as_deref(), Some("application/json"));
    assert_eq!(body_json(&got)["title"], "Shopping");
    assert_eq!(got.request.url, format!("{}/notes/1", server.base_url));
    assert_eq!(body_json(&listed)[0]["id"], "1");
    let requests = server.requests();
    assert_eq!(
        (requests[0].method.as_str(), requests[0].path.as_str()),
        ("GET", "/v1/notes/1")
    );
    assert_eq!(requests[1].path, "/v1/notes");
    assert_eq!(requests[1].query, "limit=2&tag=a%20b&tag=c");
    assert_eq!(requests[1].header("x-request-id"), Some("r-1"));
    assert!(requests[1].body.is_empty());
}

#[tokio::test]
async fn a_confirmed_create_is_sent_with_its_json_body() {
    let server = Server::start().await;
    let executor = executor(&server, ExecutorConfig::default());
    let seen: Mutex<Vec<RequestPreview>> = Mutex::default();
    let confirm = |preview: &RequestPreview| {
        seen.lock().unwrap().push(preview.clone());
        true
    };

    let created = response(
        executor
            .call(
                &action(&notes(), "createNote"),
                &json!({ "title": "Groceries", "status": "draft", "priority": "2" }),
                &confirm,
            )
            .await,
    );

    assert_eq!(created.status, 201);
    assert_eq!(body_json(&created)["id"], "2");
    assert_eq!(
        created.notes,
        [
            "priority: \"2\" read as 2",
            "no credentials are configured for bearerAuth (set WALKRAG_AUTH_BEARERAUTH); \
             the request was sent without them"
        ]
    );
    let request = server.only_request();
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/v1/notes")
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.json(),
        json!({ "title": "Groceries", "status": "draft", "priority": 2 })
    );
    // The user saw what was sent.
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, Method::Post);
    assert_eq!(seen[0].url, format!("{}/notes", server.base_url));
    assert_eq!(
        serde_json::from_str::<Value>(seen[0].body.as_deref().unwrap()).unwrap(),
        request.json()
    );
    assert!(seen[0].needs_confirmation);
    assert_eq!(seen[0], created.request);
}

#[tokio::test]
async fn confirmed_updates_and_deletes_are_sent() {
    let server = Server::start().await;
    let executor = executor(&server, ExecutorConfig::default());
    let catalog = notes();

    let replaced = response(
        executor
            .call(
                &action(&catalog, "replaceNote"),
                &json!({ "noteId": "1", "title": "Errands", "text": "post office" }),
                &AlwaysYes,
            )
            .await,
    );
    let patched = response(
        executor
            .call(
                &action(&catalog, "patch_/notes/{noteId}"),
                &json!({ "noteId": "1", "pinned": true }),
                &AlwaysYes,
            )
            .await,
    );
    let deleted = response(
        executor
            .call(
                &action(&catalog, "deleteNote"),
                &json!({ "noteId": "1" }),
                &AlwaysYes,
            )
            .await,
    );

    assert_eq!(body_json(&replaced)["title"], "Errands");
    assert_eq!(body_json(&patched)["pinned"], true);
    assert_eq!((deleted.status, deleted.body.as_str()), (204, ""));
    let sent: Vec<(String, String, Vec<u8>)> = server
        .requests()
        .into_iter()
        .map(|r| (r.method, r.path, r.body))
        .collect();
    assert_eq!(
        sent,
        [
            (
                "PUT".into(),
                "/v1/notes/1".into(),
                br#"{"title":"Errands","text":"post office"}"#.to_vec()
            ),
            (
                "PATCH".into(),
                "/v1/notes/1".into(),
                br#"{"pinned":true}"#.to_vec()
            ),
            ("DELETE".into(), "/v1/notes/1".into(), Vec::new()),
        ]
    );
}

#[tokio::test]
async fn a_refused_confirmation_sends_nothing() {
    let server = Server::start().await;
    let executor = executor(&server, ExecutorConfig::default());
    let catalog = notes();

    let mut outcomes = Vec::new();
    for (id, inputs) in [
        ("createNote", json!({ "title": "t" })),
        ("replaceNote", json!({ "noteId": "1", "title": "t" })),
        ("patch_/notes/{noteId}", json!({ "noteId": "1" })),
        ("deleteNote", json!({ "noteId": "1" })),
    ] {
        outcomes.push(
            executor
                .call(&action(&catalog, id), &inputs, &AlwaysNo)
                .await,
        );
    }

    assert_eq!(server.count(), 0);
    for outcome in &outcomes {
        assert!(matches!(outcome, Outcome::Declined(_)), "{outcome:?}");
        assert!(!outcome.sent());
    }
    assert_eq!(
        outcomes[3].to_string(),
        format!(
            "The user declined; nothing was sent (DELETE {}/notes/1). Ask what they want instead.",
            server.base_url
        )
    );
}

#[tokio::test]
async fn a_dry_run_sends_nothing_and_shows_the_request() {
    let server = Server::start().await;
    let config = ExecutorConfig {
        dry_run: true,
        ..ExecutorConfig::default()
    };
    let executor = executor(&server, config);
    let catalog = notes();
    let asked = Mutex::new(0);
    let confirm = |_: &RequestPreview| {
        *asked.lock().unwrap() += 1;
        true
    };

    let create = executor
        .call(
            &action(&catalog, "createNote"),
            &json!({ "title": "t" }),
            &confirm,
        )
        .await;
    let get = executor
        .call(
            &action(&catalog, "getNote"),
            &json!({ "noteId": "1" }),
            &confirm,
        )
        .await;

    assert_eq!(server.count(), 0);
    assert_eq!(
        *asked.lock().unwrap(),
        0,
        "nothing to confirm when nothing is sent"
    );
    let Outcome::DryRun(preview) = &create else {
        panic!("{create:?}");
    };
    assert_eq!(preview.body.as_deref(), Some(r#"{"title":"t"}"#));
    assert!(matches!(get, Outcome::DryRun(_)));
    assert_eq!(
        create.to_string(),
        format!(
            "Dry run, nothing was sent. The request would be:\nPOST {}/notes\n\
             Content-Type: application/json\n\n{{\"title\":\"t\"}}",
            server.base_url
        )
    );
}

#[tokio::test]
async fn http_errors_are_outcomes() {
    let server = Server::start().await;
    let executor = executor(&server, ExecutorConfig::default());
    let catalog = notes();

    let missing = executor
        .call(
            &action(&catalog, "getNote"),
            &json!({ "noteId": "42" }),
            &AlwaysNo,
        )
        .await;
    let broken = executor
        .call(&action(&catalog, "get_/health"), &json!({}), &AlwaysNo)
        .await;

    assert!(missing.sent() && !missing.is_success());
    assert_eq!(
        missing.to_string(),
        format!(
            "HTTP 404 Not Found from GET {}/notes/42 (application/json)\n\
             Note: no credentials are configured for bearerAuth (set WALKRAG_AUTH_BEARERAUTH); \
             the request was sent without them\n\n\
             {{\"error\":\"no note at /notes/42\"}}",
            server.base_url
        )
    );
    let json = serde_json::to_value(&missing).unwrap();
    assert_eq!(
        (json["outcome"].as_str(), json["status"].as_u64()),
        (Some("response"), Some(404))
    );
    assert_eq!(serde_json::from_value::<Outcome>(json).unwrap(), missing);
    let broken = response(broken);
    assert_eq!(broken.status, 500);
    assert_eq!(body_json(&broken)["error"], "the database is down");
}

#[tokio::test]
async fn a_huge_body_is_cut_on_a_character_boundary_with_a_note() {
    let server = Server::start().await;
    let config = ExecutorConfig {
        max_response_bytes: 1001,
        ..ExecutorConfig::default()
    };
    let executor = executor(&server, config);

    let outcome = executor
        .call(&action(&notes(), "exportNotes"), &json!({}), &AlwaysNo)
        .await;

    let text = outcome.to_string();
    let export = response(outcome);
    let total = export_body().len() as u64;
    assert_eq!(
        export.cut,
        Some(Cut {
            shown: 1000,
            total: Some(total)
        })
    );
    assert_eq!(export.body, "é".repeat(500));
    assert!(text.ends_with(&format!(
        "[response cut: showed the first 1000 of {total} bytes; {} bytes not shown]",
        total - 1000
    )));
}

#[tokio::test]
async fn redirects_are_returned_not_followed() {
    let server = Server::start().await;
    let executor = executor(&server, ExecutorConfig::default());

    let moved = response(
        executor
            .call(
                &action(&notes(), "getNote"),
                &json!({ "noteId": "moved" }),
                &AlwaysNo,
            )
            .await,
    );

    assert_eq!(moved.status, 302);
    assert_eq!(
        moved.location.as_deref(),
        Some("http://127.0.0.1:9/elsewhere")
    );
    assert_eq!(server.count(), 1);
}

#[tokio::test]
async fn a_timeout_is_an_outcome() {
    let server = Server::start().await;
    let config = ExecutorConfig {
        timeout: Duration::from_millis(300),
        ..ExecutorConfig::default()
    };
    let executor = executor(&server, config);

    let outcome = executor
        .call(
            &action(&notes(), "getNote"),
            &json!({ "noteId": "slow" }),
            &AlwaysNo,
        )
        .await;

    let Outcome::Failed(failure) = &outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(failure.kind, FailureKind::Timeout);
    assert!(outcome.sent());
    assert!(
        outcome.to_string().starts_with(&format!(
            "The request timed out (GET {}/notes/slow): no answer within 300ms.",
            server.base_url
        )),
        "{outcome}"
    );
}

#[tokio::test]
async fn a_refused_connection_is_an_outcome() {
    // A port that was free a moment ago: nothing listens there.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let config = ExecutorConfig {
        base_url: Some(base_url),
        ..ExecutorConfig::default()
    };
    let executor = Executor::new(&notes(), config).unwrap();

    let outcome = executor
        .call(
            &action(&notes(), "getNote"),
            &json!({ "noteId": "1" }),
            &AlwaysNo,
        )
        .await;

    let Outcome::Failed(failure) = &outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(failure.kind, FailureKind::Connect);
    assert!(
        outcome
            .to_string()
            .starts_with("The request could not connect"),
        "{outcome}"
    );
}

#[test]
fn the_base_url_comes_from_the_configuration_or_the_spec() {
    let catalog = notes();

    let from_spec = Executor::new(&catalog, ExecutorConfig::default()).unwrap();
    assert_eq!(from_spec.base_url(), "https://eu.notes.example/v1");

    let configured = ExecutorConfig {
        base_url: Some("http://localhost:8080/api/".into()),
        ..ExecutorConfig::default()
    };
    assert_eq!(
        Executor::new(&catalog, configured).unwrap().base_url(),
        "http://localhost:8080/api"
    );

    let bad = ExecutorConfig {
        base_url: Some("localhost:8080".into()),
        ..ExecutorConfig::default()
    };
    assert_eq!(
        Executor::new(&catalog, bad).unwrap_err(),
        ConfigError::BadBaseUrl("localhost:8080".into())
    );

    let relative = Catalog::parse(
        "openapi: 3.0.0\ninfo: {title: t, version: '1'}\nservers: [{url: /api/v3}]\npaths: {}\n",
    )
    .unwrap();
    let error = Executor::new(&relative, ExecutorConfig::default()).unwrap_err();
    assert!(matches!(error, ConfigError::NoBaseUrl(_)));
    assert!(
        error.to_string().contains("\"/api/v3\", is relative"),
        "{error}"
    );
}
