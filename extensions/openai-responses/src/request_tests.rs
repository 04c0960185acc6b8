//! The request body built from transcripts: replay of own reasoning and ids, foreign ones left
//! out, tool outputs, images, reasoning effort.

#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use volcanic_abstractions::{
    Api, AssistantContent, AssistantMessage, ImageContent, InputKind, Message, Model, ModelCost, ProviderContext,
    StopReason, StreamOptions, TextContent, ThinkingContent, ThinkingLevel, ToolCall, ToolResultMessage, UserBody,
    UserContent, UserMessage,
};
use volcanic_provider_support::RequestBody;

use super::Body;

fn model() -> Model {
    Model {
        id: "gpt-5".into(),
        name: "GPT-5".into(),
        provider: "openai".into(),
        api: Api::OpenAiResponses,
        base_url: "http://x/v1".into(),
        reasoning: true,
        input: vec![InputKind::Text, InputKind::Image],
        cost: ModelCost::default(),
        context_window: 1000,
        max_tokens: 100,
    }
}

fn assistant(api: &str, model: &str, id: &str) -> Message {
    let mut message = AssistantMessage::empty(api, "openai", model, 1);
    message.stop_reason = StopReason::ToolUse;
    message.content = vec![
        AssistantContent::Thinking(ThinkingContent {
            thinking: "thought".into(),
            thinking_signature: Some(
                json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thought"}], "encrypted_content": "ENC"})
                    .to_string(),
            ),
            redacted: None,
        }),
        AssistantContent::Text(TextContent {
            text: "Running.".into(),
            text_signature: Some("msg_abc".into()),
        }),
        AssistantContent::ToolCall(ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: json!({"command": "ls"}),
            thought_signature: None,
        }),
    ];
    Message::Assistant(message)
}

fn result(id: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "bash".into(),
        content: vec![
            UserContent::Text(TextContent {
                text: "a.txt".into(),
                text_signature: None,
            }),
            UserContent::Image(ImageContent {
                data: "AAAA".into(),
                mime_type: "image/png".into(),
            }),
        ],
        details: None,
        is_error: false,
        timestamp: 2,
    })
}

fn body(messages: Vec<Message>, level: ThinkingLevel) -> Value {
    let model = model();
    let context = ProviderContext {
        system_prompt: "Be brief.".into(),
        messages,
        tools: vec![],
    };
    let options = StreamOptions {
        thinking_level: level,
        max_tokens: Some(500),
        ..StreamOptions::default()
    };
    serde_json::to_value(Body::new(&model, &context, &options)).unwrap()
}

#[test]
fn own_reasoning_and_ids_are_replayed_statelessly() {
    let user = Message::User(UserMessage {
        content: UserBody::Text("list".into()),
        timestamp: 0,
    });
    let b = body(
        vec![
            user,
            assistant("openai-responses", "gpt-5", "call_1|fc_1"),
            result("call_1|fc_1"),
        ],
        ThinkingLevel::High,
    );
    assert_eq!(b["store"], false);
    assert_eq!(b["stream"], true);
    assert_eq!(b["instructions"], "Be brief.");
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(b["reasoning"], json!({"effort": "high", "summary": "auto"}));
    assert_eq!(b["max_output_tokens"], 500);
    assert_eq!(
        b["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thought"}], "encrypted_content": "ENC"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Running.", "annotations": []}], "id": "msg_abc", "status": "completed"},
            {"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": "{\"command\":\"ls\"}", "id": "fc_1"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "Attached image(s) from tool result:"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
            ]},
        ])
    );
}

#[test]
fn another_models_reasoning_and_item_ids_are_not_sent() {
    let b = body(
        vec![
            assistant("openai-responses", "o4-mini", "call_1|fc_1"),
            result("call_1|fc_1"),
        ],
        ThinkingLevel::Off,
    );
    let input = b["input"].as_array().unwrap();
    assert!(input.iter().all(|item| item["type"] != "reasoning"), "{input:?}");
    assert_eq!(input[0]["id"], "msg_1");
    assert_eq!(
        input[1],
        json!({"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": "{\"command\":\"ls\"}"})
    );
    assert!(b.get("reasoning").is_none());
}

#[test]
fn a_tiny_output_limit_is_raised_to_the_apis_minimum() {
    let model = model();
    let context = ProviderContext {
        system_prompt: String::new(),
        messages: vec![],
        tools: vec![],
    };
    let options = StreamOptions {
        max_tokens: Some(1),
        ..StreamOptions::default()
    };
    let b = serde_json::to_value(Body::new(&model, &context, &options)).unwrap();
    assert_eq!(b["max_output_tokens"], 16);
    assert!(b.get("instructions").is_none());
}

#[test]
fn foreign_ids_become_valid_call_ids_alike_for_call_and_output() {
    let b = body(
        vec![
            assistant("anthropic-messages", "claude", "toolu.01:x"),
            result("toolu.01:x"),
        ],
        ThinkingLevel::Low,
    );
    let input = b["input"].as_array().unwrap();
    let call = input.iter().find(|i| i["type"] == "function_call").unwrap();
    let output = input.iter().find(|i| i["type"] == "function_call_output").unwrap();
    let id = call["call_id"].as_str().unwrap();
    assert!(
        id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
        "{id}"
    );
    assert_eq!(output["call_id"], id);
    assert!(call.get("id").is_none());
}

#[test]
fn tools_claude_code_ran_itself_are_text_with_no_function_call_left_unanswered() {
    use volcanic_provider_support::testing::{CLAUDE_CODE_TOOL_TEXT, claude_code_turn};
    let body = body(claude_code_turn(), ThinkingLevel::Off);
    let input = body["input"].as_array().unwrap();
    assert!(input.iter().all(|item| item["type"] != "function_call"), "{input:?}");
    let said: Vec<(&str, &str)> = input
        .iter()
        .filter(|item| item["role"] == "assistant")
        .map(|item| {
            (
                item["id"].as_str().unwrap(),
                item["content"][0]["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(said, [("msg_1", CLAUDE_CODE_TOOL_TEXT), ("msg_2", "One file.")]);
}
