#![allow(clippy::unwrap_used, clippy::expect_used)]

use pretty_assertions::assert_eq;
use serde_json::json;
use volcanic_abstractions::{Api, AssistantMessageEvent as E, InputKind, Model, ModelCost, StopReason};

use super::*;
use crate::wire::{MessageDeltaBody, StartMessage, WireError};

fn model() -> Model {
    Model {
        id: "claude-test".into(),
        name: "Claude Test".into(),
        provider: "anthropic".into(),
        api: Api::AnthropicMessages,
        base_url: "http://127.0.0.1:9".into(),
        reasoning: false,
        input: vec![InputKind::Text],
        cost: ModelCost::default(),
        context_window: 200_000,
        max_tokens: 8192,
    }
}

fn feed(mapper: &mut Mapper, events: Vec<WireEvent>) -> Vec<E> {
    let mut out = Vec::new();
    for event in events {
        mapper.on_event(event, &mut out).unwrap();
    }
    out
}

#[test]
fn message_delta_without_input_tokens_keeps_those_of_message_start() {
    let mut mapper = Mapper::new(&model(), 1);
    feed(
        &mut mapper,
        vec![
            WireEvent::MessageStart {
                message: StartMessage {
                    id: Some("m".into()),
                    usage: Some(WireUsage {
                        input_tokens: Some(40),
                        output_tokens: Some(1),
                        cache_read_input_tokens: Some(5),
                        cache_creation_input_tokens: None,
                    }),
                },
            },
            WireEvent::MessageDelta {
                delta: MessageDeltaBody {
                    stop_reason: Some("end_turn".into()),
                },
                usage: Some(WireUsage {
                    output_tokens: Some(12),
                    ..WireUsage::default()
                }),
            },
            WireEvent::MessageStop,
        ],
    );
    let (message, result) = mapper.finish();
    result.unwrap();
    assert_eq!(
        (
            message.usage.input,
            message.usage.output,
            message.usage.cache_read,
            message.usage.cache_write,
            message.usage.total_tokens
        ),
        (40, 12, 5, 0, 57)
    );
    assert_eq!(message.stop_reason, StopReason::Stop);
}

#[test]
fn deltas_for_unknown_blocks_are_ignored_and_open_blocks_close_at_message_stop() {
    let mut mapper = Mapper::new(&model(), 1);
    let events = feed(
        &mut mapper,
        vec![
            WireEvent::ContentBlockStart {
                index: 0,
                content_block: WireBlock::Other,
            },
            WireEvent::ContentBlockDelta {
                index: 0,
                delta: WireDelta::TextDelta { text: "x".into() },
            },
            WireEvent::ContentBlockStart {
                index: 1,
                content_block: WireBlock::Text { text: String::new() },
            },
            WireEvent::ContentBlockDelta {
                index: 1,
                delta: WireDelta::TextDelta { text: "hi".into() },
            },
            WireEvent::MessageStop,
        ],
    );
    assert_eq!(
        events,
        vec![
            E::TextStart { content_index: 0 },
            E::TextDelta {
                content_index: 0,
                delta: "hi".into(),
            },
            E::TextEnd {
                content_index: 0,
                content: "hi".into(),
            },
        ]
    );
    assert!(mapper.is_finished());
}

#[test]
fn error_event_becomes_a_stream_error() {
    let mut mapper = Mapper::new(&model(), 1);
    let mut out = Vec::new();
    let error = mapper
        .on_event(
            WireEvent::Error {
                error: WireError {
                    kind: Some("api_error".into()),
                    message: Some("Internal server error".into()),
                },
            },
            &mut out,
        )
        .unwrap_err();
    assert_eq!(error.to_string(), "api_error: Internal server error");
    assert!(error.is_transient());
}

#[test]
fn partial_message_keeps_what_arrived_with_its_usage() {
    let mut mapper = Mapper::new(&model(), 1);
    feed(
        &mut mapper,
        vec![
            WireEvent::MessageStart {
                message: StartMessage {
                    id: Some("m".into()),
                    usage: Some(WireUsage {
                        input_tokens: Some(3),
                        ..WireUsage::default()
                    }),
                },
            },
            WireEvent::ContentBlockStart {
                index: 0,
                content_block: WireBlock::ToolUse {
                    id: "t".into(),
                    name: "read".into(),
                    input: Some(json!({})),
                },
            },
            WireEvent::ContentBlockDelta {
                index: 0,
                delta: WireDelta::InputJsonDelta {
                    partial_json: "{\"path\":\"a.rs\"}".into(),
                },
            },
        ],
    );
    assert!(mapper.has_content());
    let partial = mapper.into_partial();
    assert_eq!(partial.usage.input, 3);
    assert_eq!(
        partial.tool_calls().next().map(|c| c.arguments.clone()),
        Some(json!({"path": "a.rs"}))
    );
}
