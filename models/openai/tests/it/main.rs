//! The client against a real HTTP server on 127.0.0.1 (see `server.rs`): streaming, the
//! request it sends, retries, failures, timeouts, cancellation and key secrecy.

mod cancel;
mod failures;
mod request;
mod retries;
mod secrets;
mod server;
mod streaming;
mod timeouts;

use std::time::Duration;

use walkrag_core::chat::next;
use walkrag_core::{ChatError, ChatModel, ChatRequest, Delta, Message};
use walkrag_openai::{OpenAiConfig, OpenAiModel};

use server::Server;

/// A configuration for `server` that fails and retries fast: 2 retries 10 ms apart (and
/// doubling), 2 s idle timeout.
fn config(server: &Server) -> OpenAiConfig {
    OpenAiConfig {
        idle_timeout: Duration::from_secs(2),
        max_retries: 2,
        retry_base_delay: Duration::from_millis(10),
        retry_max_delay: Duration::from_secs(2),
        ..OpenAiConfig::new(&server.base_url, "test-model")
    }
}

fn model(config: OpenAiConfig) -> OpenAiModel {
    OpenAiModel::new(config).expect("a valid configuration")
}

fn hello() -> ChatRequest {
    ChatRequest::new(vec![Message::user("Say hello.")])
}

/// Every item of a stream (checking it stays ended), failing the test if it takes more than
/// 10 s.
async fn collect(model: &OpenAiModel, request: ChatRequest) -> Vec<Result<Delta, ChatError>> {
    let mut stream = model.stream(request);
    let all = async {
        let mut items = Vec::new();
        while let Some(item) = next(&mut stream).await {
            items.push(item);
        }
        assert!(
            next(&mut stream).await.is_none(),
            "an ended stream stays ended"
        );
        items
    };
    tokio::time::timeout(Duration::from_secs(10), all)
        .await
        .expect("the stream ends")
}

fn text(content: &str) -> Result<Delta, ChatError> {
    Ok(Delta::Text {
        text: content.to_string(),
    })
}
