#![allow(clippy::unwrap_used, clippy::expect_used)]

use pretty_assertions::assert_eq;
use serde_json::json;
use volcanic_abstractions::{Api, AssistantMessageEvent as E, InputKind, Model, ModelCost};

use super::*;
use crate::wire::{Choice, FunctionDelta, PromptDetails};

fn model() -> Model {
    Model {
        id: "qwen3".into(),
        name: "Qwen 3".into(),
        provider: "local".into(),
        api: Api::OpenAiCompletions,
        base_url: "http://127.0.0.1:11434/v1".into(),
        reasoning: true,
        input: vec![InputKind::Text],
        cost: ModelCost::default(),
        context_window: 32_768,
        max_tokens: 4096,
    }
}

fn delta(delta: Delta) -> WireEvent {
    WireEvent::Chunk(Chunk {
        id: Some("c".into()),
        choices: vec![Choice {
            delta: Some(delta),
            finish_reason: None,
        }],
        usage: None,
    })
}

fn call_piece(index: Option<usize>, id: Option<&str>, name: Option<&str>, args: &str) -> WireEvent {
    delta(Delta {
        tool_calls: Some(vec![ToolCallDelta {
            index,
            id: id.map(str::to_owned),
            function: Some(FunctionDelta {
                name: name.map(str::to_owned),
                arguments: Some(args.to_owned()),
            }),
        }]),
        ..Delta::default()
    })
}

fn feed(mapper: &mut Mapper, events: Vec<WireEvent>) -> Vec<E> {
    let mut out = Vec::new();
    for event in events {
        mapper.on_event(event, &mut out).unwrap();
    }
    out
}

#[test]
fn reasoning_field_and_refusal_are_read() {
    let mut mapper = Mapper::new(&model(), 1);
    let events = feed(
        &mut mapper,
        vec![
            delta(Delta {
                reasoning: Some("think".into()),
                ..Delta::default()
            }),
            delta(Delta {
                refusal: Some("I can't.".into()),
                ..Delta::default()
            }),
            WireEvent::Done,
        ],
    );
    assert_eq!(
        events,
        vec![
            E::ThinkingStart { content_index: 0 },
            E::ThinkingDelta {
                content_index: 0,
                delta: "think".into(),
            },
            E::ThinkingEnd {
                content_index: 0,
                content: "think".into(),
                signature: None,
            },
            E::TextStart { content_index: 1 },
            E::TextDelta {
                content_index: 1,
                delta: "I can't.".into(),
            },
            E::TextEnd {
                content_index: 1,
                content: "I can't.".into(),
            },
        ]
    );
}

#[test]
fn calls_without_index_or_id_are_told_apart_and_given_ids() {
    let mut mapper = Mapper::new(&model(), 99);
    feed(
        &mut mapper,
        vec![
            call_piece(None, None, Some("a"), "{\"x\":"),
            call_piece(None, None, None, "1}"),
            call_piece(None, Some("id_b"), Some("b"), "{}"),
            call_piece(None, None, None, ""),
            WireEvent::Done,
        ],
    );
    let (message, result) = mapper.finish();
    result.unwrap();
    let calls: Vec<(String, String, serde_json::Value)> = message
        .tool_calls()
        .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_99_0".into(), "a".into(), json!({"x": 1})),
            ("id_b".into(), "b".into(), json!({})),
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
}

#[test]
fn a_delta_for_a_call_that_already_ended_is_ignored() {
    let mut mapper = Mapper::new(&model(), 1);
    let events = feed(
        &mut mapper,
        vec![
            call_piece(Some(0), Some("a"), Some("t"), "{}"),
            delta(Delta {
                content: Some("text".into()),
                ..Delta::default()
            }),
            call_piece(Some(0), None, None, "garbage"),
            WireEvent::Done,
        ],
    );
    let ends = events.iter().filter(|e| matches!(e, E::ToolCallEnd { .. })).count();
    assert_eq!(ends, 1);
    let (message, _) = mapper.finish();
    assert_eq!(
        message.tool_calls().next().map(|c| c.arguments.clone()),
        Some(json!({}))
    );
}

#[test]
fn usage_without_cache_details_counts_all_prompt_tokens_as_input() {
    let mut mapper = Mapper::new(&model(), 1);
    feed(
        &mut mapper,
        vec![
            WireEvent::Chunk(Chunk {
                id: None,
                choices: vec![],
                usage: Some(WireUsage {
                    prompt_tokens: Some(30),
                    completion_tokens: Some(5),
                    prompt_tokens_details: Some(PromptDetails { cached_tokens: None }),
                }),
            }),
            WireEvent::Done,
        ],
    );
    let (message, _) = mapper.finish();
    assert_eq!(
        (
            message.usage.input,
            message.usage.output,
            message.usage.cache_read,
            message.usage.total_tokens
        ),
        (30, 5, 0, 35)
    );
}
