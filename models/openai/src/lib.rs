//! A [`walkrag_core::ChatModel`] for OpenAI-compatible chat servers: OpenAI, llama.cpp's
//! server, vLLM, Ollama and the like, streamed from `POST {base_url}/chat/completions` with
//! `stream: true` (server-sent events).
//!
//! ```no_run
//! # async fn demo() -> Result<(), walkrag_core::ChatError> {
//! use walkrag_core::{chat::complete, ChatRequest, Message};
//! use walkrag_openai::{OpenAiConfig, OpenAiModel};
//!
//! // OPENAI_BASE_URL (default https://api.openai.com/v1) and OPENAI_API_KEY (optional).
//! let model = OpenAiModel::new(OpenAiConfig::from_env("gpt-4o-mini"))?;
//! let answer = complete(&model, ChatRequest::new(vec![Message::user("Hi!")])).await?;
//! println!("{}", answer.text);
//! # Ok(())
//! # }
//! ```
//!
//! What callers can rely on:
//! - **Retries.** 408, 429, 500, 502, 503, 504, refused or dropped connections and timeouts
//!   are retried up to [`OpenAiConfig::max_retries`] times, but only before the first delta
//!   reached the caller: exponential backoff with jitter, or exactly the wait the server asks
//!   for in `Retry-After` / `retry-after-ms`. Then the last [`ChatError::Transient`] comes
//!   back, with the server's `retry_after`.
//! - **Errors say what to do.** A prompt that does not fit is [`ChatError::ContextTooLong`]
//!   (with the numbers when the server gives them); a bad key, an unknown model or URL, or any
//!   other refused request is [`ChatError::Permanent`]. Once deltas were yielded, a cut
//!   connection or an idle timeout ends the stream with a transient error, malformed data with
//!   a permanent one, and nothing is retried.
//! - **Usage.** From the server's last chunk (`stream_options.include_usage`). A server that
//!   sends none gets an estimate: 0 prompt tokens and one completion token per delta.
//! - **The key stays secret.** [`ApiKey`] prints as `***`, and a key a server echoes back is
//!   masked in error messages and logs.
//!
//! [`ChatError::Transient`]: walkrag_core::ChatError::Transient
//! [`ChatError::ContextTooLong`]: walkrag_core::ChatError::ContextTooLong
//! [`ChatError::Permanent`]: walkrag_core::ChatError::Permanent

mod config;
mod decode;
mod error;
mod model;
pub mod retry;
mod sse;
mod wire;

pub use config::{ApiKey, OpenAiConfig, DEFAULT_BASE_URL};
pub use model::OpenAiModel;
