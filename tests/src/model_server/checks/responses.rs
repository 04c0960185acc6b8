//! OpenAI Responses request checks: fields, input item shapes, function call pairing, tools,
//! reasoning options, and replayed reasoning items.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::{invalid, is_id_like};
use crate::model_server::Rejection;

/// Message roles the Responses API accepts in `input`.
const ROLES: &[&str] = &["user", "assistant", "system", "developer"];
/// `reasoning.effort` values.
const EFFORTS: &[&str] = &["none", "minimal", "low", "medium", "high"];
/// `include` values this server knows.
const INCLUDES: &[&str] = &[
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
    "file_search_call.results",
    "web_search_call.action.sources",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
];

/// Checks a Responses request body. `issued` maps the encrypted reasoning this server handed
/// out to the model it was handed to: a replayed `reasoning` item must carry one of them, for
/// the request's model.
pub(crate) fn check_responses(body: &Value, issued: &HashMap<String, String>) -> Result<(), Rejection> {
    let Some(object) = body.as_object() else {
        return Err(invalid(
            "We could not parse the JSON body of your request. The body must be a JSON object.",
        ));
    };
    let Some(model) = object.get("model").and_then(Value::as_str).filter(|m| !m.is_empty()) else {
        return Err(invalid("Missing required parameter: 'model'."));
    };
    if object.contains_key("messages") {
        return Err(invalid(
            "Unsupported parameter: 'messages'. In the Responses API, this parameter has moved to 'input'.",
        ));
    }
    for (field, is_ok) in [
        ("instructions", Value::is_string as fn(&Value) -> bool),
        ("stream", Value::is_boolean),
        ("store", Value::is_boolean),
        ("temperature", Value::is_number),
    ] {
        if object.get(field).is_some_and(|v| !v.is_null() && !is_ok(v)) {
            return Err(invalid(format!("Invalid type for '{field}'.")));
        }
    }
    if let Some(max) = object.get("max_output_tokens").filter(|v| !v.is_null())
        && max.as_u64().is_none_or(|max| max < 16)
    {
        return Err(invalid(format!(
            "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got {max} instead."
        )));
    }
    check_include(object.get("include"))?;
    check_reasoning(object.get("reasoning"))?;
    check_tools(object.get("tools"))?;
    let stateless = object.get("store").and_then(Value::as_bool) == Some(false);
    let items: Vec<Value> = match object.get("input") {
        Some(Value::String(_)) => return Ok(()),
        Some(Value::Array(items)) => items.clone(),
        _ => return Err(invalid("Missing required parameter: 'input'.")),
    };
    let mut calls: Vec<String> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    for (index, item) in items.iter().enumerate() {
        let Some(map) = item.as_object() else {
            return Err(invalid(format!(
                "Invalid type for 'input[{index}]': expected an object."
            )));
        };
        let kind = map.get("type").and_then(Value::as_str).unwrap_or("message");
        match kind {
            "message" => check_message(index, map)?,
            "function_call" => {
                let call_id = check_call_id(index, map)?;
                let name = map.get("name").and_then(Value::as_str).unwrap_or("");
                if !is_id_like(name, 64) {
                    return Err(invalid(format!(
                        "Invalid 'input[{index}].name': string does not match pattern. Expected a string \
                         that matches the pattern '^[a-zA-Z0-9_-]+$'."
                    )));
                }
                if !map.get("arguments").is_some_and(Value::is_string) {
                    return Err(invalid(format!(
                        "Invalid type for 'input[{index}].arguments': expected a string."
                    )));
                }
                if let Some(id) = map.get("id").and_then(Value::as_str)
                    && !id.starts_with("fc")
                {
                    return Err(invalid(format!(
                        "Invalid 'input[{index}].id': '{id}'. Expected an ID that begins with 'fc'."
                    )));
                }
                calls.push(call_id);
            }
            "function_call_output" => {
                let call_id = check_call_id(index, map)?;
                if !map.get("output").is_some_and(|o| o.is_string() || o.is_array()) {
                    return Err(invalid(format!("Missing required parameter: 'input[{index}].output'.")));
                }
                if !calls.contains(&call_id) {
                    return Err(invalid(format!(
                        "No tool call found for function call output with call_id {call_id}."
                    )));
                }
                answered.insert(call_id);
            }
            "reasoning" => check_reasoning_item(index, map, model, stateless, issued)?,
            other => {
                return Err(invalid(format!(
                    "Invalid value: '{other}'. Supported values are: 'message', 'function_call', \
                     'function_call_output' and 'reasoning' (volcanic-testkit). (input[{index}].type)"
                )));
            }
        }
    }
    if let Some(missing) = calls.iter().find(|call| !answered.contains(*call)) {
        return Err(invalid(format!("No tool output found for function call {missing}.")));
    }
    Ok(())
}

fn check_call_id(index: usize, map: &Map<String, Value>) -> Result<String, Rejection> {
    let call_id = map.get("call_id").and_then(Value::as_str).unwrap_or("");
    if call_id.is_empty() {
        return Err(invalid(format!(
            "Missing required parameter: 'input[{index}].call_id'."
        )));
    }
    if call_id.len() > 64 {
        return Err(invalid(format!(
            "Invalid 'input[{index}].call_id': string too long. Expected a string with maximum length 64, \
             but got a string with length {} instead.",
            call_id.len()
        )));
    }
    Ok(call_id.to_owned())
}

