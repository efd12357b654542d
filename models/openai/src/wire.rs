//! The JSON of the chat completions API: the request body we send and the stream chunks we
//! read. Response types are lenient (every field optional, `null` allowed) because servers
//! differ in what they leave out.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use walkrag_core::{ChatRequest, Constraint, Message, Role, ToolCall, ToolDef};

/// The body of `POST /chat/completions`.
#[derive(Debug, Serialize)]
pub(crate) struct RequestBody<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    temperature: f32,
    top_p: f32,
    seed: u64,
    max_tokens: usize,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
}

impl<'a> RequestBody<'a> {
    /// A streaming request for `model`, asking for usage in the last chunk.
    pub fn new(model: &'a str, request: &'a ChatRequest) -> Self {
        let sampling = &request.sampling;
        Self {
            model,
            messages: request.messages.iter().map(WireMessage::new).collect(),
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            temperature: sampling.temperature,
            top_p: sampling.top_p,
            seed: sampling.seed,
            max_tokens: sampling.max_tokens,
            stop: &sampling.stop,
            response_format: ResponseFormat::of(request),
            tools: request.tools.iter().map(WireTool::new).collect(),
        }
    }

    /// The same request with no JSON Schema in it (JSON mode stays where it was asked for):
    /// for a server that refuses `response_format: json_schema`.
    pub fn without_schema(mut self, request: &ChatRequest) -> Self {
        self.response_format = request.json.then(ResponseFormat::json_object);
        self
    }

    /// Whether the request carries a JSON Schema a server may refuse.
    pub fn has_schema(&self) -> bool {
        self.response_format
            .as_ref()
            .is_some_and(|f| f.json_schema.is_some())
    }
}

/// Why a request's constraint cannot go to the server at all: the chat completions API
/// takes JSON Schemas, not grammars or regexes.
pub(crate) fn unsendable(request: &ChatRequest) -> Option<String> {
    match &request.constraint {
        Some(c @ (Constraint::Lark(_) | Constraint::Regex(_))) => Some(format!(
            "OpenAI-compatible servers take JSON Schemas only; the {} constraint was not sent",
            c.kind()
        )),
        _ => None,
    }
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Debug, Serialize)]
struct ResponseFormat {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    json_schema: Option<JsonSchemaFormat>,
}

impl ResponseFormat {
    /// `json_schema` (strict) for a JSON Schema constraint, else `json_object` in JSON mode.
    fn of(request: &ChatRequest) -> Option<Self> {
        match &request.constraint {
            Some(Constraint::JsonSchema(schema)) => Some(Self {
                kind: "json_schema",
                json_schema: Some(JsonSchemaFormat {
                    name: "reply",
                    schema: schema.clone(),
                    strict: true,
                }),
            }),
            _ => request.json.then(Self::json_object),
        }
    }

    fn json_object() -> Self {
        Self {
            kind: "json_object",
            json_schema: None,
        }
    }
}

#[derive(Debug, Serialize)]
struct JsonSchemaFormat {
    name: &'static str,
    schema: Value,
    strict: bool,
}

#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: Role,
    /// `null` for an assistant message that only calls tools.
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

impl<'a> WireMessage<'a> {
    fn new(message: &'a Message) -> Self {
        let only_calls = message.content.is_empty() && !message.tool_calls.is_empty();
        Self {
            role: message.role,
            content: (!only_calls).then_some(message.content.as_str()),
            tool_calls: message.tool_calls.iter().map(WireCall::new).collect(),
            tool_call_id: message.tool_call_id.as_deref(),
        }
    }
}

#[derive(Debug, Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireCallFunction<'a>,
}

impl<'a> WireCall<'a> {
    fn new(call: &'a ToolCall) -> Self {
        Self {
            id: &call.id,
            kind: "function",
            function: WireCallFunction {
                name: &call.name,
                arguments: &call.arguments,
            },
        }
    }
}

