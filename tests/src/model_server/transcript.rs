//! A request's conversation read the same way for both wire formats, for responders that choose
//! a turn from what was asked ([`ModelServer::set_responder`](super::ModelServer::set_responder)):
//! the last user text, whether the request ends in tool results, what the current run was
//! prompted with and which tools it already called.

use serde_json::Value;

use super::WireApi;

/// A tool call the assistant made, as the request sends it back.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Anthropic `tool_use.id`, OpenAI `tool_calls[].id`.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON (OpenAI's argument string parsed; kept as a string if it is not JSON).
    pub arguments: Value,
}

/// One entry of a conversation, in order. An Anthropic user message carrying tool results and
/// text gives a [`Said::ToolResult`] per result, then one [`Said::User`] for the text.
#[derive(Debug, Clone, PartialEq)]
pub enum Said {
    /// A user message's text (text parts joined with `"\n"`; images and other parts left out).
    User(String),
    /// An assistant message: its text and its tool calls.
    Assistant {
        /// Text parts joined with `"\n"`.
        text: String,
        /// Tool calls, in order.
        calls: Vec<Call>,
    },
    /// The output of a tool call (Anthropic `tool_result`, OpenAI `role: "tool"`).
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// Its text parts joined with `"\n"`.
        text: String,
    },
}

/// The conversation of one request body (system prompts left out).
///
/// ```
/// use serde_json::json;
/// use volcanic_testkit::model_server::{Transcript, WireApi};
///
/// let body = json!({"messages": [
///     {"role": "user", "content": "run it"},
///     {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "bash", "input": {"command": "ls"}}]},
///     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "a.txt"}]},
/// ]});
/// let t = Transcript::of(WireApi::Anthropic, &body);
/// assert!(t.ends_with_tool_result());
/// assert_eq!(t.run_prompts(), ["run it"]);
/// assert_eq!(t.run_calls()[0].name, "bash");
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Transcript {
    said: Vec<Said>,
}

impl Transcript {
    /// Reads the `messages` (Responses: `input` items) of a request body in the given format;
    /// anything unreadable is left out. Responses function calls following an assistant message
    /// join it, as they came in one answer.
    pub fn of(api: WireApi, body: &Value) -> Transcript {
        let field = if api == WireApi::Responses { "input" } else { "messages" };
        let messages = body.get(field).and_then(Value::as_array).map(Vec::as_slice);
        let mut said = Vec::new();
        for message in messages.unwrap_or_default() {
            match api {
                WireApi::Anthropic => read_anthropic(message, &mut said),
                WireApi::OpenAi => read_openai(message, &mut said),
                WireApi::Responses => read_responses(message, &mut said),
            }
        }
        Transcript { said }
    }

    /// Every entry, in order.
    pub fn entries(&self) -> &[Said] {
        &self.said
    }

    /// The text of the last user message, if any (tool results are not user messages here).
    pub fn last_user_text(&self) -> Option<&str> {
        self.said.iter().rev().find_map(|s| match s {
            Said::User(text) => Some(text.as_str()),
            Said::Assistant { .. } | Said::ToolResult { .. } => None,
        })
    }

    /// Whether the last entry is a tool result: the model is asked to go on after its tools.
    pub fn ends_with_tool_result(&self) -> bool {
        matches!(self.said.last(), Some(Said::ToolResult { .. }))
    }

    /// Where the current run's prompts start and end: the user messages after the last
    /// assistant message, or, when the request ends in tool calls and their results, the user
    /// messages before that chain of tool-calling turns.
    fn run_span(&self) -> (usize, usize) {
        let mut end = self.said.len();
        // Walk back over the chain of tool-calling turns and their results.
        while end > 0 {
            match &self.said[end - 1] {
                Said::ToolResult { .. } => end -= 1,
                Said::Assistant { calls, .. } if !calls.is_empty() => end -= 1,
                Said::Assistant { .. } | Said::User(_) => break,
            }
        }
        let mut start = end;
        while start > 0 && matches!(self.said[start - 1], Said::User(_)) {
            start -= 1;
        }
        (start, end)
    }

    /// The texts of the user messages the current run answers, in order: the trailing user
    /// messages (several when follow-ups were queued together), or, when the request ends in
    /// tool results, the user messages that started those tool calls. Empty when the
    /// conversation ends with an assistant answer.
    pub fn run_prompts(&self) -> Vec<&str> {
        let (start, end) = self.run_span();
        self.said[start..end]
            .iter()
            .filter_map(|s| match s {
                Said::User(text) => Some(text.as_str()),
                Said::Assistant { .. } | Said::ToolResult { .. } => None,
            })
            .collect()
    }

    /// The tool calls the current run made after its prompts (see [`run_prompts`](Self::run_prompts)).
    pub fn run_calls(&self) -> Vec<&Call> {
        let (_, end) = self.run_span();
        self.said[end..]
            .iter()
            .flat_map(|s| match s {
                Said::Assistant { calls, .. } => calls.as_slice(),
                Said::User(_) | Said::ToolResult { .. } => &[],
            })
            .collect()
    }
}

