#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::json;
use volcanic_abstractions::messages::{AssistantMessage, ThinkingContent, ToolCall};
use volcanic_abstractions::model::{InputKind, ModelCost};

fn model(api: Api, provider: &str, id: &str) -> Model {
    Model {
        id: id.into(),
        name: id.into(),
        provider: provider.into(),
        api,
        base_url: String::new(),
        reasoning: true,
        input: vec![InputKind::Text],
        cost: ModelCost::default(),
        context_window: 200_000,
        max_tokens: 8192,
    }
}

fn anthropic() -> Model {
    model(Api::AnthropicMessages, "anthropic", "claude")
}

fn user(t: &str) -> Message {
    Message::user_text(t, 0)
}

fn assistant(blocks: Vec<AssistantContent>, stop: StopReason) -> Message {
    let mut a = AssistantMessage::empty("anthropic-messages", "anthropic", "claude", 0);
    a.content = blocks;
    a.stop_reason = stop;
    Message::Assistant(a)
}

fn call(id: &str) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall {
        id: id.into(),
        name: "bash".into(),
        arguments: json!({"command": "ls"}),
        thought_signature: None,
    })
}

fn text(t: &str) -> AssistantContent {
    AssistantContent::Text(TextContent {
        text: t.into(),
        text_signature: None,
    })
}

fn result(id: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "bash".into(),
        content: vec![UserContent::Text(TextContent {
            text: "ok".into(),
            text_signature: None,
        })],
        details: None,
        is_error: false,
        timestamp: 0,
    })
}

fn roles(ms: &[Message]) -> Vec<&'static str> {
    ms.iter().map(|m| m.role()).collect()
}

#[test]
fn errored_and_aborted_assistants_are_dropped() {
    let t = vec![
        user("a"),
        assistant(vec![text("partial")], StopReason::Error),
        assistant(vec![text("cut")], StopReason::Aborted),
        user("b"),
    ];
    assert_eq!(
        roles(&normalize_transcript(t.clone(), &anthropic())),
        vec!["user", "user"]
    );
}

#[test]
fn missing_result_becomes_error_result() {
    let t = vec![
        user("a"),
        assistant(vec![call("c1"), call("c2")], StopReason::ToolUse),
        result("c2"),
    ];
    let out = normalize_transcript(t.clone(), &anthropic());
    assert_eq!(roles(&out), vec!["user", "assistant", "toolResult", "toolResult"]);
    let Message::ToolResult(r) = &out[2] else { panic!() };
    assert_eq!((r.tool_call_id.as_str(), r.is_error), ("c1", true));
    assert_eq!(
        r.content,
        vec![UserContent::Text(TextContent {
            text: MISSING_RESULT.into(),
            text_signature: None
        })]
    );
    let Message::ToolResult(r) = &out[3] else { panic!() };
    assert_eq!((r.tool_call_id.as_str(), r.is_error), ("c2", false));
}

#[test]
fn orphan_and_duplicate_results_are_dropped() {
    let t = vec![
        user("a"),
        result("ghost"),
        assistant(vec![call("c1")], StopReason::ToolUse),
        result("c1"),
        result("c1"),
        user("b"),
    ];
    assert_eq!(
        roles(&normalize_transcript(t.clone(), &anthropic())),
        vec!["user", "assistant", "toolResult", "user"]
    );
}

#[test]
fn user_message_inside_a_tool_span_moves_after_the_results() {
    let t = vec![
        user("a"),
        assistant(vec![call("c1"), call("c2")], StopReason::ToolUse),
        result("c1"),
        user("steer"),
        result("c2"),
    ];
    let out = normalize_transcript(t.clone(), &anthropic());
    assert_eq!(
        roles(&out),
        vec!["user", "assistant", "toolResult", "toolResult", "user"]
    );
}

#[test]
fn ids_are_mapped_consistently_for_anthropic() {
    let t = vec![
        user("a"),
        assistant(vec![call("call|abc.def")], StopReason::ToolUse),
        result("call|abc.def"),
    ];
    let out = normalize_transcript(t.clone(), &anthropic());
    let Message::Assistant(a) = &out[1] else { panic!() };
    let id = a.tool_calls().next().unwrap().id.clone();
    assert!(
        id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
        "{id}"
    );
    let Message::ToolResult(r) = &out[2] else { panic!() };
    assert_eq!(r.tool_call_id, id);
}

#[test]
fn long_ids_fit_openai_limit() {
    let long = "toolu_01".to_owned() + &"x".repeat(60);
    let t = vec![
        user("a"),
        assistant(vec![call(&long)], StopReason::ToolUse),
        result(&long),
    ];
    let out = normalize_transcript(t.clone(), &model(Api::OpenAiCompletions, "openai", "gpt"));
    let Message::ToolResult(r) = &out[2] else { panic!() };
    assert!(r.tool_call_id.len() <= 40);
}

#[test]
fn thinking_from_another_model_becomes_text() {
    let thinking = AssistantContent::Thinking(ThinkingContent {
        thinking: "reasoning".into(),
        thinking_signature: Some("sig".into()),
        redacted: None,
    });
    let t = vec![
        user("a"),
        assistant(vec![thinking.clone(), text("answer")], StopReason::Stop),
    ];
    // Same model: kept with its signature.
    let same = normalize_transcript(t.clone(), &anthropic());
    let Message::Assistant(a) = &same[1] else { panic!() };
    assert_eq!(a.content[0], thinking);
    // Other provider: plain text, no signature.
    let other = normalize_transcript(t.clone(), &model(Api::OpenAiCompletions, "openai", "gpt"));
    let Message::Assistant(a) = &other[1] else { panic!() };
    assert_eq!(a.content[0], text("reasoning"));
}

fn arb_message() -> impl Strategy<Value = Message> {
    prop_oneof![
        Just(user("u")),
        (
            0..4usize,
            prop_oneof![
                Just(StopReason::ToolUse),
                Just(StopReason::Stop),
                Just(StopReason::Error)
            ]
        )
            .prop_map(|(n, s)| assistant((0..n).map(|i| call(&format!("c{i}"))).collect(), s)),
        (0..4usize).prop_map(|i| result(&format!("c{i}"))),
    ]
}

/// Whether every tool call is answered exactly once, directly after it, and nothing else
/// sits in between (what the real APIs require).
fn is_well_paired(ms: &[Message]) -> bool {
    let mut i = 0;
    while i < ms.len() {
        match &ms[i] {
            Message::Assistant(a) => {
                if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                    return false;
                }
                let ids: Vec<_> = a.tool_calls().map(|c| c.id.clone()).collect();
                for id in &ids {
                    i += 1;
                    match ms.get(i) {
                        Some(Message::ToolResult(r)) if &r.tool_call_id == id => {}
                        _ => return false,
                    }
                }
            }
            Message::ToolResult(_) => return false,
            _ => {}
        }
        i += 1;
    }
    true
}

proptest! {
    #[test]
    fn output_is_always_well_paired_and_idempotent(t in prop::collection::vec(arb_message(), 0..24)) {
        let m = anthropic();
        let once = normalize_transcript(t.clone(), &m);
        prop_assert!(is_well_paired(&once), "{:?}", roles(&once));
        prop_assert_eq!(normalize_transcript(once.clone(), &m), once.clone());
        // No user message is lost.
        let users = |ms: &[Message]| ms.iter().filter(|m| m.role() == "user").count();
        prop_assert_eq!(users(&once), users(&t));
    }
}
