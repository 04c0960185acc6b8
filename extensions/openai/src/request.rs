//! The Chat Completions request body: system prompt, transcript, tools, reasoning and limits.
//!
//! Transcript mapping (pi's `convertMessages` in
//! `packages/ai/src/providers/openai-completions.ts`):
//! - the system prompt → a first `system` message;
//! - user text → a string (text parts joined with newlines, which every compatible server
//!   takes); with images → `text` and `image_url` (data URL) parts, images replaced by a note
//!   when the model takes none;
//! - assistant text → `content`, tool calls → `tool_calls` with `arguments` as a JSON string
//!   (a malformed call's raw text is sent back as it was); thinking is not sent back;
//! - tool results → `role: "tool"` messages with `tool_call_id`; images in a run of results
//!   follow the run as one user message ("Attached image(s) from tool result:"), so the tool
//!   messages stay right after their calls;
//! - custom messages → user content; `bashExecution` and summaries → user text worded as pi
//!   words them (`volcanic-provider-support`).
//!
//! Tool-call ids longer than OpenAI's 40 characters are shortened (the same mapping for a call
//! and its result).

use serde_json::{Map, Value, json};
use volcanic_abstractions::provider::ToolSpec;
use volcanic_abstractions::{
    AssistantContent, AssistantMessage, Message, Model, ProviderContext, StreamOptions, ThinkingLevel,
    ToolResultMessage, UserBody, UserContent,
};
use volcanic_provider_support::{
    IMAGE_OMITTED, bash_execution_text, branch_summary_text, compaction_summary_text, sanitize_id,
};

/// Longest tool-call id OpenAI accepts.
const MAX_ID_LEN: usize = 40;

/// The `reasoning_effort` of a level (`off` → none; `xhigh` → `high`).
pub fn reasoning_effort(level: ThinkingLevel) -> Option<&'static str> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some("minimal"),
        ThinkingLevel::Low => Some("low"),
        ThinkingLevel::Medium => Some("medium"),
        ThinkingLevel::High | ThinkingLevel::Xhigh => Some("high"),
    }
}

/// The request body for one streamed call.
pub(crate) fn body(model: &Model, context: &ProviderContext, options: &StreamOptions) -> Value {
    volcanic_provider_support::body_tree(base(model, context, options), &context.tools, tool)
}

/// [`body`] serialized, the tools written from their specs by reference (see
/// `WireApi::body_bytes`).
pub(crate) fn body_bytes(model: &Model, context: &ProviderContext, options: &StreamOptions) -> Vec<u8> {
    volcanic_provider_support::body_bytes(&base(model, context, options), &context.tools, |t| FunctionTool {
        kind: "function",
        function: Function {
            name: &t.name,
            description: &t.description,
            parameters: &t.parameters,
        },
    })
}