fn check_message(index: usize, map: &Map<String, Value>) -> Result<(), Rejection> {
    let role = map.get("role").and_then(Value::as_str).unwrap_or("");
    if !ROLES.contains(&role) {
        return Err(invalid(format!(
            "Invalid value: '{role}'. Supported values are: 'assistant', 'system', 'developer', and 'user'. \
             (input[{index}].role)"
        )));
    }
    let parts = match map.get("content") {
        Some(Value::String(_)) => return Ok(()),
        Some(Value::Array(parts)) => parts,
        _ => {
            return Err(invalid(format!(
                "Missing required parameter: 'input[{index}].content'."
            )));
        }
    };
    let allowed: &[&str] = if role == "assistant" {
        &["output_text", "refusal"]
    } else {
        &["input_text", "input_image", "input_file"]
    };
    for (part_index, part) in parts.iter().enumerate() {
        let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
        if !allowed.contains(&kind) {
            return Err(invalid(format!(
                "Invalid value: '{kind}'. Supported values are: {}. (input[{index}].content[{part_index}].type)",
                allowed.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>().join(", ")
            )));
        }
        let ok = match kind {
            "input_image" => part
                .get("image_url")
                .and_then(Value::as_str)
                .is_some_and(|url| url.starts_with("data:") || url.starts_with("http")),
            "refusal" => part.get("refusal").is_some_and(Value::is_string),
            _ => part.get("text").is_some_and(Value::is_string),
        };
        if !ok {
            return Err(invalid(format!(
                "Invalid 'input[{index}].content[{part_index}]': a {kind} part needs its {}.",
                if kind == "input_image" {
                    "image_url (a data: or https URL)"
                } else {
                    "text"
                }
            )));
        }
    }
    if role == "assistant"
        && map
            .get("id")
            .is_some_and(|id| !id.as_str().is_some_and(|id| id.starts_with("msg")))
    {
        return Err(invalid(format!(
            "Invalid 'input[{index}].id'. Expected an ID that begins with 'msg'."
        )));
    }
    Ok(())
}

fn check_reasoning_item(
    index: usize,
    map: &Map<String, Value>,
    model: &str,
    stateless: bool,
    issued: &HashMap<String, String>,
) -> Result<(), Rejection> {
    let id = map.get("id").and_then(Value::as_str).unwrap_or("");
    if !id.starts_with("rs") {
        return Err(invalid(format!(
            "Invalid 'input[{index}].id': '{id}'. Expected an ID that begins with 'rs'."
        )));
    }
    if !map.get("summary").is_some_and(Value::is_array) {
        return Err(invalid(format!(
            "Missing required parameter: 'input[{index}].summary'."
        )));
    }
    match map.get("encrypted_content").and_then(Value::as_str) {
        None if stateless => Err(invalid(format!(
            "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try \
             again with `store` set to true, or remove this item from your input."
        ))),
        None => Ok(()),
        Some(blob) if issued.get(blob).is_some_and(|issued_to| issued_to == model) => Ok(()),
        Some(_) => Err(Rejection::new(
            400,
            "invalid_request_error",
            Some("invalid_encrypted_content"),
            format!(
                "The encrypted content for item {id} could not be verified. Reason: Encrypted content \
                 organization_id or model did not match."
            ),
        )),
    }
}

fn check_include(include: Option<&Value>) -> Result<(), Rejection> {
    let Some(include) = include.filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let Some(values) = include.as_array() else {
        return Err(invalid("Invalid type for 'include': expected an array of strings."));
    };
    for value in values {
        let text = value.as_str().unwrap_or("");
        if !INCLUDES.contains(&text) {
            return Err(invalid(format!("Invalid value: '{text}'. (include)")));
        }
    }
    Ok(())
}

fn check_reasoning(reasoning: Option<&Value>) -> Result<(), Rejection> {
    let Some(reasoning) = reasoning.filter(|v| !v.is_null()) else {
        return Ok(());
    };
    if let Some(effort) = reasoning.get("effort").filter(|v| !v.is_null()) {
        let text = effort.as_str().unwrap_or("");
        if !EFFORTS.contains(&text) {
            return Err(invalid(format!(
                "Invalid value: '{text}'. Supported values are: 'none', 'minimal', 'low', 'medium', and 'high'. \
                 (reasoning.effort)"
            )));
        }
    }
    if let Some(summary) = reasoning.get("summary").filter(|v| !v.is_null()) {
        let text = summary.as_str().unwrap_or("");
        if !["auto", "concise", "detailed"].contains(&text) {
            return Err(invalid(format!("Invalid value: '{text}'. (reasoning.summary)")));
        }
    }
    Ok(())
}

fn check_tools(tools: Option<&Value>) -> Result<(), Rejection> {
    let Some(tools) = tools.filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let Some(tools) = tools.as_array() else {
        return Err(invalid("Invalid type for 'tools': expected an array."));
    };
    let mut names = HashSet::new();
    for (index, tool) in tools.iter().enumerate() {
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            return Err(invalid(format!(
                "Invalid value for 'tools[{index}].type': volcanic-testkit serves function tools only."
            )));
        }
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            return Err(invalid(format!("Missing required parameter: 'tools[{index}].name'.")));
        };
        if !is_id_like(name, 64) {
            return Err(invalid(format!(
                "Invalid 'tools[{index}].name': string does not match pattern. Expected a string that \
                 matches the pattern '^[a-zA-Z0-9_-]+$'."
            )));
        }
        if !names.insert(name) {
            return Err(invalid(format!("Duplicate tool name: '{name}'. (tools[{index}].name)")));
        }
        if tool.get("parameters").is_some_and(|p| !p.is_object()) {
            return Err(invalid(format!(
                "Invalid type for 'tools[{index}].parameters': expected an object."
            )));
        }
    }
    Ok(())
}
