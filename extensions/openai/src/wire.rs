//! OpenAI Chat Completions streaming chunks as they come off the wire (decoding only; mapping
//! to provider events is in `mapper.rs`), and the error body of a failed request.
//!
//! Each SSE event is a `data:` line holding a `chat.completion.chunk` JSON object, an
//! `{"error": ...}` object, or the terminal `[DONE]`. Unknown fields are ignored; fields that
//! compatible servers leave out or send as `null` are optional.

use serde::Deserialize;
use serde_json::Value;
use volcanic_provider_support::{ProviderError, error_fields, truncate};

/// One decoded stream event.
#[derive(Debug, Clone, PartialEq)]
pub enum WireEvent {
    /// A completion chunk.
    Chunk(Chunk),
    /// An error reported inside the stream: `(kind, message)`.
    Error(Option<String>, Option<String>),
    /// `data: [DONE]`, the terminal event.
    Done,
}

/// A `chat.completion.chunk`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Chunk {
    /// Completion id (`chatcmpl-...`).
    #[serde(default)]
    pub(crate) id: Option<String>,
    /// Choices; only the first is read. Empty in the final usage chunk.
    #[serde(default)]
    pub(crate) choices: Vec<Choice>,
    /// Usage, in the final chunk when `stream_options.include_usage` was set.
    #[serde(default)]
    pub(crate) usage: Option<WireUsage>,
}

/// One choice of a chunk.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(crate) struct Choice {
    /// What is new.
    #[serde(default)]
    pub(crate) delta: Option<Delta>,
    /// `stop`, `length`, `tool_calls`, `content_filter`, ... once the answer ends.
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
}

/// The new piece of the assistant message.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(crate) struct Delta {
    /// Answer text.
    #[serde(default)]
    pub(crate) content: Option<String>,
    /// Reasoning text as DeepSeek, vLLM and llama.cpp send it.
    #[serde(default)]
    pub(crate) reasoning_content: Option<String>,
    /// Reasoning text as OpenRouter and others send it.
    #[serde(default)]
    pub(crate) reasoning: Option<String>,
    /// A refusal, shown as answer text.
    #[serde(default)]
    pub(crate) refusal: Option<String>,
    /// Tool-call pieces.
    #[serde(default)]
    pub(crate) tool_calls: Option<Vec<ToolCallDelta>>,
}

/// A piece of one tool call; `index` says which.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(crate) struct ToolCallDelta {
    /// Which call of the message (absent on some servers).
    #[serde(default)]
    pub(crate) index: Option<usize>,
    /// Call id, in the call's first piece.
    #[serde(default)]
    pub(crate) id: Option<String>,
    /// Name and arguments text.
    #[serde(default)]
    pub(crate) function: Option<FunctionDelta>,
}

/// Name (first piece) and a piece of the arguments JSON text.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(crate) struct FunctionDelta {
    /// Tool name.
    #[serde(default)]
    pub(crate) name: Option<String>,
    /// Arguments text piece.
    #[serde(default)]
    pub(crate) arguments: Option<String>,
}

/// Token counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct WireUsage {
    /// Input tokens, cached ones included.
    #[serde(default)]
    pub(crate) prompt_tokens: Option<u64>,
    /// Output tokens, reasoning included.
    #[serde(default)]
    pub(crate) completion_tokens: Option<u64>,
    /// Breakdown of the input tokens.
    #[serde(default)]
    pub(crate) prompt_tokens_details: Option<PromptDetails>,
}

/// `prompt_tokens_details`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct PromptDetails {
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub(crate) cached_tokens: Option<u64>,
}

/// Decodes one SSE event.
pub(crate) fn decode(event: &eventsource_stream::Event) -> Result<WireEvent, ProviderError> {
    let data = event.data.trim();
    if data == "[DONE]" {
        return Ok(WireEvent::Done);
    }
    let malformed = |detail: String| ProviderError::Decode {
        event: event.event.clone(),
        detail: format!("{detail} in {}", truncate(data, 200)),
    };
    let value: Value = serde_json::from_str(data).map_err(|e| malformed(e.to_string()))?;
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        let (kind, message) = error_parts(error);
        return Ok(WireEvent::Error(kind, message));
    }
    serde_json::from_value(value)
        .map(WireEvent::Chunk)
        .map_err(|e| malformed(e.to_string()))
}

