#![allow(clippy::unwrap_used, clippy::expect_used)]

use pretty_assertions::assert_eq;
use serde_json::json;
use volcanic_abstractions::provider::ToolSpec;
use volcanic_abstractions::{
    Api, AssistantContent, AssistantMessage, BashExecutionMessage, CustomMessage, ImageContent, InputKind, Message,
    Model, ModelCost, ProviderContext, StopReason, StreamOptions, SummaryMessage, TextContent, ThinkingContent,
    ThinkingLevel, ToolCall, ToolResultMessage, UserBody, UserContent, UserMessage,
};

use super::*;

/// The body as a hook sees it, and as it is sent.
fn body(model: &Model, context: &ProviderContext, options: &StreamOptions) -> serde_json::Value {
    volcanic_provider_support::body_tree::<crate::provider::Messages>(model, context, options)
}

fn body_bytes(model: &Model, context: &ProviderContext, options: &StreamOptions) -> Vec<u8> {
    volcanic_provider_support::body_bytes::<crate::provider::Messages>(model, context, options)
}

fn model(reasoning: bool, images: bool, max_tokens: u64) -> Model {
    let mut input = vec![InputKind::Text];
    if images {
        input.push(InputKind::Image);
    }
    Model {
        id: "claude-test".into(),
        name: "Claude Test".into(),
        provider: "anthropic".into(),
        api: Api::AnthropicMessages,
        base_url: "http://127.0.0.1:9".into(),
        reasoning,
        input,
        cost: ModelCost::default(),
        context_window: 200_000,
        max_tokens,
    }
}

fn text(t: &str) -> UserContent {
    UserContent::Text(TextContent {
        text: t.into(),
        text_signature: None,
    })
}

fn image() -> UserContent {
    UserContent::Image(ImageContent {
        data: "iVBORw0=".into(),
        mime_type: "image/png".into(),
    })
}

fn assistant(content: Vec<AssistantContent>) -> Message {
    let mut message = AssistantMessage::empty("anthropic-messages", "anthropic", "claude-test", 2);
    message.content = content;
    message.stop_reason = StopReason::ToolUse;
    Message::Assistant(message)
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        thought_signature: None,
    })
}

fn result(id: &str, content: Vec<UserContent>, is_error: bool) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        content,
        details: Some(json!({"never": "sent"})),
        is_error,
        timestamp: 3,
    })
}

fn transcript() -> Vec<Message> {
    vec![
        Message::User(UserMessage {
            content: UserBody::Text("hi".into()),
            timestamp: 1,
        }),
        assistant(vec![
            AssistantContent::Thinking(ThinkingContent {
                thinking: "plan".into(),
                thinking_signature: Some("sig".into()),
                redacted: None,
            }),
            AssistantContent::Thinking(ThinkingContent {
                thinking: String::new(),
                thinking_signature: Some("OPAQUE".into()),
                redacted: Some(true),
            }),
            AssistantContent::Thinking(ThinkingContent {
                thinking: "unsigned".into(),
                thinking_signature: None,
                redacted: None,
            }),
            AssistantContent::Text(TextContent {
                text: "Reading.".into(),
                text_signature: None,
            }),
            AssistantContent::Text(TextContent {
                text: "  ".into(),
                text_signature: None,
            }),
            call("call|1", "read", json!({"path": "a.rs"})),
            call("toolu_2", "read", json!("{\"path\": broken")),
        ]),
        result("call|1", vec![text("fn main() {}"), text("// end")], false),
        result("toolu_2", vec![image()], true),
        Message::Custom(CustomMessage {
            custom_type: "note".into(),
            content: UserBody::Text("from an extension".into()),
            display: true,
            details: None,
            timestamp: 4,
        }),
        Message::BashExecution(BashExecutionMessage {
            command: "ls".into(),
            output: "a.rs".into(),
            exit_code: Some(0),
            cancelled: false,
            truncated: false,
            full_output_path: None,
            timestamp: 5,
            exclude_from_context: None,
        }),
        Message::CompactionSummary(SummaryMessage {
            summary: "earlier work".into(),
            tokens_before: Some(1000),
            from_id: None,
            timestamp: 6,
        }),
        Message::User(UserMessage {
            content: UserBody::Blocks(vec![text("look"), image()]),
            timestamp: 7,
        }),
    ]
}

