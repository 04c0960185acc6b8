//! What the server keeps of each request: [`RecordedRequest`] and, for refused ones, the
//! [`Rejection`] it answered.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{WireApi, anthropic, openai};

/// An error answer the server gave instead of a scripted turn: a failed check (400, 401), a
/// context-window overflow (400), no turn left (500), or an unknown route (404).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// HTTP status.
    pub status: u16,
    /// The error `type` in the body (`invalid_request_error`, `authentication_error`, ...).
    pub kind: String,
    /// OpenAI's error `code` (`context_length_exceeded`, ...), if any.
    pub code: Option<String>,
    /// The error message in the body.
    pub message: String,
}

impl Rejection {
    /// A rejection with every field given.
    pub fn new(status: u16, kind: impl Into<String>, code: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            status,
            kind: kind.into(),
            code: code.map(str::to_owned),
            message: message.into(),
        }
    }

    /// A 400 `invalid_request_error` (the same type name in both formats).
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(400, "invalid_request_error", None, message)
    }

    /// A rejection with the error type (and OpenAI code) the given API uses for `status`.
    pub fn for_status(api: WireApi, status: u16, message: impl Into<String>) -> Self {
        match api {
            WireApi::Anthropic => Self::new(status, anthropic::error_type(status), None, message),
            WireApi::OpenAi | WireApi::Responses => {
                let (kind, code) = openai::error_type(status);
                Self::new(status, kind, code, message)
            }
        }
    }
}

/// One request as the server received it, with what it answered.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The wire API of the route, `None` for an unknown route (answered 404).
    pub api: Option<WireApi>,
    /// HTTP method, e.g. `POST`.
    pub method: String,
    /// Request path, e.g. `/v1/messages`.
    pub path: String,
    /// Headers by lowercased name; repeated headers joined with `", "`.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON; a body that is not JSON is kept as a JSON string of its text.
    pub body: Value,
    /// Index (in push order, from 0) of the turn that answered it; `None` when rejected.
    pub turn_index: Option<usize>,
    /// Why the request got an error instead of a turn; `None` when a turn answered it.
    pub rejection: Option<Rejection>,
    /// When the server received it (its body read, before any scripted delay).
    pub at: tokio::time::Instant,
    /// When its head had arrived: the first bytes, before the body was read (the end point of
    /// "first byte at the model server" figures).
    pub first_byte: tokio::time::Instant,
}

impl RecordedRequest {
    /// The value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str)
    }

    /// The server refused it (no turn was used).
    pub fn is_rejected(&self) -> bool {
        self.rejection.is_some()
    }

    /// The request asked for a streamed answer (`"stream": true`).
    pub fn is_streaming(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    /// The `messages` array of the body (Responses: its `input` items; empty when missing).
    pub fn messages(&self) -> &[Value] {
        let field = if self.api == Some(WireApi::Responses) {
            "input"
        } else {
            "messages"
        };
        self.body
            .get(field)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The system prompt: Anthropic's top-level `system` (text blocks joined with `"\n"`), or
    /// the text of OpenAI's `system` / `developer` messages (joined with `"\n"`); Responses:
    /// `instructions` first, then those messages.
    pub fn system_prompt(&self) -> Option<String> {
        match self.api {
            Some(WireApi::Anthropic) => self.body.get("system").map(content_text),
            Some(api @ (WireApi::OpenAi | WireApi::Responses)) => {
                let instructions = self
                    .body
                    .get("instructions")
                    .and_then(Value::as_str)
                    .filter(|_| api == WireApi::Responses)
                    .map(str::to_owned);
                let parts: Vec<String> = instructions
                    .into_iter()
                    .chain(
                        self.messages()
                            .iter()
                            .filter(|message| {
                                matches!(
                                    message.get("role").and_then(Value::as_str),
                                    Some("system" | "developer")
                                )
                            })
                            .filter_map(|message| message.get("content").map(content_text)),
                    )
                    .collect();
                (!parts.is_empty()).then(|| parts.join("\n"))
            }
            None => None,
        }
    }

    /// The conversation, read the same way for both formats ([`Transcript`](super::Transcript));
    /// empty for an unknown route.
    pub fn transcript(&self) -> super::Transcript {
        self.api
            .map(|api| super::Transcript::of(api, &self.body))
            .unwrap_or_default()
    }

    /// The tool outputs this request sends back, in order, as `(call id, text)`: Anthropic
    /// `tool_result` blocks, OpenAI `role: "tool"` messages, Responses `function_call_output`
    /// items (`call_id`, `output`). Text parts are joined with `"\n"`.
    pub fn tool_outputs(&self) -> Vec<(String, String)> {
        let text_of = |value: &Value, id_field: &str| {
            let id = value.get(id_field).and_then(Value::as_str)?;
            let text = value.get("content").map(content_text).unwrap_or_default();
            Some((id.to_owned(), text))
        };
        match self.api {
            Some(WireApi::Anthropic) => self
                .messages()
                .iter()
                .filter_map(|message| message.get("content").and_then(Value::as_array))
                .flatten()
                .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"))
                .filter_map(|block| text_of(block, "tool_use_id"))
                .collect(),
            Some(WireApi::OpenAi) => self
                .messages()
                .iter()
                .filter(|message| message.get("role").and_then(Value::as_str) == Some("tool"))
                .filter_map(|message| text_of(message, "tool_call_id"))
                .collect(),
            Some(WireApi::Responses) => self
                .messages()
                .iter()
                .filter(|item| item.get("type").and_then(Value::as_str) == Some("function_call_output"))
                .filter_map(|item| {
                    let id = item.get("call_id").and_then(Value::as_str)?;
                    Some((id.to_owned(), item.get("output").map(content_text).unwrap_or_default()))
                })
                .collect(),
            None => Vec::new(),
        }
    }
}

/// The text of a content value: a string as is, or the `text` of an array's blocks joined with
/// `"\n"`.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Object(_) => String::new(),
    }
}
