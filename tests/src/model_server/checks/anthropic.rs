//! Anthropic Messages request checks: fields, content blocks, tool pairing, thinking config.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{invalid, is_id_like};
use crate::model_server::Rejection;

/// Anthropic content block kinds the pairing check needs to tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind<'a> {
    ToolUse(&'a str),
    ToolResult(&'a str),
    Other,
}

/// A content block with its position in the request.
#[derive(Debug, Clone, Copy)]
struct Item<'a> {
    message: usize,
    block: usize,
    kind: Kind<'a>,
}

/// Consecutive messages of one role, which the real API merges into one turn.
#[derive(Debug)]
struct Group<'a> {
    role: &'a str,
    items: Vec<Item<'a>>,
}

/// Content block types the Messages API accepts in requests.
const ANTHROPIC_BLOCK_TYPES: &[&str] = &[
    "text",
    "image",
    "document",
    "search_result",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "tool_result",
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
    "mcp_tool_use",
    "mcp_tool_result",
    "container_upload",
];

/// Checks an Anthropic Messages request body. `signatures`, when given, is the set of thinking
/// signatures this server issued; a thinking block carrying any other is rejected as the real
/// API rejects a signature it did not make.
pub(crate) fn check_anthropic(body: &Value, signatures: Option<&HashSet<String>>) -> Result<(), Rejection> {
    let Some(object) = body.as_object() else {
        return Err(invalid("body: Input should be a valid dictionary"));
    };
    if !object.get("model").is_some_and(Value::is_string) {
        return Err(invalid("model: Field required"));
    }
    let max_tokens = match object.get("max_tokens") {
        None => return Err(invalid("max_tokens: Field required")),
        Some(value) => match value.as_u64() {
            Some(n) if n >= 1 => n,
            Some(_) | None => {
                return Err(invalid(
                    "max_tokens: Input should be a valid integer greater than or equal to 1",
                ));
            }
        },
    };
    check_thinking_config(object, max_tokens)?;
    check_anthropic_tools(object.get("tools"))?;
    let Some(messages) = object.get("messages").and_then(Value::as_array) else {
        return Err(invalid("messages: Field required"));
    };
    if messages.is_empty() {
        return Err(invalid("messages: at least one message is required"));
    }
    let mut groups: Vec<Group<'_>> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        match role {
            "user" | "assistant" => {}
            "system" => {
                return Err(invalid(
                    "messages: Unexpected role \"system\". The Messages API accepts a top-level \
                     `system` parameter, not \"system\" as an input message role.",
                ));
            }
            _ => {
                return Err(invalid(format!(
                    "messages.{index}.role: Input should be 'user' or 'assistant'"
                )));
            }
        }
        if index == 0 && role != "user" {
            return Err(invalid("messages: first message must use the \"user\" role"));
        }
        let final_assistant = index + 1 == messages.len() && role == "assistant";
        let items = message_items(index, message, role, final_assistant, signatures)?;
        match groups.last_mut() {
            Some(group) if group.role == role => group.items.extend(items),
            Some(_) | None => groups.push(Group { role, items }),
        }
    }
    check_anthropic_pairing(&groups)
}

/// The items of one message, after checking each block.
fn message_items<'a>(
    index: usize,
    message: &'a Value,
    role: &str,
    final_assistant: bool,
    signatures: Option<&HashSet<String>>,
) -> Result<Vec<Item<'a>>, Rejection> {
    let empty = || {
        invalid(format!(
            "messages.{index}: all messages must have non-empty content except for the optional \
             final assistant message"
        ))
    };
    match message.get("content") {
        Some(Value::String(text)) => {
            if text.is_empty() && !final_assistant {
                return Err(empty());
            }
            Ok(vec![Item {
                message: index,
                block: 0,
                kind: Kind::Other,
            }])
        }
        Some(Value::Array(blocks)) => {
            if blocks.is_empty() && !final_assistant {
                return Err(empty());
            }
            blocks
                .iter()
                .enumerate()
                .map(|(block, value)| {
                    let kind = check_block(index, block, value, role, signatures)?;
                    Ok(Item {
                        message: index,
                        block,
                        kind,
                    })
                })
                .collect()
        }
        Some(_) | None => Err(invalid(format!(
            "messages.{index}.content: Input should be a valid list"
        ))),
    }
}

