//! Errors: the one shape every refusal takes on the wire, `{"error": {"code", "message"}}`
//! with its HTTP status, and the server's own setup errors.

use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::Serialize;
use walkrag_core::ChatError;
use walkrag_walker::{StrategyError, UnknownStrategy};

/// An error answered to a client. `code` is stable (scripts match on it); `message` is for
/// people and may change.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// Seconds to wait before trying again (`Retry-After`), for `queue_full`.
    pub retry_after: Option<u64>,
    /// For `context_too_long`: the tokens the prompt needed and the model's context.
    pub tokens: Option<Tokens>,
}

/// A prompt's size against the model's context, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tokens {
    pub needed: usize,
    pub limit: usize,
}

#[derive(Serialize)]
struct Body<'a> {
    error: Inner<'a>,
}

#[derive(Serialize)]
struct Inner<'a> {
    code: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tokens: Option<Tokens>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
            tokens: None,
        }
    }

    /// Refused for what the client asked, not failed: a question the model cannot take.
    pub fn is_rejection(&self) -> bool {
        self.status.is_client_error()
    }

    /// A request that is well-formed JSON but asks for something invalid.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// Every generation slot is busy and the queue is full.
    pub fn queue_full(retry_after: u64, waiting: usize) -> Self {
        Self {
            retry_after: Some(retry_after),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "queue_full",
                format!(
                    "the server is busy ({waiting} questions waiting); try again in {retry_after} s"
                ),
            )
        }
    }

    /// `{"error": {"code", "message"}}`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&Body {
            error: Inner {
                code: self.code,
                message: &self.message,
                tokens: self.tokens,
            },
        })
        .expect("an error serializes")
    }

    /// The same object as an event of the `ask` stream: `{"type": "error", "error": {...}}`.
    pub fn to_event(&self) -> String {
        #[derive(Serialize)]
        struct Event<'a> {
            r#type: &'static str,
            error: Inner<'a>,
        }
        serde_json::to_string(&Event {
            r#type: "error",
            error: Inner {
                code: self.code,
                message: &self.message,
                tokens: self.tokens,
            },
        })
        .expect("an error serializes")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            self.to_json(),
        )
            .into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.code == "payload_too_large" {
            // The rest of the body is never read, so the connection cannot carry another
            // request: say so, or a client's pool reuses it and its next request fails.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

impl From<UnknownStrategy> for ApiError {
    fn from(e: UnknownStrategy) -> Self {
        match e {
            UnknownStrategy::Unknown(_) => {
                Self::new(StatusCode::BAD_REQUEST, "unknown_strategy", e.to_string())
            }
            UnknownStrategy::NeedsApi => Self::new(
                StatusCode::BAD_REQUEST,
                "unsupported_strategy",
                "the actions strategy calls an API on the user's behalf and is not served; \
                 use `walkrag ask REQUEST --strategy actions`",
            ),
        }
    }
}

impl From<StrategyError> for ApiError {
    fn from(e: StrategyError) -> Self {
        match e {
            StrategyError::Embed(_) => Self::internal(e.to_string()),
            // The client's question (with what the strategy read for it) does not fit the
            // model: a 413 the client can act on (a shorter question, a smaller k), not a
            // failure of the model.
            StrategyError::Chat(ChatError::ContextTooLong { needed, limit }) => Self {
                tokens: Some(Tokens { needed, limit }),
                ..Self::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "context_too_long",
                    format!(
                        "the prompt for this question needs {needed} tokens and the model \
                         takes {limit}: ask a shorter question, or a smaller k"
                    ),
                )
            },
            StrategyError::Chat(_) => {
                let status = if e.is_transient() {
                    StatusCode::SERVICE_UNAVAILABLE
                } else {
                    StatusCode::BAD_GATEWAY
                };
                Self::new(status, "model_failed", e.to_string())
            }
        }
    }
}

/// A JSON request body, refused in the error shape above: `payload_too_large` past the body
/// limit, `invalid_json` when it does not parse, `invalid_request` when it parses but does
/// not fit (a missing or unknown field, a wrong type).
pub struct JsonBody<T>(pub T);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|e| {
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "payload_too_large",
                        "the request body is larger than this server accepts (--max-body)",
                    )
                } else {
                    ApiError::invalid(format!("cannot read the request body: {}", e.body_text()))
                }
            })?;
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            use serde_json::error::Category;
            match e.classify() {
                Category::Data => ApiError::invalid(e.to_string()),
                _ => ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_json",
                    format!("the request body is not JSON: {e}"),
                ),
            }
        })
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "{addr} is reachable from other machines: give --token (every request must then carry \
         `Authorization: Bearer TOKEN`), or listen on 127.0.0.1"
    )]
    NeedsToken { addr: std::net::SocketAddr },
    #[error("--token has whitespace (a newline from a secret file?); clients would never send it: give the token alone")]
    TokenWhitespace,
    #[error("--token has {chars} characters; give at least 16 (e.g. `openssl rand -hex 16`)")]
    ShortToken { chars: usize },
    #[error("--cors takes one origin such as https://example.org, not {0:?}")]
    BadOrigin(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("the server failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("the MCP server failed: {0}")]
    Mcp(String),
}
