//! Responses stream events → provider events (`text_*`, `thinking_*`, `toolcall_*`), building
//! the final [`AssistantMessage`] on the way. Pure and synchronous.
//!
//! Each output item is one content block, keyed by its `output_index`: a `reasoning` item is a
//! thinking block (summary parts joined by a blank line) whose signature is the item itself as
//! JSON (id, summary, `encrypted_content`), replayed to the same model only; a `message` item is
//! a text block whose signature is the item id; a `function_call` item is a tool call whose id
//! is `{call_id}|{item id}` (pi's form: the call id pairs the output, the item id pairs the
//! reasoning before it).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use volcanic_abstractions::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, Model, StopReason, TextContent, ThinkingContent,
};
use volcanic_provider_support::{EventMapper, ProviderError, priced_usage, start_tool_call, tool_arguments};

use crate::wire::{self, Item, ResponseObject, WireEvent, WireUsage};

/// One output item being streamed.
#[derive(Debug)]
struct Open {
    /// Index in the message's `content`.
    content_index: usize,
    /// Function-call arguments text received so far.
    json: String,
    /// Summary part index last seen (reasoning), to put a blank line between parts.
    summary_index: usize,
    /// Whether the block's end event was emitted.
    closed: bool,
}

/// Turns the events of one response into provider events and the final message.
#[derive(Debug)]
pub struct Mapper {
    model: Model,
    message: AssistantMessage,
    /// Items by `output_index`.
    items: BTreeMap<usize, Open>,
    usage: Option<WireUsage>,
    /// The terminal response (status, details).
    terminal: Option<Box<ResponseObject>>,
}

impl EventMapper for Mapper {
    const TERMINAL_EVENT: &'static str = "response.completed";

    fn new(model: &Model, timestamp: i64) -> Self {
        Self {
            model: model.clone(),
            message: AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id, timestamp),
            items: BTreeMap::new(),
            usage: None,
            terminal: None,
        }
    }

    fn message(&self) -> &AssistantMessage {
        &self.message
    }

    fn is_finished(&self) -> bool {
        self.terminal.is_some()
    }

    type Event = WireEvent;

    fn decode(event: &eventsource_stream::Event) -> Result<WireEvent, ProviderError> {
        wire::decode(event)
    }

    /// Handles one event. An `error` event, and a `failed` response, are returned as errors
    /// (transient for server errors and rate limits, so an answer not yet begun is retried).
    fn on_event(&mut self, event: WireEvent, out: &mut Vec<AssistantMessageEvent>) -> Result<(), ProviderError> {
        match event {
            WireEvent::Created { id } => {
                if self.message.response_id.is_none() {
                    self.message.response_id = id;
                }
            }
            WireEvent::ItemAdded { output_index, item } => self.item_added(output_index, item, out),
            WireEvent::ItemDone { output_index, item } => self.item_done(output_index, item, out),
            WireEvent::TextDelta { output_index, delta } => self.text_delta(output_index, delta, out),
            WireEvent::SummaryDelta {
                output_index,
                summary_index,
                delta,
            } => self.summary_delta(output_index, summary_index, delta, out),
            WireEvent::ArgumentsDelta { output_index, delta } => {
                if let Some(open) = self.items.get_mut(&output_index).filter(|open| !open.closed) {
                    open.json.push_str(&delta);
                    out.push(AssistantMessageEvent::ToolCallDelta {
                        content_index: open.content_index,
                        delta,
                    });
                }
            }
            WireEvent::ArgumentsDone {
                output_index,
                arguments,
            } => {
                if let Some(open) = self.items.get_mut(&output_index) {
                    open.json = arguments;
                }
            }
            WireEvent::Finished(response) => {
                if self.message.response_id.is_none() {
                    self.message.response_id.clone_from(&response.id);
                }
                if response.usage.is_some() {
                    self.usage = response.usage;
                }
                if response.status.as_deref() == Some("failed") {
                    let (code, message) = response.error.as_ref().map(wire::error_parts).unwrap_or_default();
                    return Err(stream_error(code, message));
                }
                self.terminal = Some(response);
            }
            WireEvent::Error(code, message) => return Err(stream_error(code, message)),
            WireEvent::Other => {}
        }
        Ok(())
    }

    /// The final message; `incomplete` because of the content filter fails.
    fn finish(mut self) -> (AssistantMessage, Result<(), ProviderError>) {
        let mut out = Vec::new();
        self.close_all(&mut out);
        let terminal = self.terminal.take().unwrap_or_default();
        let has_calls = self.message.tool_calls().next().is_some();
        let mut message = self.into_partial();
        let reason = terminal.incomplete_details.and_then(|d| d.reason);
        match (terminal.status.as_deref(), reason.as_deref()) {
            (Some("incomplete"), Some("content_filter")) => (
                message,
                Err(ProviderError::StopReason {
                    field: "incomplete_details.reason",
                    reason: "content_filter".to_owned(),
                }),
            ),
            (Some("incomplete"), _) => {
                message.stop_reason = StopReason::Length;
                (message, Ok(()))
            }
            _ => {
                message.stop_reason = if has_calls {
                    StopReason::ToolUse
                } else {
                    StopReason::Stop
                };
                (message, Ok(()))
            }
        }
    }

    fn into_partial(mut self) -> AssistantMessage {
        for open in self.items.values().filter(|open| !open.closed) {
            if let Some(AssistantContent::ToolCall(call)) = self.message.content.get_mut(open.content_index) {
                call.arguments = tool_arguments(&open.json);
            }
        }
        let wire = self.usage.unwrap_or_default();
        let cached = wire
            .input_tokens_details
            .map_or(0, |details| details.cached_tokens)
            .min(wire.input_tokens);
        self.message.usage = priced_usage(&self.model, wire.input_tokens - cached, wire.output_tokens, cached, 0);
        self.message
    }
}

