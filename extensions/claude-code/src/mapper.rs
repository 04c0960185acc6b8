//! `claude`'s `stream-json` lines (the Agent SDK's `SDKMessage` union) → provider events.
//!
//! Text and thinking stream from `stream_event` lines (raw Anthropic stream events, sent with
//! `--include-partial-messages`); a whole `assistant` block counts only when its message was not
//! streamed. Claude's own `tool_use` blocks (whole, from `assistant` lines) become
//! `providerToolCall` blocks (`provider_toolcall` events), and the `user` lines' `tool_result`
//! blocks their results (`provider_toolresult`): shown as progress, kept in the transcript as
//! paired history, never executed by the runtime. Lines of subagents (`parent_tool_use_id` set)
//! and unknown types are skipped.

use serde_json::Value;
use std::collections::HashSet;
use volcanic_abstractions::{
    AssistantContent, AssistantMessage, AssistantMessageEvent as Ev, Cost, Model, ProviderToolCall, ProviderToolResult,
    TextContent, ThinkingContent, Usage, UserContent,
};

/// How long a tool result may be in the transcript (characters); the rest is cut.
const RESULT_CHARS: usize = 2_000;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Text,
    Thinking,
}

/// The outcome the `result` line reported.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// `is_error: false`.
    Success,
    /// `is_error: true`: what it said.
    Failed(String),
}

/// One call's mapping state.
#[derive(Debug)]
pub(crate) struct Mapper {
    message: AssistantMessage,
    open: Option<(Kind, String)>,
    streamed: HashSet<String>,
    outcome: Option<Outcome>,
}