/// `(kind, message)` of an `error` value: an object with `message` and a string `code` (a
/// number, as llama.cpp sends the status, gives way to `type`) or a `type`, or a bare string.
fn error_parts(error: &Value) -> (Option<String>, Option<String>) {
    error_fields(error, |value| value.as_str().map(str::to_owned))
}

/// The `(kind, message)` of an HTTP error body: OpenAI's `{"error": {...}}`, a bare
/// `{"error": "..."}`, vLLM's `{"message", "type"}` or FastAPI's `{"detail": "..."}`.
pub(crate) fn error_body(body: &str) -> Option<(Option<String>, Option<String>)> {
    let value: Value = serde_json::from_str(body).ok()?;
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        return Some(error_parts(error));
    }
    if value.get("message").is_some() {
        return Some(error_parts(&value));
    }
    let detail = value.get("detail")?;
    Some((
        None,
        Some(detail.as_str().map_or_else(|| detail.to_string(), str::to_owned)),
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    use volcanic_provider_support::testing::sse_data as event;

    #[test]
    fn chunks_decode_table() {
        let cases: Vec<(&str, WireEvent)> = vec![
            ("[DONE]", WireEvent::Done),
            (
                r#"{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
                WireEvent::Chunk(Chunk {
                    id: Some("c1".into()),
                    choices: vec![Choice {
                        delta: Some(Delta {
                            content: Some("Hi".into()),
                            ..Delta::default()
                        }),
                        finish_reason: None,
                    }],
                    usage: None,
                }),
            ),
            (
                r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"bash","arguments":""}}]}}]}"#,
                WireEvent::Chunk(Chunk {
                    id: Some("c1".into()),
                    choices: vec![Choice {
                        delta: Some(Delta {
                            tool_calls: Some(vec![ToolCallDelta {
                                index: Some(1),
                                id: Some("call_1".into()),
                                function: Some(FunctionDelta {
                                    name: Some("bash".into()),
                                    arguments: Some(String::new()),
                                }),
                            }]),
                            ..Delta::default()
                        }),
                        finish_reason: None,
                    }],
                    usage: None,
                }),
            ),
            (
                r#"{"id":"c1","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":4}}}"#,
                WireEvent::Chunk(Chunk {
                    id: Some("c1".into()),
                    choices: vec![],
                    usage: Some(WireUsage {
                        prompt_tokens: Some(10),
                        completion_tokens: Some(2),
                        prompt_tokens_details: Some(PromptDetails { cached_tokens: Some(4) }),
                    }),
                }),
            ),
            (
                r#"{"error":{"message":"boom","type":"server_error","param":null,"code":null}}"#,
                WireEvent::Error(Some("server_error".into()), Some("boom".into())),
            ),
            (r#"{"error":"plain"}"#, WireEvent::Error(None, Some("plain".into()))),
        ];
        for (data, expected) in cases {
            assert_eq!(decode(&event(data)).unwrap(), expected, "{data}");
        }
    }

    #[test]
    fn malformed_chunks_are_decode_errors() {
        let error = decode(&event("{nope")).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("malformed `message` event from the provider"),
            "{error}"
        );
        assert!(decode(&event(r#"{"choices":"x"}"#)).is_err());
    }

    #[test]
    fn error_bodies_of_compatible_servers_are_read() {
        let cases = [
            (
                r#"{"error":{"message":"Too long","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
                Some((Some("context_length_exceeded".into()), Some("Too long".into()))),
            ),
            (
                r#"{"error":{"code":400,"message":"exceeds context","type":"exceed_context_size_error"}}"#,
                Some((Some("exceed_context_size_error".into()), Some("exceeds context".into()))),
            ),
            (
                r#"{"object":"error","message":"bad","type":"BadRequestError","code":400}"#,
                Some((Some("BadRequestError".into()), Some("bad".into()))),
            ),
            (r#"{"detail":"Not Found"}"#, Some((None, Some("Not Found".into())))),
            ("not json", None),
        ];
        for (body, expected) in cases {
            assert_eq!(error_body(body), expected, "{body}");
        }
    }
}
