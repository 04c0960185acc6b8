//! The Messages API request body: system prompt, transcript, tools, thinking and limits.
//!
//! Transcript mapping (pi's `convertMessages` in `packages/ai/src/providers/anthropic.ts`):
//! - user text/images → content blocks (images as base64 sources; replaced by a note when the
//!   model takes no images); blank text is dropped, an empty message skipped;
//! - assistant text / thinking (with signature) / redacted thinking / tool calls →
//!   `text`, `thinking`, `redacted_thinking`, `tool_use`; thinking without a signature (an
//!   aborted stream) goes back as plain text, as the API rejects unsigned thinking;
//! - consecutive tool results → one user message of `tool_result` blocks (`is_error` kept);
//! - custom messages → user content; `bashExecution` and summaries → user text worded as pi
//!   words them (`volcanic-provider-support`).
//!
//! Prompt caching as pi does it: `cache_control: ephemeral` on the system block and on the last
//! block of the last user message. Tool-call ids are made to match `^[a-zA-Z0-9_-]{1,64}$`
//! (the same mapping for a call and its result).

use serde_json::{Map, Value, json};
use volcanic_abstractions::provider::ToolSpec;
use volcanic_abstractions::{
    AssistantContent, AssistantMessage, Message, Model, ProviderContext, StreamOptions, ThinkingLevel,
    ToolResultMessage, UserBody, UserContent,
};
use volcanic_provider_support::{
    IMAGE_OMITTED, bash_execution_text, branch_summary_text, compaction_summary_text, sanitize_id,
};

/// Output tokens kept for the answer on top of the thinking budget.
const ANSWER_TOKENS: u64 = 4096;
/// The smallest thinking budget the API accepts.
const MIN_BUDGET: u64 = 1024;
/// Output limit used when a model does not state one.
const FALLBACK_MAX_TOKENS: u64 = 4096;
/// Longest tool-call id the API accepts.
const MAX_ID_LEN: usize = 64;

/// The thinking budget of a level (`off` → none).
pub fn thinking_budget(level: ThinkingLevel) -> Option<u64> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some(1024),
        ThinkingLevel::Low => Some(2048),
        ThinkingLevel::Medium => Some(8192),
        ThinkingLevel::High => Some(16384),
        ThinkingLevel::Xhigh => Some(32000),
    }
}

/// `max_tokens` and the thinking budget for a call: the caller's limit (else the model's),
/// raised to budget + 4096 when thinking needs room, capped at the model's limit; the budget
/// shrinks when the cap leaves too little room, and thinking is dropped below 1024 tokens.
pub(crate) fn limits(model: &Model, options: &StreamOptions) -> (u64, Option<u64>) {
    let model_max = if model.max_tokens > 0 {
        model.max_tokens
    } else {
        FALLBACK_MAX_TOKENS
    };
    let max_tokens = options.max_tokens.unwrap_or(model_max).clamp(1, model_max);
    let budget = if model.reasoning {
        thinking_budget(options.thinking_level)
    } else {
        None
    };
    let Some(budget) = budget else {
        return (max_tokens, None);
    };
    let max_tokens = max_tokens.max(budget + ANSWER_TOKENS).min(model_max);
    let budget = if max_tokens > budget {
        budget
    } else {
        max_tokens.saturating_sub(MIN_BUDGET)
    };
    if budget < MIN_BUDGET {
        (max_tokens, None)
    } else {
        (max_tokens, Some(budget))
    }
}

/// The request body for one streamed call.
pub(crate) fn body(model: &Model, context: &ProviderContext, options: &StreamOptions) -> Value {
    volcanic_provider_support::body_tree(base(model, context, options), &context.tools, tool)
}

/// [`body`] serialized, the tools written from their specs by reference (see
/// `WireApi::body_bytes`).
pub(crate) fn body_bytes(model: &Model, context: &ProviderContext, options: &StreamOptions) -> Vec<u8> {
    volcanic_provider_support::body_bytes(&base(model, context, options), &context.tools, ToolRef)
}

/// A tool as the API wants it, written from its spec without copying the schema.
struct ToolRef<'a>(&'a ToolSpec);

impl serde::Serialize for ToolRef<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("name", &self.0.name)?;
        map.serialize_entry("description", &self.0.description)?;
        map.serialize_entry("input_schema", &SchemaRef(&self.0.parameters))?;
        map.end()
    }
}

/// An input schema with `"type": "object"` when it has no type (as [`tool`] makes it).
struct SchemaRef<'a>(&'a Value);

impl serde::Serialize for SchemaRef<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let empty = Map::new();
        let schema = self.0.as_object().unwrap_or(&empty);
        if schema.contains_key("type") {
            return schema.serialize(s);
        }
        let mut map = s.serialize_map(Some(schema.len() + 1))?;
        for (k, v) in schema {
            map.serialize_entry(k, v)?;
        }
        map.serialize_entry("type", "object")?;
        map.end()
    }
}

/// Everything of the body but the tools.
fn base(model: &Model, context: &ProviderContext, options: &StreamOptions) -> Map<String, Value> {
    let (max_tokens, budget) = limits(model, options);
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));
    if !context.system_prompt.is_empty() {
        body.insert(
            "system".into(),
            json!([{
                "type": "text",
                "text": context.system_prompt,
                "cache_control": {"type": "ephemeral"},
            }]),
        );
    }
    body.insert("messages".into(), Value::Array(messages(model, &context.messages)));
    match budget {
        Some(budget) => {
            body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
        }
        None => {
            if let Some(temperature) = options.temperature {
                body.insert("temperature".into(), json!(temperature));
            }
        }
    }
    body
}

