//! What the two OpenAI wire APIs (Chat Completions, Responses) share: the reasoning effort of a
//! thinking level, the reading of their `error` object, and how a run of tool results is sent.

use serde_json::Value;
use volcanic_abstractions::{Message, ThinkingLevel, ToolResultMessage};

/// The text leading the user message that carries the images of tool results (the APIs' tool
/// messages carry text only).
pub const TOOL_IMAGES_LEAD: &str = "Attached image(s) from tool result:";

/// The reasoning effort (`reasoning_effort`, `reasoning.effort`) of a level: `off` sends none
/// (the model's default applies), `xhigh` is `high`.
pub fn reasoning_effort(level: ThinkingLevel) -> Option<&'static str> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some("minimal"),
        ThinkingLevel::Low => Some("low"),
        ThinkingLevel::Medium => Some("medium"),
        ThinkingLevel::High | ThinkingLevel::Xhigh => Some("high"),
    }
}

/// `(kind, message)` of an OpenAI-style `error` value: an object's `code` (else its `type`) and
/// its `message`, each read with `text`; a bare string is the message; anything else is the
/// message as JSON. The OpenAI wire APIs read `code` differently (Chat Completions only a
/// string, since llama.cpp sends the status as a number beside a meaningful `type`), hence
/// `text`.
pub fn error_fields(error: &Value, text: fn(&Value) -> Option<String>) -> (Option<String>, Option<String>) {
    let field = |name: &str| error.get(name).and_then(text);
    match error {
        Value::String(message) => (None, Some(message.clone())),
        Value::Object(_) => (field("code").or_else(|| field("type")), field("message")),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_) => (None, Some(error.to_string())),
    }
}

/// Sends the run of tool results starting at `transcript[start]` as the OpenAI APIs take them:
/// one tool message each, made by `message` (which appends the result's images, as the API's
/// parts, to the list it is given), then, when there are images, one user message with them
/// made by `images_message`. Returns the index after the run.
pub fn push_tool_results<'a, M, P>(
    transcript: &'a [Message],
    start: usize,
    out: &mut Vec<M>,
    message: impl Fn(&'a ToolResultMessage, &mut Vec<P>) -> M,
    images_message: impl FnOnce(Vec<P>) -> M,
) -> usize {
    let mut images = Vec::new();
    let mut index = start;
    while let Some(Message::ToolResult(result)) = transcript.get(index) {
        out.push(message(result, &mut images));
        index += 1;
    }
    if !images.is_empty() {
        out.push(images_message(images));
    }
    index
}
