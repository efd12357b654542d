//! [`OpenAiModel`]: the [`ChatModel`] itself, and the state machine behind each stream
//! (send, retry, read chunks, decode, finish).

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{stream, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Client, Response};
use tokio::time::timeout;
use tracing::{debug, warn};
use walkrag_core::{ChatError, ChatModel, ChatRequest, Delta, DeltaStream};

use crate::config::OpenAiConfig;
use crate::decode::{Decoder, Flow};
use crate::error::{self, Target};
use crate::retry;
use crate::sse::{SseEvent, SseParser};
use crate::wire::{self, RequestBody};

/// The most bytes of an error response read to explain a failure.
const ERROR_BODY_BYTES: usize = 64 << 10;

/// The most bytes of a whole JSON response (a server that ignored `stream: true`).
const JSON_BODY_BYTES: usize = 16 << 20;

/// The longest wait for the rest of a body after `[DONE]`, so the connection can be reused.
const DRAIN_WAIT: Duration = Duration::from_secs(1);

/// A chat model behind an OpenAI-compatible `/chat/completions` endpoint (OpenAI, llama.cpp's
/// server, vLLM, Ollama, …), streamed over server-sent events.
///
/// Cloning is cheap and shares the connection pool. Streams run on the caller's tokio runtime;
/// dropping one closes its connection.
#[derive(Clone)]
pub struct OpenAiModel {
    id: String,
    shared: Arc<Shared>,
}

/// What every stream of a model needs.
struct Shared {
    client: Client,
    url: String,
    config: OpenAiConfig,
}

impl OpenAiModel {
    /// A model for `config`. Fails (permanently) on a base URL that is not http(s) or the HTTP
    /// client cannot be set up; the server itself is first contacted by [`ChatModel::stream`].
    pub fn new(config: OpenAiConfig) -> Result<Self, ChatError> {
        let url = config.chat_url();
        let parsed = reqwest::Url::parse(&url).map_err(|e| {
            ChatError::Permanent(format!("invalid base URL `{}`: {e}", config.base_url))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ChatError::Permanent(format!(
                "invalid base URL `{}`: only http and https are supported",
                config.base_url
            )));
        }
        let client = Client::builder()
            .connect_timeout(config.connect_timeout)
            .user_agent(concat!("walkrag-openai/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ChatError::Permanent(format!("cannot set up the HTTP client: {e}")))?;
        Ok(Self {
            id: format!("openai:{}", config.model),
            shared: Arc::new(Shared {
                client,
                url,
                config,
            }),
        })
    }

    /// The configuration it was made with.
    pub fn config(&self) -> &OpenAiConfig {
        &self.shared.config
    }

    /// The URL requests are posted to.
    pub fn url(&self) -> &str {
        &self.shared.url
    }
}

impl fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("id", &self.id)
            .field("url", &self.shared.url)
            .field("config", &self.shared.config)
            .finish()
    }
}

impl ChatModel for OpenAiModel {
    fn id(&self) -> &str {
        &self.id
    }

    fn context_length(&self) -> Option<usize> {
        self.shared.config.context_length
    }

    fn supports_tools(&self) -> bool {
        true
    }

    fn stream(&self, request: ChatRequest) -> DeltaStream {
        let model = &self.shared.config.model;
        let wire = RequestBody::new(model, &request);
        let fallback = wire.has_schema().then(|| {
            serde_json::to_vec(&RequestBody::new(model, &request).without_schema(&request))
        });
        let (body, fallback) = match (serde_json::to_vec(&wire), fallback.transpose()) {
            (Ok(body), Ok(fallback)) => (body, fallback),
            (Err(e), _) | (_, Err(e)) => {
                let error = ChatError::Permanent(format!("cannot encode the request: {e}"));
                return Box::pin(stream::iter([Err(error)]));
            }
        };
        let mut generation = Generation::new(Arc::clone(&self.shared), body);
        generation.schemaless = fallback;
        generation.unconstrained = wire::unsendable(&request);
        // Fused: polling again after the end gives `None` rather than a panic.
        let deltas = stream::unfold(generation, |mut generation| async move {
            let item = generation.next().await?;
            Some((item, generation))
        });
        Box::pin(deltas.fuse())
    }
}

/// Where a generation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Sending the request or reading the response.
    Running,
    /// `[DONE]` came: once the queued deltas are out, the rest of the body is read so the
    /// connection can go back to the pool.
    Draining,
    /// Nothing more will be yielded after the queue.
    Over,
}