impl Mapper {
    fn item_added(&mut self, output_index: usize, item: Item, out: &mut Vec<AssistantMessageEvent>) {
        if self.items.contains_key(&output_index) {
            tracing::warn!(output_index, "output item added twice; ignored");
            return;
        }
        let content_index = self.message.content.len();
        match item {
            Item::Reasoning { .. } => {
                self.message.content.push(AssistantContent::Thinking(ThinkingContent {
                    thinking: String::new(),
                    thinking_signature: None,
                    redacted: None,
                }));
                out.push(AssistantMessageEvent::ThinkingStart { content_index });
            }
            Item::Message { id, .. } => {
                self.message.content.push(AssistantContent::Text(TextContent {
                    text: String::new(),
                    text_signature: id,
                }));
                out.push(AssistantMessageEvent::TextStart { content_index });
            }
            Item::FunctionCall { id, call_id, name, .. } => {
                let id = call_pair(call_id.as_deref(), id.as_deref(), output_index);
                let name = name.unwrap_or_default();
                start_tool_call(&mut self.message, id, name, Value::Object(Map::new()), out);
            }
            Item::Other => return,
        }
        self.items.insert(
            output_index,
            Open {
                content_index,
                json: String::new(),
                summary_index: 0,
                closed: false,
            },
        );
    }

    fn text_delta(&mut self, output_index: usize, delta: String, out: &mut Vec<AssistantMessageEvent>) {
        let Some(open) = self.items.get(&output_index).filter(|open| !open.closed) else {
            return;
        };
        let content_index = open.content_index;
        if let Some(AssistantContent::Text(block)) = self.message.content.get_mut(content_index) {
            block.text.push_str(&delta);
            out.push(AssistantMessageEvent::TextDelta { content_index, delta });
        }
    }

    fn summary_delta(
        &mut self,
        output_index: usize,
        summary_index: usize,
        mut delta: String,
        out: &mut Vec<AssistantMessageEvent>,
    ) {
        let Some(open) = self.items.get_mut(&output_index).filter(|open| !open.closed) else {
            return;
        };
        let content_index = open.content_index;
        let Some(AssistantContent::Thinking(block)) = self.message.content.get_mut(content_index) else {
            return;
        };
        if summary_index != open.summary_index && !block.thinking.is_empty() {
            delta.insert_str(0, "\n\n");
        }
        open.summary_index = summary_index;
        block.thinking.push_str(&delta);
        out.push(AssistantMessageEvent::ThinkingDelta { content_index, delta });
    }