fn read_anthropic(message: &Value, said: &mut Vec<Said>) {
    let role = message.get("role").and_then(Value::as_str);
    let content = message.get("content");
    let blocks: Vec<&Value> = match content {
        Some(Value::Array(blocks)) => blocks.iter().collect(),
        Some(other) => vec![other],
        None => Vec::new(),
    };
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block {
            Value::String(text) => texts.push(text.clone()),
            Value::Object(_) => match block.get("type").and_then(Value::as_str) {
                Some("text") => texts.extend(block.get("text").and_then(Value::as_str).map(str::to_owned)),
                Some("tool_use") => calls.push(Call {
                    id: string(block, "id"),
                    name: string(block, "name"),
                    arguments: block.get("input").cloned().unwrap_or(Value::Null),
                }),
                Some("tool_result") => said.push(Said::ToolResult {
                    call_id: string(block, "tool_use_id"),
                    text: block.get("content").map(content_text).unwrap_or_default(),
                }),
                _ => {}
            },
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_) => {}
        }
    }
    let text = texts.join("\n");
    match role {
        Some("assistant") => said.push(Said::Assistant { text, calls }),
        Some("user") if !text.is_empty() => said.push(Said::User(text)),
        _ => {}
    }
}

fn read_openai(message: &Value, said: &mut Vec<Said>) {
    let text = message.get("content").map(content_text).unwrap_or_default();
    match message.get("role").and_then(Value::as_str) {
        Some("user") => said.push(Said::User(text)),
        Some("assistant") => {
            let calls = message
                .get("tool_calls")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|call| {
                    let arguments = call.pointer("/function/arguments");
                    Call {
                        id: string(call, "id"),
                        name: call
                            .pointer("/function/name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        arguments: match arguments {
                            Some(Value::String(raw)) => {
                                serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone()))
                            }
                            Some(other) => other.clone(),
                            None => Value::Null,
                        },
                    }
                })
                .collect();
            said.push(Said::Assistant { text, calls });
        }
        Some("tool") => said.push(Said::ToolResult {
            call_id: string(message, "tool_call_id"),
            text,
        }),
        _ => {}
    }
}

fn read_responses(item: &Value, said: &mut Vec<Said>) {
    let kind = item.get("type").and_then(Value::as_str).unwrap_or("message");
    match kind {
        "message" => {
            let text = item.get("content").map(content_text).unwrap_or_default();
            match item.get("role").and_then(Value::as_str) {
                Some("user") => said.push(Said::User(text)),
                Some("assistant") => said.push(Said::Assistant {
                    text,
                    calls: Vec::new(),
                }),
                _ => {}
            }
        }
        "function_call" => {
            let arguments = match item.get("arguments") {
                Some(Value::String(raw)) => serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone())),
                Some(other) => other.clone(),
                None => Value::Null,
            };
            let call = Call {
                id: string(item, "call_id"),
                name: string(item, "name"),
                arguments,
            };
            match said.last_mut() {
                Some(Said::Assistant { calls, .. }) => calls.push(call),
                _ => said.push(Said::Assistant {
                    text: String::new(),
                    calls: vec![call],
                }),
            }
        }
        "function_call_output" => said.push(Said::ToolResult {
            call_id: string(item, "call_id"),
            text: item.get("output").map(content_text).unwrap_or_default(),
        }),
        _ => {}
    }
}

fn string(value: &Value, field: &str) -> String {
    value.get(field).and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// A content value's text: a string as is, or the `text` of its parts joined with `"\n"`.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Object(_) => String::new(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::{Call, Said, Transcript, WireApi};

    #[test]
    fn anthropic_trailing_follow_ups_are_one_run() {
        let body = json!({"messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": [{"type": "text", "text": "answered"}]},
            {"role": "user", "content": [{"type": "text", "text": "second"}]},
            {"role": "user", "content": "third"},
        ]});
        let t = Transcript::of(WireApi::Anthropic, &body);
        assert_eq!(t.run_prompts(), ["second", "third"]);
        assert!(t.run_calls().is_empty());
        assert!(!t.ends_with_tool_result());
        assert_eq!(t.last_user_text(), Some("third"));
    }

    #[test]
    fn anthropic_tool_chain_leads_back_to_its_prompts() {
        let body = json!({"messages": [
            {"role": "user", "content": "old"},
            {"role": "assistant", "content": "old answer"},
            {"role": "user", "content": "run a"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "running"},
                {"type": "tool_use", "id": "c1", "name": "bash", "input": {"command": "a"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": "ok"}]}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c2", "name": "bash", "input": {"command": "b"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c2", "content": "done"}]},
        ]});
        let t = Transcript::of(WireApi::Anthropic, &body);
        assert!(t.ends_with_tool_result());
        assert_eq!(t.run_prompts(), ["run a"]);
        let ids: Vec<&str> = t.run_calls().iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c1", "c2"]);
        assert_eq!(
            t.entries()[4],
            Said::ToolResult {
                call_id: "c1".into(),
                text: "ok".into()
            }
        );
    }

    #[test]
    fn a_finished_conversation_has_no_run_prompts() {
        let body = json!({"messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a"},
        ]});
        let t = Transcript::of(WireApi::Anthropic, &body);
        assert!(t.run_prompts().is_empty());
    }

    #[test]
    fn openai_reads_the_same() {
        let body = json!({"messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "run a"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"a\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ]});
        let t = Transcript::of(WireApi::OpenAi, &body);
        assert!(t.ends_with_tool_result());
        assert_eq!(t.run_prompts(), ["run a"]);
        assert_eq!(
            t.run_calls(),
            [&Call {
                id: "c1".into(),
                name: "bash".into(),
                arguments: json!({"command": "a"}),
            }]
        );
    }
}
