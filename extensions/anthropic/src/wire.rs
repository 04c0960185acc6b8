//! Anthropic Messages streaming events as they come off the wire (decoding only; mapping to
//! provider events is in `mapper.rs`), and the error body of a failed request.
//!
//! Each SSE event's `data` is a JSON object whose `type` names the event (`message_start`,
//! `content_block_start`, `content_block_delta`, `content_block_stop`, `message_delta`,
//! `message_stop`, `ping`, `error`). Unknown event, block and delta types decode to an
//! `Unknown`/`Other` variant and are ignored, as the API asks clients to do.

use serde::Deserialize;
use serde_json::Value;
use volcanic_provider_support::{ProviderError, truncate};

/// One decoded stream event.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WireEvent {
    /// The message begins: id and initial usage.
    MessageStart {
        /// The message so far.
        message: StartMessage,
    },
    /// A content block begins at `index`.
    ContentBlockStart {
        /// The API's block index.
        index: usize,
        /// The block's initial state.
        content_block: WireBlock,
    },
    /// More content for block `index`.
    ContentBlockDelta {
        /// The API's block index.
        index: usize,
        /// The new piece.
        delta: WireDelta,
    },
    /// Block `index` is complete.
    ContentBlockStop {
        /// The API's block index.
        index: usize,
    },
    /// Stop reason and final usage.
    MessageDelta {
        /// Stop reason.
        delta: MessageDeltaBody,
        /// Cumulative usage (fields may be absent or null).
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    /// The terminal event.
    MessageStop,
    /// Keep-alive.
    Ping,
    /// An error inside the stream (`overloaded_error`, ...).
    Error {
        /// Type and message.
        error: WireError,
    },
    /// Any event type this client does not know.
    #[serde(other)]
    Unknown,
}

/// The `message` of `message_start`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct StartMessage {
    /// Message id (`msg_...`).
    #[serde(default)]
    pub(crate) id: Option<String>,
    /// Initial usage.
    #[serde(default)]
    pub(crate) usage: Option<WireUsage>,
}

/// Token counts; every field may be missing or null.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct WireUsage {
    /// Uncached input tokens.
    #[serde(default)]
    pub(crate) input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default)]
    pub(crate) output_tokens: Option<u64>,
    /// Tokens read from the prompt cache.
    #[serde(default)]
    pub(crate) cache_read_input_tokens: Option<u64>,
    /// Tokens written to the prompt cache.
    #[serde(default)]
    pub(crate) cache_creation_input_tokens: Option<u64>,
}

/// The initial state of a content block.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WireBlock {
    /// Text.
    Text {
        /// Initial text (normally empty).
        #[serde(default)]
        text: String,
    },
    /// Reasoning.
    Thinking {
        /// Initial reasoning text (normally empty).
        #[serde(default)]
        thinking: String,
        /// Initial signature (normally absent; it comes as a `signature_delta`).
        #[serde(default)]
        signature: Option<String>,
    },
    /// Encrypted reasoning.
    RedactedThinking {
        /// The opaque data, sent back unchanged.
        #[serde(default)]
        data: String,
    },
    /// A tool call; its input streams as `input_json_delta`.
    ToolUse {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Initial input (normally `{}`).
        #[serde(default)]
        input: Option<Value>,
    },
    /// Server tools, citations and anything newer: ignored.
    #[serde(other)]
    Other,
}

/// A piece of a content block.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WireDelta {
    /// More text.
    TextDelta {
        /// The piece.
        text: String,
    },
    /// More reasoning.
    ThinkingDelta {
        /// The piece.
        thinking: String,
    },
    /// The thinking block's signature.
    SignatureDelta {
        /// The signature (appended).
        signature: String,
    },
    /// More tool-input JSON text.
    InputJsonDelta {
        /// The piece.
        partial_json: String,
    },
    /// Citations and anything newer: ignored.
    #[serde(other)]
    Other,
}