#[test]
fn transcript_maps_to_messages_api_blocks() {
    let id1 = tool_id("call|1");
    assert!(id1.starts_with("call_1_"), "{id1}");
    let expected = json!([
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "plan", "signature": "sig"},
            {"type": "redacted_thinking", "data": "OPAQUE"},
            {"type": "text", "text": "unsigned"},
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": id1, "name": "read", "input": {"path": "a.rs"}},
            {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id1, "content": "fn main() {}\n// end", "is_error": false},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": [
                {"type": "text", "text": "(see attached image)"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0="}},
            ], "is_error": true},
        ]},
        {"role": "user", "content": [{"type": "text", "text": "from an extension"}]},
        {"role": "user", "content": [{"type": "text", "text": "Ran `ls`\n```\na.rs\n```"}]},
        {"role": "user", "content": [{"type": "text", "text":
            "The conversation history before this point was compacted into the following summary:\n\n<summary>\nearlier work\n</summary>"}]},
        {"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0="},
             "cache_control": {"type": "ephemeral"}},
        ]},
    ]);
    assert_eq!(
        serde_json::to_value(messages(&model(true, true, 64_000), &transcript())).unwrap(),
        expected
    );
}

#[test]
fn images_become_a_note_for_text_only_models() {
    let transcript = [Message::User(UserMessage {
        content: UserBody::Blocks(vec![image()]),
        timestamp: 1,
    })];
    let out = messages(&model(false, false, 4096), &transcript);
    assert_eq!(
        serde_json::to_value(out).unwrap(),
        json!([{"role": "user", "content": [
            {"type": "text", "text": "[image omitted: this model does not accept images]",
             "cache_control": {"type": "ephemeral"}},
        ]}])
    );
}

#[test]
fn body_has_system_tools_thinking_and_limits() {
    let context = ProviderContext {
        system_prompt: "Be brief.".into(),
        messages: vec![Message::user_text("hi", 1)],
        tools: vec![ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: std::sync::Arc::new(json!({"properties": {"path": {"type": "string"}}, "required": ["path"]})),
        }],
    };
    let options = StreamOptions {
        thinking_level: ThinkingLevel::Medium,
        temperature: Some(0.2),
        ..StreamOptions::default()
    };
    let body = body(&model(true, true, 64_000), &context, &options);
    // What is sent (tools written by reference) is the same JSON.
    let sent: serde_json::Value =
        serde_json::from_slice(&body_bytes(&model(true, true, 64_000), &context, &options)).unwrap();
    assert_eq!(sent, body);
    let with_typed = ProviderContext {
        tools: vec![ToolSpec {
            name: "typed".into(),
            description: "d".into(),
            parameters: std::sync::Arc::new(json!({"type": "object", "properties": {}})),
        }],
        ..context.clone()
    };
    let sent: serde_json::Value =
        serde_json::from_slice(&body_bytes(&model(true, true, 64_000), &with_typed, &options)).unwrap();
    assert_eq!(sent, self::body(&model(true, true, 64_000), &with_typed, &options));
    assert_eq!(
        body,
        json!({
            "model": "claude-test",
            "max_tokens": 64_000,
            "stream": true,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
            ]}],
            "tools": [{
                "name": "read",
                "description": "Read a file",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            }],
            "thinking": {"type": "enabled", "budget_tokens": 8192},
        })
    );
}