/// A tool-call id as the API accepts it.
pub(crate) fn tool_id(id: &str) -> String {
    sanitize_id(id, MAX_ID_LEN, |c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn tool(spec: &ToolSpec) -> Value {
    let mut schema = match &*spec.parameters {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    schema.entry("type").or_insert_with(|| json!("object"));
    json!({
        "name": spec.name,
        "description": spec.description,
        "input_schema": schema,
    })
}

/// The transcript as API messages, with `cache_control` on the last user block.
pub(crate) fn messages(model: &Model, transcript: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut index = 0;
    while let Some(message) = transcript.get(index) {
        index += 1;
        match message {
            Message::User(user) => push_user(&mut out, user_blocks(model, &user.content)),
            Message::Custom(custom) => push_user(&mut out, user_blocks(model, &custom.content)),
            Message::BashExecution(bash) => {
                if let Some(text) = bash_execution_text(bash) {
                    push_user(&mut out, vec![text_block(&text)]);
                }
            }
            Message::BranchSummary(summary) => {
                push_user(&mut out, vec![text_block(&branch_summary_text(summary))]);
            }
            Message::CompactionSummary(summary) => {
                push_user(&mut out, vec![text_block(&compaction_summary_text(summary))]);
            }
            Message::Assistant(assistant) => {
                let blocks = assistant_blocks(assistant);
                if !blocks.is_empty() {
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            Message::ToolResult(first) => {
                let mut results = vec![tool_result(model, first)];
                while let Some(Message::ToolResult(next)) = transcript.get(index) {
                    results.push(tool_result(model, next));
                    index += 1;
                }
                out.push(json!({"role": "user", "content": results}));
            }
        }
    }
    mark_last_user_block(&mut out);
    out
}

fn push_user(out: &mut Vec<Value>, blocks: Vec<Value>) {
    if !blocks.is_empty() {
        out.push(json!({"role": "user", "content": blocks}));
    }
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn user_blocks(model: &Model, body: &UserBody) -> Vec<Value> {
    body.blocks()
        .iter()
        .filter_map(|block| match block {
            UserContent::Text(text) => (!text.text.trim().is_empty()).then(|| text_block(&text.text)),
            UserContent::Image(image) => Some(if model.takes_images() {
                json!({
                    "type": "image",
                    "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
                })
            } else {
                text_block(IMAGE_OMITTED)
            }),
        })
        .collect()
}

fn assistant_blocks(message: &AssistantMessage) -> Vec<Value> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Text(text) => (!text.text.trim().is_empty()).then(|| text_block(&text.text)),
            AssistantContent::Thinking(thinking) => {
                let signature = thinking.thinking_signature.as_deref().filter(|s| !s.trim().is_empty());
                match (thinking.redacted == Some(true), signature) {
                    (true, Some(data)) => Some(json!({"type": "redacted_thinking", "data": data})),
                    (true, None) => None,
                    (false, _) if thinking.thinking.trim().is_empty() => None,
                    (false, Some(signature)) => Some(json!({
                        "type": "thinking",
                        "thinking": thinking.thinking,
                        "signature": signature,
                    })),
                    (false, None) => Some(text_block(&thinking.thinking)),
                }
            }
            AssistantContent::ToolCall(call) => {
                let input = match &call.arguments {
                    Value::Object(map) => Value::Object(map.clone()),
                    _ => Value::Object(Map::new()),
                };
                Some(json!({
                    "type": "tool_use",
                    "id": tool_id(&call.id),
                    "name": call.name,
                    "input": input,
                }))
            }
        })
        .collect()
}

fn tool_result(model: &Model, result: &ToolResultMessage) -> Value {
    let has_images = result
        .content
        .iter()
        .any(|block| matches!(block, UserContent::Image(_)));
    let mut block = Map::new();
    block.insert("type".into(), json!("tool_result"));
    block.insert("tool_use_id".into(), json!(tool_id(&result.tool_call_id)));
    if has_images {
        let mut blocks = user_blocks(model, &UserBody::Blocks(result.content.clone()));
        if !blocks.iter().any(|b| b.get("type") == Some(&json!("text"))) {
            blocks.insert(0, text_block("(see attached image)"));
        }
        block.insert("content".into(), Value::Array(blocks));
    } else {
        let text = volcanic_abstractions::join_text(&result.content);
        if !text.is_empty() {
            block.insert("content".into(), json!(text));
        }
    }
    block.insert("is_error".into(), json!(result.is_error));
    Value::Object(block)
}

/// Puts `cache_control` on the last block of the last message when it is the user's.
fn mark_last_user_block(messages: &mut [Value]) {
    let Some(last) = messages.last_mut() else {
        return;
    };
    if last.get("role") != Some(&json!("user")) {
        return;
    }
    if let Some(block) = last
        .get_mut("content")
        .and_then(Value::as_array_mut)
        .and_then(|blocks| blocks.last_mut())
        .and_then(Value::as_object_mut)
    {
        block.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
