//! Streams one answer from an OpenAI-compatible server to stdout.
//!
//! ```text
//! OPENAI_BASE_URL=http://localhost:8080/v1 cargo run -p walkrag-openai --example chat -- MODEL "Why is the sky blue?"
//! ```

use std::io::Write;

use walkrag_core::chat::next;
use walkrag_core::{ChatModel, ChatRequest, Delta, Message};
use walkrag_openai::{OpenAiConfig, OpenAiModel};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(model), Some(question)) = (args.next(), args.next()) else {
        return Err("usage: chat MODEL QUESTION".into());
    };
    let model = OpenAiModel::new(OpenAiConfig::from_env(model))?;
    let mut stream = model.stream(ChatRequest::new(vec![Message::user(question)]));
    let mut stdout = std::io::stdout();
    while let Some(delta) = next(&mut stream).await {
        match delta? {
            Delta::Text { text } => write!(stdout, "{text}")?,
            Delta::ToolCall { .. } | Delta::Unconstrained { .. } => {}
            Delta::Done { usage, finish } => {
                writeln!(stdout)?;
                eprintln!(
                    "[{finish:?}, {} + {} tokens]",
                    usage.prompt_tokens, usage.completion_tokens
                );
            }
        }
        stdout.flush()?;
    }
    Ok(())
}
