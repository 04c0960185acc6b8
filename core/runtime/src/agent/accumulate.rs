//! Building the streamed assistant message from provider events.

use volcanic_abstractions::messages::{AssistantContent, AssistantMessage, TextContent, ThinkingContent, ToolCall};
use volcanic_abstractions::provider::AssistantMessageEvent;

/// Applies one provider event to the message being streamed. Terminal events replace it with
/// the provider's final message.
pub(crate) fn apply_event(partial: &mut AssistantMessage, event: &AssistantMessageEvent) {
    match event {
        AssistantMessageEvent::Start { partial: p } => *partial = p.clone(),
        AssistantMessageEvent::TextStart { content_index } => {
            ensure(partial, *content_index, || {
                AssistantContent::Text(TextContent {
                    text: String::new(),
                    text_signature: None,
                })
            });
        }
        AssistantMessageEvent::TextDelta { content_index, delta } => {
            if let Some(AssistantContent::Text(t)) = partial.content.get_mut(*content_index) {
                t.text.push_str(delta);
            }
        }
        AssistantMessageEvent::TextEnd { content_index, content } => {
            if let Some(AssistantContent::Text(t)) = partial.content.get_mut(*content_index) {
                t.text.clone_from(content);
            }
        }
        AssistantMessageEvent::ThinkingStart { content_index } => {
            ensure(partial, *content_index, || {
                AssistantContent::Thinking(ThinkingContent {
                    thinking: String::new(),
                    thinking_signature: None,
                    redacted: None,
                })
            });
        }
        AssistantMessageEvent::ThinkingDelta { content_index, delta } => {
            if let Some(AssistantContent::Thinking(t)) = partial.content.get_mut(*content_index) {
                t.thinking.push_str(delta);
            }
        }
        AssistantMessageEvent::ThinkingEnd {
            content_index,
            content,
            signature,
        } => {
            if let Some(AssistantContent::Thinking(t)) = partial.content.get_mut(*content_index) {
                t.thinking.clone_from(content);
                t.thinking_signature.clone_from(signature);
            }
        }
        AssistantMessageEvent::ToolCallStart {
            content_index,
            id,
            name,
        } => {
            ensure(partial, *content_index, || {
                AssistantContent::ToolCall(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: serde_json::Value::Object(Default::default()),
                    thought_signature: None,
                })
            });
        }
        AssistantMessageEvent::ToolCallDelta { .. } => {}
        AssistantMessageEvent::ToolCallEnd {
            content_index,
            tool_call,
        } => {
            if let Some(existing) = partial.content.get_mut(*content_index) {
                *existing = AssistantContent::ToolCall(tool_call.clone());
            }
        }
        AssistantMessageEvent::ProviderToolCall {
            content_index,
            tool_call,
        } => {
            let block = AssistantContent::ProviderToolCall(tool_call.clone());
            ensure(partial, *content_index, || block.clone());
            if let Some(existing) = partial.content.get_mut(*content_index) {
                *existing = block;
            }
        }
        AssistantMessageEvent::ProviderToolResult { content_index, result } => {
            if let Some(AssistantContent::ProviderToolCall(c)) = partial.content.get_mut(*content_index) {
                c.result = Some(result.clone());
            }
        }
        AssistantMessageEvent::Done { message, .. } => *partial = message.clone(),
        AssistantMessageEvent::Error { error, .. } => *partial = error.clone(),
    }
}

fn ensure(partial: &mut AssistantMessage, index: usize, make: impl Fn() -> AssistantContent) {
    while partial.content.len() <= index {
        partial.content.push(make());
    }
}
