//! How to reach a server: base URL, API key, model name, timeouts and retries.

use std::fmt;
use std::time::Duration;

/// The base URL [`OpenAiConfig::from_env`] uses when `OPENAI_BASE_URL` is unset.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A secret API key. It prints as `***` (Debug and Display alike), so it never reaches a log,
/// an error message or a trace; only [`ApiKey::expose`] gives the text.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key (`sk-…`).
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the `Authorization` header. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> Self {
        Self(key)
    }
}

impl From<&str> for ApiKey {
    fn from(key: &str) -> Self {
        Self(key.to_string())
    }
}

/// Where and how to talk to an OpenAI-compatible server.
///
/// Requests go to `{base_url}/chat/completions`: the base URL is used as given (one trailing
/// slash or more dropped) and nothing else is added, so it must include the API prefix most
/// servers have, e.g. `https://api.openai.com/v1`, `http://localhost:8080/v1` (llama.cpp),
/// `http://localhost:11434/v1` (Ollama), `http://localhost:8000/v1` (vLLM).
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    /// The API root; see the type's documentation for how the request URL is made.
    pub base_url: String,
    /// Sent as `Authorization: Bearer KEY` when set; local servers usually need none.
    pub api_key: Option<ApiKey>,
    /// The model name the server knows (`gpt-4o-mini`, `qwen2.5:7b`, …).
    pub model: String,
    /// Reported by [`walkrag_core::ChatModel::context_length`]. Default `None`: the chat API
    /// does not tell, and a wrong guess would make strategies cut prompts needlessly.
    pub context_length: Option<usize>,
    /// The longest wait for a TCP (and TLS) connection. Default 10 s: ample for a handshake
    /// over a slow link, short enough to notice a dead host quickly.
    pub connect_timeout: Duration,
    /// The longest wait for the response headers and then between two chunks of the stream.
    /// Default 60 s: a loaded server may think that long over a long prompt before its first
    /// token, while a dead stream is still noticed within a minute.
    pub idle_timeout: Duration,
    /// How many times a transient failure (429, 5xx, a refused or dropped connection, a
    /// timeout) is retried before anything was streamed. Default 4: with the default delays
    /// that rides out about 7 s of overload, and each `Retry-After` the server asks for.
    pub max_retries: u32,
    /// The first backoff delay, doubled at each retry, with jitter. Default 500 ms: enough
    /// for a momentary overload to pass without making an interactive user wait.
    pub retry_base_delay: Duration,
    /// The longest delay between two attempts. Default 20 s. A `Retry-After` longer than this
    /// is not waited for: the error goes to the caller at once, carrying that delay.
    pub retry_max_delay: Duration,
}

impl OpenAiConfig {
    /// A configuration for `model` at `base_url`, without a key, with the default timeouts
    /// and retries.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            context_length: None,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_retries: 4,
            retry_base_delay: Duration::from_millis(500),
            retry_max_delay: Duration::from_secs(20),
        }
    }

    /// A configuration for `model` from the environment: `OPENAI_BASE_URL` (default
    /// [`DEFAULT_BASE_URL`]) and `OPENAI_API_KEY` (optional). Empty variables count as unset.
    pub fn from_env(model: impl Into<String>) -> Self {
        Self::from_vars(model.into(), |name| std::env::var(name).ok())
    }

    fn from_vars(model: String, var: impl Fn(&str) -> Option<String>) -> Self {
        let set = |name: &str| {
            var(name)
                .map(|value| value.trim().to_string())
                .filter(|value| !value.is_empty())
        };
        let base_url = set("OPENAI_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        Self {
            api_key: set("OPENAI_API_KEY").map(ApiKey::new),
            ..Self::new(base_url, model)
        }
    }

    /// The URL requests are posted to: the base URL without trailing slashes, then
    /// `/chat/completions`.
    pub fn chat_url(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
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
    fn environment_gives_base_url_and_optional_key() {
        let config = OpenAiConfig::from_vars("gpt-4o-mini".into(), vars(&[]));
        assert_eq!(config.base_url, DEFAULT_BASE_URL);
        assert_eq!(config.api_key, None);
        assert_eq!(
            config.chat_url(),
            "https://api.openai.com/v1/chat/completions"
        );

        let config = OpenAiConfig::from_vars(
            "qwen".into(),
            vars(&[
                ("OPENAI_BASE_URL", " http://localhost:8080/v1/ "),
                ("OPENAI_API_KEY", "sk-1"),
            ]),
        );
        assert_eq!(
            config.chat_url(),
            "http://localhost:8080/v1/chat/completions"
        );
        assert_eq!(config.api_key.as_ref().map(ApiKey::expose), Some("sk-1"));

        let config = OpenAiConfig::from_vars(
            "qwen".into(),
            vars(&[("OPENAI_BASE_URL", ""), ("OPENAI_API_KEY", "  ")]),
        );
        assert_eq!(config.base_url, DEFAULT_BASE_URL);
        assert_eq!(config.api_key, None);
    }

    #[test]
    fn base_url_is_used_as_given() {
        let config = OpenAiConfig::new("http://host:11434//", "m");
        assert_eq!(config.chat_url(), "http://host:11434/chat/completions");
    }

    #[test]
    fn key_never_prints() {
        let key = ApiKey::new("sk-secret-value");
        assert_eq!(format!("{key} {key:?}"), "*** ***");
        let config = OpenAiConfig {
            api_key: Some(key),
            ..OpenAiConfig::new("http://h/v1", "m")
        };
        assert!(!format!("{config:?} {config:#?}").contains("sk-secret-value"));
    }
}