/// How the body of a successful response is framed.
#[derive(Debug)]
enum Framing {
    /// Server-sent events (what `stream: true` asks for).
    Events(SseParser),
    /// A whole JSON response from a server that ignored `stream: true`: collected, then read
    /// as one event.
    Json(Vec<u8>),
}

/// One streamed request: its attempts, its response and the deltas not yet yielded.
struct Generation {
    shared: Arc<Shared>,
    body: Vec<u8>,
    /// Retries done so far.
    retries: u32,
    response: Option<Response>,
    framing: Framing,
    decoder: Decoder,
    /// Deltas decoded but not yet yielded, and the error that follows them.
    queue: VecDeque<Delta>,
    failure: Option<ChatError>,
    /// A delta reached the caller: from then on nothing is retried.
    yielded: bool,
    phase: Phase,
    /// The body without its JSON Schema, sent once if the server refuses `response_format`.
    schemaless: Option<Vec<u8>>,
    /// Why the request's constraint is not enforced: told to the caller once the server
    /// answers, before any text.
    unconstrained: Option<String>,
}

impl Generation {
    fn new(shared: Arc<Shared>, body: Vec<u8>) -> Self {
        Self {
            shared,
            body,
            retries: 0,
            response: None,
            framing: Framing::Events(SseParser::default()),
            decoder: Decoder::default(),
            queue: VecDeque::new(),
            failure: None,
            yielded: false,
            phase: Phase::Running,
            schemaless: None,
            unconstrained: None,
        }
    }

    /// The next item of the stream: deltas, then `Done` or one error, then `None`.
    async fn next(&mut self) -> Option<Result<Delta, ChatError>> {
        loop {
            if let Some(delta) = self.queue.pop_front() {
                self.yielded = true;
                return Some(Ok(delta));
            }
            if let Some(failure) = self.failure.take() {
                return Some(Err(failure));
            }
            match self.phase {
                Phase::Running => {}
                Phase::Draining => {
                    self.drain().await;
                    return None;
                }
                Phase::Over => return None,
            }
            if let Err(error) = self.step().await {
                self.fail(error).await;
            }
        }
    }

    /// Sends the request if there is no response yet, else reads and decodes one chunk.
    async fn step(&mut self) -> Result<(), ChatError> {
        let idle = self.shared.config.idle_timeout;
        let Some(response) = self.response.as_mut() else {
            self.response = Some(self.send().await?);
            if let Some(reason) = self.unconstrained.take() {
                self.queue.push_back(Delta::Unconstrained { reason });
            }
            return Ok(());
        };
        let chunk = timeout(idle, response.chunk())
            .await
            .map_err(|_| error::idle("data", &self.shared.url, idle))?
            .map_err(|e| error::broken_stream(e, &self.shared.url))?;
        let mut events = Vec::new();
        match (&mut self.framing, &chunk) {
            (Framing::Events(parser), Some(bytes)) => parser
                .push(bytes, &mut events)
                .map_err(|e| ChatError::Permanent(e.to_string()))?,
            (Framing::Events(parser), None) => parser.finish(&mut events),
            (Framing::Json(body), Some(bytes)) => {
                body.extend_from_slice(bytes);
                if body.len() > JSON_BODY_BYTES {
                    let message =
                        format!("the JSON response is larger than {JSON_BODY_BYTES} bytes");
                    return Err(ChatError::Permanent(message));
                }
            }
            (Framing::Json(body), None) => events.push(SseEvent {
                event: None,
                data: String::from_utf8_lossy(body).into_owned(),
            }),
        }
        for event in &events {
            if self.decoder.event(event, &mut self.queue)? == Flow::Done {
                return self.finish(true);
            }
        }
        if chunk.is_none() {
            return self.finish(false);
        }
        Ok(())
    }

    /// Posts the request; a non-2xx answer becomes the error it stands for, except a `400`
    /// that refuses the JSON Schema, which is posted once more without it.
    async fn send(&mut self) -> Result<Response, ChatError> {
        match self.post().await? {
            Ok(response) => Ok(response),
            Err(refusal) => {
                let shared = &self.shared;
                warn!(url = %shared.url, "the server refused response_format; asking again without the JSON Schema");
                self.unconstrained = Some(format!("the server refused the JSON Schema: {refusal}"));
                // The schemaless body cannot be refused for its schema.
                self.post().await?.map_err(ChatError::Permanent)
            }
        }
    }

