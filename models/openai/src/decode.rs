//! Stream events to [`Delta`]s: text and tool-call pieces as they come, then one
//! [`Delta::Done`] with the usage and the finish reason.

use std::collections::VecDeque;

use serde_json::Value;
use walkrag_core::{ChatError, Delta, FinishReason, Usage};

use crate::error;
use crate::sse::SseEvent;
use crate::wire::{Choice, Chunk, WireToolDelta, WireUsage};

/// What the stream does after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    More,
    /// `[DONE]`: nothing follows.
    Done,
}

/// What the events of one response said so far.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    /// Text and tool-call deltas emitted: the completion-token estimate when the server
    /// reports no usage.
    deltas: usize,
}

impl Decoder {
    /// Decodes one event, appending its deltas to `out`.
    pub fn event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<Delta>,
    ) -> Result<Flow, ChatError> {
        if event.event.as_deref() == Some("error") {
            return Err(error::stream_error(&event.data));
        }
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(Flow::Done);
        }
        if data.is_empty() {
            return Ok(Flow::More);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| error::malformed(data, &e))?;
        if let Some(failure) = chunk.error {
            return Err(error::stream_error(&failure.to_string()));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage_of(usage));
        }
        // Only the first choice is read: walkrag never asks for more than one (`n` = 1).
        let first = chunk
            .choices
            .into_iter()
            .flatten()
            .filter(|c| c.index.unwrap_or(0) == 0);
        for choice in first {
            self.choice(choice, out);
        }
        Ok(Flow::More)
    }

    /// The last delta of a response that ended after `[DONE]` (`saw_done`) or at the end of
    /// the body: `Done` if the server said why it finished, else a transient "stream cut".
    pub fn finish(&self, saw_done: bool) -> Result<Delta, ChatError> {
        let finish = match (self.finish, saw_done) {
            (Some(finish), _) => finish,
            // `[DONE]` is the server's word that the answer is whole.
            (None, true) => FinishReason::Stop,
            (None, false) => {
                return Err(ChatError::Transient {
                    message: "stream cut: the response ended without [DONE] or a finish reason"
                        .into(),
                    retry_after: None,
                })
            }
        };
        let usage = self.usage.unwrap_or(Usage {
            prompt_tokens: 0,
            completion_tokens: self.deltas,
            forced_tokens: 0,
        });
        Ok(Delta::Done { usage, finish })
    }

    fn choice(&mut self, choice: Choice, out: &mut VecDeque<Delta>) {
        if let Some(delta) = choice.delta {
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                out.push_back(Delta::Text { text });
                self.deltas += 1;
            }
            for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
                if let Some(delta) = tool_delta(position, call) {
                    out.push_back(delta);
                    self.deltas += 1;
                }
            }
        }
        if let Some(reason) = choice.finish_reason {
            self.finish = Some(finish_reason(&reason));
        }
    }
}

/// A tool-call piece; `None` when it carries nothing. Servers that leave out `index` send
/// whole calls, numbered by their position.
fn tool_delta(position: usize, call: WireToolDelta) -> Option<Delta> {
    let nonempty = |s: Option<String>| s.filter(|s| !s.is_empty());
    let (name, arguments) = match call.function {
        Some(function) => (function.name, function.arguments),
        None => (None, None),
    };
    let arguments = match arguments {
        Some(Value::String(text)) => text,
        Some(Value::Null) | None => String::new(),
        Some(object) => object.to_string(),
    };
    let id = nonempty(call.id);
    let name = nonempty(name);
    if id.is_none() && name.is_none() && arguments.is_empty() {
        return None;
    }
    Some(Delta::ToolCall {
        index: call.index.unwrap_or(position),
        id,
        name,
        arguments,
    })
}

fn usage_of(usage: WireUsage) -> Usage {
    Usage {
        prompt_tokens: usage.prompt_tokens.unwrap_or(0),
        completion_tokens: usage.completion_tokens.unwrap_or(0),
        forced_tokens: 0,
    }
}

