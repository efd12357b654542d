//! The HTTP API in process on 127.0.0.1, with the walker's test doubles (a word-hashing
//! embedder, a small index) and a fake chat model that holds each generation until the test
//! lets it go, so queueing, refusals and cancellation are checked without depending on
//! timing. The same API with the real models, through the `walkrag serve` binary, is tested in
//! cli/tests/it/serve.rs.

mod api;
mod mcp;
mod queue;
mod shutdown;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Semaphore;
use walkrag_core::{ChatError, ChatModel, ChatRequest, Delta, DeltaStream, FinishReason, Usage};
use walkrag_engine::Index;
use walkrag_serve::{Config, Engine};
use walkrag_walker::testing::{test_index, FakeWordEmbedder, TestIndex};
use walkrag_walker::SearchParams;

/// A fake chat model (tests only): every generation waits for a permit of `gate`, then
/// writes `reply`. Counts generations started and those dropped before they finished.
pub struct FakeGatedModel {
    pub gate: Arc<Semaphore>,
    pub started: Arc<AtomicUsize>,
    pub dropped: Arc<AtomicUsize>,
}

/// Counts a generation dropped before its end.
struct Unfinished {
    dropped: Arc<AtomicUsize>,
    finished: bool,
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.finished {
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl ChatModel for FakeGatedModel {
    fn id(&self) -> &str {
        "test:gated"
    }
    fn context_length(&self) -> Option<usize> {
        Some(100_000)
    }
    fn supports_tools(&self) -> bool {
        false
    }
    fn stream(&self, _request: ChatRequest) -> DeltaStream {
        self.started.fetch_add(1, Ordering::SeqCst);
        let gate = self.gate.clone();
        let unfinished = Unfinished {
            dropped: self.dropped.clone(),
            finished: false,
        };
        Box::pin(futures_util::stream::unfold(
            (0, unfinished, gate),
            |(step, mut unfinished, gate)| async move {
                match step {
                    0 => {
                        gate.acquire().await.expect("gate open").forget();
                        let text = "Velmora's mayor is Ilsa Brandt.".to_string();
                        Some((Ok(Delta::Text { text }), (1, unfinished, gate)))
                    }
                    1 => {
                        unfinished.finished = true;
                        let done = Delta::Done {
                            usage: Usage {
                                prompt_tokens: 10,
                                completion_tokens: 6,
                                forced_tokens: 0,
                            },
                            finish: FinishReason::Stop,
                        };
                        Some((Ok(done), (2, unfinished, gate)))
                    }
                    _ => None,
                }
            },
        ))
    }
}

/// A fake chat model (tests only) whose every prompt is too long for its context, as the
/// local models and OpenAI-compatible servers report it.
pub struct FakeTooLongModel;

impl ChatModel for FakeTooLongModel {
    fn id(&self) -> &str {
        "test:too-long"
    }
    fn context_length(&self) -> Option<usize> {
        Some(2048)
    }
    fn supports_tools(&self) -> bool {
        false
    }
    fn stream(&self, _request: ChatRequest) -> DeltaStream {
        Box::pin(futures_util::stream::iter([Err(
            ChatError::ContextTooLong {
                needed: 2300,
                limit: 2048,
            },
        )]))
    }
}

/// A server on 127.0.0.1 over the walker's test index and a [`FakeGatedModel`].
pub struct TestServer {
    pub url: String,
    pub model: Arc<FakeGatedModel>,
    pub client: reqwest::Client,
    _index: TestIndex,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// The serving task: ends once the server stopped (and drained).
    pub served: Option<tokio::task::JoinHandle<Result<(), walkrag_serve::ServeError>>>,
}

impl TestServer {
    /// Starts one with `config` and a closed gate (`open` permits).
    pub async fn start(config: Config, open: usize) -> Self {
        Self::start_with(config, open, None).await
    }

    /// Starts one whose chat model is `model` (the gated one when `None`).
    pub async fn start_with(
        config: Config,
        open: usize,
        model: Option<Arc<dyn ChatModel>>,
    ) -> Self {
        let test = test_index();
        let index = Index::open(test.index.dir()).unwrap();
        let gated = Arc::new(FakeGatedModel {
            gate: Arc::new(Semaphore::new(open)),
            started: Arc::default(),
            dropped: Arc::default(),
        });
        let engine = Arc::new(Engine::new(
            index,
            Arc::new(FakeWordEmbedder),
            model.unwrap_or_else(|| gated.clone()),
            SearchParams {
                ef_search: None,
                exact: true,
            },
        ));
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let listener = walkrag_serve::bind(addr, &config).await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let drain = config.drain;
        let app = walkrag_serve::router(engine, config).unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(walkrag_serve::serve(
            listener,
            app,
            async {
                let _ = stopped.await;
            },
            drain,
        ));
        TestServer {
            url,
            model: gated,
            client: reqwest::Client::new(),
            _index: test,
            stop: Some(stop),
            served: Some(served),
        }
    }

    /// Asks the server to stop (as SIGTERM does): it stops accepting and drains.
    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    pub async fn health(&self) -> Value {
        self.client
            .get(format!("{}/healthz", self.url))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Starts `POST /v1/ask` with `body`, streaming.
    pub async fn ask(&self, body: Value) -> reqwest::Response {
        self.client
            .post(format!("{}/v1/ask", self.url))
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    /// Waits (a bounded while) until `/healthz` satisfies `done`.
    pub async fn until(&self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..400 {
            let health = self.health().await;
            if done(&health) {
                return health;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("{what} never happened: {}", self.health().await);
    }
}

/// Reads server-sent events from a streaming response, one `data:` object at a time.
pub struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    pub fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next event, or `None` when the stream ends. Keep-alive comments are skipped.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let data: Vec<&str> = block
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(|l| l.strip_prefix(' ').unwrap_or(l))
                    .collect();
                if data.is_empty() {
                    continue;
                }
                return Some(serde_json::from_str(&data.join("\n")).expect("data is JSON"));
            }
            match self.response.chunk().await.unwrap() {
                Some(bytes) => self.buffer.push_str(std::str::from_utf8(&bytes).unwrap()),
                None => return None,
            }
        }
    }

    /// Events up to and including the first of type `kind`.
    pub async fn until(&mut self, kind: &str) -> Vec<Value> {
        let mut seen = Vec::new();
        while let Some(event) = self.next().await {
            let last = event["type"] == kind;
            seen.push(event);
            if last {
                return seen;
            }
        }
        panic!("the stream ended before a {kind} event: {seen:?}");
    }
}

/// Asserts the one error shape: `{"error": {"code": CODE, "message": non-empty}}`.
pub async fn assert_error(response: reqwest::Response, status: u16, code: &str) {
    assert_eq!(response.status(), status, "status for {code}");
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(
        !body["error"]["message"].as_str().unwrap().is_empty(),
        "{body}"
    );
    assert_eq!(body.as_object().unwrap().len(), 1, "only `error`: {body}");
}
