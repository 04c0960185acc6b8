#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::json;
use volcanic_abstractions::messages::{
    AssistantMessage, ProviderToolCall, ProviderToolResult, ThinkingContent, ToolCall,
};
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

/// A Claude Code answer: `n` tools it ran itself (every other one without a result), then text.
fn claude_code_answer(n: usize, stop: StopReason) -> Message {
    let mut a = AssistantMessage::empty("claude-code", "claude-code", "sonnet", 0);
    a.content = (0..n)
        .map(|i| {
            AssistantContent::ProviderToolCall(ProviderToolCall {
                id: format!("toolu_{i}"),
                name: "Bash".into(),
                arguments: json!({"command": format!("ls {i}")}),
                result: (i % 2 == 0).then(|| ProviderToolResult {
                    content: vec![UserContent::Text(TextContent {
                        text: format!("out {i}"),
                        text_signature: None,
                    })],
                    is_error: false,
                }),
            })
        })
        .chain([text("done")])
        .collect();
    a.stop_reason = stop;
    Message::Assistant(a)
}

fn provider_calls(ms: &[Message]) -> usize {
    ms.iter()
        .map(|m| match m {
            Message::Assistant(a) => a.provider_tool_calls().count(),
            _ => 0,
        })
        .sum()
}

fn ran_texts(ms: &[Message]) -> usize {
    ms.iter()
        .map(|m| match m {
            Message::Assistant(a) => a
                .content
                .iter()
                .filter(|c| matches!(c, AssistantContent::Text(t) if t.text.starts_with("Ran tool `Bash`")))
                .count(),
            _ => 0,
        })
        .sum()
}

fn claude_code() -> Model {
    model(Api::Other("claude-code".into()), "claude-code", "sonnet")
}

#[test]
fn tools_another_api_ran_become_text_and_stay_blocks_for_their_own_api() {
    let t = vec![user("list"), claude_code_answer(2, StopReason::Stop), user("next")];
    let out = normalize_transcript(t.clone(), &anthropic());
    assert_eq!(roles(&out), ["user", "assistant", "user"], "no tool results made up");
    let Message::Assistant(a) = &out[1] else { panic!() };
    assert_eq!(
        a.content,
        [
            text("Ran tool `Bash` with {\"command\":\"ls 0\"}\nResult:\nout 0"),
            text("Ran tool `Bash` with {\"command\":\"ls 1\"}\n(no result)"),
            text("done"),
        ]
    );
    // Another Claude Code model: still Claude Code's blocks.
    let opus = model(Api::Other("claude-code".into()), "claude-code", "opus");
    assert_eq!(normalize_transcript(t.clone(), &opus), t);
}

fn arb_mixed() -> impl Strategy<Value = Message> {
    prop_oneof![
        3 => arb_message(),
        1 => (0..3usize, prop_oneof![Just(StopReason::Stop), Just(StopReason::Error)])
            .prop_map(|(n, s)| claude_code_answer(n, s)),
    ]
}

proptest! {
    /// Switching between every API with Claude Code's own tool calls in the history: still well
    /// paired and idempotent; for any API but Claude Code's each call is one text block, and
    /// none is lost.
    #[test]
    fn provider_run_tools_are_text_for_every_other_api(t in prop::collection::vec(arb_mixed(), 0..24)) {
        let kept = provider_calls(&normalize_transcript(t.clone(), &claude_code()));
        for target in [
            anthropic(),
            model(Api::OpenAiCompletions, "openai", "gpt"),
            model(Api::OpenAiResponses, "openai", "gpt-5"),
        ] {
            let once = normalize_transcript(t.clone(), &target);
            prop_assert!(is_well_paired(&once), "{:?}", roles(&once));
            prop_assert_eq!(normalize_transcript(once.clone(), &target), once.clone());
            prop_assert_eq!(provider_calls(&once), 0);
            prop_assert_eq!(ran_texts(&once), kept);
        }
        let own = normalize_transcript(t.clone(), &claude_code());
        prop_assert!(is_well_paired(&own), "{:?}", roles(&own));
        prop_assert_eq!(ran_texts(&own), 0);
    }
}