/// A tool as the API wants it, borrowing its spec.
#[derive(serde::Serialize)]
struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(serde::Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// Everything of the body but the tools.
fn base(model: &Model, context: &ProviderContext, options: &StreamOptions) -> Map<String, Value> {
    let mut messages = Vec::new();
    if !context.system_prompt.is_empty() {
        messages.push(json!({"role": "system", "content": context.system_prompt}));
    }
    messages.extend(convert_messages(model, &context.messages));
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if let Some(max_tokens) = options.max_tokens {
        // OpenAI's own API wants the newer name (reasoning models refuse `max_tokens`);
        // compatible servers know the older one.
        let field = if model.base_url.contains("api.openai.com") {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(field.into(), json!(max_tokens));
    }
    if let Some(temperature) = options.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if model.reasoning
        && let Some(effort) = reasoning_effort(options.thinking_level)
    {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    body
}

/// A tool-call id as the API accepts it (at most 40 characters).
pub(crate) fn tool_id(id: &str) -> String {
    sanitize_id(id, MAX_ID_LEN, |c| !c.is_control())
}

fn tool(spec: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    })
}

/// The transcript as API messages (without the system prompt).
pub(crate) fn convert_messages(model: &Model, transcript: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut index = 0;
    while let Some(message) = transcript.get(index) {
        index += 1;
        match message {
            Message::User(user) => push_user(&mut out, model, &user.content),
            Message::Custom(custom) => push_user(&mut out, model, &custom.content),
            Message::BashExecution(bash) => {
                if let Some(text) = bash_execution_text(bash) {
                    out.push(user_text(&text));
                }
            }
            Message::BranchSummary(summary) => out.push(user_text(&branch_summary_text(summary))),
            Message::CompactionSummary(summary) => {
                out.push(user_text(&compaction_summary_text(summary)));
            }
            Message::Assistant(assistant) => {
                if let Some(converted) = assistant_message(assistant) {
                    out.push(converted);
                }
            }
            Message::ToolResult(first) => {
                let mut images = Vec::new();
                out.push(tool_message(model, first, &mut images));
                while let Some(Message::ToolResult(next)) = transcript.get(index) {
                    out.push(tool_message(model, next, &mut images));
                    index += 1;
                }
                if !images.is_empty() {
                    let mut parts = vec![json!({
                        "type": "text",
                        "text": "Attached image(s) from tool result:",
                    })];
                    parts.extend(images);
                    out.push(json!({"role": "user", "content": parts}));
                }
            }
        }
    }
    out
}

fn user_text(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn image_part(mime_type: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")}})
}

fn push_user(out: &mut Vec<Value>, model: &Model, body: &UserBody) {
    let blocks = body.blocks();
    let has_images = blocks.iter().any(|b| matches!(b, UserContent::Image(_)));
    if !has_images {
        let text = body.text();
        if !text.trim().is_empty() {
            out.push(user_text(&text));
        }
        return;
    }
    let parts: Vec<Value> = blocks
        .iter()
        .filter_map(|block| match block {
            UserContent::Text(text) => {
                (!text.text.trim().is_empty()).then(|| json!({"type": "text", "text": text.text}))
            }
            UserContent::Image(image) => Some(if model.takes_images() {
                image_part(&image.mime_type, &image.data)
            } else {
                json!({"type": "text", "text": IMAGE_OMITTED})
            }),
        })
        .collect();
    out.push(json!({"role": "user", "content": parts}));
}

fn assistant_message(message: &AssistantMessage) -> Option<Value> {
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in &message.content {
        match block {
            AssistantContent::Text(block) => text.push_str(&block.text),
            AssistantContent::Thinking(_) => {}
            AssistantContent::ToolCall(call) => {
                let arguments = match &call.arguments {
                    Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                };
                calls.push(json!({
                    "id": tool_id(&call.id),
                    "type": "function",
                    "function": {"name": call.name, "arguments": arguments},
                }));
            }
        }
    }
    let has_text = !text.trim().is_empty();
    if !has_text && calls.is_empty() {
        return None;
    }
    let mut out = Map::new();
    out.insert("role".into(), json!("assistant"));
    out.insert("content".into(), if has_text { json!(text) } else { Value::Null });
    if !calls.is_empty() {
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    Some(Value::Object(out))
}

/// A `role: "tool"` message; the result's images go to `images` (or a note when the model
/// takes none).
fn tool_message(model: &Model, result: &ToolResultMessage, images: &mut Vec<Value>) -> Value {
    let mut text = volcanic_abstractions::join_text(&result.content);
    let mut has_images = false;
    for block in &result.content {
        if let UserContent::Image(image) = block {
            has_images = true;
            if model.takes_images() {
                images.push(image_part(&image.mime_type, &image.data));
            }
        }
    }
    if has_images && !model.takes_images() {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(IMAGE_OMITTED);
    } else if text.is_empty() {
        text.push_str(if has_images {
            "(see attached image)"
        } else {
            "(no output)"
        });
    }
    json!({
        "role": "tool",
        "tool_call_id": tool_id(&result.tool_call_id),
        "content": text,
    })
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
