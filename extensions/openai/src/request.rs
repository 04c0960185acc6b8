//! The Chat Completions request body: system prompt, transcript, tools, reasoning and limits.
//!
//! Transcript mapping (pi's `convertMessages` in
//! `packages/ai/src/providers/openai-completions.ts`):
//! - the system prompt → a first `system` message;
//! - user text → a string (text parts joined with newlines, which every compatible server
//!   takes); with images → `text` and `image_url` (data URL) parts, images replaced by a note
//!   when the model takes none;
//! - assistant text → `content`, tool calls → `tool_calls` with `arguments` as a JSON string
//!   (a malformed call's raw text is sent back as it was); thinking is not sent back;
//! - tool results → `role: "tool"` messages with `tool_call_id`; images in a run of results
//!   follow the run as one user message ("Attached image(s) from tool result:"), so the tool
//!   messages stay right after their calls;
//! - custom messages → user content; `bashExecution` and summaries → user text worded as pi
//!   words them (`volcanic-provider-support`).
//!
//! Tool-call ids longer than OpenAI's 40 characters are shortened (the same mapping for a call
//! and its result).

use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use volcanic_abstractions::{
    AssistantContent, AssistantMessage, Message, Model, ProviderContext, StreamOptions, ToolResultMessage, UserBody,
    UserContent,
};
use volcanic_provider_support::{
    IMAGE_OMITTED, RequestBody, TOOL_IMAGES_LEAD, bash_execution_text, branch_summary_text, compaction_summary_text,
    push_tool_results, reasoning_effort, sanitize_id, tool_result_text,
};

/// Longest tool-call id OpenAI accepts.
const MAX_ID_LEN: usize = 40;

#[derive(Debug, Serialize)]
pub struct Body<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    stream_options: StreamUsage,
    /// OpenAI's own API wants the newer name (reasoning models refuse `max_tokens`);
    /// compatible servers know the older one.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: Vec<FunctionTool<'a>>,
}

impl<'a> RequestBody<'a> for Body<'a> {
    /// The body of one call to `model` with `context`.
    fn new(model: &'a Model, context: &'a ProviderContext, options: &StreamOptions) -> Self {
        let mut messages = Vec::new();
        if !context.system_prompt.is_empty() {
            messages.push(WireMessage::System {
                content: &context.system_prompt,
            });
        }
        messages.extend(convert_messages(model, &context.messages));
        let openai = model.base_url.contains("api.openai.com");
        Body {
            model: &model.id,
            messages,
            stream: true,
            stream_options: StreamUsage { include_usage: true },
            max_completion_tokens: options.max_tokens.filter(|_| openai),
            max_tokens: options.max_tokens.filter(|_| !openai),
            temperature: options.temperature,
            reasoning_effort: if model.reasoning {
                reasoning_effort(options.thinking_level)
            } else {
                None
            },
            tools: context
                .tools
                .iter()
                .map(|t| FunctionTool {
                    kind: "function",
                    function: Function {
                        name: &t.name,
                        description: &t.description,
                        parameters: &t.parameters,
                    },
                })
                .collect(),
        }
    }
}

/// `{"include_usage": true}`: the last chunk carries the usage.
#[derive(Debug, Serialize)]
struct StreamUsage {
    include_usage: bool,
}

/// A tool as the API wants it, borrowing its spec.
#[derive(Debug, Serialize)]
struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Debug, Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// One message of the `messages` array.
#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(crate) enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserWire<'a>,
    },
    Assistant {
        /// `null` when the message is only tool calls.
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireCall<'a>>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// A user message's content: a string, or parts when it has images.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum UserWire<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

/// A content part.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Part<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl },
}

/// `{"url": "data:<type>;base64,<data>"}`.
#[derive(Debug, Serialize)]
pub(crate) struct ImageUrl {
    url: String,
}

/// `{"id", "type": "function", "function": {"name", "arguments"}}`.
#[derive(Debug, Serialize)]
pub(crate) struct WireCall<'a> {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
}

#[derive(Debug, Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    /// A JSON string; a malformed call's raw text as it was.
    arguments: Cow<'a, str>,
}

/// A tool-call id as the API accepts it (at most 40 characters).
pub(crate) fn tool_id(id: &str) -> String {
    sanitize_id(id, MAX_ID_LEN, |c| !c.is_control())
}

