//! OpenAI Responses streaming events as they come off the wire (decoding only; mapping to
//! provider events is in `mapper.rs`), and the error body of a failed request.
//!
//! Each SSE event's `data:` holds a JSON object whose `type` names the event
//! (`response.output_text.delta`, ...), as the API reference's "Streaming events" lists them.
//! Events this provider does not need (`response.created`, `response.content_part.added`, ...)
//! decode to [`WireEvent::Other`]; unknown fields are ignored.

use serde::Deserialize;
use serde_json::Value;
use volcanic_provider_support::{ProviderError, error_fields, truncate};

/// One decoded stream event.
#[derive(Debug, Clone, PartialEq)]
pub enum WireEvent {
    /// `response.created`: the response's id.
    Created { id: Option<String> },
    /// `response.output_item.added`: an output item starts.
    ItemAdded { output_index: usize, item: Item },
    /// `response.output_item.done`: an output item is complete.
    ItemDone { output_index: usize, item: Item },
    /// `response.output_text.delta` / `response.refusal.delta`.
    TextDelta { output_index: usize, delta: String },
    /// `response.reasoning_summary_text.delta`.
    SummaryDelta {
        output_index: usize,
        summary_index: usize,
        delta: String,
    },
    /// `response.function_call_arguments.delta`.
    ArgumentsDelta { output_index: usize, delta: String },
    /// `response.function_call_arguments.done`: the whole arguments text.
    ArgumentsDone { output_index: usize, arguments: String },
    /// `response.completed`, `response.incomplete` or `response.failed`: the terminal event.
    Finished(Box<ResponseObject>),
    /// `error`: `(code, message)`.
    Error(Option<String>, Option<String>),
    /// Any other event (`response.in_progress`, `response.content_part.added`, ...).
    Other,
}

/// An output item (`reasoning`, `message`, `function_call`; others are kept as `Other`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Item {
    /// Reasoning: summary parts and, when asked for, the encrypted reasoning.
    Reasoning {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        summary: Vec<SummaryPart>,
        #[serde(default)]
        encrypted_content: Option<String>,
    },
    /// An assistant message (`output_text` and `refusal` parts).
    Message {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        content: Vec<Value>,
    },
    /// A function call: `call_id` pairs it with its output, `id` is the item's own id.
    FunctionCall {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        call_id: Option<String>,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        arguments: Option<String>,
    },
    /// Anything else (web search calls, ...): ignored.
    #[serde(other)]
    Other,
}

/// One part of a reasoning summary.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SummaryPart {
    /// The summary text.
    #[serde(default)]
    pub(crate) text: String,
}

/// The `response` object of a terminal event.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ResponseObject {
    #[serde(default)]
    pub(crate) id: Option<String>,
    /// `completed`, `incomplete`, `failed`, ...
    #[serde(default)]
    pub(crate) status: Option<String>,
    #[serde(default)]
    pub(crate) usage: Option<WireUsage>,
    /// Why an incomplete response stopped.
    #[serde(default)]
    pub(crate) incomplete_details: Option<IncompleteDetails>,
    /// What failed, for `failed`.
    #[serde(default)]
    pub(crate) error: Option<Value>,
}

/// `incomplete_details`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct IncompleteDetails {
    /// `max_output_tokens` or `content_filter`.
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

/// Token counts of a response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct WireUsage {
    /// Input tokens, cached ones included.
    #[serde(default)]
    pub(crate) input_tokens: u64,
    /// Output tokens, reasoning included.
    #[serde(default)]
    pub(crate) output_tokens: u64,
    /// Breakdown of the input tokens.
    #[serde(default)]
    pub(crate) input_tokens_details: Option<InputDetails>,
}

/// `input_tokens_details`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct InputDetails {
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub(crate) cached_tokens: u64,
}

/// The fields of the events this provider reads; which are present depends on `type`.
#[derive(Debug, Deserialize)]
struct Raw {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    output_index: Option<usize>,
    #[serde(default)]
    summary_index: Option<usize>,
    #[serde(default)]
    item: Option<Item>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    response: Option<ResponseObject>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
}