fn check_block<'a>(
    message: usize,
    block: usize,
    value: &'a Value,
    role: &str,
    signatures: Option<&HashSet<String>>,
) -> Result<Kind<'a>, Rejection> {
    let at = format!("messages.{message}.content.{block}");
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Err(invalid(format!("{at}.type: Field required")));
    };
    if !ANTHROPIC_BLOCK_TYPES.contains(&kind) {
        return Err(invalid(format!(
            "{at}: Input tag '{kind}' found using 'type' does not match any of the expected tags: {}",
            ANTHROPIC_BLOCK_TYPES.join(", ")
        )));
    }
    let field = |name: &str| value.get(name).and_then(Value::as_str);
    let id_pattern = |path: &str, id: &str| {
        if is_id_like(id, usize::MAX) {
            Ok(())
        } else {
            Err(invalid(format!(
                "{at}.{path}: String should match pattern '^[a-zA-Z0-9_-]+$'"
            )))
        }
    };
    match kind {
        "text" => match field("text") {
            None => Err(invalid(format!("{at}.text.text: Field required"))),
            Some("") => Err(invalid("messages: text content blocks must be non-empty")),
            Some(_) => Ok(Kind::Other),
        },
        "tool_use" => {
            if role != "assistant" {
                return Err(invalid(format!(
                    "{at}: `tool_use` blocks can only be in `assistant` messages"
                )));
            }
            let Some(id) = field("id") else {
                return Err(invalid(format!("{at}.tool_use.id: Field required")));
            };
            id_pattern("tool_use.id", id)?;
            if field("name").is_none() {
                return Err(invalid(format!("{at}.tool_use.name: Field required")));
            }
            if !value.get("input").is_some_and(Value::is_object) {
                return Err(invalid(format!(
                    "{at}.tool_use.input: Input should be a valid dictionary"
                )));
            }
            Ok(Kind::ToolUse(id))
        }
        "tool_result" => {
            if role != "user" {
                return Err(invalid(format!(
                    "{at}: `tool_result` blocks can only be in `user` messages"
                )));
            }
            let Some(id) = field("tool_use_id") else {
                return Err(invalid(format!("{at}.tool_result.tool_use_id: Field required")));
            };
            id_pattern("tool_result.tool_use_id", id)?;
            match value.get("content") {
                None | Some(Value::String(_) | Value::Array(_)) => Ok(Kind::ToolResult(id)),
                Some(_) => Err(invalid(format!(
                    "{at}.tool_result.content: Input should be a valid list"
                ))),
            }
        }
        "thinking" => {
            let Some(signature) = field("signature") else {
                return Err(invalid(format!("{at}.thinking.signature: Field required")));
            };
            if field("thinking").is_none() {
                return Err(invalid(format!("{at}.thinking.thinking: Field required")));
            }
            match signatures {
                Some(issued) if !issued.contains(signature) => Err(invalid(format!(
                    "{at}: Invalid `signature` in `thinking` block (volcanic-testkit accepts only \
                     signatures its own turns issued)"
                ))),
                Some(_) | None => Ok(Kind::Other),
            }
        }
        "redacted_thinking" => match field("data") {
            Some(_) => Ok(Kind::Other),
            None => Err(invalid(format!("{at}.redacted_thinking.data: Field required"))),
        },
        _ => Ok(Kind::Other),
    }
}

