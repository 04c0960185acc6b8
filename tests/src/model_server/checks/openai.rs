//! OpenAI Chat Completions request checks: fields, message shapes, tool call pairing, tools.

use std::collections::HashSet;

use serde_json::Value;

use super::{invalid, is_id_like};
use crate::model_server::Rejection;

/// Roles the Chat Completions API accepts.
const ROLES: &[&str] = &["system", "developer", "user", "assistant", "tool", "function"];

/// Checks an OpenAI Chat Completions request body.
pub(crate) fn check_openai(body: &Value) -> Result<(), Rejection> {
    let Some(object) = body.as_object() else {
        return Err(invalid(
            "We could not parse the JSON body of your request. The body must be a JSON object.",
        ));
    };
    if !object.get("model").is_some_and(Value::is_string) {
        return Err(invalid("you must provide a model parameter"));
    }
    let Some(messages) = object.get("messages").and_then(Value::as_array) else {
        return Err(invalid("Missing required parameter: 'messages'."));
    };
    if messages.is_empty() {
        return Err(invalid(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an \
             empty array instead.",
        ));
    }
    let streaming = object.get("stream").and_then(Value::as_bool) == Some(true);
    if object.get("stream_options").is_some_and(|v| !v.is_null()) && !streaming {
        return Err(invalid(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        ));
    }
    check_tools(object.get("tools"))?;
    for (index, message) in messages.iter().enumerate() {
        check_message(index, message)?;
    }
    check_pairing(messages)
}

fn check_message(index: usize, message: &Value) -> Result<(), Rejection> {
    let role = message.get("role").and_then(Value::as_str);
    let Some(role) = role.filter(|role| ROLES.contains(role)) else {
        return Err(invalid(format!(
            "Invalid value: '{}'. Supported values are: 'system', 'assistant', 'user', \
             'function', 'tool', and 'developer'. (messages.[{index}].role)",
            role.unwrap_or("")
        )));
    };
    let content = message.get("content").filter(|content| !content.is_null());
    let content_ok = match content {
        None => false,
        Some(content) => content.is_string() || content.is_array(),
    };
    match role {
        "assistant" => {
            let calls = message.get("tool_calls").filter(|calls| !calls.is_null());
            if let Some(calls) = calls {
                check_tool_calls(index, calls)?;
            } else if !content_ok {
                return Err(invalid(format!(
                    "Invalid value for 'content': expected a string, got null. \
                     (messages.[{index}].content)"
                )));
            }
        }
        "tool" => {
            if !message.get("tool_call_id").is_some_and(Value::is_string) {
                return Err(invalid(format!(
                    "Missing parameter 'tool_call_id': messages with role 'tool' must have a \
                     'tool_call_id'. (messages.[{index}].tool_call_id)"
                )));
            }
            if !content_ok {
                return Err(invalid(format!(
                    "Invalid value for 'content': expected a string, got null. \
                     (messages.[{index}].content)"
                )));
            }
        }
        _ => {
            if !content_ok {
                return Err(invalid(format!(
                    "Invalid value for 'content': expected a string, got null. \
                     (messages.[{index}].content)"
                )));
            }
        }
    }
    Ok(())
}

fn check_tool_calls(index: usize, calls: &Value) -> Result<(), Rejection> {
    let Some(calls) = calls.as_array() else {
        return Err(invalid(format!(
            "Invalid type for 'messages[{index}].tool_calls': expected an array."
        )));
    };
    for (call_index, call) in calls.iter().enumerate() {
        let at = format!("messages[{index}].tool_calls[{call_index}]");
        if !call.get("id").is_some_and(Value::is_string) {
            return Err(invalid(format!("Missing required parameter: '{at}.id'.")));
        }
        if call.get("type").and_then(Value::as_str) != Some("function") {
            return Err(invalid(format!("Invalid value for '{at}.type': expected 'function'.")));
        }
        let Some(function) = call.get("function") else {
            return Err(invalid(format!("Missing required parameter: '{at}.function'.")));
        };
        if !function.get("name").is_some_and(Value::is_string) {
            return Err(invalid(format!("Missing required parameter: '{at}.function.name'.")));
        }
        match function.get("arguments") {
            Some(Value::String(_)) => {}
            None => {
                return Err(invalid(format!(
                    "Missing required parameter: '{at}.function.arguments'."
                )));
            }
            Some(other) => {
                return Err(invalid(format!(
                    "Invalid type for '{at}.function.arguments': expected a string, but got {} \
                     instead.",
                    json_kind(other)
                )));
            }
        }
    }
    Ok(())
}

/// "an object", "an array", ... as OpenAI words a type mismatch.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Every assistant `tool_calls[].id` answered by `tool` messages directly after it; every
/// `tool` message answering a call of the assistant message just before the run of tool messages.
fn check_pairing(messages: &[Value]) -> Result<(), Rejection> {
    let missing_error = |index: usize, pending: &[&str]| {
        invalid(format!(
            "An assistant message with 'tool_calls' must be followed by tool messages responding \
             to each 'tool_call_id'. The following tool_call_ids did not have response messages: \
             {} (messages.[{index}].role)",
            pending.join(", ")
        ))
    };
    // Ids of the calls of the assistant message before the current run of tool messages.
    let mut calls: Vec<&str> = Vec::new();
    // Those of them not answered yet.
    let mut pending: Vec<&str> = Vec::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for (index, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        if role == "tool" {
            let id = message.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
            if calls.is_empty() {
                return Err(invalid(format!(
                    "Invalid parameter: messages with role 'tool' must be a response to a \
                     preceeding message with 'tool_calls'. (messages.[{index}].role)"
                )));
            }
            if !calls.contains(&id) || !answered.insert(id) {
                return Err(invalid(format!(
                    "Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of \
                     previous message. (messages.[{index}].tool_call_id)"
                )));
            }
            pending.retain(|pending_id| *pending_id != id);
            continue;
        }
        if !pending.is_empty() {
            return Err(missing_error(index, &pending));
        }
        calls.clear();
        answered.clear();
        if role == "assistant"
            && let Some(list) = message.get("tool_calls").and_then(Value::as_array)
        {
            calls = list
                .iter()
                .filter_map(|call| call.get("id").and_then(Value::as_str))
                .collect();
            pending = calls.clone();
        }
    }
    if pending.is_empty() {
        Ok(())
    } else {
        Err(missing_error(messages.len(), &pending))
    }
}

fn check_tools(tools: Option<&Value>) -> Result<(), Rejection> {
    let Some(tools) = tools.filter(|tools| !tools.is_null()) else {
        return Ok(());
    };
    let Some(tools) = tools.as_array() else {
        return Err(invalid("Invalid type for 'tools': expected an array."));
    };
    for (index, tool) in tools.iter().enumerate() {
        match tool.get("type").and_then(Value::as_str) {
            None => {
                return Err(invalid(format!("Missing required parameter: 'tools[{index}].type'.")));
            }
            Some("function") => {}
            Some(_) => continue,
        }
        let Some(name) = tool.pointer("/function/name").and_then(Value::as_str) else {
            return Err(invalid(format!(
                "Missing required parameter: 'tools[{index}].function.name'."
            )));
        };
        let length = name.chars().count();
        if length > 64 {
            return Err(invalid(format!(
                "Invalid 'tools[{index}].function.name': string too long. Expected a string \
                 with maximum length 64, but got a string with length {length} instead."
            )));
        }
        if !is_id_like(name, 64) {
            return Err(invalid(format!(
                "Invalid 'tools[{index}].function.name': string does not match pattern. \
                 Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
            )));
        }
    }
    Ok(())
}
