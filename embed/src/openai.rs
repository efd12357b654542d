//! Embeddings from any OpenAI-compatible server (`--embedder openai:MODEL`): text
//! embeddings inference, vLLM, Ollama, llama.cpp's server with `--embedding`, hosted APIs.
//!
//! Texts go to `POST {base_url}/embeddings` in batches, several requests in flight; 408, 429,
//! 5xx, refused or dropped connections and timeouts are retried with backoff (or the server's
//! `Retry-After`); anything else, and any answer of the wrong shape or dimension, fails the
//! whole call with an error naming the server's host. Chunks are cut by a local model's
//! tokenizer (MiniLM's by default), so an index built remotely is chunked exactly as one built
//! locally with that model. The API key is sent as a bearer token and nowhere else.

use std::collections::HashMap;
use std::future::Future;
use std::ops::Range;
use std::sync::Mutex;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::StatusCode;
use serde::Deserialize;
use walkrag_core::{EmbedError, Embedder, Embeddings};
use walkrag_openai::retry::{backoff, retry_after};
use walkrag_openai::ApiKey;

use crate::bert::TokenCounter;
use crate::DEFAULT_EMBEDDER;

/// The `--embedder` prefix that names a model on an OpenAI-compatible server.
pub const OPENAI_PREFIX: &str = "openai:";

/// The base URL when neither `WALKRAG_EMBED_BASE_URL` nor `OPENAI_BASE_URL` is set.
pub const DEFAULT_EMBED_BASE_URL: &str = "https://api.openai.com/v1";

/// The text embedded once at connection to learn the model's dimension.
const PROBE_TEXT: &str = "walkrag dimension probe";

/// Query vectors kept per process; past this many the cache starts over.
const QUERY_CACHE: usize = 4096;

/// Where the server is and how to talk to it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteConfig {
    /// The API root, e.g. `http://localhost:8080/v1`; requests go to `{base_url}/embeddings`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer KEY` when set; prints as `***`.
    pub api_key: Option<ApiKey>,
    /// The model name the server knows.
    pub model: String,
    /// Texts per request. Default 32: text-embeddings-inference's default
    /// `--max-client-batch-size`, and enough to keep a GPU's batches full with 4 in flight.
    pub batch: usize,
    /// Requests in flight at once. Default 4: a server batches concurrent requests together,
    /// while the client keeps its own work (JSON, tokenizing the next texts) off the wire.
    pub concurrency: usize,
    /// The longest one request may take, connection to last byte. Default 60 s: a batch of 32
    /// long passages on a busy CPU server takes seconds; a server that hangs is noticed.
    pub timeout: Duration,
    /// The longest wait for a TCP (and TLS) connection. Default 10 s.
    pub connect_timeout: Duration,
    /// Retries of a request that failed transiently. Default 5: with the default delays it
    /// rides out about half a minute of overload or a restarting server.
    pub max_retries: u32,
    /// The first backoff delay, doubled at each retry, with jitter. Default 500 ms.
    pub retry_base_delay: Duration,
    /// The longest delay between two attempts, and the longest `Retry-After` waited for (a
    /// longer one fails the request at once, saying so). Default 30 s.
    pub retry_max_delay: Duration,
    /// The local model whose tokenizer cuts chunks (`--embedder` spec). Default `minilm`.
    pub tokenizer: String,
}

impl RemoteConfig {
    /// A configuration for `model` at `base_url`, without a key, with the defaults above.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            batch: 32,
            concurrency: 4,
            timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            max_retries: 5,
            retry_base_delay: Duration::from_millis(500),
            retry_max_delay: Duration::from_secs(30),
            tokenizer: DEFAULT_EMBEDDER.to_string(),
        }
    }

    /// A configuration for `model` from the environment: `WALKRAG_EMBED_BASE_URL`, else
    /// `OPENAI_BASE_URL`, else [`DEFAULT_EMBED_BASE_URL`]; the key from `OPENAI_API_KEY`.
    /// Empty variables count as unset.
    pub fn from_env(model: impl Into<String>) -> Self {
        Self::from_vars(model.into(), |name| std::env::var(name).ok())
    }

    fn from_vars(model: String, var: impl Fn(&str) -> Option<String>) -> Self {
        let set = |name: &str| {
            var(name)
                .map(|value| value.trim().to_string())
                .filter(|value| !value.is_empty())
        };
        let base_url = set("WALKRAG_EMBED_BASE_URL")
            .or_else(|| set("OPENAI_BASE_URL"))
            .unwrap_or_else(|| DEFAULT_EMBED_BASE_URL.to_string());
        Self {
            api_key: set("OPENAI_API_KEY").map(ApiKey::new),
            ..Self::new(base_url, model)
        }
    }

    /// The URL requests are posted to.
    pub fn embeddings_url(&self) -> String {
        format!("{}/embeddings", self.base_url.trim_end_matches('/'))
    }
}

