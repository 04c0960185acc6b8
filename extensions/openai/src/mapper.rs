//! Chat Completions chunks → provider events (`text_*`, `thinking_*`, `toolcall_*`), building
//! the final [`AssistantMessage`] on the way. Pure and synchronous: the I/O lives in
//! `provider.rs`, the decoding in `wire.rs`.
//!
//! Chunks carry no block boundaries, so a block ends when a delta of another kind (or another
//! tool call) arrives, or at `[DONE]`. Tool calls are keyed by their `index`; id and name come
//! in a call's first piece, the arguments text is concatenated and parsed at the end.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use volcanic_abstractions::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, Model, StopReason, TextContent, ThinkingContent,
};

use volcanic_provider_support::{EventMapper, ProviderError, priced_usage, start_tool_call, tool_arguments};

use crate::wire::{self, Chunk, Delta, ToolCallDelta, WireEvent, WireUsage};

/// The block receiving deltas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Current {
    /// A text block at this content index.
    Text(usize),
    /// A thinking block at this content index.
    Thinking(usize),
    /// The tool call with this wire `index`.
    Call(usize),
}

/// One tool call being streamed.
#[derive(Debug)]
struct CallState {
    /// Index in the message's `content`.
    content_index: usize,
    /// Arguments text received so far.
    json: String,
    /// Whether `toolcall_end` was emitted.
    closed: bool,
}

/// Turns the chunks of one response into provider events and the final message.
#[derive(Debug)]
pub struct Mapper {
    model: Model,
    message: AssistantMessage,
    current: Option<Current>,
    /// Tool calls by wire index.
    calls: BTreeMap<usize, CallState>,
    usage: Option<WireUsage>,
    finish_reason: Option<String>,
    finished: bool,
}

impl EventMapper for Mapper {
    const TERMINAL_EVENT: &'static str = "[DONE]";

    fn new(model: &Model, timestamp: i64) -> Self {
        Self {
            model: model.clone(),
            message: AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id, timestamp),
            current: None,
            calls: BTreeMap::new(),
            usage: None,
            finish_reason: None,
            finished: false,
        }
    }

    fn message(&self) -> &AssistantMessage {
        &self.message
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    type Event = WireEvent;

    fn decode(event: &eventsource_stream::Event) -> Result<WireEvent, ProviderError> {
        wire::decode(event)
    }

    /// Handles one event, appending the provider events it yields to `out`. An in-stream
    /// error is returned as an error.
    fn on_event(&mut self, event: WireEvent, out: &mut Vec<AssistantMessageEvent>) -> Result<(), ProviderError> {
        match event {
            WireEvent::Chunk(chunk) => self.chunk(chunk, out),
            WireEvent::Done => {
                self.close_current(out);
                self.finished = true;
            }
            WireEvent::Error(kind, message) => {
                let kind = kind.unwrap_or_else(|| "error".to_owned());
                let message = message.unwrap_or_else(|| "(no message)".to_owned());
                let lower = message.to_ascii_lowercase();
                let transient = matches!(
                    kind.as_str(),
                    "server_error" | "api_error" | "rate_limit_exceeded" | "overloaded_error"
                ) || lower.contains("overloaded")
                    || lower.contains("rate limit");
                return Err(ProviderError::Stream {
                    kind,
                    message,
                    transient,
                });
            }
        }
        Ok(())
    }

    /// The final message, failing for the `content_filter` finish reason.
    fn finish(self) -> (AssistantMessage, Result<(), ProviderError>) {
        let reason = self.finish_reason.clone();
        let has_calls = !self.calls.is_empty();
        let mut message = self.into_partial();
        match map_finish_reason(reason.as_deref(), has_calls) {
            Ok(stop) => {
                message.stop_reason = stop;
                (message, Ok(()))
            }
            Err(error) => (message, Err(error)),
        }
    }

    fn into_partial(mut self) -> AssistantMessage {
        for call in self.calls.values().filter(|call| !call.closed) {
            if let Some(AssistantContent::ToolCall(tool_call)) = self.message.content.get_mut(call.content_index) {
                tool_call.arguments = tool_arguments(&call.json);
            }
        }
        let wire = self.usage.unwrap_or_default();
        let prompt = wire.prompt_tokens.unwrap_or(0);
        let cached = wire
            .prompt_tokens_details
            .and_then(|details| details.cached_tokens)
            .unwrap_or(0)
            .min(prompt);
        let output = wire.completion_tokens.unwrap_or(0);
        self.message.usage = priced_usage(&self.model, prompt - cached, output, cached, 0);
        self.message
    }
}