/// OpenAI's reasons, and the older or foreign names some servers use.
fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "length" | "max_tokens" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        "stop" | "eos" | "end_turn" | "stop_sequence" => FinishReason::Stop,
        other => {
            tracing::debug!(reason = other, "unknown finish reason, taken as stop");
            FinishReason::Stop
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[&str]) -> (Vec<Delta>, Result<Flow, ChatError>, Decoder) {
        let mut decoder = Decoder::default();
        let mut out = VecDeque::new();
        let mut flow = Ok(Flow::More);
        for data in events {
            let event = SseEvent {
                event: None,
                data: data.to_string(),
            };
            flow = decoder.event(&event, &mut out);
            if flow != Ok(Flow::More) {
                break;
            }
        }
        (out.into(), flow, decoder)
    }

    #[test]
    fn text_usage_and_finish() {
        let (deltas, flow, decoder) = run(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"length"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#,
            "[DONE]",
        ]);
        assert_eq!(
            deltas,
            [
                Delta::Text { text: "Hel".into() },
                Delta::Text { text: "lo".into() }
            ]
        );
        assert_eq!(flow, Ok(Flow::Done));
        assert_eq!(
            decoder.finish(true),
            Ok(Delta::Done {
                usage: Usage {
                    prompt_tokens: 5,
                    completion_tokens: 2,
                    forced_tokens: 0
                },
                finish: FinishReason::Length
            })
        );
    }

    #[test]
    fn tool_calls_in_pieces() {
        let (deltas, _, decoder) = run(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"search","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(
            deltas,
            [
                Delta::ToolCall {
                    index: 0,
                    id: Some("c1".into()),
                    name: Some("search".into()),
                    arguments: String::new()
                },
                Delta::ToolCall {
                    index: 0,
                    id: None,
                    name: None,
                    arguments: "{\"q\":".into()
                },
                Delta::ToolCall {
                    index: 0,
                    id: None,
                    name: None,
                    arguments: "1}".into()
                },
            ]
        );
        // No usage from the server: the delta count stands in for completion tokens.
        assert_eq!(
            decoder.finish(false),
            Ok(Delta::Done {
                usage: Usage {
                    prompt_tokens: 0,
                    completion_tokens: 3,
                    forced_tokens: 0
                },
                finish: FinishReason::ToolCalls
            })
        );
    }

    #[test]
    fn whole_tool_calls_without_index_are_numbered_by_position() {
        let (deltas, _, _) = run(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":{"x":1}}},{"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}"#,
        ]);
        assert_eq!(
            deltas,
            [
                Delta::ToolCall {
                    index: 0,
                    id: Some("a".into()),
                    name: Some("f".into()),
                    arguments: "{\"x\":1}".into()
                },
                Delta::ToolCall {
                    index: 1,
                    id: Some("b".into()),
                    name: Some("g".into()),
                    arguments: "{}".into()
                },
            ]
        );
    }

    #[test]
    fn other_choices_are_ignored() {
        let (deltas, _, _) = run(&[r#"{"choices":[{"index":1,"delta":{"content":"no"}}]}"#]);
        assert!(deltas.is_empty());
    }

    #[test]
    fn an_end_without_finish_is_a_cut() {
        let (_, _, decoder) = run(&[r#"{"choices":[{"delta":{"content":"x"}}]}"#]);
        assert!(decoder.finish(false).unwrap_err().is_transient());
        assert!(matches!(
            decoder.finish(true),
            Ok(Delta::Done {
                finish: FinishReason::Stop,
                ..
            })
        ));
    }

    #[test]
    fn malformed_json_is_permanent_with_an_excerpt() {
        let (_, flow, _) = run(&[r#"{"choices":[{"delta":{"content":"x"}"#]);
        let Err(ChatError::Permanent(message)) = flow else {
            panic!("{flow:?}")
        };
        assert!(message.contains(r#"{"choices":[{"delta""#), "{message}");
    }

    #[test]
    fn error_events_and_error_objects() {
        let mut decoder = Decoder::default();
        let mut out = VecDeque::new();
        let event = SseEvent {
            event: Some("error".into()),
            data: r#"{"code":500}"#.into(),
        };
        assert!(decoder.event(&event, &mut out).unwrap_err().is_transient());
        let (_, flow, _) = run(&[r#"{"error":{"message":"bad","type":"invalid_request_error"}}"#]);
        assert!(matches!(flow, Err(ChatError::Permanent(_))));
    }

    #[test]
    fn whole_responses_read_message_as_delta() {
        let (deltas, _, decoder) = run(&[
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
        ]);
        assert_eq!(deltas, [Delta::Text { text: "Hi".into() }]);
        assert!(matches!(
            decoder.finish(false),
            Ok(Delta::Done {
                finish: FinishReason::Stop,
                ..
            })
        ));
    }
}
