//! Turning HTTP statuses, server error bodies and transport failures into [`ChatError`]s that
//! say what the caller can do: retry, shrink the prompt, or give up.

use std::error::Error as StdError;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use walkrag_core::ChatError;

use crate::config::ApiKey;

/// Characters of stream data quoted in an error message.
const EXCERPT_CHARS: usize = 200;

/// Characters of a server's own error message kept in ours.
const MESSAGE_CHARS: usize = 500;

/// Words by which servers say a prompt does not fit (lowercase): OpenAI, vLLM, llama.cpp,
/// and OpenAI-compatible proxies.
const CONTEXT_MARKERS: [&str; 6] = [
    "context_length_exceeded",
    "maximum context length",
    "exceeds the available context size",
    "exceed_context_size",
    "context window",
    "prompt is too long",
];

/// Phrases followed by the model's limit, and by the tokens the request needed.
const LIMIT_MARKERS: [&str; 3] = ["maximum context length is", "context size (", "limit of"];
const NEEDED_MARKERS: [&str; 3] = ["requested", "resulted in", "request has"];

/// What a failed request was for, to name it in messages.
pub(crate) struct Target<'a> {
    pub url: &'a str,
    pub model: &'a str,
    pub has_key: bool,
}

/// The error a non-2xx response stands for.
pub(crate) fn status_error(
    status: StatusCode,
    retry_after: Option<Duration>,
    body: &[u8],
    target: &Target<'_>,
) -> ChatError {
    let info = ServerError::from_body(body);
    if let Some(error) = info.context_too_long() {
        return error;
    }
    let message = &info.shown();
    match status.as_u16() {
        429 if info.code.as_deref() == Some("insufficient_quota") => ChatError::Permanent(format!(
            "the account's quota is used up ({status}): {message}"
        )),
        408 | 429 | 500 | 502 | 503 | 504 => ChatError::Transient {
            message: format!("the server answered {status}: {message}"),
            retry_after,
        },
        401 | 403 => {
            let hint = if target.has_key {
                "check OPENAI_API_KEY"
            } else {
                "no API key was sent: set OPENAI_API_KEY"
            };
            ChatError::Permanent(format!(
                "the server refused access ({status}: {message}); {hint}"
            ))
        }
        404 => ChatError::Permanent(format!(
            "{} answered 404 for model `{}` ({message}); check OPENAI_BASE_URL (most servers \
             want it to end in /v1) and the model name",
            target.url, target.model
        )),
        _ => ChatError::Permanent(format!("the server answered {status}: {message}")),
    }
}

/// The error an `error` object inside the stream stands for (there is no HTTP status then;
/// llama.cpp puts one in `code`).
pub(crate) fn stream_error(data: &str) -> ChatError {
    let info = match serde_json::from_str::<Value>(data) {
        Ok(value) => ServerError::from_value(&value),
        Err(_) => ServerError::from_text(data),
    };
    if let Some(error) = info.context_too_long() {
        return error;
    }
    let message = format!("the server failed mid-stream: {}", info.shown());
    let status = info
        .code
        .as_deref()
        .and_then(|code| code.parse::<u16>().ok());
    let refused = matches!(status, Some(400..=499)) && !matches!(status, Some(408 | 429));
    if refused || info.kind.as_deref() == Some("invalid_request_error") {
        ChatError::Permanent(message)
    } else {
        ChatError::Transient {
            message,
            retry_after: None,
        }
    }
}

/// A request that could not be sent or answered: refused or dropped connections and timeouts
/// are transient; a request reqwest cannot even build is permanent.
pub(crate) fn transport(error: reqwest::Error, url: &str) -> ChatError {
    if error.is_builder() {
        return ChatError::Permanent(format!("cannot build a request to {url}: {}", chain(error)));
    }
    let what = if error.is_connect() {
        "could not connect to"
    } else if error.is_timeout() {
        "timed out talking to"
    } else {
        "lost the connection to"
    };
    ChatError::Transient {
        message: format!("{what} {url}: {}", chain(error)),
        retry_after: None,
    }
}

/// The connection broke while the body was streaming.
pub(crate) fn broken_stream(error: reqwest::Error, url: &str) -> ChatError {
    ChatError::Transient {
        message: format!(
            "stream cut: the connection to {url} broke: {}",
            chain(error)
        ),
        retry_after: None,
    }
}