#[derive(Debug, Serialize)]
struct WireCallFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireToolFunction<'a>,
}

impl<'a> WireTool<'a> {
    fn new(tool: &'a ToolDef) -> Self {
        Self {
            kind: "function",
            function: WireToolFunction {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
            },
        }
    }
}

#[derive(Debug, Serialize)]
struct WireToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// One `data:` chunk of the stream, or a whole non-streamed response (its `message` read as
/// the delta).
#[derive(Debug, Deserialize)]
pub(crate) struct Chunk {
    pub choices: Option<Vec<Choice>>,
    pub usage: Option<WireUsage>,
    /// Set when the server reports a failure inside the stream.
    pub error: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Choice {
    pub index: Option<usize>,
    #[serde(alias = "message")]
    pub delta: Option<WireDelta>,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireDelta {
    pub content: Option<String>,
    pub tool_calls: Option<Vec<WireToolDelta>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireToolDelta {
    pub index: Option<usize>,
    pub id: Option<String>,
    pub function: Option<WireFunctionDelta>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireFunctionDelta {
    pub name: Option<String>,
    /// A string by the API; some servers send the arguments as a JSON object instead.
    pub arguments: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireUsage {
    pub prompt_tokens: Option<usize>,
    pub completion_tokens: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use walkrag_core::Sampling;

    /// The body as the server reads it (f32 sampling values are written in their shortest
    /// form, `0.9` rather than `0.8999999761581421`).
    fn wire(request: &ChatRequest) -> Value {
        let bytes = serde_json::to_vec(&RequestBody::new("m", request)).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn request_maps_messages_sampling_and_tools() {
        let mut call_message = Message::assistant("");
        call_message.tool_calls = vec![ToolCall {
            id: "c1".into(),
            name: "search".into(),
            arguments: "{\"q\":\"x\"}".into(),
        }];
        let request = ChatRequest {
            messages: vec![
                Message::system("be brief"),
                Message::user("hi"),
                call_message,
                Message::tool("c1", "found"),
            ],
            sampling: Sampling {
                temperature: 0.5,
                top_p: 0.9,
                seed: 7,
                max_tokens: 64,
                stop: vec!["END".into()],
            },
            json: true,
            tools: vec![ToolDef {
                name: "search".into(),
                description: "Searches.".into(),
                parameters: json!({"type": "object"}),
            }],
            openings: Vec::new(),
            constraint: None,
        };
        assert_eq!(
            wire(&request),
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "c1", "type": "function",
                         "function": {"name": "search", "arguments": "{\"q\":\"x\"}"}}
                    ]},
                    {"role": "tool", "content": "found", "tool_call_id": "c1"},
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
                "temperature": 0.5,
                "top_p": 0.9,
                "seed": 7,
                "max_tokens": 64,
                "stop": ["END"],
                "response_format": {"type": "json_object"},
                "tools": [{"type": "function", "function": {
                    "name": "search", "description": "Searches.", "parameters": {"type": "object"}
                }}],
            })
        );
    }

    #[test]
    fn plain_request_leaves_optional_fields_out() {
        let request = ChatRequest::new(vec![Message::user("hi")]);
        let body = wire(&request);
        for absent in ["stop", "response_format", "tools"] {
            assert!(body.get(absent).is_none(), "{absent} in {body}");
        }
    }

    #[test]
    fn chunks_tolerate_nulls_and_missing_fields() {
        let chunk: Chunk = serde_json::from_str(
            r#"{"id":"x","choices":[{"index":0,"delta":{"content":null,"tool_calls":null},
                "finish_reason":null,"logprobs":null}],"usage":null}"#,
        )
        .unwrap();
        assert_eq!(chunk.choices.unwrap().len(), 1);
        let chunk: Chunk = serde_json::from_str(r#"{"choices":null}"#).unwrap();
        assert!(chunk.choices.is_none() && chunk.usage.is_none() && chunk.error.is_none());
    }
}
