//! SSE bytes → provider events through the shared stream reader and this crate's mapper, fed
//! in chunks split at awkward places (inside UTF-8 sequences, inside `data:` lines, between
//! `\r` and `\n`). The reader's transport failures (broken or silent bodies, cancel) are
//! tested in `volcanic-provider-support`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use pretty_assertions::assert_eq;
use serde_json::json;
use volcanic_abstractions::{
    Api, AssistantContent, AssistantMessage, AssistantMessageEvent as E, Cost, InputKind, Model, ModelCost, StopReason,
    TextContent, ThinkingContent, ToolCall, Usage,
};
use volcanic_provider_support::testing;

use crate::mapper::Mapper;

fn model() -> Model {
    Model {
        id: "claude-test".into(),
        name: "Claude Test".into(),
        provider: "anthropic".into(),
        api: Api::AnthropicMessages,
        base_url: "http://127.0.0.1:9".into(),
        reasoning: true,
        input: vec![InputKind::Text, InputKind::Image],
        cost: ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        },
        context_window: 200_000,
        max_tokens: 64_000,
    }
}

fn sse(events: &[(&str, serde_json::Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

/// A complete reply: thinking (signed), text with multi-byte characters, a tool call whose
/// input arrives in three pieces, pings and an unknown event in between.
fn full_reply() -> String {
    sse(&[
        (
            "message_start",
            json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":100,"output_tokens":1,"cache_read_input_tokens":1000,"cache_creation_input_tokens":10}}}),
        ),
        ("ping", json!({"type":"ping"})),
        (
            "content_block_start",
            json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hmm, "}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"naïve?"}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}),
        ),
        ("content_block_stop", json!({"type":"content_block_stop","index":0})),
        (
            "content_block_start",
            json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Héllo wörld "}}),
        ),
        ("something_new", json!({"type":"something_new"})),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"🌋!"}}),
        ),
        ("content_block_stop", json!({"type":"content_block_stop","index":1})),
        (
            "content_block_start",
            json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"bash","input":{}}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"comm"}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"and\": \"echo é"}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"}"}}),
        ),
        ("content_block_stop", json!({"type":"content_block_stop","index":2})),
        (
            "message_delta",
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":50}}),
        ),
        ("message_stop", json!({"type":"message_stop"})),
    ])
}

/// Runs `chunks` through the stream reader and this crate's mapper.
async fn run_chunks(chunks: Vec<Vec<u8>>) -> (Vec<E>, Result<AssistantMessage, String>) {
    testing::read_chunks::<Mapper>(&model(), 7, chunks).await
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
            signature: Some("c2ln".into()),
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
            id: "toolu_1".into(),
            name: "bash".into(),
        },
        E::ToolCallDelta {
            content_index: 2,
            delta: "{\"comm".into(),
        },
        E::ToolCallDelta {
            content_index: 2,
            delta: "and\": \"echo é".into(),
        },
        E::ToolCallDelta {
            content_index: 2,
            delta: "\"}".into(),
        },
        E::ToolCallEnd {
            content_index: 2,
            tool_call: ToolCall {
                id: "toolu_1".into(),
                name: "bash".into(),
                arguments: json!({"command": "echo é"}),
                thought_signature: None,
            },
        },
    ]
}