/// No data within the idle timeout.
pub(crate) fn idle(waiting_for: &str, url: &str, timeout: Duration) -> ChatError {
    ChatError::Transient {
        message: format!("timed out: no {waiting_for} from {url} within {timeout:?}"),
        retry_after: None,
    }
}

/// A data line that is not the JSON the API promises.
pub(crate) fn malformed(data: &str, error: &serde_json::Error) -> ChatError {
    ChatError::Permanent(format!(
        "the server sent malformed stream data ({error}): {}",
        excerpt(data)
    ))
}

/// Replaces the API key wherever a server echoed it into a message.
pub(crate) fn redact(error: ChatError, key: Option<&ApiKey>) -> ChatError {
    let Some(secret) = key.map(ApiKey::expose).filter(|s| s.len() >= 4) else {
        return error;
    };
    let clean = |text: String| text.replace(secret, "***");
    match error {
        ChatError::Transient {
            message,
            retry_after,
        } => ChatError::Transient {
            message: clean(message),
            retry_after,
        },
        ChatError::Permanent(message) => ChatError::Permanent(clean(message)),
        other => other,
    }
}

/// The first [`EXCERPT_CHARS`] characters of `text`, on one line.
pub(crate) fn excerpt(text: &str) -> String {
    shorten(text, EXCERPT_CHARS)
}

/// The first `chars` characters of `text`, on one line.
fn shorten(text: &str, chars: usize) -> String {
    let text = text.trim();
    let mut out: String = text.chars().take(chars).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out.replace(['\r', '\n'], " ")
}

