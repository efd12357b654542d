//! The routes: the ask stream and its trace, the JSON answer, search, outline, show, the
//! token, CORS, and every refusal in the one error shape.

use serde_json::{json, Value};
use walkrag_serve::{Config, ServeError};

use std::sync::Arc;

use crate::{assert_error, Events, FakeTooLongModel, TestServer};

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
async fn a_token_guards_every_route_but_the_page() {
    let config = Config {
        token: Some("s3cret-t0ken-5e81c2".into()),
        ..Config::default()
    };
    let server = TestServer::start(config, 0).await;
    // The page loads without credentials (a browser sends none for a page) and holds no data:
    // it asks for the token, keeps it in the tab's session storage and sends it on each call.
    let page = server.client.get(&server.url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(page.contains("sessionStorage") && page.contains("Authorization"));
    assert!(!page.contains("s3cret"));
    for path in [
        "/healthz",
        "/v1/outline",
        "/v1/show/d1",
        "/v1/trace/0123456789abcdef",
        "/nowhere",
    ] {
        let url = format!("{}{path}", server.url);
        let none = server.client.get(&url).send().await.unwrap();
        assert_eq!(none.headers()["www-authenticate"], "Bearer");
        assert_error(none, 401, "unauthorized").await;
        let wrong = server
            .client
            .get(&url)
            .bearer_auth("s3cret-t0ken-5e81c")
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
    // The scheme is case-insensitive (RFC 9110); the token is not.
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let ok = server
            .client
            .get(format!("{}/v1/outline", server.url))
            .header("authorization", format!("{scheme} s3cret-t0ken-5e81c2"))
            .send()
            .await
            .unwrap();
        assert_eq!(ok.status(), 200, "{scheme}");
    }
    let ok = server
        .client
        .get(format!("{}/healthz", server.url))
        .bearer_auth("s3cret-t0ken-5e81c2")
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
        token: Some("7f3a9c0e51b24d86".into()),
        ..Config::default()
    };
    assert!(guarded.check(anywhere).is_ok());
    let token = |t: &str| Config {
        token: Some(t.into()),
        ..Config::default()
    };
    for short in ["", "t", "7f3a9c0e51b24d8"] {
        assert!(
            matches!(
                token(short).check(local),
                Err(ServeError::ShortToken { .. })
            ),
            "{short:?}"
        );
    }
    for spaced in [
        "7f3a9c0e51b24d86\n",
        " 7f3a9c0e51b24d86",
        "7f3a9c0e 51b24d86",
    ] {
        assert!(
            matches!(token(spaced).check(local), Err(ServeError::TokenWhitespace)),
            "{spaced:?}"
        );
    }
    assert!(
        !format!("{guarded:?}").contains("7f3a9c0e"),
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
        token: Some("tok-0123456789abcdef".into()),
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
        .bearer_auth("tok-0123456789abcdef")
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "https://example.org"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_hosts_are_refused_on_every_route() {
    let server = TestServer::start(Config::default(), 0).await;
    let port = server.url.rsplit(':').next().unwrap().to_string();
    let get = |path: &str, host: String| {
        server
            .client
            .get(format!("{}{path}", server.url))
            .header("host", host)
            .send()
    };
    // DNS rebinding: a name that resolves to 127.0.0.1 but is not this server's.
    for path in [
        "/",
        "/healthz",
        "/v1/outline",
        "/v1/show/d1",
        "/mcp",
        "/nowhere",
    ] {
        for host in ["attacker.example", &format!("attacker.example:{port}")] {
            assert_error(
                get(path, host.to_string()).await.unwrap(),
                403,
                "host_not_allowed",
            )
            .await;
        }
    }
    let search = server
        .client
        .post(format!("{}/v1/search", server.url))
        .header("host", "attacker.example")
        .json(&json!({"query": "cheese"}))
        .send()
        .await
        .unwrap();
    assert_error(search, 403, "host_not_allowed").await;
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        "localhost".into(),
    ] {
        assert_eq!(
            get("/v1/outline", host.clone()).await.unwrap().status(),
            200,
            "{host}"
        );
    }

    // --allow-host adds a name.
    let named = TestServer::start(
        Config {
            allow_hosts: vec!["walkrag.lan".into()],
            ..Config::default()
        },
        0,
    )
    .await;
    let answered = named
        .client
        .get(format!("{}/v1/outline", named.url))
        .header("host", "walkrag.lan:8080")
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let other = named
        .client
        .get(format!("{}/v1/outline", named.url))
        .header("host", "other.lan")
        .send()
        .await
        .unwrap();
    assert_error(other, 403, "host_not_allowed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_origins_and_non_json_posts_are_refused() {
    let server = TestServer::start(Config::default(), 10).await;
    let own = server.url.clone();
    let post = |path: &str, origin: Option<&str>, content_type: &str| {
        let mut request = server
            .client
            .post(format!("{}{path}", server.url))
            .header("content-type", content_type)
            .body(r#"{"question": "Who is the mayor of Velmora?", "query": "mayor"}"#);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    // A page elsewhere posting text/plain (no preflight): refused before a run starts.
    for content_type in ["text/plain", "application/json"] {
        assert_error(
            post("/v1/ask", Some("https://attacker.example"), content_type)
                .await
                .unwrap(),
            403,
            "origin_not_allowed",
        )
        .await;
    }
    assert_error(
        post("/v1/ask", Some("null"), "application/json")
            .await
            .unwrap(),
        403,
        "origin_not_allowed",
    )
    .await;
    let read = server
        .client
        .get(format!("{}/v1/outline", server.url))
        .header("origin", "https://attacker.example")
        .send()
        .await
        .unwrap();
    assert_error(read, 403, "origin_not_allowed").await;
    // Bodies are JSON only, whoever sends them.
    for content_type in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        assert_error(
            post("/v1/search", None, content_type).await.unwrap(),
            415,
            "unsupported_media_type",
        )
        .await;
    }
    let no_type = server
        .client
        .post(format!("{}/v1/search", server.url))
        .body(r#"{"query": "mayor"}"#)
        .send()
        .await
        .unwrap();
    assert_error(no_type, 415, "unsupported_media_type").await;
    assert_eq!(server.health().await["completed"], 0, "no run started");
    // The page's own origin, and a charset parameter, pass.
    let search = post("/v1/search", Some(&own), "application/json; charset=utf-8")
        .await
        .unwrap();
    assert_error(search, 400, "invalid_request").await; // "question" is not a search field
    let search = server
        .client
        .post(format!("{}/v1/search", server.url))
        .header("origin", &own)
        .json(&json!({"query": "mayor"}))
        .send()
        .await
        .unwrap();
    assert_eq!(search.status(), 200);

    // --cors lets the one origin named in.
    let open = TestServer::start(
        Config {
            cors: Some("https://example.org".into()),
            ..Config::default()
        },
        0,
    )
    .await;
    let allowed = open
        .client
        .post(format!("{}/v1/search", open.url))
        .header("origin", "https://example.org")
        .json(&json!({"query": "mayor"}))
        .send()
        .await
        .unwrap();
    assert_eq!(allowed.status(), 200);
    let other = open
        .client
        .post(format!("{}/v1/search", open.url))
        .header("origin", "https://example.com")
        .json(&json!({"query": "mayor"}))
        .send()
        .await
        .unwrap();
    assert_error(other, 403, "origin_not_allowed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_past_the_context_is_413_and_rejected() {
    let server =
        TestServer::start_with(Config::default(), 0, Some(Arc::new(FakeTooLongModel))).await;
    let response = server
        .client
        .post(format!("{}/v1/ask", server.url))
        .header("accept", "application/json")
        .json(&json!({"question": "Who is the mayor of Velmora?", "strategy": "single"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "context_too_long", "{body}");
    assert_eq!(
        body["error"]["tokens"],
        json!({"needed": 2300, "limit": 2048})
    );
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("2300") && message.contains("2048"),
        "{message}"
    );

    // Streamed, it is the stream's error event.
    let mut events = Events::new(
        server
            .ask(json!({"question": "Who is the mayor of Velmora?", "strategy": "single"}))
            .await,
    );
    let error = events.until("error").await.pop().unwrap();
    assert_eq!(error["error"]["code"], "context_too_long");
    let health = server.until("both runs end", |h| h["running"] == 0).await;
    assert_eq!(health["rejected"], 2, "{health}");
    assert_eq!(
        health["failed"], 0,
        "the client's doing, not a failure: {health}"
    );
}
