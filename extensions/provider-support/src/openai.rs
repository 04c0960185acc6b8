//! What the two OpenAI wire APIs (Chat Completions, Responses) share: the reasoning effort of a
//! thinking level and the reading of their `error` object.

use serde_json::Value;
use volcanic_abstractions::ThinkingLevel;

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