impl Mapper {
    fn chunk(&mut self, chunk: Chunk, out: &mut Vec<AssistantMessageEvent>) {
        if self.message.response_id.is_none() {
            self.message.response_id = chunk.id;
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        let Some(choice) = chunk.choices.into_iter().next() else {
            return;
        };
        if let Some(delta) = choice.delta {
            self.delta(delta, out);
        }
        if choice.finish_reason.is_some() {
            self.finish_reason = choice.finish_reason;
        }
    }

    fn delta(&mut self, delta: Delta, out: &mut Vec<AssistantMessageEvent>) {
        let reasoning = [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
            .find(|text| !text.is_empty());
        if let Some(text) = reasoning {
            self.thinking(text, out);
        }
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                self.text(text, out);
            }
        }
        for call in delta.tool_calls.into_iter().flatten() {
            self.tool_call(call, out);
        }
    }

    fn text(&mut self, text: String, out: &mut Vec<AssistantMessageEvent>) {
        let content_index = match self.current {
            Some(Current::Text(index)) => index,
            Some(Current::Thinking(_) | Current::Call(_)) | None => {
                self.close_current(out);
                let index = self.message.content.len();
                self.message.content.push(AssistantContent::Text(TextContent {
                    text: String::new(),
                    text_signature: None,
                }));
                out.push(AssistantMessageEvent::TextStart { content_index: index });
                self.current = Some(Current::Text(index));
                index
            }
        };
        if let Some(AssistantContent::Text(block)) = self.message.content.get_mut(content_index) {
            block.text.push_str(&text);
        }
        out.push(AssistantMessageEvent::TextDelta {
            content_index,
            delta: text,
        });
    }

    fn thinking(&mut self, text: String, out: &mut Vec<AssistantMessageEvent>) {
        let content_index = match self.current {
            Some(Current::Thinking(index)) => index,
            Some(Current::Text(_) | Current::Call(_)) | None => {
                self.close_current(out);
                let index = self.message.content.len();
                self.message.content.push(AssistantContent::Thinking(ThinkingContent {
                    thinking: String::new(),
                    thinking_signature: None,
                    redacted: None,
                }));
                out.push(AssistantMessageEvent::ThinkingStart { content_index: index });
                self.current = Some(Current::Thinking(index));
                index
            }
        };
        if let Some(AssistantContent::Thinking(block)) = self.message.content.get_mut(content_index) {
            block.thinking.push_str(&text);
        }
        out.push(AssistantMessageEvent::ThinkingDelta {
            content_index,
            delta: text,
        });
    }