/// The transcript as API messages (without the system prompt).
pub(crate) fn convert_messages<'a>(model: &Model, transcript: &'a [Message]) -> Vec<WireMessage<'a>> {
    let mut out: Vec<WireMessage<'a>> = Vec::new();
    let mut index = 0;
    while let Some(message) = transcript.get(index) {
        index += 1;
        match message {
            Message::User(user) => push_user(&mut out, model, &user.content),
            Message::Custom(custom) => push_user(&mut out, model, &custom.content),
            Message::BashExecution(bash) => {
                if let Some(text) = bash_execution_text(bash) {
                    out.push(user_text(text));
                }
            }
            Message::BranchSummary(summary) => out.push(user_text(branch_summary_text(summary))),
            Message::CompactionSummary(summary) => {
                out.push(user_text(compaction_summary_text(summary)));
            }
            Message::Assistant(assistant) => {
                if let Some(converted) = assistant_message(assistant) {
                    out.push(converted);
                }
            }
            Message::ToolResult(_) => {
                let message = |result, images: &mut _| tool_message(model, result, images);
                index = push_tool_results(transcript, index - 1, &mut out, message, |images| {
                    let lead = Part::Text {
                        text: Cow::Borrowed(TOOL_IMAGES_LEAD),
                    };
                    WireMessage::User {
                        content: UserWire::Parts([lead].into_iter().chain(images).collect()),
                    }
                });
            }
        }
    }
    out
}

fn user_text<'a>(text: impl Into<Cow<'a, str>>) -> WireMessage<'a> {
    WireMessage::User {
        content: UserWire::Text(text.into()),
    }
}

fn image_part(mime_type: &str, data: &str) -> Part<'static> {
    Part::ImageUrl {
        image_url: ImageUrl {
            url: format!("data:{mime_type};base64,{data}"),
        },
    }
}

fn push_user<'a>(out: &mut Vec<WireMessage<'a>>, model: &Model, body: &'a UserBody) {
    let blocks = match body {
        UserBody::Text(text) => {
            if !text.trim().is_empty() {
                out.push(user_text(text.as_str()));
            }
            return;
        }
        UserBody::Blocks(blocks) => blocks,
    };
    let has_images = blocks.iter().any(|b| matches!(b, UserContent::Image(_)));
    if !has_images {
        let text = body.text();
        if !text.trim().is_empty() {
            out.push(user_text(text));
        }
        return;
    }
    let parts: Vec<Part<'a>> = blocks
        .iter()
        .filter_map(|block| match block {
            UserContent::Text(text) => (!text.text.trim().is_empty()).then(|| Part::Text {
                text: Cow::Borrowed(&text.text),
            }),
            UserContent::Image(image) => Some(if model.takes_images() {
                image_part(&image.mime_type, &image.data)
            } else {
                Part::Text {
                    text: Cow::Borrowed(IMAGE_OMITTED),
                }
            }),
        })
        .collect();
    out.push(WireMessage::User {
        content: UserWire::Parts(parts),
    });
}

fn assistant_message(message: &AssistantMessage) -> Option<WireMessage<'_>> {
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let mut after_ran = false;
    for block in &message.content {
        match block {
            AssistantContent::Text(block) => push_text(&mut text, &block.text, false, &mut after_ran),
            AssistantContent::Thinking(_) => {}
            // Ran by another API's provider (Claude Code): history as text, not a tool call this
            // API would want a `tool` message for.
            AssistantContent::ProviderToolCall(call) => push_text(&mut text, &call.as_text(), true, &mut after_ran),
            AssistantContent::ToolCall(call) => tool_calls.push(WireCall {
                id: tool_id(&call.id),
                kind: "function",
                function: CallFunction {
                    name: &call.name,
                    arguments: match &call.arguments {
                        Value::String(raw) => Cow::Borrowed(raw),
                        other => Cow::Owned(other.to_string()),
                    },
                },
            }),
        }
    }
    let has_text = !text.trim().is_empty();
    if !has_text && tool_calls.is_empty() {
        return None;
    }
    Some(WireMessage::Assistant {
        content: has_text.then_some(text),
        tool_calls,
    })
}

/// Appends `piece` to an assistant message's text: text blocks run on as streamed, a provider-run
/// tool call (`ran`) is a paragraph of its own. `after_ran`: the last piece was one.
fn push_text(text: &mut String, piece: &str, ran: bool, after_ran: &mut bool) {
    if piece.is_empty() {
        return;
    }
    if (ran || *after_ran) && !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str(piece);
    *after_ran = ran;
}

/// A `role: "tool"` message; the result's images go to `images` (or a note when the model
/// takes none).
fn tool_message<'a>(model: &Model, result: &ToolResultMessage, images: &mut Vec<Part<'a>>) -> WireMessage<'a> {
    WireMessage::Tool {
        tool_call_id: tool_id(&result.tool_call_id),
        content: tool_result_text(model, result, images, |image| image_part(&image.mime_type, &image.data)),
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
