//! SSE bytes → provider events through the shared stream reader and this crate's mapper, fed
//! in chunks split at awkward places (inside UTF-8 sequences, inside `data:` lines, between
//! `\r` and `\n`). The reader's transport failures (broken or silent bodies, cancel) are
//! tested in `volcanic-provider-support`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use volcanic_abstractions::{
    Api, AssistantContent, AssistantMessage, AssistantMessageEvent as E, Cost, InputKind, Model, ModelCost, StopReason,
    TextContent, ThinkingContent, ToolCall, Usage,
};
use volcanic_provider_support::testing;

use crate::mapper::Mapper;

fn model() -> Model {
    Model {
        id: "gpt-test".into(),
        name: "GPT Test".into(),
        provider: "openai".into(),
        api: Api::OpenAiCompletions,
        base_url: "http://127.0.0.1:9/v1".into(),
        reasoning: true,
        input: vec![InputKind::Text, InputKind::Image],
        cost: ModelCost {
            input: 1.25,
            output: 10.0,
            cache_read: 0.125,
            cache_write: 0.0,
        },
        context_window: 400_000,
        max_tokens: 128_000,
    }
}

fn chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        "usage": null,
    })
}

fn sse(chunks: &[Value]) -> String {
    let mut text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    text.push_str("data: [DONE]\n\n");
    text
}

/// Reasoning, text with multi-byte characters, and two tool calls whose arguments arrive in
/// pieces, then the finish reason and the usage chunk.
fn full_reply() -> String {
    sse(&[
        chunk(json!({"role": "assistant", "content": "", "refusal": null}), None),
        chunk(json!({"reasoning_content": "Hmm, "}), None),
        chunk(json!({"reasoning_content": "naïve?"}), None),
        chunk(json!({"content": "Héllo wörld "}), None),
        chunk(json!({"content": "🌋!"}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_A", "type": "function", "function": {"name": "bash", "arguments": ""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"comm"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "and\": \"echo é\"}"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_B", "type": "function", "function": {"name": "read", "arguments": "{\"path\":"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "function": {"arguments": "\"a.rs\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {"prompt_tokens": 1100, "completion_tokens": 50, "total_tokens": 1150,
                      "prompt_tokens_details": {"cached_tokens": 1000}},
        }),
    ])
}

/// Runs `chunks` through the stream reader and this crate's mapper.
async fn run_chunks(chunks: Vec<Vec<u8>>) -> (Vec<E>, Result<AssistantMessage, String>) {
    testing::read_chunks::<Mapper>(&model(), 7, chunks).await
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        thought_signature: None,
    }
}

fn expected_events() -> Vec<E> {
    vec![
        E::ThinkingStart { content_index: 0 },
        E::ThinkingDelta {
            content_index: 0,
            delta: "Hmm, ".into(),
        },
        E::ThinkingDelta {
            content_index: 0,
            delta: "naïve?".into(),
        },
        E::ThinkingEnd {
            content_index: 0,
            content: "Hmm, naïve?".into(),
            signature: None,
        },
        E::TextStart { content_index: 1 },
        E::TextDelta {
            content_index: 1,
            delta: "Héllo wörld ".into(),
        },
        E::TextDelta {
            content_index: 1,
            delta: "🌋!".into(),
        },
        E::TextEnd {
            content_index: 1,
            content: "Héllo wörld 🌋!".into(),
        },
        E::ToolCallStart {
            content_index: 2,
            id: "call_A".into(),
            name: "bash".into(),
        },
        E::ToolCallDelta {
            content_index: 2,
            delta: "{\"comm".into(),
        },
        E::ToolCallDelta {
            content_index: 2,
            delta: "and\": \"echo é\"}".into(),
        },
        E::ToolCallEnd {
            content_index: 2,
            tool_call: call("call_A", "bash", json!({"command": "echo é"})),
        },
        E::ToolCallStart {
            content_index: 3,
            id: "call_B".into(),
            name: "read".into(),
        },
        E::ToolCallDelta {
            content_index: 3,
            delta: "{\"path\":".into(),
        },
        E::ToolCallDelta {
            content_index: 3,
            delta: "\"a.rs\"}".into(),
        },
        E::ToolCallEnd {
            content_index: 3,
            tool_call: call("call_B", "read", json!({"path": "a.rs"})),
        },
    ]
}