    /// Completes a block from its finished item (the item is authoritative: it carries the
    /// encrypted reasoning, the final arguments and ids).
    fn item_done(&mut self, output_index: usize, item: Item, out: &mut Vec<AssistantMessageEvent>) {
        if !self.items.contains_key(&output_index) {
            // Some servers send only the finished item.
            self.item_added(output_index, item.clone(), out);
        }
        let Some(open) = self.items.get_mut(&output_index).filter(|open| !open.closed) else {
            return;
        };
        open.closed = true;
        let content_index = open.content_index;
        let json = std::mem::take(&mut open.json);
        match (item, self.message.content.get_mut(content_index)) {
            (
                Item::Reasoning {
                    id,
                    summary,
                    encrypted_content,
                },
                Some(AssistantContent::Thinking(block)),
            ) => {
                let text = summary.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join("\n\n");
                if !text.is_empty() {
                    block.thinking = text;
                }
                let item = json!({
                    "type": "reasoning",
                    "id": id,
                    "summary": summary.iter().map(|p| json!({"type": "summary_text", "text": p.text})).collect::<Vec<_>>(),
                    "encrypted_content": encrypted_content,
                });
                block.thinking_signature = Some(item.to_string());
                out.push(AssistantMessageEvent::ThinkingEnd {
                    content_index,
                    content: block.thinking.clone(),
                    signature: block.thinking_signature.clone(),
                });
            }
            (Item::Message { id, content }, Some(AssistantContent::Text(block))) => {
                let text: String = content
                    .iter()
                    .filter_map(|part| part.get("text").or_else(|| part.get("refusal")).and_then(Value::as_str))
                    .collect();
                if !text.is_empty() {
                    block.text = text;
                }
                if id.is_some() {
                    block.text_signature = id;
                }
                out.push(AssistantMessageEvent::TextEnd {
                    content_index,
                    content: block.text.clone(),
                });
            }
            (
                Item::FunctionCall {
                    id,
                    call_id,
                    name,
                    arguments,
                },
                Some(AssistantContent::ToolCall(call)),
            ) => {
                if call_id.is_some() {
                    call.id = call_pair(call_id.as_deref(), id.as_deref(), output_index);
                }
                if let Some(name) = name.filter(|n| !n.is_empty()) {
                    call.name = name;
                }
                call.arguments = tool_arguments(arguments.as_deref().unwrap_or(&json));
                out.push(AssistantMessageEvent::ToolCallEnd {
                    content_index,
                    tool_call: call.clone(),
                });
            }
            // The item's type no longer matches its block's.
            (
                Item::Reasoning { .. } | Item::Message { .. } | Item::FunctionCall { .. } | Item::Other,
                None
                | Some(
                    AssistantContent::Text(_)
                    | AssistantContent::Thinking(_)
                    | AssistantContent::ToolCall(_)
                    | AssistantContent::ProviderToolCall(_),
                ),
            ) => tracing::warn!(output_index, "output item changed its type; ignored"),
        }
    }

    /// Ends blocks the stream left open (no `output_item.done` before the terminal event).
    fn close_all(&mut self, out: &mut Vec<AssistantMessageEvent>) {
        let open: Vec<usize> = self
            .items
            .iter()
            .filter(|(_, open)| !open.closed)
            .map(|(index, _)| *index)
            .collect();
        for output_index in open {
            let item = match self
                .items
                .get(&output_index)
                .and_then(|o| self.message.content.get(o.content_index))
            {
                Some(AssistantContent::Thinking(_)) => Item::Reasoning {
                    id: None,
                    summary: Vec::new(),
                    encrypted_content: None,
                },
                Some(AssistantContent::Text(_)) => Item::Message {
                    id: None,
                    content: Vec::new(),
                },
                Some(AssistantContent::ToolCall(_) | AssistantContent::ProviderToolCall(_)) | None => {
                    Item::FunctionCall {
                        id: None,
                        call_id: None,
                        name: None,
                        arguments: None,
                    }
                }
            };
            self.item_done(output_index, item, out);
        }
    }
}

/// `{call_id}|{item id}` (pi's form), or the call id alone when there is no item id.
fn call_pair(call_id: Option<&str>, item_id: Option<&str>, output_index: usize) -> String {
    let call_id = call_id
        .filter(|id| !id.is_empty())
        .map_or_else(|| format!("call_{output_index}"), str::to_owned);
    match item_id.filter(|id| !id.is_empty()) {
        Some(item_id) => format!("{call_id}|{item_id}"),
        None => call_id,
    }
}

/// An in-stream error (`error` event or `failed` response) with its retry verdict.
fn stream_error(code: Option<String>, message: Option<String>) -> ProviderError {
    let kind = code.unwrap_or_else(|| "error".to_owned());
    let message = message.unwrap_or_else(|| "(no message)".to_owned());
    let lower = message.to_ascii_lowercase();
    let transient = matches!(
        kind.as_str(),
        "server_error" | "api_error" | "rate_limit_exceeded" | "overloaded_error" | "server_is_overloaded"
    ) || lower.contains("overloaded")
        || lower.contains("rate limit");
    ProviderError::Stream {
        kind,
        message,
        transient,
    }
}

#[cfg(test)]
#[path = "mapper_tests.rs"]
mod tests;
