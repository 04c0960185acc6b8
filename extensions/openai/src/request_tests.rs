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
    volcanic_provider_support::body_tree::<crate::provider::ChatCompletions>(model, context, options)
}

fn body_bytes(model: &Model, context: &ProviderContext, options: &StreamOptions) -> Vec<u8> {
    volcanic_provider_support::body_bytes::<crate::provider::ChatCompletions>(model, context, options)
}

fn model(base_url: &str, reasoning: bool, images: bool) -> Model {
    let mut input = vec![InputKind::Text];
    if images {
        input.push(InputKind::Image);
    }
    Model {
        id: "gpt-test".into(),
        name: "GPT Test".into(),
        provider: "openai".into(),
        api: Api::OpenAiCompletions,
        base_url: base_url.into(),
        reasoning,
        input,
        cost: ModelCost::default(),
        context_window: 128_000,
        max_tokens: 16_384,
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
        details: None,
        is_error,
        timestamp: 3,
    })
}

fn transcript() -> Vec<Message> {
    let long_id = format!("call_{}", "x".repeat(60));
    let mut assistant = AssistantMessage::empty("openai-completions", "openai", "gpt-test", 2);
    assistant.stop_reason = StopReason::ToolUse;
    assistant.content = vec![
        AssistantContent::Thinking(ThinkingContent {
            thinking: "plan".into(),
            thinking_signature: None,
            redacted: None,
        }),
        AssistantContent::Text(TextContent {
            text: "Reading.".into(),
            text_signature: None,
        }),
        call(&long_id, "read", json!({"path": "a.rs"})),
        call("call_2", "read", json!("{\"path\": broken")),
        call("call_3", "shot", json!({})),
    ];
    vec![
        Message::User(UserMessage {
            content: UserBody::Text("hi".into()),
            timestamp: 1,
        }),
        Message::Assistant(assistant),
        result(&long_id, vec![text("fn main() {}"), text("// end")], false),
        result("call_2", vec![text("bad arguments")], true),
        result("call_3", vec![image()], false),
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
            exit_code: Some(1),
            cancelled: false,
            truncated: false,
            full_output_path: None,
            timestamp: 5,
            exclude_from_context: None,
        }),
        Message::BranchSummary(SummaryMessage {
            summary: "tried X".into(),
            tokens_before: None,
            from_id: Some("e1".into()),
            timestamp: 6,
        }),
        Message::User(UserMessage {
            content: UserBody::Blocks(vec![text("look"), image()]),
            timestamp: 7,
        }),
    ]
}

#[test]
fn transcript_maps_to_chat_messages() {
    let long_id = tool_id(&format!("call_{}", "x".repeat(60)));
    assert_eq!(long_id.chars().count(), 40);
    let expected = json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": long_id, "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{\"path\": broken"}},
            {"id": "call_3", "type": "function", "function": {"name": "shot", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": long_id, "content": "fn main() {}\n// end"},
        {"role": "tool", "tool_call_id": "call_2", "content": "bad arguments"},
        {"role": "tool", "tool_call_id": "call_3", "content": "(see attached image)"},
        {"role": "user", "content": [
            {"type": "text", "text": "Attached image(s) from tool result:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0="}},
        ]},
        {"role": "user", "content": "from an extension"},
        {"role": "user", "content": "Ran `ls`\n```\na.rs\n```\n\nCommand exited with code 1"},
        {"role": "user", "content":
            "The following is a summary of a branch that this conversation came back from:\n\n<summary>\ntried X</summary>"},
        {"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0="}},
        ]},
    ]);
    assert_eq!(
        serde_json::to_value(convert_messages(
            &model("http://127.0.0.1:9/v1", false, true),
            &transcript()
        ))
        .unwrap(),
        expected
    );
}

#[test]
fn images_become_notes_for_text_only_models() {
    let transcript = [
        Message::User(UserMessage {
            content: UserBody::Blocks(vec![image()]),
            timestamp: 1,
        }),
        Message::Assistant({
            let mut m = AssistantMessage::empty("openai-completions", "openai", "m", 2);
            m.content = vec![call("c1", "shot", json!({}))];
            m
        }),
        result("c1", vec![text("saved"), image()], false),
    ];
    let out = convert_messages(&model("http://127.0.0.1:9/v1", false, false), &transcript);
    assert_eq!(
        serde_json::to_value(out).unwrap(),
        serde_json::Value::Array(vec![
            json!({"role": "user", "content": [
                {"type": "text", "text": "[image omitted: this model does not accept images]"},
            ]}),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": "{}"}},
            ]}),
            json!({"role": "tool", "tool_call_id": "c1",
                   "content": "saved\n[image omitted: this model does not accept images]"}),
        ])
    );
}

