//! Anthropic stream events → provider events (`text_*`, `thinking_*`, `toolcall_*`), building
//! the final [`AssistantMessage`] on the way. Pure and synchronous: the I/O lives in
//! `provider.rs`, the decoding in `wire.rs`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use volcanic_abstractions::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, Model, StopReason, TextContent, ThinkingContent,
};

use volcanic_provider_support::{EventMapper, ProviderError, priced_usage, start_tool_call, tool_arguments};

use crate::wire::{self, WireBlock, WireDelta, WireEvent, WireUsage};

/// A content block still receiving deltas.
#[derive(Debug)]
struct OpenBlock {
    /// Index in the message's `content`.
    content_index: usize,
    /// Tool-input JSON received so far (tool calls only).
    json: String,
}

/// Turns the events of one response into provider events and the final message.
#[derive(Debug)]
pub struct Mapper {
    model: Model,
    message: AssistantMessage,
    /// Open blocks by the API's block index.
    open: BTreeMap<usize, OpenBlock>,
    usage: WireUsage,
    stop_reason: Option<String>,
    finished: bool,
}

impl EventMapper for Mapper {
    const TERMINAL_EVENT: &'static str = "message_stop";

    fn new(model: &Model, timestamp: i64) -> Self {
        Self {
            model: model.clone(),
            message: AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id, timestamp),
            open: BTreeMap::new(),
            usage: WireUsage::default(),
            stop_reason: None,
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
    /// `error` event is returned as an error.
    fn on_event(&mut self, event: WireEvent, out: &mut Vec<AssistantMessageEvent>) -> Result<(), ProviderError> {
        match event {
            WireEvent::MessageStart { message } => {
                if message.id.is_some() {
                    self.message.response_id = message.id;
                }
                if let Some(usage) = message.usage {
                    self.apply_usage(usage);
                }
            }
            WireEvent::ContentBlockStart { index, content_block } => self.start_block(index, content_block, out),
            WireEvent::ContentBlockDelta { index, delta } => self.delta(index, delta, out),
            WireEvent::ContentBlockStop { index } => self.stop_block(index, out),
            WireEvent::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(usage) = usage {
                    self.apply_usage(usage);
                }
            }
            WireEvent::MessageStop => {
                let open: Vec<usize> = self.open.keys().copied().collect();
                for index in open {
                    self.stop_block(index, out);
                }
                self.finished = true;
            }
            WireEvent::Ping | WireEvent::Unknown => {}
            WireEvent::Error { error } => {
                let kind = error.kind.unwrap_or_else(|| "error".to_owned());
                let message = error.message.unwrap_or_else(|| "(no message)".to_owned());
                let transient = matches!(kind.as_str(), "overloaded_error" | "api_error" | "rate_limit_error")
                    || message.to_ascii_lowercase().contains("overloaded");
                return Err(ProviderError::Stream {
                    kind,
                    message,
                    transient,
                });
            }
        }
        Ok(())
    }

    /// The final message, failing for `refusal`, `sensitive` and unknown stop reasons.
    fn finish(self) -> (AssistantMessage, Result<(), ProviderError>) {
        let reason = self.stop_reason.clone();
        let mut message = self.into_partial();
        match map_stop_reason(reason.as_deref()) {
            Ok(stop) => {
                message.stop_reason = stop;
                (message, Ok(()))
            }
            Err(error) => (message, Err(error)),
        }
    }

    fn into_partial(mut self) -> AssistantMessage {
        let open: Vec<OpenBlock> = std::mem::take(&mut self.open).into_values().collect();
        for block in open {
            if let Some(AssistantContent::ToolCall(call)) = self.message.content.get_mut(block.content_index)
                && !block.json.trim().is_empty()
            {
                call.arguments = tool_arguments(&block.json);
            }
        }
        let wire = self.usage;
        self.message.usage = priced_usage(
            &self.model,
            wire.input_tokens.unwrap_or(0),
            wire.output_tokens.unwrap_or(0),
            wire.cache_read_input_tokens.unwrap_or(0),
            wire.cache_creation_input_tokens.unwrap_or(0),
        );
        self.message
    }
}

impl Mapper {
    /// Keeps every usage field the event carries (`message_delta` may omit the input side).
    fn apply_usage(&mut self, usage: WireUsage) {
        let keep = |new: Option<u64>, old: Option<u64>| new.or(old);
        self.usage = WireUsage {
            input_tokens: keep(usage.input_tokens, self.usage.input_tokens),
            output_tokens: keep(usage.output_tokens, self.usage.output_tokens),
            cache_read_input_tokens: keep(usage.cache_read_input_tokens, self.usage.cache_read_input_tokens),
            cache_creation_input_tokens: keep(
                usage.cache_creation_input_tokens,
                self.usage.cache_creation_input_tokens,
            ),
        };
    }

