//! One model call, streamed and recorded: what every strategy does to talk to its model.

use std::time::Instant;

use walkrag_core::{
    chat, ChatError, ChatModel, ChatRequest, Completion, Delta, FinishReason, ScoreItem, Scores,
};

use crate::answer::Cost;
use crate::control::Control;
use crate::trace::{LlmCall, ScoreCall, Step};

/// Streams `request` to `model`, giving each piece of text to `on_text` as it arrives, and
/// returns the completion with the call's record for the trace. When `control` says stop,
/// the generation is cancelled and the text so far returned as a finished completion (the
/// record says it was stopped). A stream that ends without finishing is a transient error.
/// Tool calls are written into the record's completion after the text.
pub async fn call(
    model: &dyn ChatModel,
    cycle: usize,
    purpose: &str,
    request: ChatRequest,
    control: &Control,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> (Result<Completion, ChatError>, LlmCall) {
    let started = Instant::now();
    let mut call = LlmCall {
        cycle,
        purpose: purpose.to_string(),
        messages: request.messages.clone(),
        json: request.json,
        constraint: request.constraint.as_ref().map(|c| c.kind().to_string()),
        unconstrained: None,
        completion: String::new(),
        usage: Default::default(),
        finish: None,
        ms: 0,
        model: None,
        error: None,
    };
    let mut stream = model.stream(request);
    let mut out = Completion::default();
    let mut failure = None;
    let mut stopped = false;
    while let Some(item) = chat::next(&mut stream).await {
        match item {
            Ok(delta) => {
                if let Delta::Text { text } = &delta {
                    on_text(text);
                }
                out.push(delta);
                if control.is_stopped() && out.finish.is_none() {
                    stopped = true;
                    break;
                }
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    drop(stream);
    if stopped {
        call.error = Some("stopped by the user".into());
        out.finish = Some(FinishReason::Stop);
    } else if failure.is_none() && out.finish.is_none() {
        failure = Some(ChatError::Transient {
            message: "the stream ended without finishing".into(),
            retry_after: None,
        });
    }
    call.completion = out.text.clone();
    for tool_call in &out.tool_calls {
        call.completion.push_str(&format!(
            "\n[tool call {} {}({})]",
            tool_call.id, tool_call.name, tool_call.arguments
        ));
    }
    call.usage = out.usage;
    call.finish = out.finish;
    call.unconstrained = out.unconstrained.clone();
    call.ms = started.elapsed().as_millis() as u64;
    if let Some(e) = &failure {
        call.error = Some(e.to_string());
    }
    let result = match failure {
        Some(e) => Err(e),
        None => Ok(out),
    };
    (result, call)
}

/// Asks `model` to weigh `items` ([`ChatModel::score`]) and returns the scores with the
/// call's trace record.
pub async fn score(
    model: &dyn ChatModel,
    cycle: usize,
    purpose: &str,
    items: Vec<ScoreItem>,
) -> (Result<Scores, ChatError>, ScoreCall) {
    let started = Instant::now();
    let result = model.score(items.clone()).await;
    let call = ScoreCall {
        cycle,
        purpose: purpose.to_string(),
        items,
        scores: result
            .as_ref()
            .map(|s| s.scores.clone())
            .unwrap_or_default(),
        usage: result.as_ref().map(|s| s.usage).unwrap_or_default(),
        ms: started.elapsed().as_millis() as u64,
        error: result.as_ref().err().map(ToString::to_string),
    };
    (result, call)
}

/// [`score`], the call recorded in `steps` and its tokens added to `cost`: the scores in the
/// items' order, or an error unless every item got one.
pub async fn score_recorded(
    model: &dyn ChatModel,
    cycle: usize,
    purpose: &str,
    items: Vec<ScoreItem>,
    steps: &mut Vec<Step>,
    cost: &mut Cost,
) -> Result<Vec<f32>, ChatError> {
    let n = items.len();
    let (result, call) = score(model, cycle, purpose, items).await;
    steps.push(Step::Score(call));
    let scores = result?;
    cost.add_call(scores.usage);
    if scores.scores.len() != n {
        return Err(ChatError::Permanent(format!(
            "{} weighed {} of {n} continuations",
            model.id(),
            scores.scores.len()
        )));
    }
    Ok(scores.scores)
}