#[test]
fn temperature_is_sent_without_thinking_and_empty_system_is_omitted() {
    let context = ProviderContext {
        messages: vec![Message::user_text("hi", 1)],
        ..ProviderContext::default()
    };
    let options = StreamOptions {
        thinking_level: ThinkingLevel::High,
        temperature: Some(0.2),
        max_tokens: Some(1000),
        ..StreamOptions::default()
    };
    let body = body(&model(false, true, 64_000), &context, &options);
    assert_eq!(body.get("system"), None);
    assert_eq!(body.get("thinking"), None);
    assert_eq!(body.get("temperature"), Some(&json!(0.2)));
    assert_eq!(body.get("max_tokens"), Some(&json!(1000)));
}

#[test]
fn limits_table() {
    let level = |thinking_level, max_tokens| StreamOptions {
        thinking_level,
        max_tokens,
        ..StreamOptions::default()
    };
    let cases: Vec<(Model, StreamOptions, (u64, Option<u64>))> = vec![
        // No reasoning: the caller's limit, capped at the model's.
        (model(false, true, 8192), level(ThinkingLevel::High, None), (8192, None)),
        (
            model(false, true, 8192),
            level(ThinkingLevel::Off, Some(100_000)),
            (8192, None),
        ),
        (
            model(true, true, 64_000),
            level(ThinkingLevel::Off, Some(500)),
            (500, None),
        ),
        // Budgets per level; max_tokens raised to budget + 4096 when the caller asked less.
        (
            model(true, true, 64_000),
            level(ThinkingLevel::Minimal, Some(1000)),
            (5120, Some(1024)),
        ),
        (
            model(true, true, 64_000),
            level(ThinkingLevel::Low, Some(1000)),
            (6144, Some(2048)),
        ),
        (
            model(true, true, 64_000),
            level(ThinkingLevel::Medium, Some(1000)),
            (12288, Some(8192)),
        ),
        (
            model(true, true, 64_000),
            level(ThinkingLevel::High, None),
            (64_000, Some(16384)),
        ),
        (
            model(true, true, 64_000),
            level(ThinkingLevel::Xhigh, Some(2000)),
            (36096, Some(32000)),
        ),
        // Capped at the model's limit: the budget leaves room for the answer, or thinking goes.
        (
            model(true, true, 20_000),
            level(ThinkingLevel::Xhigh, None),
            (20_000, Some(18_976)),
        ),
        (
            model(true, true, 1500),
            level(ThinkingLevel::Minimal, None),
            (1500, Some(1024)),
        ),
        (model(true, true, 1800), level(ThinkingLevel::Low, None), (1800, None)),
        // A model without a stated limit gets 4096.
        (model(false, true, 0), level(ThinkingLevel::Off, None), (4096, None)),
    ];
    for (model, options, expected) in cases {
        assert_eq!(
            limits(&model, &options),
            expected,
            "{} max {} {:?}",
            options.thinking_level,
            model.max_tokens,
            options.max_tokens
        );
    }
}

#[test]
fn tool_ids_are_made_valid_and_stay_paired() {
    assert_eq!(tool_id("toolu_01AbC-d"), "toolu_01AbC-d");
    let long = format!("call_{}", "x".repeat(80));
    let mapped = tool_id(&long);
    assert_eq!(mapped.len(), 64);
    assert_eq!(mapped, tool_id(&long));
    let weird = tool_id("fc_1|call.2");
    assert!(
        weird.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
        "{weird}"
    );
}

#[test]
fn tools_claude_code_ran_itself_are_text_with_no_tool_use_left_unanswered() {
    use volcanic_provider_support::testing::{CLAUDE_CODE_TOOL_TEXT, claude_code_turn};
    assert_eq!(
        serde_json::to_value(messages(&model(false, false, 8_000), &claude_code_turn())).unwrap(),
        json!([
            {"role": "user", "content": [{"type": "text", "text": "list the files"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": CLAUDE_CODE_TOOL_TEXT},
                {"type": "text", "text": "One file."},
            ]},
            {"role": "user", "content": [{"type": "text", "text": "and now?", "cache_control": {"type": "ephemeral"}}]},
        ])
    );
}