fn expected_message() -> AssistantMessage {
    // prompt 1100 of which 1000 cached → input 100; output 50; at 1.25 / 10 / 0.125 per million.
    let cost = Cost {
        input: 100.0 * 1.25 / 1e6,
        output: 50.0 * 10.0 / 1e6,
        cache_read: 1000.0 * 0.125 / 1e6,
        cache_write: 0.0,
        total: 100.0 * 1.25 / 1e6 + 50.0 * 10.0 / 1e6 + 1000.0 * 0.125 / 1e6,
    };
    AssistantMessage {
        content: vec![
            AssistantContent::Thinking(ThinkingContent {
                thinking: "Hmm, naïve?".into(),
                thinking_signature: None,
                redacted: None,
            }),
            AssistantContent::Text(TextContent {
                text: "Héllo wörld 🌋!".into(),
                text_signature: None,
            }),
            AssistantContent::ToolCall(call("call_A", "bash", json!({"command": "echo é"}))),
            AssistantContent::ToolCall(call("call_B", "read", json!({"path": "a.rs"}))),
        ],
        api: "openai-completions".into(),
        provider: "openai".into(),
        model: "gpt-test".into(),
        response_id: Some("chatcmpl-1".into()),
        usage: Usage {
            input: 100,
            output: 50,
            cache_read: 1000,
            cache_write: 0,
            total_tokens: 1150,
            cost,
        },
        stop_reason: StopReason::ToolUse,
        error_message: None,
        timestamp: 7,
    }
}

/// Whole, with CRLF line endings, and in chunks split at awkward places.
#[tokio::test]
async fn full_reply_maps_to_pi_events_and_message() {
    testing::assert_body_maps_to::<Mapper>(&model(), 7, &full_reply(), &expected_events(), &expected_message()).await;
}

#[tokio::test]
async fn stream_closing_before_done_is_an_error() {
    let text = full_reply();
    let cut = text.find("data: [DONE]").unwrap();
    let (events, outcome) = run_chunks(vec![text.as_bytes()[..cut].to_vec()]).await;
    // The last tool call is still open: no toolcall_end without [DONE].
    assert_eq!(events.len(), expected_events().len() - 1);
    assert_eq!(outcome, Err("stream ended before [DONE]".to_owned()));
}

#[tokio::test]
async fn in_stream_error_chunk_ends_with_its_message() {
    let text = format!(
        "data: {}\n\ndata: {}\n\n",
        chunk(json!({"content": "Hel"}), None),
        json!({"error": {"message": "The server had an error", "type": "server_error", "param": null, "code": null}})
    );
    let (events, outcome) = run_chunks(vec![text.into_bytes()]).await;
    assert_eq!(events.len(), 2);
    assert_eq!(outcome, Err("server_error: The server had an error".to_owned()));
}

#[tokio::test]
async fn malformed_arguments_are_kept_as_a_raw_string() {
    let text = sse(&[
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ]);
    let (_, message) = run_chunks(vec![text.into_bytes()]).await;
    let message = message.unwrap();
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.arguments, json!("{\"path\": \"a"));
    assert_eq!(message.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn finish_reasons_map_as_pi_maps_them() {
    let cases = [
        ("stop", false, Ok(StopReason::Stop)),
        ("length", false, Ok(StopReason::Length)),
        ("length", true, Ok(StopReason::Length)),
        ("tool_calls", true, Ok(StopReason::ToolUse)),
        // Some local servers say `stop` after tool calls.
        ("stop", true, Ok(StopReason::ToolUse)),
        (
            "content_filter",
            false,
            Err("the model stopped with finish_reason `content_filter`".to_owned()),
        ),
    ];
    for (reason, with_call, expected) in cases {
        let mut chunks = vec![chunk(json!({"content": "x"}), None)];
        if with_call {
            chunks.push(chunk(
                json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "t", "arguments": "{}"}}]}),
                None,
            ));
        }
        chunks.push(chunk(json!({}), Some(reason)));
        let (_, outcome) = run_chunks(vec![sse(&chunks).into_bytes()]).await;
        assert_eq!(outcome.map(|m| m.stop_reason), expected, "{reason} {with_call}");
    }
}
