//! `walkrag serve` as a real process on 127.0.0.1 with the real MiniLM embedder and the real
//! SmolLM2-135M chat model (greedy, so a question streams the same events every time): the
//! stream equals `ask --json`, a client that leaves cancels its run, the token, and the
//! refusals. Queueing with a model held on purpose is tested in serve/tests/it/queue.rs.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::{stderr, stdout, walkrag};

const MODEL: &str = "local:smollm2-135m";

const CORPUS: &str = r#"{"id": "c1", "title": "Velmora", "text": "Velmora is a river town in the north. Its mayor is Ilsa Brandt."}
{"id": "c2", "title": "Ilsa Brandt", "text": "Ilsa Brandt was born in Kessel in 1971 and trained as a bridge engineer."}
{"id": "c3", "title": "Kessel", "text": "Kessel is a mountain village famous for its Saturday cheese market."}
{"id": "c4", "title": "Velmora tramway", "text": "The Velmora tramway has two lines along the river."}
"#;

/// A `walkrag serve` process, killed when dropped; its stderr is kept.
struct Server {
    child: Child,
    url: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    fn start(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_walkrag"))
            .args(["serve", "--model", MODEL, "--addr", "127.0.0.1:0"])
            .args(extra)
            .envs(env.iter().copied())
            .env("RUST_LOG", "info")
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("walkrag serve starts");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let lines = BufReader::new(child.stderr.take().unwrap());
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in lines.lines().map_while(Result::ok) {
                if let Some(url) = line
                    .split("listening on ")
                    .nth(1)
                    .and_then(|rest| rest.split_whitespace().next())
                {
                    let _ = tx.send(url.to_string());
                }
                let mut log = kept.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("serve never listened: {}", log.lock().unwrap()));
        Server { child, url, log }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// The log once it holds `needle` (or after 10 s): the server answers a request before
    /// its log line for it reaches the reader of its stderr.
    fn log_with(&self, needle: &str) -> String {
        for _ in 0..200 {
            let log = self.log();
            if log.contains(needle) {
                return log;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.log()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The `data:` objects of a whole server-sent event stream.
fn sse_objects(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|block| {
            let data: Vec<&str> = block
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|l| l.strip_prefix(' ').unwrap_or(l))
                .collect();
            (!data.is_empty()).then(|| serde_json::from_str(&data.join("\n")).unwrap())
        })
        .collect()
}

/// The events with the answer's `elapsed_ms` (wall time, never the same twice) removed.
fn comparable(mut events: Vec<Value>) -> Vec<Value> {
    for event in &mut events {
        if event["type"] == "answer" {
            event.as_object_mut().unwrap().remove("elapsed_ms");
        }
    }
    events
}

fn indexed() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("corpus.jsonl"), CORPUS).unwrap();
    let out = walkrag(tmp.path(), &["index", "corpus.jsonl"]);
    assert!(out.status.success(), "{}", stderr(&out));
    tmp
}

#[test]
fn serve_streams_the_events_ask_json_prints() {
    let tmp = indexed();
    let dir = tmp.path();
    let server = Server::start(dir, &[], &[]);
    let client = reqwest::Client::new();
    let rt = runtime();
    for (strategy, question) in [
        ("single", "Who is the mayor of Velmora?"),
        ("walk", "In which village was the mayor of Velmora born?"),
    ] {
        let out = walkrag(
            dir,
            &[
                "ask",
                question,
                "--strategy",
                strategy,
                "--model",
                MODEL,
                "-k",
                "2",
                "--max-cycles",
                "2",
                "--json",
            ],
        );
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
        let cli: Vec<Value> = stdout(&out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();

        let body = json!({"question": question, "strategy": strategy, "k": 2, "max_cycles": 2});
        let (status, content_type, text) = rt.block_on(async {
            let response = client
                .post(format!("{}/v1/ask", server.url))
                .json(&body)
                .send()
                .await
                .unwrap();
            let content_type = response.headers()["content-type"]
                .to_str()
                .unwrap()
                .to_string();
            (
                response.status(),
                content_type,
                response.text().await.unwrap(),
            )
        });
        assert_eq!(status, 200);
        assert_eq!(content_type, "text/event-stream");
        let served = sse_objects(&text);
        assert_eq!(served.last().unwrap()["type"], "answer");
        assert_eq!(
            comparable(served.clone()),
            comparable(cli.clone()),
            "{strategy}: the stream's events are ask --json's"
        );

        // Accept: application/json: the answer object alone, the same answer.
        let only: Value = rt.block_on(async {
            client
                .post(format!("{}/v1/ask", server.url))
                .header("accept", "application/json")
                .json(&body)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap()
        });
        assert_eq!(
            comparable(vec![only]),
            comparable(vec![cli.last().unwrap().clone()])
        );
    }
}

#[test]
fn a_client_that_leaves_cancels_its_run() {
    let tmp = indexed();
    let server = Server::start(tmp.path(), &[], &[]);
    let client = reqwest::Client::new();
    let health = |rt: &tokio::runtime::Runtime| -> Value {
        rt.block_on(async {
            client
                .get(format!("{}/healthz", server.url))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap()
        })
    };
    let rt = runtime();
    rt.block_on(async {
        let mut response = client
            .post(format!("{}/v1/ask", server.url))
            .json(
                &json!({"question": "In which village was the mayor of Velmora born?",
                          "strategy": "walk", "k": 3, "max_cycles": 5}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        // The first event (the cycle starts), then the client goes away mid-run.
        let first = response.chunk().await.unwrap().unwrap();
        assert!(String::from_utf8_lossy(&first).contains("\"cycle\""));
        drop(response);
    });
    let mut last = Value::Null;
    for _ in 0..600 {
        last = health(&rt);
        if last["cancelled"] == 1 && last["running"] == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(last["cancelled"], 1, "{last}\n{}", server.log());
    assert_eq!(last["completed"], 0, "cancelled before its answer: {last}");
    let log = server.log_with("client gone: run cancelled");
    assert!(log.contains("client gone: run cancelled"), "{log}");

    // The model is free for the next question.
    let answer: Value = rt.block_on(async {
        client
            .post(format!("{}/v1/ask", server.url))
            .header("accept", "application/json")
            .json(
                &json!({"question": "Who is the mayor of Velmora?", "strategy": "single", "k": 2}),
            )
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    assert_eq!(answer["type"], "answer", "{answer}\n{}", server.log());
}

#[test]
fn serve_guards_and_refuses_clearly() {
    let tmp = indexed();
    let dir = tmp.path();

    // Beyond loopback without a token: refused before anything loads.
    let out = walkrag(dir, &["serve", "--addr", "0.0.0.0:0", "--model", MODEL]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--token"), "{}", stderr(&out));

    // A token with a secret file's newline, or a short one: refused at start, not echoed.
    for (bad, why) in [
        ("tok-9f2c71e0-4b8d-a1\n", "whitespace"),
        ("tok-9f2c71e0", "16"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_walkrag"))
            .args(["serve", "--model", MODEL, "--addr", "127.0.0.1:0"])
            .env("WALKRAG_TOKEN", bad)
            .current_dir(dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(stderr(&out).contains(why), "{}", stderr(&out));
        assert!(!stderr(&out).contains("tok-9f2c"), "{}", stderr(&out));
    }

    let token = "tok-9f2c71e0-4b8d-a1";
    let server = Server::start(dir, &[], &[("WALKRAG_TOKEN", token)]);
    let client = reqwest::Client::new();
    let rt = runtime();
    let error = |response: reqwest::Response, status: u16| -> String {
        assert_eq!(response.status(), status);
        let body: Value = rt.block_on(response.json()).unwrap();
        assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
        assert!(!body["error"]["message"].as_str().unwrap().is_empty());
        body["error"]["code"].as_str().unwrap().to_string()
    };
    let send = |request: reqwest::RequestBuilder| rt.block_on(request.send()).unwrap();
    let ask = |body: String| {
        client
            .post(format!("{}/v1/ask", server.url))
            .header("content-type", "application/json")
            .body(body)
    };

    let none = send(client.get(format!("{}/healthz", server.url)));
    assert_eq!(error(none, 401), "unauthorized");
    let wrong = send(
        client
            .get(format!("{}/healthz", server.url))
            .bearer_auth("tok"),
    );
    assert_eq!(error(wrong, 401), "unauthorized");
    let ok = send(
        client
            .get(format!("{}/healthz", server.url))
            .bearer_auth(token),
    );
    assert_eq!(ok.status(), 200);

    let malformed = send(ask("{\"question\": \"who".into()).bearer_auth(token));
    assert_eq!(error(malformed, 400), "invalid_json");
    let unknown =
        send(ask(r#"{"question": "who", "strategy": "ouija"}"#.into()).bearer_auth(token));
    assert_eq!(error(unknown, 400), "unknown_strategy");
    let huge = format!(r#"{{"question": "{}"}}"#, "why ".repeat(100_000));
    let huge = send(ask(huge).bearer_auth(token));
    assert_eq!(error(huge, 413), "payload_too_large");
    let missing = send(
        client
            .get(format!("{}/v1/show/deadbeef.3", server.url))
            .bearer_auth(token),
    );
    assert_eq!(error(missing, 404), "not_found");
    let hits = send(
        client
            .post(format!("{}/v1/search", server.url))
            .bearer_auth(token)
            .json(&json!({"query": "cheese market", "k": 1})),
    );
    assert_eq!(hits.status(), 200);
    let hits: Value = rt.block_on(hits.json()).unwrap();
    assert_eq!(hits["hits"][0]["doc_id"], "c3");

    let log = server.log_with("/v1/search");
    assert!(log.contains("/v1/search"), "requests are logged: {log}");
    assert!(
        !log.contains(token),
        "the token never reaches the log: {log}"
    );
    assert!(
        !log.contains('\u{1b}'),
        "no colour codes in a log that is not a terminal: {log:?}"
    );

    // Another Host (DNS rebinding) and a text/plain post from another site: refused.
    let rebound = send(
        client
            .get(format!("{}/v1/outline", server.url))
            .header("host", "attacker.example")
            .bearer_auth(token),
    );
    assert_eq!(error(rebound, 403), "host_not_allowed");
    let cross = send(
        client
            .post(format!("{}/v1/ask", server.url))
            .header("origin", "https://attacker.example")
            .header("content-type", "text/plain")
            .body(r#"{"question": "who"}"#),
    );
    assert_eq!(error(cross, 403), "origin_not_allowed");
    // The page loads without the token; the data behind it does not.
    let page = send(client.get(&server.url));
    assert_eq!(page.status(), 200);
}

/// Sends `signal` (`TERM`, `INT`) to the server.
fn signal(server: &Server, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// The server's exit code, waiting a bounded while.
fn exit_code(server: &mut Server, within: Duration) -> Option<i32> {
    let started = std::time::Instant::now();
    while started.elapsed() < within {
        if let Some(status) = server.child.try_wait().unwrap() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "the server did not exit within {within:?}: {}",
        server.log()
    );
}

#[test]
fn sigterm_lets_the_running_answer_finish_then_exits_0() {
    let tmp = indexed();
    // A deadline far past the question's time, however busy the machine.
    let mut server = Server::start(tmp.path(), &["--drain-seconds", "300"], &[]);
    let client = reqwest::Client::new();
    let rt = runtime();
    let text = rt.block_on(async {
        let mut response = client
            .post(format!("{}/v1/ask", server.url))
            .json(&json!({"question": "Who is the mayor of Velmora?",
                          "strategy": "single", "k": 2}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let mut text = String::new();
        let first = response.chunk().await.unwrap().unwrap();
        text.push_str(&String::from_utf8_lossy(&first));
        // Stopped as systemd, Docker and Kubernetes stop a service, mid-answer.
        signal(&server, "TERM");
        while let Some(chunk) = response.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        text
    });
    let events = sse_objects(&text);
    assert_eq!(
        events.last().unwrap()["type"],
        "answer",
        "the stream ends with its answer: {text}\n{}",
        server.log()
    );
    assert_eq!(exit_code(&mut server, Duration::from_secs(120)), Some(0));
    let log = server.log_with("stopped");
    assert!(log.contains("SIGTERM"), "{log}");

    // SIGINT with nothing running: out at once, 0 too.
    let mut idle = Server::start(tmp.path(), &[], &[]);
    signal(&idle, "INT");
    assert_eq!(exit_code(&mut idle, Duration::from_secs(30)), Some(0));
}

#[test]
fn past_drain_seconds_a_running_answer_is_cut_and_the_exit_is_0() {
    let tmp = indexed();
    let mut server = Server::start(tmp.path(), &["--drain-seconds", "1"], &[]);
    let client = reqwest::Client::new();
    let rt = runtime();
    rt.block_on(async {
        let mut response = client
            .post(format!("{}/v1/ask", server.url))
            .json(
                &json!({"question": "In which village was the mayor of Velmora born?",
                          "strategy": "walk", "k": 3, "max_cycles": 20}),
            )
            .send()
            .await
            .unwrap();
        response.chunk().await.unwrap().unwrap();
        signal(&server, "TERM");
        while let Ok(Some(_)) = response.chunk().await {}
    });
    assert_eq!(exit_code(&mut server, Duration::from_secs(30)), Some(0));
}

#[test]
fn serve_sees_documents_indexed_while_it_runs() {
    let tmp = indexed();
    let dir = tmp.path();
    let server = Server::start(dir, &[], &[]);
    let client = reqwest::Client::new();
    let rt = runtime();
    let query = json!({"query": "Who keeps the Orlen lighthouse?", "k": 1});
    let top = |rt: &tokio::runtime::Runtime| -> Value {
        rt.block_on(async {
            client
                .post(format!("{}/v1/search", server.url))
                .json(&query)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()["hits"][0]
                .clone()
        })
    };
    assert_ne!(top(&rt)["doc_id"], "c5");

    std::fs::write(
        dir.join("more.jsonl"),
        r#"{"id": "c5", "title": "Orlen lighthouse", "text": "The Orlen lighthouse is kept by Mara Voss, who has lit it every night since 1998."}"#,
    )
    .unwrap();
    let out = walkrag(dir, &["index", "more.jsonl"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // No restart: a request after the index run finds the new generation loaded.
    let mut found = Value::Null;
    for _ in 0..300 {
        found = top(&rt);
        if found["doc_id"] == "c5" {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(found["doc_id"], "c5", "{found}\n{}", server.log());
    let log = server.log_with("reloaded");
    assert!(log.contains("new index generation"), "{log}");
}