#[test]
fn empty_assistant_messages_are_skipped() {
    let mut empty = AssistantMessage::empty("openai-completions", "openai", "m", 2);
    empty.content = vec![AssistantContent::Thinking(ThinkingContent {
        thinking: "only thoughts".into(),
        thinking_signature: None,
        redacted: None,
    })];
    let transcript = [Message::user_text("hi", 1), Message::Assistant(empty)];
    let out = convert_messages(&model("http://127.0.0.1:9/v1", false, true), &transcript);
    assert_eq!(
        serde_json::to_value(out).unwrap(),
        json!([{"role": "user", "content": "hi"}])
    );
}

#[test]
fn body_has_system_tools_reasoning_and_limits() {
    let context = ProviderContext {
        system_prompt: "Be brief.".into(),
        messages: vec![Message::user_text("hi", 1)],
        tools: vec![ToolSpec {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: std::sync::Arc::new(json!({"type": "object", "properties": {"path": {"type": "string"}}})),
        }],
    };
    let options = StreamOptions {
        thinking_level: ThinkingLevel::Xhigh,
        max_tokens: Some(2000),
        temperature: Some(0.5),
        ..StreamOptions::default()
    };
    let body = body(&model("https://api.openai.com/v1", true, true), &context, &options);
    // What is sent (tools written by reference) is the same JSON.
    let sent: serde_json::Value = serde_json::from_slice(&body_bytes(
        &model("https://api.openai.com/v1", true, true),
        &context,
        &options,
    ))
    .unwrap();
    assert_eq!(sent, body);
    assert_eq!(
        body,
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "hi"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_completion_tokens": 2000,
            "temperature": 0.5,
            "tools": [{"type": "function", "function": {
                "name": "read",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            }}],
            "reasoning_effort": "high",
        })
    );
}

#[test]
fn local_servers_get_max_tokens_and_no_reasoning_effort_for_plain_models() {
    let context = ProviderContext {
        messages: vec![Message::user_text("hi", 1)],
        ..ProviderContext::default()
    };
    let options = StreamOptions {
        thinking_level: ThinkingLevel::High,
        max_tokens: Some(512),
        ..StreamOptions::default()
    };
    let body = body(&model("http://127.0.0.1:11434/v1", false, false), &context, &options);
    assert_eq!(body.get("max_tokens"), Some(&json!(512)));
    assert_eq!(body.get("max_completion_tokens"), None);
    assert_eq!(body.get("reasoning_effort"), None);
    assert_eq!(body.get("tools"), None);
    assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
}

#[test]
fn reasoning_effort_table() {
    let cases = [
        (ThinkingLevel::Off, None),
        (ThinkingLevel::Minimal, Some("minimal")),
        (ThinkingLevel::Low, Some("low")),
        (ThinkingLevel::Medium, Some("medium")),
        (ThinkingLevel::High, Some("high")),
        (ThinkingLevel::Xhigh, Some("high")),
    ];
    for (level, expected) in cases {
        assert_eq!(reasoning_effort(level), expected, "{level}");
    }
}

#[test]
fn tools_claude_code_ran_itself_are_text_with_no_tool_call_left_unanswered() {
    use volcanic_provider_support::testing::{CLAUDE_CODE_TOOL_TEXT, claude_code_turn};
    let transcript = claude_code_turn();
    let out = convert_messages(&model("http://127.0.0.1:9/v1", false, false), &transcript);
    assert_eq!(
        serde_json::to_value(out).unwrap(),
        json!([
            {"role": "user", "content": "list the files"},
            {"role": "assistant", "content": format!("{CLAUDE_CODE_TOOL_TEXT}\n\nOne file.")},
            {"role": "user", "content": "and now?"},
        ])
    );
}

#[test]
fn a_tool_claude_code_ran_is_a_paragraph_of_its_own() {
    use volcanic_abstractions::{ProviderToolCall, ProviderToolResult};
    let ran = AssistantContent::ProviderToolCall(ProviderToolCall {
        id: "toolu_1".into(),
        name: "Read".into(),
        arguments: json!({}),
        result: Some(ProviderToolResult {
            content: vec![text("x")],
            is_error: true,
        }),
    });
    let plain = |t: &str| {
        AssistantContent::Text(TextContent {
            text: t.into(),
            text_signature: None,
        })
    };
    let mut answer = AssistantMessage::empty("claude-code", "claude-code", "sonnet", 2);
    answer.content = vec![plain("Let me look."), ran.clone(), plain("Hm"), plain("m."), ran];
    let transcript = [Message::user_text("hi", 1), Message::Assistant(answer)];
    let out = convert_messages(&model("http://127.0.0.1:9/v1", false, false), &transcript);
    let read = "Ran tool `Read` with {}\nFailed:\nx";
    assert_eq!(
        serde_json::to_value(out).unwrap()[1],
        json!({"role": "assistant", "content": format!("Let me look.\n\n{read}\n\nHmm.\n\n{read}")})
    );
}