/// Every `tool_use` answered by a `tool_result` in the next turn, results first in that turn,
/// every result answering a `tool_use` of the turn before, ids unique.
fn check_anthropic_pairing(groups: &[Group<'_>]) -> Result<(), Rejection> {
    let mut used_ids: HashSet<&str> = HashSet::new();
    let mut previous_uses: Vec<&str> = Vec::new();
    for (position, group) in groups.iter().enumerate() {
        if group.role == "assistant" {
            let uses: Vec<(&Item<'_>, &str)> = group
                .items
                .iter()
                .filter_map(|item| match item.kind {
                    Kind::ToolUse(id) => Some((item, id)),
                    Kind::ToolResult(_) | Kind::Other => None,
                })
                .collect();
            for (item, id) in &uses {
                if !used_ids.insert(id) {
                    return Err(invalid(format!(
                        "messages.{}.content.{}: `tool_use` ids must be unique",
                        item.message, item.block
                    )));
                }
            }
            let answered: HashSet<&str> = groups
                .get(position + 1)
                .map(|next| {
                    next.items
                        .iter()
                        .filter_map(|item| match item.kind {
                            Kind::ToolResult(id) => Some(id),
                            Kind::ToolUse(_) | Kind::Other => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            let missing: Vec<(&Item<'_>, &str)> =
                uses.iter().filter(|(_, id)| !answered.contains(id)).copied().collect();
            if let Some((first, _)) = missing.first() {
                let ids: Vec<&str> = missing.iter().map(|(_, id)| *id).collect();
                return Err(invalid(format!(
                    "messages.{}: `tool_use` ids were found without `tool_result` blocks \
                     immediately after: {}. Each `tool_use` block must have a corresponding \
                     `tool_result` block in the next message.",
                    first.message,
                    ids.join(", ")
                )));
            }
            previous_uses = uses.iter().map(|(_, id)| *id).collect();
            continue;
        }
        let mut results: HashSet<&str> = HashSet::new();
        let mut other_seen = false;
        for item in &group.items {
            match item.kind {
                Kind::ToolResult(id) => {
                    if !previous_uses.contains(&id) {
                        return Err(invalid(format!(
                            "messages.{}.content.{}: unexpected `tool_use_id` found in \
                             `tool_result` blocks: {id}. Each `tool_result` block must have a \
                             corresponding `tool_use` block in the previous message.",
                            item.message, item.block
                        )));
                    }
                    if !results.insert(id) {
                        return Err(invalid(format!(
                            "messages.{}.content.{}: each `tool_use` must have a single result. \
                             Found multiple `tool_result` blocks with id: {id}",
                            item.message, item.block
                        )));
                    }
                    if other_seen {
                        return Err(invalid(format!(
                            "messages.{}.content.{}: `tool_result` blocks must come first in the \
                             user message that answers `tool_use` blocks, before any other content",
                            item.message, item.block
                        )));
                    }
                }
                Kind::ToolUse(_) | Kind::Other => other_seen = true,
            }
        }
        previous_uses.clear();
    }
    Ok(())
}

fn check_thinking_config(object: &Map<String, Value>, max_tokens: u64) -> Result<(), Rejection> {
    let Some(thinking) = object.get("thinking") else {
        return Ok(());
    };
    match thinking.get("type").and_then(Value::as_str) {
        Some("enabled") => {
            let budget = thinking.get("budget_tokens").and_then(Value::as_u64);
            match budget {
                None => Err(invalid("thinking.enabled.budget_tokens: Field required")),
                Some(budget) if budget < 1024 => Err(invalid(
                    "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
                )),
                Some(budget) if budget >= max_tokens => Err(invalid(
                    "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult \
                     our documentation at https://docs.claude.com/en/docs/build-with-claude/\
                     extended-thinking#max-tokens-and-context-window-size",
                )),
                Some(_) => match object.get("temperature").and_then(Value::as_f64) {
                    Some(temperature) if (temperature - 1.0).abs() > f64::EPSILON => Err(invalid(
                        "`temperature` may only be set to 1 when thinking is enabled. Please \
                         consult our documentation at https://docs.claude.com/en/docs/\
                         build-with-claude/extended-thinking",
                    )),
                    Some(_) | None => Ok(()),
                },
            }
        }
        Some("disabled" | "adaptive") => Ok(()),
        Some(_) | None => Err(invalid(
            "thinking: Input tag found using 'type' does not match any of the expected tags: \
             'enabled', 'disabled', 'adaptive'",
        )),
    }
}

fn check_anthropic_tools(tools: Option<&Value>) -> Result<(), Rejection> {
    let Some(tools) = tools else {
        return Ok(());
    };
    let Some(tools) = tools.as_array() else {
        return Err(invalid("tools: Input should be a valid list"));
    };
    let mut names = HashSet::new();
    for (index, tool) in tools.iter().enumerate() {
        let custom = match tool.get("type").and_then(Value::as_str) {
            None | Some("custom") => true,
            Some(_) => false,
        };
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
        if !names.insert(name) {
            return Err(invalid("tools: Tool names must be unique."));
        }
        if !custom {
            continue;
        }
        if !is_id_like(name, 128) {
            return Err(invalid(format!(
                "tools.{index}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
            )));
        }
        let Some(schema) = tool.get("input_schema") else {
            return Err(invalid(format!("tools.{index}.custom.input_schema: Field required")));
        };
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(invalid(format!(
                "tools.{index}.custom.input_schema.type: Input should be 'object'"
            )));
        }
    }
    Ok(())
}