/// Decodes one SSE event.
pub(crate) fn decode(event: &eventsource_stream::Event) -> Result<WireEvent, ProviderError> {
    let data = event.data.trim();
    let malformed = |detail: String| ProviderError::Decode {
        event: event.event.clone(),
        detail: format!("{detail} in {}", truncate(data, 200)),
    };
    let raw: Raw = serde_json::from_str(data).map_err(|e| malformed(e.to_string()))?;
    let index = || {
        raw.output_index
            .ok_or_else(|| malformed("no `output_index`".to_owned()))
    };
    let decoded = match raw.kind.as_str() {
        "response.created" => WireEvent::Created {
            id: raw.response.and_then(|r| r.id),
        },
        "response.output_item.added" | "response.output_item.done" => {
            let output_index = index()?;
            let item = raw.item.ok_or_else(|| malformed("no `item`".to_owned()))?;
            if raw.kind.ends_with("added") {
                WireEvent::ItemAdded { output_index, item }
            } else {
                WireEvent::ItemDone { output_index, item }
            }
        }
        "response.output_text.delta" | "response.refusal.delta" => WireEvent::TextDelta {
            output_index: index()?,
            delta: raw.delta.unwrap_or_default(),
        },
        "response.reasoning_summary_text.delta" => WireEvent::SummaryDelta {
            output_index: index()?,
            summary_index: raw.summary_index.unwrap_or(0),
            delta: raw.delta.unwrap_or_default(),
        },
        "response.function_call_arguments.delta" => WireEvent::ArgumentsDelta {
            output_index: index()?,
            delta: raw.delta.unwrap_or_default(),
        },
        "response.function_call_arguments.done" => WireEvent::ArgumentsDone {
            output_index: index()?,
            arguments: raw.arguments.unwrap_or_default(),
        },
        "response.completed" | "response.incomplete" | "response.failed" => {
            let mut response = raw.response.unwrap_or_default();
            if response.status.is_none() {
                response.status = raw.kind.strip_prefix("response.").map(str::to_owned);
            }
            WireEvent::Finished(Box::new(response))
        }
        "error" => WireEvent::Error(raw.code.as_ref().and_then(code_text), raw.message),
        _ => WireEvent::Other,
    };
    Ok(decoded)
}

/// A `code` value as text (a string, or a number some servers send).
fn code_text(code: &Value) -> Option<String> {
    match code {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Null | Value::Bool(_) | Value::Array(_) | Value::Object(_) => None,
    }
}

/// `(code, message)` of an `error` object: `code` (a string or number, else `type`) and
/// `message`.
pub(crate) fn error_parts(error: &Value) -> (Option<String>, Option<String>) {
    error_fields(error, code_text)
}

/// The `(kind, message)` of an HTTP error body: OpenAI's `{"error": {"message", "type", "code"}}`.
pub(crate) fn error_body(body: &str) -> Option<(Option<String>, Option<String>)> {
    let value: Value = serde_json::from_str(body).ok()?;
    let error = value.get("error").filter(|e| !e.is_null())?;
    Some(error_parts(error))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    use volcanic_provider_support::testing::sse_data as event;

    #[test]
    fn events_decode_table() {
        let cases: Vec<(&str, WireEvent)> = vec![
            (
                r#"{"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}"#,
                WireEvent::Created {
                    id: Some("resp_1".into()),
                },
            ),
            (
                r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"bash","arguments":""}}"#,
                WireEvent::ItemAdded {
                    output_index: 1,
                    item: Item::FunctionCall {
                        id: Some("fc_1".into()),
                        call_id: Some("call_1".into()),
                        name: Some("bash".into()),
                        arguments: Some(String::new()),
                    },
                },
            ),
            (
                r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"web_search_call","id":"ws_1"}}"#,
                WireEvent::ItemAdded {
                    output_index: 0,
                    item: Item::Other,
                },
            ),
            (
                r#"{"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":1,"delta":"hm"}"#,
                WireEvent::SummaryDelta {
                    output_index: 0,
                    summary_index: 1,
                    delta: "hm".into(),
                },
            ),
            (
                r#"{"type":"response.incomplete","response":{"id":"r","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":10,"output_tokens":3,"input_tokens_details":{"cached_tokens":4}}}}"#,
                WireEvent::Finished(Box::new(ResponseObject {
                    id: Some("r".into()),
                    status: Some("incomplete".into()),
                    usage: Some(WireUsage {
                        input_tokens: 10,
                        output_tokens: 3,
                        input_tokens_details: Some(InputDetails { cached_tokens: 4 }),
                    }),
                    incomplete_details: Some(IncompleteDetails {
                        reason: Some("max_output_tokens".into()),
                    }),
                    error: None,
                })),
            ),
            (
                r#"{"type":"error","code":"server_error","message":"boom","param":null}"#,
                WireEvent::Error(Some("server_error".into()), Some("boom".into())),
            ),
            (r#"{"type":"response.in_progress"}"#, WireEvent::Other),
        ];
        for (data, expected) in cases {
            assert_eq!(decode(&event(data)).unwrap(), expected, "{data}");
        }
    }

    #[test]
    fn malformed_events_are_decode_errors() {
        assert!(decode(&event("{nope")).is_err());
        assert!(decode(&event(r#"{"type":"response.output_text.delta","delta":"x"}"#)).is_err());
        assert!(decode(&event(r#"{"no_type":1}"#)).is_err());
    }

    #[test]
    fn error_bodies_are_read() {
        assert_eq!(
            error_body(
                r#"{"error":{"message":"Too long","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}"#
            ),
            Some((Some("context_length_exceeded".into()), Some("Too long".into())))
        );
        assert_eq!(error_body("not json"), None);
    }
}