/// The model of an `openai:MODEL` spec, or `None` for a local spec.
pub fn remote_model(spec: &str) -> Option<&str> {
    spec.strip_prefix(OPENAI_PREFIX)
}

/// An [`Embedder`] backed by an OpenAI-compatible `/embeddings` endpoint.
pub struct OpenAiEmbedder {
    config: RemoteConfig,
    /// `openai:MODEL@HOST:PORT (dim N)`: what the index records and checks.
    id: String,
    /// Host and port of the server: what errors and logs name.
    server: String,
    url: String,
    dim: usize,
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
    counter: TokenCounter,
    queries: Mutex<HashMap<String, Vec<f32>>>,
}

/// One failed attempt: worth another try or not.
enum Failure {
    Retry {
        reason: String,
        after: Option<Duration>,
    },
    Fatal(String),
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

impl OpenAiEmbedder {
    /// Connects to the server: loads the chunking tokenizer, then embeds one short text to
    /// learn the dimension (and that the server, model and key work).
    pub fn connect(config: RemoteConfig) -> Result<Self, EmbedError> {
        let url = reqwest::Url::parse(&config.embeddings_url()).map_err(|e| {
            EmbedError::Load(format!(
                "the embedding server's base URL {:?} is not a URL: {e} (set WALKRAG_EMBED_BASE_URL or OPENAI_BASE_URL, e.g. http://localhost:8080/v1)",
                config.base_url
            ))
        })?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(EmbedError::Load(
                "the embedding server's base URL holds credentials: give the key in OPENAI_API_KEY instead".into(),
            ));
        }
        let server = match (url.host_str(), url.port_or_known_default()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_string(),
            _ => {
                return Err(EmbedError::Load(format!(
                    "the embedding server's base URL {:?} names no host",
                    config.base_url
                )))
            }
        };
        if config.batch == 0 || config.concurrency == 0 {
            return Err(EmbedError::Load(
                "the embedding batch and concurrency must be at least 1".into(),
            ));
        }
        let counter = TokenCounter::load(&config.tokenizer)?;
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| EmbedError::Load(format!("cannot set up the HTTP client: {e}")))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                EmbedError::Load(format!("cannot start the HTTP client's runtime: {e}"))
            })?;
        let mut embedder = Self {
            id: String::new(),
            server,
            url: url.to_string(),
            dim: 0,
            http,
            runtime,
            counter,
            queries: Mutex::new(HashMap::new()),
            config,
        };
        let probe = embedder.block(embedder.request(&[PROBE_TEXT]))?;
        embedder.dim = probe[0].len();
        if embedder.dim == 0 {
            return Err(embedder.error("answered an empty vector".into()));
        }
        embedder.id = format!(
            "{OPENAI_PREFIX}{}@{} (dim {})",
            embedder.config.model, embedder.server, embedder.dim
        );
        tracing::debug!("embedding with {}", embedder.id);
        Ok(embedder)
    }

    /// The server's host and port, as errors name it.
    pub fn server(&self) -> &str {
        &self.server
    }

    pub fn config(&self) -> &RemoteConfig {
        &self.config
    }

    fn error(&self, detail: String) -> EmbedError {
        EmbedError::Server {
            server: self.server.clone(),
            detail: self.mask(detail),
        }
    }

    /// `text` with the API key, should a server echo it, replaced by `***`.
    fn mask(&self, text: String) -> String {
        match &self.config.api_key {
            Some(key) if !key.expose().is_empty() && text.contains(key.expose()) => {
                text.replace(key.expose(), "***")
            }
            _ => text,
        }
    }

    /// Runs `work` on this embedder's runtime. Inside another async runtime (a strategy's
    /// search), where blocking on this one would panic, it waits for a thread that does.
    fn block<F>(&self, work: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        if tokio::runtime::Handle::try_current().is_err() {
            return self.runtime.block_on(work);
        }
        std::thread::scope(|scope| {
            scope
                .spawn(|| self.runtime.block_on(work))
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// Embeds `texts` in one request, retrying transient failures; the vectors normalised.
    async fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut attempt = 0;
        loop {
            let failure = match self.attempt(texts).await {
                Ok(vectors) => return Ok(vectors),
                Err(failure) => failure,
            };
            match failure {
                Failure::Fatal(detail) => return Err(self.error(detail)),
                Failure::Retry { reason, after } => {
                    if attempt >= self.config.max_retries {
                        return Err(
                            self.error(format!("{reason}; gave up after {} attempts", attempt + 1))
                        );
                    }
                    let delay = match after {
                        Some(after) if after > self.config.retry_max_delay => {
                            return Err(self.error(format!(
                                "{reason} and asks to wait {}, longer than the {} walkrag waits; try again later",
                                seconds(after),
                                seconds(self.config.retry_max_delay)
                            )))
                        }
                        Some(after) => after,
                        None => backoff(
                            attempt,
                            self.config.retry_base_delay,
                            self.config.retry_max_delay,
                        ),
                    };
                    tracing::warn!(
                        "the embedding server at {} {reason}; retrying in {:.1} s",
                        self.server,
                        delay.as_secs_f64()
                    );
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
            }
        }
    }

    /// One request for `texts`.
    async fn attempt(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, Failure> {
        let body = serde_json::json!({ "model": self.config.model, "input": texts });
        let mut request = self
            .http
            .post(&self.url)
            .timeout(self.config.timeout)
            .json(&body);
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key.expose());
        }
        let response = request.send().await.map_err(|e| self.transport(&e))?;
        let status = response.status();
        if !status.is_success() {
            let after = retry_after(response.headers());
            let text = response.text().await.unwrap_or_default();
            let reason = format!("answered HTTP {}{}", status.as_u16(), server_message(&text));
            let transient = status == StatusCode::REQUEST_TIMEOUT
                || status == StatusCode::TOO_MANY_REQUESTS
                || status.is_server_error();
            return Err(if transient {
                Failure::Retry { reason, after }
            } else {
                Failure::Fatal(format!("{reason}{}", advice(status)))
            });
        }
        let bytes = response.bytes().await.map_err(|e| self.transport(&e))?;
        let parsed: Response = serde_json::from_slice(&bytes).map_err(|e| {
            Failure::Fatal(format!(
                "answered something that is not an embeddings response ({e}); is {} an OpenAI-compatible /embeddings endpoint?",
                self.url
            ))
        })?;
        self.vectors(parsed, texts.len()).map_err(Failure::Fatal)
    }

    /// The response's vectors in input order, checked and normalised.
    fn vectors(&self, response: Response, wanted: usize) -> Result<Vec<Vec<f32>>, String> {
        if response.data.len() != wanted {
            return Err(format!(
                "answered {} vectors for {wanted} texts",
                response.data.len()
            ));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; wanted];
        for (position, item) in response.data.into_iter().enumerate() {
            let i = item.index.unwrap_or(position);
            let expected = if self.dim == 0 {
                item.embedding.len()
            } else {
                self.dim
            };
            if item.embedding.len() != expected {
                return Err(format!(
                    "answered a vector of {} values where the model gave {expected} before (wrong dimension): is it still serving the same model?",
                    item.embedding.len()
                ));
            }
            let mut vector = item.embedding;
            let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
            if !norm.is_finite() || norm == 0.0 {
                return Err("answered a zero or non-finite vector".into());
            }
            vector.iter_mut().for_each(|x| *x /= norm);
            match out.get_mut(i) {
                Some(slot @ None) => *slot = Some(vector),
                _ => return Err(format!("answered index {i} twice or out of range")),
            }
        }
        Ok(out
            .into_iter()
            .map(|v| v.expect("every index filled"))
            .collect())
    }

    /// A failure to send or to read the answer: timeouts and connection errors are retried.
    fn transport(&self, e: &reqwest::Error) -> Failure {
        if e.is_timeout() {
            return Failure::Retry {
                reason: format!("did not answer within {}", seconds(self.config.timeout)),
                after: None,
            };
        }
        if e.is_connect() || e.is_request() || e.is_body() {
            return Failure::Retry {
                reason: format!(
                    "could not be reached or dropped the connection ({})",
                    cause(e)
                ),
                after: None,
            };
        }
        Failure::Fatal(format!("failed: {}", cause(e)))
    }

    /// Embeds `texts` in batches of `config.batch`, `config.concurrency` requests at a time.
    async fn embed_all(&self, texts: &[&str]) -> Result<Embeddings, EmbedError> {
        let mut out = Embeddings::zeros(texts.len(), self.dim);
        let batches: Vec<Range<usize>> = (0..texts.len())
            .step_by(self.config.batch)
            .map(|start| start..(start + self.config.batch).min(texts.len()))
            .collect();
        let mut results = futures_util::stream::iter(batches.into_iter().map(|range| async move {
            let vectors = self.request(&texts[range.clone()]).await?;
            Ok::<_, EmbedError>((range, vectors))
        }))
        .buffer_unordered(self.config.concurrency);
        // The first error returns here and drops the requests still in flight.
        while let Some(result) = results.next().await {
            let (range, vectors) = result?;
            for (row, vector) in range.zip(vectors) {
                out.row_mut(row).copy_from_slice(&vector);
            }
        }
        Ok(out)
    }
}

/// The server's own message from an error body (`{"error": {"message"}}`, `{"error": "…"}`,
/// `{"message"}`, or short plain text), as `: message`, cut to 200 characters.
fn server_message(body: &str) -> String {
    let json: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = json
        .as_ref()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("error"))
                .or_else(|| v.get("message"))
                .and_then(|m| m.as_str())
                .map(str::to_string)
        })
        .unwrap_or_else(|| body.trim().to_string());
    if message.is_empty() {
        return String::new();
    }
    let short: String = message.chars().take(200).collect();
    format!(" ({short})")
}