impl Mapper {
    /// A mapper for `model`, stamping the message with `timestamp` (epoch ms).
    pub(crate) fn new(model: &Model, timestamp: i64) -> Self {
        Mapper {
            message: AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id, timestamp),
            open: None,
            streamed: HashSet::new(),
            outcome: None,
        }
    }

    /// The `start` event.
    pub(crate) fn start(&self) -> Ev {
        Ev::Start {
            partial: self.message.clone(),
        }
    }

    /// The `result` line's outcome, once it came.
    pub(crate) fn outcome(&self) -> Option<&Outcome> {
        self.outcome.as_ref()
    }

    /// Handles one line, appending the events it yields. Lines that are not JSON objects or of
    /// unknown type are skipped (logged at debug level).
    pub(crate) fn on_line(&mut self, line: &str, out: &mut Vec<Ev>) {
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            tracing::debug!("claude-code: skipping a line that is not JSON");
            return;
        };
        if !v["parent_tool_use_id"].is_null() {
            return;
        }
        if let Some(id) = v["session_id"].as_str() {
            self.message.response_id = Some(id.to_owned());
        }
        match v["type"].as_str().unwrap_or_default() {
            "stream_event" => self.on_stream_event(&v["event"], out),
            "assistant" => self.on_assistant(&v["message"], out),
            "user" => self.on_user(&v["message"], out),
            "result" => self.on_result(&v),
            other => tracing::debug!(r#type = other, "claude-code: skipping line"),
        }
    }

    fn on_stream_event(&mut self, e: &Value, out: &mut Vec<Ev>) {
        match e["type"].as_str().unwrap_or_default() {
            "message_start" => {
                if let Some(id) = e["message"]["id"].as_str() {
                    self.streamed.insert(id.to_owned());
                }
            }
            "content_block_start" => match e["content_block"]["type"].as_str() {
                Some("text") => self.open_block(Kind::Text, out),
                Some("thinking") => self.open_block(Kind::Thinking, out),
                _ => {}
            },
            "content_block_delta" => {
                let d = &e["delta"];
                match (d["type"].as_str(), &self.open) {
                    (Some("text_delta"), Some((Kind::Text, _))) => self.delta(d["text"].as_str(), out),
                    (Some("thinking_delta"), Some((Kind::Thinking, _))) => self.delta(d["thinking"].as_str(), out),
                    _ => {}
                }
            }
            "content_block_stop" => self.close(out),
            _ => {}
        }
    }

    fn on_assistant(&mut self, m: &Value, out: &mut Vec<Ev>) {
        let streamed = m["id"].as_str().is_some_and(|id| self.streamed.contains(id));
        for block in m["content"].as_array().into_iter().flatten() {
            match block["type"].as_str().unwrap_or_default() {
                "text" if !streamed => self.whole(Kind::Text, block["text"].as_str(), out),
                "thinking" if !streamed => self.whole(Kind::Thinking, block["thinking"].as_str(), out),
                "tool_use" => self.tool_use(block, out),
                _ => {}
            }
        }
    }

    /// One of Claude's own tool calls: a whole `providerToolCall` block, its result to come.
    fn tool_use(&mut self, block: &Value, out: &mut Vec<Ev>) {
        let Some(id) = block["id"].as_str() else {
            tracing::debug!("claude-code: skipping a tool_use without an id");
            return;
        };
        if self.call_index(id).is_some() {
            return;
        }
        self.close(out);
        let call = ProviderToolCall {
            id: id.to_owned(),
            name: block["name"].as_str().unwrap_or("tool").to_owned(),
            arguments: match &block["input"] {
                Value::Null => Value::Object(Default::default()),
                input => input.clone(),
            },
            result: None,
        };
        let content_index = self.message.content.len();
        self.message
            .content
            .push(AssistantContent::ProviderToolCall(call.clone()));
        out.push(Ev::ProviderToolCall {
            content_index,
            tool_call: call,
        });
    }

    /// The `tool_result` blocks of a `user` line: each the result of the call with its
    /// `tool_use_id` (one without a known call, or a second one, is skipped).
    fn on_user(&mut self, m: &Value, out: &mut Vec<Ev>) {
        for block in m["content"].as_array().into_iter().flatten() {
            if block["type"] != "tool_result" {
                continue;
            }
            let Some(content_index) = block["tool_use_id"].as_str().and_then(|id| self.call_index(id)) else {
                tracing::debug!("claude-code: skipping a tool_result without its tool_use");
                continue;
            };
            let result = ProviderToolResult {
                content: vec![UserContent::Text(TextContent {
                    text: result_text(&block["content"]),
                    text_signature: None,
                })],
                is_error: block["is_error"] == true,
            };
            let Some(AssistantContent::ProviderToolCall(call)) = self.message.content.get_mut(content_index) else {
                continue;
            };
            if call.result.is_some() {
                tracing::debug!("claude-code: skipping a second tool_result of one call");
                continue;
            }
            call.result = Some(result.clone());
            out.push(Ev::ProviderToolResult { content_index, result });
        }
    }

    /// The index of the `providerToolCall` block with Claude's call id `id`.
    fn call_index(&self, id: &str) -> Option<usize> {
        self.message
            .content
            .iter()
            .position(|c| matches!(c, AssistantContent::ProviderToolCall(call) if call.id == id))
    }

    fn on_result(&mut self, v: &Value) {
        let n = |k: &str| v["usage"][k].as_u64().unwrap_or(0);
        let (input, output, cache_read, cache_write) = (
            n("input_tokens"),
            n("output_tokens"),
            n("cache_read_input_tokens"),
            n("cache_creation_input_tokens"),
        );
        let total = v["total_cost_usd"].as_f64().unwrap_or(0.0);
        self.message.usage = Usage {
            input,
            output,
            cache_read,
            cache_write,
            total_tokens: input + output + cache_read + cache_write,
            cost: Cost {
                total,
                ..Cost::default()
            },
        };
        let subtype = v["subtype"].as_str().unwrap_or("unknown");
        self.outcome = Some(if v["is_error"] == true || subtype != "success" {
            let said = v["result"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| {
                    v["errors"]
                        .as_array()
                        .map(|e| e.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("; "))
                })
                .filter(|s| !s.is_empty());
            Outcome::Failed(match said {
                Some(s) => format!("{subtype}: {s}"),
                None => subtype.to_owned(),
            })
        } else {
            Outcome::Success
        });
    }

    fn open_block(&mut self, kind: Kind, out: &mut Vec<Ev>) {
        self.close(out);
        let content_index = self.message.content.len();
        self.message.content.push(match kind {
            Kind::Text => AssistantContent::Text(TextContent {
                text: String::new(),
                text_signature: None,
            }),
            Kind::Thinking => AssistantContent::Thinking(ThinkingContent {
                thinking: String::new(),
                thinking_signature: None,
                redacted: None,
            }),
        });
        out.push(match kind {
            Kind::Text => Ev::TextStart { content_index },
            Kind::Thinking => Ev::ThinkingStart { content_index },
        });
        self.open = Some((kind, String::new()));
    }

    fn delta(&mut self, piece: Option<&str>, out: &mut Vec<Ev>) {
        let (Some(piece), Some((kind, buf))) = (piece.filter(|p| !p.is_empty()), self.open.as_mut()) else {
            return;
        };
        buf.push_str(piece);
        let content_index = self.message.content.len() - 1;
        out.push(match kind {
            Kind::Text => Ev::TextDelta {
                content_index,
                delta: piece.to_owned(),
            },
            Kind::Thinking => Ev::ThinkingDelta {
                content_index,
                delta: piece.to_owned(),
            },
        });
    }

    /// Ends the open block, writing its text into the message.
    fn close(&mut self, out: &mut Vec<Ev>) {
        let Some((kind, content)) = self.open.take() else {
            return;
        };
        let content_index = self.message.content.len() - 1;
        match (&mut self.message.content[content_index], kind) {
            (AssistantContent::Text(t), Kind::Text) => t.text = content.clone(),
            (AssistantContent::Thinking(t), Kind::Thinking) => t.thinking = content.clone(),
            // The open block is always the last one pushed, of its kind.
            (AssistantContent::Text(_), Kind::Thinking)
            | (AssistantContent::Thinking(_), Kind::Text)
            | (AssistantContent::ToolCall(_) | AssistantContent::ProviderToolCall(_), Kind::Text | Kind::Thinking) => {}
        }
        out.push(match kind {
            Kind::Text => Ev::TextEnd { content_index, content },
            Kind::Thinking => Ev::ThinkingEnd {
                content_index,
                content,
                signature: None,
            },
        });
    }

    fn whole(&mut self, kind: Kind, text: Option<&str>, out: &mut Vec<Ev>) {
        self.open_block(kind, out);
        self.delta(text, out);
        self.close(out);
    }

    /// Ends any open block and returns the message as far as it got.
    pub(crate) fn finish(mut self, out: &mut Vec<Ev>) -> AssistantMessage {
        self.close(out);
        self.message
    }
}

/// A `tool_result`'s content as text (a string, or its text parts joined; other parts named),
/// cut at [`RESULT_CHARS`] characters.
fn result_text(content: &Value) -> String {
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p["text"].as_str() {
                Some(t) => t.to_owned(),
                None => format!("[{}]", p["type"].as_str().unwrap_or("content")),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    if text.chars().count() > RESULT_CHARS {
        format!("{} […]", text.chars().take(RESULT_CHARS).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
#[path = "mapper_tests.rs"]
mod tests;
