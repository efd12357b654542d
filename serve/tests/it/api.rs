//! The routes: the ask stream and its trace, the JSON answer, search, outline, show, the
//! token, CORS, and every refusal in the one error shape.

use serde_json::{json, Value};
use walkrag_serve::{Config, ServeError};

use crate::{assert_error, Events, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_streams_events_then_the_answer_and_keeps_the_trace() {
    let server = TestServer::start(Config::default(), 10).await;
    let response = server
        .ask(json!({"question": "Who is the mayor of Velmora?", "strategy": "single", "k": 2}))
        .await;
    let run = response.headers()[walkrag_serve::RUN_HEADER]
        .to_str()
        .unwrap()
        .to_string();
    let mut events = Events::new(response);
    let all = events.until("answer").await;
    assert!(events.next().await.is_none());
    assert_eq!(all[0], json!({"type": "cycle", "cycle": 1}));
    assert_eq!(all[1]["type"], "retrieved");
    assert_eq!(all[1]["chunks"].as_array().unwrap().len(), 2);
    let tokens: String = all
        .iter()
        .filter(|e| e["type"] == "token")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    let answer = all.last().unwrap();
    assert_eq!(answer["text"], tokens);
    assert_eq!(answer["termination"], "single_pass");
    assert_eq!(answer["usage"]["llm_calls"], 1);

    let trace: Value = server
        .client
        .get(format!("{}/v1/trace/{run}", server.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(trace["strategy"], "single");
    assert_eq!(trace["answer"]["text"], answer["text"]);
    assert_eq!(trace["graph"]["nodes"][0]["kind"], "question");
    let html = server
        .client
        .get(format!("{}/v1/trace/{run}?format=html", server.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));

    // Only the answer object for Accept: application/json.
    let response = server
        .client
        .post(format!("{}/v1/ask", server.url))
        .header("accept", "application/json")
        .json(&json!({"question": "Who is the mayor of Velmora?", "strategy": "single", "k": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let only: Value = response.json().await.unwrap();
    assert_eq!(only["type"], "answer");
    assert_eq!(only["text"], answer["text"]);
    assert_eq!(only["ranked"], answer["ranked"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_outline_and_show_answer_what_the_cli_prints() {
    let server = TestServer::start(Config::default(), 0).await;
    let hits: Value = server
        .client
        .post(format!("{}/v1/search", server.url))
        .json(&json!({"query": "cheese market", "k": 3}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let hits = hits["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 3);
    assert_eq!(hits[0]["rank"], 1);
    for field in [
        "score",
        "chunk_id",
        "doc_id",
        "title",
        "section_id",
        "section_path",
        "text",
    ] {
        assert!(!hits[0][field].is_null(), "{field}: {}", hits[0]);
    }

    let outlines: Value = server
        .client
        .get(format!("{}/v1/outline", server.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(outlines["documents"].as_array().unwrap().len(), 6);
    let one = server
        .client
        .get(format!("{}/v1/outline/d3", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(one.status(), 200);

    let chunk = hits[0]["chunk_id"].as_str().unwrap();
    let shown: Value = server
        .client
        .get(format!("{}/v1/show/{chunk}", server.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["kind"], "chunk");
    assert_eq!(shown["text"], hits[0]["text"]);
    let section = hits[0]["section_id"].as_str().unwrap();
    let shown: Value = server
        .client
        .get(format!("{}/v1/show/{section}", server.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["kind"], "section");

    let page = server.client.get(&server.url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("/v1/ask"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_has_the_one_error_shape() {
    let server = TestServer::start(Config::default(), 0).await;
    let url = &server.url;
    let post = |path: &str, body: String| {
        server
            .client
            .post(format!("{url}{path}"))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let get = |path: &str| server.client.get(format!("{url}{path}")).send();

    assert_error(
        post("/v1/ask", "{\"question\": ".into()).await.unwrap(),
        400,
        "invalid_json",
    )
    .await;
    assert_error(
        post("/v1/ask", "not json".into()).await.unwrap(),
        400,
        "invalid_json",
    )
    .await;
    assert_error(
        post("/v1/ask", "{}".into()).await.unwrap(),
        400,
        "invalid_request",
    )
    .await;
    assert_error(
        post("/v1/ask", r#"{"question": "q", "colour": "red"}"#.into())
            .await
            .unwrap(),
        400,
        "invalid_request",
    )
    .await;
    assert_error(
        post("/v1/ask", r#"{"question": "q", "k": 0}"#.into())
            .await
            .unwrap(),
        400,
        "invalid_request",
    )
    .await;
    assert_error(
        post("/v1/ask", r#"{"question": "  "}"#.into())
            .await
            .unwrap(),
        400,
        "invalid_request",
    )
    .await;
    assert_error(
        post(
            "/v1/ask",
            r#"{"question": "q", "strategy": "telepathy"}"#.into(),
        )
        .await
        .unwrap(),
        400,
        "unknown_strategy",
    )
    .await;
    assert_error(
        post(
            "/v1/ask",
            r#"{"question": "q", "strategy": "actions"}"#.into(),
        )
        .await
        .unwrap(),
        400,
        "unsupported_strategy",
    )
    .await;
    let huge = format!(
        r#"{{"question": "{}"}}"#,
        "a".repeat(Config::default().max_body + 1)
    );
    assert_error(
        post("/v1/ask", huge.clone()).await.unwrap(),
        413,
        "payload_too_large",
    )
    .await;
    let refused = post("/v1/search", huge).await.unwrap();
    assert_eq!(
        refused.headers()["connection"],
        "close",
        "the unread body ends the connection"
    );
    assert_error(refused, 413, "payload_too_large").await;
    assert_error(
        post("/v1/search", r#"{"query": "q", "k": 1000}"#.into())
            .await
            .unwrap(),
        400,
        "invalid_request",
    )
    .await;
    assert_error(get("/v1/show/0badc0de").await.unwrap(), 404, "not_found").await;
    assert_error(get("/v1/show/0badc0de.7").await.unwrap(), 404, "not_found").await;
    assert_error(
        get("/v1/outline/no-such-doc").await.unwrap(),
        404,
        "not_found",
    )
    .await;
    assert_error(
        get("/v1/trace/0123456789abcdef").await.unwrap(),
        404,
        "not_found",
    )
    .await;
    assert_error(get("/v2/ask").await.unwrap(), 404, "not_found").await;
    assert_error(get("/v1/ask").await.unwrap(), 405, "method_not_allowed").await;
    assert_eq!(server.health().await["running"], 0, "nothing started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_guards_every_route() {
    let config = Config {
        token: Some("s3cret-t0ken".into()),
        ..Config::default()
    };
    let server = TestServer::start(config, 0).await;
    for path in ["/healthz", "/", "/v1/outline", "/v1/show/d1", "/nowhere"] {
        let url = format!("{}{path}", server.url);
        let none = server.client.get(&url).send().await.unwrap();
        assert_eq!(none.headers()["www-authenticate"], "Bearer");
        assert_error(none, 401, "unauthorized").await;
        let wrong = server
            .client
            .get(&url)
            .bearer_auth("s3cret-t0keN")
            .send()
            .await
            .unwrap();
        assert_error(wrong, 401, "unauthorized").await;
    }
    let search = server
        .client
        .post(format!("{}/v1/search", server.url))
        .json(&json!({"query": "cheese"}))
        .send()
        .await
        .unwrap();
    assert_error(search, 401, "unauthorized").await;
    let ok = server
        .client
        .get(format!("{}/healthz", server.url))
        .bearer_auth("s3cret-t0ken")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let body = ok.text().await.unwrap();
    assert!(
        !body.contains("s3cret"),
        "the token is never echoed: {body}"
    );

    // Without a token nothing is asked for.
    let open = TestServer::start(Config::default(), 0).await;
    assert_eq!(open.health().await["status"], "ok");
}

#[test]
fn beyond_loopback_a_token_is_required() {
    let anywhere = "0.0.0.0:8080".parse().unwrap();
    let lan = "192.168.1.20:8080".parse().unwrap();
    let local = "127.0.0.1:8080".parse().unwrap();
    let v6_local = "[::1]:8080".parse().unwrap();
    let open = Config::default();
    assert!(matches!(
        open.check(anywhere),
        Err(ServeError::NeedsToken { .. })
    ));
    assert!(matches!(
        open.check(lan),
        Err(ServeError::NeedsToken { .. })
    ));
    assert!(open.check(local).is_ok());
    assert!(open.check(v6_local).is_ok());
    let guarded = Config {
        token: Some("t".into()),
        ..Config::default()
    };
    assert!(guarded.check(anywhere).is_ok());
    let empty = Config {
        token: Some(String::new()),
        ..Config::default()
    };
    assert!(matches!(empty.check(local), Err(ServeError::EmptyToken)));
    assert!(
        !format!("{guarded:?}").contains("\"t\""),
        "Debug hides the token"
    );
    let any_origin = Config {
        cors: Some("*".into()),
        ..Config::default()
    };
    assert!(matches!(
        any_origin.check(local),
        Err(ServeError::BadOrigin(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_headers_only_for_the_origin_given() {
    let closed = TestServer::start(Config::default(), 0).await;
    let response = closed
        .client
        .get(format!("{}/healthz", closed.url))
        .header("origin", "https://example.org")
        .send()
        .await
        .unwrap();
    assert!(response
        .headers()
        .get("access-control-allow-origin")
        .is_none());

    let config = Config {
        cors: Some("https://example.org".into()),
        token: Some("tok".into()),
        ..Config::default()
    };
    let open = TestServer::start(config, 0).await;
    // A preflight carries no token and is answered by the CORS layer.
    let preflight = open
        .client
        .request(reqwest::Method::OPTIONS, format!("{}/v1/ask", open.url))
        .header("origin", "https://example.org")
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type",
        )
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{}", preflight.status());
    assert_eq!(
        preflight.headers()["access-control-allow-origin"],
        "https://example.org"
    );
    let response = open
        .client
        .get(format!("{}/healthz", open.url))
        .header("origin", "https://example.org")
        .bearer_auth("tok")
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "https://example.org"
    );
}