/// An error and its causes on one line (reqwest's own message is terse: "error sending
/// request"; the cause says "connection refused").
fn chain(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

/// What a server said about a failure, from the shapes servers use: OpenAI and llama.cpp
/// (`{"error": {"message", "type", "code"}}`), vLLM (`{"message", "type", "code"}`), plain
/// strings (`{"error": "..."}`, `{"detail": "..."}`) or text.
#[derive(Debug, Default, PartialEq)]
struct ServerError {
    message: String,
    code: Option<String>,
    kind: Option<String>,
    /// llama.cpp's prompt size and context size.
    prompt_tokens: Option<usize>,
    context_size: Option<usize>,
}

impl ServerError {
    fn from_body(body: &[u8]) -> Self {
        let text = String::from_utf8_lossy(body);
        match serde_json::from_str::<Value>(&text) {
            Ok(value) => Self::from_value(&value),
            Err(_) => Self::from_text(&text),
        }
    }

    fn from_text(text: &str) -> Self {
        Self {
            message: text.trim().to_string(),
            ..Self::default()
        }
    }

    fn from_value(value: &Value) -> Self {
        let error = value.get("error").filter(|e| !e.is_null()).unwrap_or(value);
        let text = |key: &str| match error.get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let count = |key: &str| error.get(key).and_then(Value::as_u64).map(|n| n as usize);
        let message = match error {
            Value::String(s) => Some(s.clone()),
            _ => text("message").or_else(|| text("detail")),
        };
        Self {
            message: message.unwrap_or_else(|| value.to_string()),
            code: text("code"),
            kind: text("type"),
            prompt_tokens: count("n_prompt_tokens"),
            context_size: count("n_ctx"),
        }
    }

    /// The message as our errors quote it.
    fn shown(&self) -> String {
        let message = shorten(&self.message, MESSAGE_CHARS);
        if message.is_empty() {
            "no details".to_string()
        } else {
            message
        }
    }

    /// [`ChatError::ContextTooLong`] if this says the prompt does not fit, with the numbers
    /// the server gave (0 where it gave none).
    fn context_too_long(&self) -> Option<ChatError> {
        let lower = self.message.to_lowercase();
        let tags = [&self.code, &self.kind].map(|t| t.as_deref().unwrap_or("").to_lowercase());
        let hit = CONTEXT_MARKERS
            .iter()
            .any(|marker| lower.contains(marker) || tags.iter().any(|t| t.contains(marker)));
        if !hit {
            return None;
        }
        Some(ChatError::ContextTooLong {
            needed: self
                .prompt_tokens
                .or_else(|| number_after(&lower, &NEEDED_MARKERS))
                .unwrap_or(0),
            limit: self
                .context_size
                .or_else(|| number_after(&lower, &LIMIT_MARKERS))
                .unwrap_or(0),
        })
    }
}

/// The first number after any of `markers` in `text` (`4096`, `128,000`).
fn number_after(text: &str, markers: &[&str]) -> Option<usize> {
    markers.iter().find_map(|marker| {
        let start = text.find(marker)? + marker.len();
        let digits: String = text[start..]
            .trim_start_matches([' ', ':', '='])
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGET: Target<'static> = Target {
        url: "http://h/v1/chat/completions",
        model: "m",
        has_key: true,
    };

    fn status(code: u16, body: &str) -> ChatError {
        status_error(
            StatusCode::from_u16(code).unwrap(),
            None,
            body.as_bytes(),
            &TARGET,
        )
    }

    #[test]
    fn context_too_long_from_openai_vllm_and_llama_cpp() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert_eq!(
            status(400, openai),
            ChatError::ContextTooLong {
                needed: 9000,
                limit: 8192
            }
        );
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4488 in the messages, 512 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#;
        assert_eq!(
            status(400, vllm),
            ChatError::ContextTooLong {
                needed: 5000,
                limit: 4096
            }
        );
        let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5120,"n_ctx":4096}}"#;
        assert_eq!(
            status(400, llama),
            ChatError::ContextTooLong {
                needed: 5120,
                limit: 4096
            }
        );
        let old_llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing the context size or enable context shift","type":"invalid_request_error"}}"#;
        assert_eq!(
            status(400, old_llama),
            ChatError::ContextTooLong {
                needed: 0,
                limit: 0
            }
        );
        let code_only = r#"{"error":{"message":"too big","code":"context_length_exceeded"}}"#;
        assert_eq!(
            status(400, code_only),
            ChatError::ContextTooLong {
                needed: 0,
                limit: 0
            }
        );
    }

    #[test]
    fn statuses_map_to_what_the_caller_can_do() {
        assert!(status(429, r#"{"error":{"message":"slow down"}}"#).is_transient());
        for code in [500, 502, 503, 504, 408] {
            assert!(status(code, "oops").is_transient(), "{code}");
        }
        let quota = status(
            429,
            r#"{"error":{"message":"no money","code":"insufficient_quota"}}"#,
        );
        assert!(matches!(quota, ChatError::Permanent(m) if m.contains("quota")));
        let ChatError::Permanent(m) = status(401, r#"{"error":"bad key"}"#) else {
            panic!()
        };
        assert!(
            m.contains("bad key") && m.contains("check OPENAI_API_KEY"),
            "{m}"
        );
        let ChatError::Permanent(m) = status(404, r#"{"detail":"Not Found"}"#) else {
            panic!()
        };
        assert!(
            m.contains(TARGET.url) && m.contains("`m`") && m.contains("Not Found"),
            "{m}"
        );
        let ChatError::Permanent(m) = status(422, r#"{"message":"temperature must be <= 2"}"#)
        else {
            panic!()
        };
        assert_eq!(
            m,
            "the server answered 422 Unprocessable Entity: temperature must be <= 2"
        );
        let ChatError::Permanent(m) = status(400, "") else {
            panic!()
        };
        assert!(m.ends_with("no details"), "{m}");
    }

    #[test]
    fn errors_inside_the_stream() {
        assert!(
            stream_error(r#"{"error":{"message":"overloaded","type":"server_error"}}"#)
                .is_transient()
        );
        assert!(stream_error(r#"{"code":500,"message":"boom"}"#).is_transient());
        assert!(!stream_error(r#"{"code":400,"message":"bad grammar"}"#).is_transient());
        assert_eq!(
            stream_error(r#"{"error":{"message":"prompt is too long"}}"#),
            ChatError::ContextTooLong {
                needed: 0,
                limit: 0
            }
        );
    }

    #[test]
    fn excerpts_are_short_and_on_one_line() {
        assert_eq!(excerpt(" a\nb "), "a b");
        let long = "é".repeat(500);
        assert_eq!(excerpt(&long).chars().count(), EXCERPT_CHARS + 1);
    }

    #[test]
    fn redaction_hides_an_echoed_key() {
        let key = ApiKey::new("sk-echoed");
        let error = ChatError::Permanent("Incorrect API key provided: sk-echoed.".into());
        assert_eq!(
            redact(error, Some(&key)),
            ChatError::Permanent("Incorrect API key provided: ***.".into())
        );
    }

    #[test]
    fn numbers_follow_markers() {
        assert_eq!(
            number_after("limit of 128,000 tokens", &LIMIT_MARKERS),
            Some(128_000)
        );
        assert_eq!(number_after("nothing here", &LIMIT_MARKERS), None);
    }
}