/// A duration as people read it: `0.3 s`, `60 s`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 && s.fract() != 0.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.0} s")
    }
}

/// What to check for a status that is not retried.
fn advice(status: StatusCode) -> &'static str {
    match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            ": check OPENAI_API_KEY"
        }
        StatusCode::NOT_FOUND => {
            ": check the base URL (WALKRAG_EMBED_BASE_URL or OPENAI_BASE_URL, usually ending in /v1) and the model name"
        }
        StatusCode::PAYLOAD_TOO_LARGE | StatusCode::UNPROCESSABLE_ENTITY => {
            ": the batch may be too large for the server; try a smaller --embed-batch"
        }
        _ => "",
    }
}

/// The innermost cause of a transport error (hyper's "connection closed", "refused").
fn cause(e: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = e;
    while let Some(next) = source.source() {
        source = next;
    }
    source.to_string()
}

impl Embedder for OpenAiEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn max_tokens(&self) -> usize {
        self.counter.max_tokens()
    }

    fn count_tokens(&self, text: &str) -> Result<usize, EmbedError> {
        self.counter.count_tokens(text)
    }

    fn token_spans(&self, text: &str) -> Result<Vec<Range<usize>>, EmbedError> {
        self.counter.token_spans(text)
    }

    fn embed(&self, texts: &[&str]) -> Result<Embeddings, EmbedError> {
        if texts.is_empty() {
            return Ok(Embeddings::zeros(0, self.dim));
        }
        self.block(self.embed_all(texts))
    }

    /// One request per distinct query; repeated queries come from a per-process cache.
    fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        if let Some(vector) = self.queries.lock().expect("query cache").get(text) {
            return Ok(vector.clone());
        }
        let vector = self
            .block(self.request(&[text]))?
            .pop()
            .expect("one vector per text");
        let mut cache = self.queries.lock().expect("query cache");
        if cache.len() >= QUERY_CACHE {
            cache.clear();
        }
        cache.insert(text.to_string(), vector.clone());
        Ok(vector)
    }
}

