//! Successful streams: text and tool calls, however the server frames them.

use serde_json::json;
use walkrag_core::chat::complete;
use walkrag_core::{ChatError, Completion, Delta, FinishReason, ToolCall, Usage};

use crate::server::{self, event, finish, reply, sse, usage, Server, Step, DONE};
use crate::{collect, config, hello, model, text};

/// On a multi-threaded runtime too (the others run on the current thread).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_deltas_split_across_writes_arrive_whole_and_in_order() {
    let crlf = |s: String| s.replace('\n', "\r\n");
    let hel = crlf(server::text("Hel"));
    let (hel_start, hel_end) = hel.split_at(hel.len() / 2);
    let lo = server::text("lo, ").replacen("data: ", "data:", 1);
    let world = "data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"world\"}}]}\n\n";
    let server = Server::start(vec![sse(&[
        ": keep-alive\r\n\r\n",
        hel_start,
        hel_end,
        &lo[..3],
        &lo[3..],
        world,
        ":\n\n",
        &finish("stop"),
        &usage(5, 3),
        DONE,
    ])])
    .await;

    let items = collect(&model(config(&server)), hello()).await;

    let done = Delta::Done {
        usage: Usage {
            prompt_tokens: 5,
            completion_tokens: 3,
            forced_tokens: 0,
        },
        finish: FinishReason::Stop,
    };
    assert_eq!(items, [text("Hel"), text("lo, "), text("world"), Ok(done)]);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn tool_calls_streamed_in_pieces_assemble_into_calls() {
    let call = |index: usize, id: Option<&str>, name: Option<&str>, arguments: &str| {
        let mut function = json!({"arguments": arguments});
        if let Some(name) = name {
            function["name"] = json!(name);
        }
        let mut call = json!({"index": index, "type": "function", "function": function});
        if let Some(id) = id {
            call["id"] = json!(id);
        }
        event(json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}))
    };
    let server = Server::start(vec![sse(&[
        &event(json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": null}}]})),
        &call(0, Some("call_1"), Some("search"), ""),
        &call(0, None, None, "{\"query\":"),
        &call(0, None, None, "\"rust sse\"}"),
        &call(1, Some("call_2"), Some("open"), "{\"id\":"),
        &call(1, None, None, "\"a1b2\"}"),
        &finish("tool_calls"),
        &usage(40, 21),
        DONE,
    ])])
    .await;
    let model = model(config(&server));

    let completion = complete(&model, hello()).await.unwrap();

    let tool = |id: &str, name: &str, arguments: &str| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    };
    assert_eq!(
        completion,
        Completion {
            text: String::new(),
            tool_calls: vec![
                tool("call_1", "search", "{\"query\":\"rust sse\"}"),
                tool("call_2", "open", "{\"id\":\"a1b2\"}"),
            ],
            usage: Usage {
                prompt_tokens: 40,
                completion_tokens: 21,
                forced_tokens: 0,
            },
            finish: Some(FinishReason::ToolCalls),
            unconstrained: None,
        }
    );
}

/// The head of a 200 event stream whose body ends when the server closes the connection.
fn close_delimited(body: &str) -> Vec<Step> {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    vec![Step::Write(format!("{head}{body}").into_bytes())]
}

#[tokio::test]
async fn a_finish_reason_without_usage_or_done_ends_with_an_estimate() {
    let body = [server::text("a"), server::text("b"), finish("length")].concat();
    let server = Server::start(vec![close_delimited(&body)]).await;

    let items = collect(&model(config(&server)), hello()).await;

    let done = Delta::Done {
        usage: Usage {
            prompt_tokens: 0,
            completion_tokens: 2,
            forced_tokens: 0,
        },
        finish: FinishReason::Length,
    };
    assert_eq!(items, [text("a"), text("b"), Ok(done)]);
}

#[tokio::test]
async fn a_stream_ending_without_done_or_finish_reason_is_cut() {
    let server = Server::start(vec![close_delimited(&server::text("half an answ"))]).await;

    let items = collect(&model(config(&server)), hello()).await;

    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0], text("half an answ"));
    let Err(ChatError::Transient { message, .. }) = &items[1] else {
        panic!("{items:?}")
    };
    assert!(message.contains("stream cut"), "{message}");
    assert_eq!(
        server.requests().len(),
        1,
        "nothing is retried after a delta"
    );
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_still_answers() {
    let body = json!({
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Hi there"}}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 2},
    });
    let server = Server::start(vec![reply(
        200,
        &[("Content-Type", "application/json")],
        &body.to_string(),
    )])
    .await;

    let items = collect(&model(config(&server)), hello()).await;

    let done = Delta::Done {
        usage: Usage {
            prompt_tokens: 4,
            completion_tokens: 2,
            forced_tokens: 0,
        },
        finish: FinishReason::Stop,
    };
    assert_eq!(items, [text("Hi there"), Ok(done)]);
}