    fn tool_call(&mut self, piece: ToolCallDelta, out: &mut Vec<AssistantMessageEvent>) {
        let open_index = match self.current {
            Some(Current::Call(index)) => Some(index),
            Some(Current::Text(_) | Current::Thinking(_)) | None => None,
        };
        let next_index = self.calls.keys().next_back().map_or(0, |last| last + 1);
        let function = piece.function.unwrap_or_default();
        // Servers that omit `index` continue the open call unless a new id starts another.
        let index = piece.index.unwrap_or_else(|| match (open_index, &piece.id) {
            (Some(open), None) => open,
            (Some(open), Some(id)) if self.call_id(open) == Some(id.as_str()) => open,
            _ => next_index,
        });
        if let Some(call) = self.calls.get(&index)
            && call.closed
        {
            tracing::warn!(index, "tool-call delta after the call ended; ignored");
            return;
        }
        if open_index != Some(index) {
            self.close_current(out);
            let content_index = self.message.content.len();
            let id = piece
                .id
                .clone()
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{}_{index}", self.message.timestamp));
            let name = function.name.clone().unwrap_or_default();
            start_tool_call(&mut self.message, id, name, Value::Object(Map::new()), out);
            self.calls.insert(
                index,
                CallState {
                    content_index,
                    json: String::new(),
                    closed: false,
                },
            );
            self.current = Some(Current::Call(index));
        }
        let Some(call) = self.calls.get_mut(&index) else {
            return;
        };
        let content_index = call.content_index;
        if let Some(AssistantContent::ToolCall(tool_call)) = self.message.content.get_mut(content_index) {
            // A later piece may still bring the id or name (pi does the same).
            if let Some(id) = piece.id.filter(|id| !id.is_empty() && open_index == Some(index)) {
                tool_call.id = id;
            }
            if let Some(name) = function.name.filter(|n| !n.is_empty() && open_index == Some(index)) {
                tool_call.name = name;
            }
        }
        if let Some(arguments) = function.arguments.filter(|a| !a.is_empty()) {
            call.json.push_str(&arguments);
            out.push(AssistantMessageEvent::ToolCallDelta {
                content_index,
                delta: arguments,
            });
        }
    }

    /// The id of the call with this wire index.
    fn call_id(&self, index: usize) -> Option<&str> {
        let call = self.calls.get(&index)?;
        match self.message.content.get(call.content_index)? {
            AssistantContent::ToolCall(tool_call) => Some(tool_call.id.as_str()),
            AssistantContent::Text(_) | AssistantContent::Thinking(_) | AssistantContent::ProviderToolCall(_) => None,
        }
    }

    /// Ends the block receiving deltas, if any.
    fn close_current(&mut self, out: &mut Vec<AssistantMessageEvent>) {
        match self.current.take() {
            None => {}
            Some(Current::Text(content_index)) => {
                if let Some(AssistantContent::Text(block)) = self.message.content.get(content_index) {
                    out.push(AssistantMessageEvent::TextEnd {
                        content_index,
                        content: block.text.clone(),
                    });
                }
            }
            Some(Current::Thinking(content_index)) => {
                if let Some(AssistantContent::Thinking(block)) = self.message.content.get(content_index) {
                    out.push(AssistantMessageEvent::ThinkingEnd {
                        content_index,
                        content: block.thinking.clone(),
                        signature: None,
                    });
                }
            }
            Some(Current::Call(index)) => {
                let Some(call) = self.calls.get_mut(&index) else {
                    return;
                };
                call.closed = true;
                if let Some(AssistantContent::ToolCall(tool_call)) = self.message.content.get_mut(call.content_index) {
                    tool_call.arguments = tool_arguments(&call.json);
                    out.push(AssistantMessageEvent::ToolCallEnd {
                        content_index: call.content_index,
                        tool_call: tool_call.clone(),
                    });
                }
            }
        }
    }
}

/// pi's mapping of finish reasons. A message with tool calls counts as `toolUse` unless it was
/// cut by `length` (some local servers say `stop` after tool calls); `content_filter` fails.
fn map_finish_reason(reason: Option<&str>, has_calls: bool) -> Result<StopReason, ProviderError> {
    match reason {
        Some("length") => Ok(StopReason::Length),
        Some("content_filter") => Err(ProviderError::StopReason {
            field: "finish_reason",
            reason: "content_filter".to_owned(),
        }),
        Some("tool_calls" | "function_call") => Ok(StopReason::ToolUse),
        Some(_) | None if has_calls => Ok(StopReason::ToolUse),
        Some(_) | None => Ok(StopReason::Stop),
    }
}

#[cfg(test)]
#[path = "mapper_tests.rs"]
mod tests;