fn expected_message() -> AssistantMessage {
    // 100 input, 50 output, 1000 cache read, 10 cache write at 3 / 15 / 0.3 / 3.75 per million.
    let cost = Cost {
        input: 100.0 * 3.0 / 1e6,
        output: 50.0 * 15.0 / 1e6,
        cache_read: 1000.0 * 0.3 / 1e6,
        cache_write: 10.0 * 3.75 / 1e6,
        total: 100.0 * 3.0 / 1e6 + 50.0 * 15.0 / 1e6 + 1000.0 * 0.3 / 1e6 + 10.0 * 3.75 / 1e6,
    };
    AssistantMessage {
        content: vec![
            AssistantContent::Thinking(ThinkingContent {
                thinking: "Hmm, naïve?".into(),
                thinking_signature: Some("c2ln".into()),
                redacted: None,
            }),
            AssistantContent::Text(TextContent {
                text: "Héllo wörld 🌋!".into(),
                text_signature: None,
            }),
            AssistantContent::ToolCall(ToolCall {
                id: "toolu_1".into(),
                name: "bash".into(),
                arguments: json!({"command": "echo é"}),
                thought_signature: None,
            }),
        ],
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "claude-test".into(),
        response_id: Some("msg_1".into()),
        usage: Usage {
            input: 100,
            output: 50,
            cache_read: 1000,
            cache_write: 10,
            total_tokens: 1160,
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
async fn stream_closing_before_message_stop_is_an_error() {
    let text = full_reply();
    let cut = text.find("event: message_delta").unwrap();
    let (events, outcome) = run_chunks(vec![text.as_bytes()[..cut].to_vec()]).await;
    assert_eq!(events, expected_events());
    assert_eq!(outcome, Err("stream ended before message_stop".to_owned()));
}

#[tokio::test]
async fn a_partial_last_event_does_not_count() {
    let text = full_reply();
    let without_blank_line = text.trim_end_matches('\n');
    let (_, outcome) = run_chunks(vec![without_blank_line.as_bytes().to_vec()]).await;
    assert_eq!(outcome, Err("stream ended before message_stop".to_owned()));
}

#[tokio::test]
async fn in_stream_error_event_ends_with_its_message() {
    let text = sse(&[
        (
            "message_start",
            json!({"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":1}}}),
        ),
        (
            "error",
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
        ),
    ]);
    let (events, outcome) = run_chunks(vec![text.into_bytes()]).await;
    assert_eq!(events, vec![]);
    assert_eq!(outcome, Err("overloaded_error: Overloaded".to_owned()));
}

#[tokio::test]
async fn malformed_tool_input_is_kept_as_a_raw_string() {
    let text = sse(&[
        (
            "message_start",
            json!({"type":"message_start","message":{"id":"m","usage":{"input_tokens":1}}}),
        ),
        (
            "content_block_start",
            json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"read","input":{}}}),
        ),
        (
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a"}}),
        ),
        ("content_block_stop", json!({"type":"content_block_stop","index":0})),
        (
            "message_delta",
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}),
        ),
        ("message_stop", json!({"type":"message_stop"})),
    ]);
    let (events, message) = run_chunks(vec![text.into_bytes()]).await;
    let message = message.unwrap();
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.arguments, json!("{\"path\": \"a"));
    assert!(matches!(events.last(), Some(E::ToolCallEnd { .. })));
}

#[tokio::test]
async fn redacted_thinking_keeps_its_data_as_the_signature() {
    let text = sse(&[
        (
            "message_start",
            json!({"type":"message_start","message":{"id":"m","usage":{"input_tokens":1}}}),
        ),
        (
            "content_block_start",
            json!({"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"ENCRYPTED"}}),
        ),
        ("content_block_stop", json!({"type":"content_block_stop","index":0})),
        (
            "message_delta",
            json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}),
        ),
        ("message_stop", json!({"type":"message_stop"})),
    ]);
    let (events, message) = run_chunks(vec![text.into_bytes()]).await;
    assert_eq!(
        events,
        vec![
            E::ThinkingStart { content_index: 0 },
            E::ThinkingEnd {
                content_index: 0,
                content: String::new(),
                signature: Some("ENCRYPTED".into()),
            },
        ]
    );
    assert_eq!(
        message.unwrap().content,
        vec![AssistantContent::Thinking(ThinkingContent {
            thinking: String::new(),
            thinking_signature: Some("ENCRYPTED".into()),
            redacted: Some(true),
        })]
    );
}

#[tokio::test]
async fn stop_reasons_map_as_pi_maps_them() {
    let cases = [
        ("end_turn", Ok(StopReason::Stop)),
        ("stop_sequence", Ok(StopReason::Stop)),
        ("pause_turn", Ok(StopReason::Stop)),
        ("tool_use", Ok(StopReason::ToolUse)),
        ("max_tokens", Ok(StopReason::Length)),
        (
            "refusal",
            Err("the model stopped with stop_reason `refusal`".to_owned()),
        ),
        (
            "brand_new",
            Err("the model stopped with stop_reason `brand_new`".to_owned()),
        ),
    ];
    for (wire, expected) in cases {
        let text = sse(&[
            (
                "message_start",
                json!({"type":"message_start","message":{"id":"m","usage":{"input_tokens":1}}}),
            ),
            (
                "message_delta",
                json!({"type":"message_delta","delta":{"stop_reason": wire},"usage":{"output_tokens":1}}),
            ),
            ("message_stop", json!({"type":"message_stop"})),
        ]);
        let (_, outcome) = run_chunks(vec![text.into_bytes()]).await;
        assert_eq!(outcome.map(|m| m.stop_reason), expected, "{wire}");
    }
}