    /// One post. `Ok(Err(message))`: a `400` naming `response_format` or `json_schema` while
    /// the body still has its schema; the body then becomes the schemaless one.
    async fn post(&mut self) -> Result<Result<Response, String>, ChatError> {
        let shared = &self.shared;
        let config = &shared.config;
        debug!(
            url = %shared.url,
            model = %config.model,
            attempt = self.retries + 1,
            bytes = self.body.len(),
            "posting a chat request"
        );
        let mut request = shared
            .client
            .post(&shared.url)
            .header(ACCEPT, "text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(self.body.clone());
        if let Some(key) = &config.api_key {
            request = request.bearer_auth(key.expose());
        }
        let response = timeout(config.idle_timeout, request.send())
            .await
            .map_err(|_| error::idle("response headers", &shared.url, config.idle_timeout))?
            .map_err(|e| error::transport(e, &shared.url))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry::retry_after(response.headers());
            let body = read_some(response, ERROR_BODY_BYTES, config.idle_timeout).await;
            let target = Target {
                url: &shared.url,
                model: &config.model,
                has_key: config.api_key.is_some(),
            };
            let error = error::status_error(status, retry_after, &body, &target);
            if status == reqwest::StatusCode::BAD_REQUEST && refuses_schema(&body) {
                if let Some(schemaless) = self.schemaless.take() {
                    self.body = schemaless;
                    let message = error::redact(error, config.api_key.as_ref()).to_string();
                    return Ok(Err(message));
                }
            }
            return Err(error);
        }
        if is_json(&response) {
            self.framing = Framing::Json(Vec::new());
        }
        Ok(Ok(response))
    }

    /// Queues the final `Done`, or fails with a cut stream.
    fn finish(&mut self, saw_done: bool) -> Result<(), ChatError> {
        let done = self.decoder.finish(saw_done)?;
        self.queue.push_back(done);
        self.phase = if saw_done {
            Phase::Draining
        } else {
            Phase::Over
        };
        if !saw_done {
            self.response = None;
        }
        Ok(())
    }

    /// Retries `error` if it is transient and nothing reached the caller yet, else ends the
    /// stream with it (after the deltas already decoded).
    async fn fail(&mut self, error: ChatError) {
        let error = error::redact(error, self.shared.config.api_key.as_ref());
        match self.retry_delay(&error) {
            Some(delay) => {
                warn!(
                    attempt = self.retries + 1,
                    delay_ms = delay.as_millis() as u64,
                    %error,
                    "chat request failed, retrying"
                );
                tokio::time::sleep(delay).await;
                self.restart();
            }
            None => {
                debug!(%error, retries = self.retries, "chat stream failed");
                self.response = None;
                self.phase = Phase::Over;
                self.failure = Some(error);
            }
        }
    }

    /// How long to wait before retrying `error`, or `None` to give up: permanent errors,
    /// anything after a delta was decoded, retries used up, or a server asking for a longer
    /// wait than [`OpenAiConfig::retry_max_delay`].
    fn retry_delay(&self, error: &ChatError) -> Option<Duration> {
        let config = &self.shared.config;
        let ChatError::Transient { retry_after, .. } = error else {
            return None;
        };
        if self.yielded || !self.queue.is_empty() || self.retries >= config.max_retries {
            return None;
        }
        match *retry_after {
            Some(wait) if wait > config.retry_max_delay => None,
            Some(wait) => Some(wait),
            None => Some(retry::backoff(
                self.retries,
                config.retry_base_delay,
                config.retry_max_delay,
            )),
        }
    }

    /// Forgets the failed attempt.
    fn restart(&mut self) {
        self.retries += 1;
        self.response = None;
        self.framing = Framing::Events(SseParser::default());
        self.decoder = Decoder::default();
    }

    /// Reads what is left of the body after `[DONE]` (usually just the end of the chunked
    /// encoding), briefly, then ends the stream.
    async fn drain(&mut self) {
        self.phase = Phase::Over;
        if let Some(mut response) = self.response.take() {
            let wait = self.shared.config.idle_timeout.min(DRAIN_WAIT);
            let _ = timeout(wait, async {
                while let Ok(Some(_)) = response.chunk().await {}
            })
            .await;
        }
    }
}

/// Whether an error body is about the request's structured-output format.
fn refuses_schema(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    text.contains("response_format") || text.contains("json_schema")
}

/// Whether a successful response is plain JSON rather than an event stream.
fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

/// Up to `limit` bytes of a body, each chunk waited for at most `idle`; whatever came if the
/// body fails.
async fn read_some(mut response: Response, limit: usize, idle: Duration) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < limit {
        match timeout(idle, response.chunk()).await {
            Ok(Ok(Some(bytes))) => body.extend_from_slice(&bytes),
            _ => break,
        }
    }
    body.truncate(limit);
    body
}