/// The `delta` of `message_delta`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MessageDeltaBody {
    /// `end_turn`, `tool_use`, `max_tokens`, `stop_sequence`, `pause_turn`, `refusal`, ...
    #[serde(default)]
    pub(crate) stop_reason: Option<String>,
}

/// `{"type": ..., "message": ...}` of an error, in a stream event or an HTTP error body.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WireError {
    /// Error type (`overloaded_error`, `rate_limit_error`, ...).
    #[serde(rename = "type", default)]
    pub(crate) kind: Option<String>,
    /// The provider's message.
    #[serde(default)]
    pub(crate) message: Option<String>,
}

/// An HTTP error body: `{"type":"error","error":{...}}`.
#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: WireError,
}

/// Decodes one SSE event.
pub(crate) fn decode(event: &eventsource_stream::Event) -> Result<WireEvent, ProviderError> {
    serde_json::from_str(&event.data).map_err(|error| ProviderError::Decode {
        event: event.event.clone(),
        detail: format!("{error} in {}", truncate(&event.data, 200)),
    })
}

/// The `(kind, message)` of an HTTP error body, when it has Anthropic's shape.
pub(crate) fn error_body(body: &str) -> Option<(Option<String>, Option<String>)> {
    let parsed: ErrorBody = serde_json::from_str(body).ok()?;
    Some((parsed.error.kind, parsed.error.message))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use volcanic_provider_support::testing::sse_event as event;

    #[test]
    fn events_decode_table() {
        let cases: Vec<(&str, WireEvent)> = vec![
            (
                r#"{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":5,"output_tokens":1,"cache_read_input_tokens":null}}}"#,
                WireEvent::MessageStart {
                    message: StartMessage {
                        id: Some("msg_1".into()),
                        usage: Some(WireUsage {
                            input_tokens: Some(5),
                            output_tokens: Some(1),
                            ..WireUsage::default()
                        }),
                    },
                },
            ),
            (
                r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"bash","input":{}}}"#,
                WireEvent::ContentBlockStart {
                    index: 2,
                    content_block: WireBlock::ToolUse {
                        id: "toolu_1".into(),
                        name: "bash".into(),
                        input: Some(json!({})),
                    },
                },
            ),
            (
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s","name":"web_search"}}"#,
                WireEvent::ContentBlockStart {
                    index: 0,
                    content_block: WireBlock::Other,
                },
            ),
            (
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#,
                WireEvent::ContentBlockDelta {
                    index: 0,
                    delta: WireDelta::Other,
                },
            ),
            (
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}"#,
                WireEvent::MessageDelta {
                    delta: MessageDeltaBody {
                        stop_reason: Some("end_turn".into()),
                    },
                    usage: Some(WireUsage {
                        output_tokens: Some(9),
                        ..WireUsage::default()
                    }),
                },
            ),
            (r#"{"type":"message_stop"}"#, WireEvent::MessageStop),
            (r#"{"type":"ping"}"#, WireEvent::Ping),
            (r#"{"type":"brand_new_event","x":1}"#, WireEvent::Unknown),
            (
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                WireEvent::Error {
                    error: WireError {
                        kind: Some("overloaded_error".into()),
                        message: Some("Overloaded".into()),
                    },
                },
            ),
        ];
        for (data, expected) in cases {
            assert_eq!(decode(&event("x", data)).unwrap(), expected, "{data}");
        }
    }

    #[test]
    fn malformed_data_is_a_decode_error_naming_the_event() {
        let error = decode(&event("content_block_delta", "{not json")).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("malformed `content_block_delta` event from the provider"),
            "{error}"
        );
    }

    #[test]
    fn error_body_is_read() {
        assert_eq!(
            error_body(r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}"#),
            Some((Some("rate_limit_error".into()), Some("slow".into())))
        );
        assert_eq!(error_body("<html>"), None);
    }
}