    fn start_block(&mut self, index: usize, block: WireBlock, out: &mut Vec<AssistantMessageEvent>) {
        let content_index = self.message.content.len();
        match block {
            WireBlock::Text { text } => {
                self.message.content.push(AssistantContent::Text(TextContent {
                    text: text.clone(),
                    text_signature: None,
                }));
                out.push(AssistantMessageEvent::TextStart { content_index });
                if !text.is_empty() {
                    out.push(AssistantMessageEvent::TextDelta {
                        content_index,
                        delta: text,
                    });
                }
            }
            WireBlock::Thinking { thinking, signature } => {
                self.message.content.push(AssistantContent::Thinking(ThinkingContent {
                    thinking: thinking.clone(),
                    thinking_signature: signature.filter(|s| !s.is_empty()),
                    redacted: None,
                }));
                out.push(AssistantMessageEvent::ThinkingStart { content_index });
                if !thinking.is_empty() {
                    out.push(AssistantMessageEvent::ThinkingDelta {
                        content_index,
                        delta: thinking,
                    });
                }
            }
            WireBlock::RedactedThinking { data } => {
                self.message.content.push(AssistantContent::Thinking(ThinkingContent {
                    thinking: String::new(),
                    thinking_signature: Some(data),
                    redacted: Some(true),
                }));
                out.push(AssistantMessageEvent::ThinkingStart { content_index });
            }
            WireBlock::ToolUse { id, name, input } => {
                let arguments = match input {
                    Some(Value::Object(map)) => Value::Object(map),
                    Some(_) | None => Value::Object(Map::new()),
                };
                start_tool_call(&mut self.message, id, name, arguments, out);
            }
            WireBlock::Other => return,
        }
        self.open.insert(
            index,
            OpenBlock {
                content_index,
                json: String::new(),
            },
        );
    }

    fn delta(&mut self, index: usize, delta: WireDelta, out: &mut Vec<AssistantMessageEvent>) {
        let Some(open) = self.open.get_mut(&index) else {
            tracing::debug!(index, "delta for a block that is not open; ignored");
            return;
        };
        let content_index = open.content_index;
        let Some(content) = self.message.content.get_mut(content_index) else {
            return;
        };
        match (content, delta) {
            (AssistantContent::Text(block), WireDelta::TextDelta { text }) => {
                block.text.push_str(&text);
                out.push(AssistantMessageEvent::TextDelta {
                    content_index,
                    delta: text,
                });
            }
            (AssistantContent::Thinking(block), WireDelta::ThinkingDelta { thinking }) => {
                block.thinking.push_str(&thinking);
                out.push(AssistantMessageEvent::ThinkingDelta {
                    content_index,
                    delta: thinking,
                });
            }
            (AssistantContent::Thinking(block), WireDelta::SignatureDelta { signature }) => {
                block
                    .thinking_signature
                    .get_or_insert_with(String::new)
                    .push_str(&signature);
            }
            (AssistantContent::ToolCall(_), WireDelta::InputJsonDelta { partial_json }) => {
                if !partial_json.is_empty() {
                    open.json.push_str(&partial_json);
                    out.push(AssistantMessageEvent::ToolCallDelta {
                        content_index,
                        delta: partial_json,
                    });
                }
            }
            (_, _) => tracing::debug!(index, "delta of another block kind; ignored"),
        }
    }

    fn stop_block(&mut self, index: usize, out: &mut Vec<AssistantMessageEvent>) {
        let Some(open) = self.open.remove(&index) else {
            return;
        };
        let content_index = open.content_index;
        let Some(content) = self.message.content.get_mut(content_index) else {
            return;
        };
        match content {
            AssistantContent::Text(block) => out.push(AssistantMessageEvent::TextEnd {
                content_index,
                content: block.text.clone(),
            }),
            AssistantContent::Thinking(block) => out.push(AssistantMessageEvent::ThinkingEnd {
                content_index,
                content: block.thinking.clone(),
                signature: block.thinking_signature.clone(),
            }),
            AssistantContent::ToolCall(call) => {
                if !open.json.trim().is_empty() {
                    call.arguments = tool_arguments(&open.json);
                }
                out.push(AssistantMessageEvent::ToolCallEnd {
                    content_index,
                    tool_call: call.clone(),
                });
            }
            // Never opened by this mapper (server tools are not requested).
            AssistantContent::ProviderToolCall(_) => {}
        }
    }
}

/// pi's mapping of Anthropic stop reasons; `refusal`, `sensitive` and unknown ones fail.
fn map_stop_reason(reason: Option<&str>) -> Result<StopReason, ProviderError> {
    match reason {
        None | Some("end_turn" | "stop_sequence" | "pause_turn") => Ok(StopReason::Stop),
        Some("tool_use") => Ok(StopReason::ToolUse),
        Some("max_tokens" | "model_context_window_exceeded") => Ok(StopReason::Length),
        Some(other) => Err(ProviderError::StopReason {
            field: "stop_reason",
            reason: other.to_owned(),
        }),
    }
}

#[cfg(test)]
#[path = "mapper_tests.rs"]
mod tests;