impl std::fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("id", &self.id)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.to_string())
        }
    }

    #[test]
    fn base_url_from_walkrag_first_then_openai() {
        let config = RemoteConfig::from_vars("m".into(), vars(&[]));
        assert_eq!(config.base_url, DEFAULT_EMBED_BASE_URL);
        let config = RemoteConfig::from_vars(
            "m".into(),
            vars(&[
                ("OPENAI_BASE_URL", "http://chat:8080/v1"),
                ("WALKRAG_EMBED_BASE_URL", " http://embed:8089/v1/ "),
                ("OPENAI_API_KEY", "sk-1"),
            ]),
        );
        assert_eq!(config.embeddings_url(), "http://embed:8089/v1/embeddings");
        assert_eq!(config.api_key.as_ref().map(ApiKey::expose), Some("sk-1"));
        let config = RemoteConfig::from_vars(
            "m".into(),
            vars(&[
                ("OPENAI_BASE_URL", "http://chat:8080/v1"),
                ("WALKRAG_EMBED_BASE_URL", ""),
            ]),
        );
        assert_eq!(config.embeddings_url(), "http://chat:8080/v1/embeddings");
    }

    #[test]
    fn specs_and_server_messages() {
        assert_eq!(
            remote_model("openai:text-embedding-3-small"),
            Some("text-embedding-3-small")
        );
        assert_eq!(remote_model("minilm"), None);
        assert_eq!(
            server_message(r#"{"error": {"message": "rate limited"}}"#),
            " (rate limited)"
        );
        assert_eq!(server_message(r#"{"error": "busy"}"#), " (busy)");
        assert_eq!(server_message(""), "");
        assert_eq!(server_message(&"x".repeat(500)).len(), 203);
    }

    #[test]
    fn key_never_prints() {
        let config = RemoteConfig {
            api_key: Some(ApiKey::new("sk-secret-value")),
            ..RemoteConfig::new("http://h/v1", "m")
        };
        assert!(!format!("{config:?}").contains("sk-secret-value"));
    }
}
