//! The Responses request body: instructions, input items, tools, reasoning and limits.
//!
//! Stateless (`store: false`): every call sends the whole conversation as input items (pi's
//! `convertResponsesMessages` in `packages/ai/src/providers/openai-responses-shared.ts`):
//! - the system prompt → `instructions`;
//! - user text → a `message` with `input_text` parts; images → `input_image` parts (data URLs),
//!   replaced by a note when the model takes none;
//! - assistant text → a `message` item with `output_text` (its item id when it came from this
//!   model, else a made-up `msg_N`); tool calls → `function_call` items whose `call_id` is the
//!   first half of our `{call_id}|{item id}` (sanitized to `[A-Za-z0-9_-]{1,64}`), with the item
//!   `id` only when the call came from this model (a foreign `fc_` id would not be found);
//! - thinking → the `reasoning` item replayed only when it came from this provider, API and model
//!   and carries its `encrypted_content` (other thinking was turned to text by the transcript
//!   normaliser, or is dropped);
//! - tool results → `function_call_output` items; their images follow as one user message;
//! - custom messages, `bashExecution` and summaries → user text as pi words them.

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

/// Smallest `max_output_tokens` the API accepts (a smaller one is a 400).
const MIN_OUTPUT_TOKENS: u64 = 16;

/// Longest `call_id` the API accepts.
const MAX_CALL_ID: usize = 64;

#[derive(Debug, Serialize)]
pub struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
    input: Vec<InputItem<'a>>,
    stream: bool,
    /// Nothing is kept on OpenAI's side; reasoning comes back encrypted instead.
    store: bool,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    include: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: Vec<FunctionTool<'a>>,
}

/// `{"effort", "summary": "auto"}`.
#[derive(Debug, Serialize)]
struct Reasoning {
    effort: &'static str,
    summary: &'static str,
}

/// A tool as the Responses API wants it (flat, not nested under `function`).
#[derive(Debug, Serialize)]
struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    /// Our schemas are not written for strict mode (optional fields are left out, not null).
    strict: bool,
}

impl<'a> RequestBody<'a> for Body<'a> {
    /// The body of one call to `model` with `context`.
    fn new(model: &'a Model, context: &'a ProviderContext, options: &StreamOptions) -> Self {
        let effort = if model.reasoning {
            reasoning_effort(options.thinking_level)
        } else {
            None
        };
        Body {
            model: &model.id,
            instructions: (!context.system_prompt.is_empty()).then_some(context.system_prompt.as_str()),
            input: convert_messages(model, &context.messages),
            stream: true,
            store: false,
            include: if model.reasoning {
                vec!["reasoning.encrypted_content"]
            } else {
                Vec::new()
            },
            reasoning: effort.map(|effort| Reasoning {
                effort,
                summary: "auto",
            }),
            max_output_tokens: options.max_tokens.map(|tokens| tokens.max(MIN_OUTPUT_TOKENS)),
            // Reasoning models refuse `temperature`.
            temperature: options.temperature.filter(|_| !model.reasoning),
            tools: context
                .tools
                .iter()
                .map(|t| FunctionTool {
                    kind: "function",
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                    strict: false,
                })
                .collect(),
        }
    }
}

/// One item of `input`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum InputItem<'a> {
    /// A user or assistant message.
    Message {
        role: &'static str,
        content: Vec<Part<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<&'static str>,
    },
    /// A reasoning item replayed as it came (the stored item's JSON).
    Reasoning {
        id: String,
        summary: Value,
        encrypted_content: String,
    },
    /// A function call the model made.
    FunctionCall {
        call_id: String,
        name: &'a str,
        arguments: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    /// The output of a function call.
    FunctionCallOutput { call_id: String, output: String },
}

/// A content part of a message.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Part<'a> {
    InputText { text: Cow<'a, str> },
    InputImage { image_url: String, detail: &'static str },
    OutputText { text: String, annotations: [(); 0] },
}

/// The call id half of a tool-call id (`{call_id}|{item id}` or a foreign id), as the API
/// accepts it; the same mapping for a call and its output.
pub(crate) fn call_id(id: &str) -> String {
    let call = id.split_once('|').map_or(id, |(call, _)| call);
    sanitize_id(call, MAX_CALL_ID, |c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The item id half of our own tool-call ids, when it is a function-call item id.
fn item_id(id: &str) -> Option<String> {
    let (_, item) = id.split_once('|')?;
    (item.starts_with("fc") && item.len() <= MAX_CALL_ID).then(|| item.to_owned())
}

/// The transcript as input items.
pub(crate) fn convert_messages<'a>(model: &Model, transcript: &'a [Message]) -> Vec<InputItem<'a>> {
    let mut out = Vec::new();
    let mut index = 0;
    let mut assistant_count = 0;
    while let Some(message) = transcript.get(index) {
        index += 1;
        match message {
            Message::User(user) => push_user(&mut out, model, &user.content),
            Message::Custom(custom) => push_user(&mut out, model, &custom.content),
            Message::BashExecution(bash) => {
                if let Some(text) = bash_execution_text(bash) {
                    out.push(user_text(Cow::Owned(text)));
                }
            }
            Message::BranchSummary(summary) => out.push(user_text(Cow::Owned(branch_summary_text(summary)))),
            Message::CompactionSummary(summary) => {
                out.push(user_text(Cow::Owned(compaction_summary_text(summary))));
            }
            Message::Assistant(assistant) => {
                push_assistant(&mut out, model, assistant, &mut assistant_count);
            }
            Message::ToolResult(_) => {
                let output = |result, images: &mut _| tool_output(model, result, images);
                index = push_tool_results(transcript, index - 1, &mut out, output, |images| {
                    let lead = Part::InputText {
                        text: Cow::Borrowed(TOOL_IMAGES_LEAD),
                    };
                    user_message([lead].into_iter().chain(images).collect())
                });
            }
        }
    }
    out
}

fn user_message(content: Vec<Part<'_>>) -> InputItem<'_> {
    InputItem::Message {
        role: "user",
        content,
        id: None,
        status: None,
    }
}

fn user_text(text: Cow<'_, str>) -> InputItem<'_> {
    user_message(vec![Part::InputText { text }])
}

fn image_part(mime_type: &str, data: &str) -> Part<'static> {
    Part::InputImage {
        image_url: format!("data:{mime_type};base64,{data}"),
        detail: "auto",
    }
}

fn push_user<'a>(out: &mut Vec<InputItem<'a>>, model: &Model, body: &'a UserBody) {
    let parts: Vec<Part<'a>> = match body {
        UserBody::Text(text) => vec![Part::InputText {
            text: Cow::Borrowed(text),
        }],
        UserBody::Blocks(blocks) => blocks
            .iter()
            .map(|block| match block {
                UserContent::Text(text) => Part::InputText {
                    text: Cow::Borrowed(&text.text),
                },
                UserContent::Image(image) if model.takes_images() => image_part(&image.mime_type, &image.data),
                UserContent::Image(_) => Part::InputText {
                    text: Cow::Borrowed(IMAGE_OMITTED),
                },
            })
            .filter(|part| !matches!(part, Part::InputText { text } if text.trim().is_empty()))
            .collect(),
    };
    if !parts.is_empty() {
        out.push(user_message(parts));
    }
}

fn push_assistant<'a>(out: &mut Vec<InputItem<'a>>, model: &Model, message: &'a AssistantMessage, count: &mut usize) {
    let same_model =
        message.provider == model.provider && message.api == model.api.as_str() && message.model == model.id;
    for block in &message.content {
        match block {
            AssistantContent::Thinking(thinking) if same_model => {
                if let Some(item) = thinking.thinking_signature.as_deref().and_then(reasoning_item) {
                    out.push(item);
                }
            }
            AssistantContent::Thinking(_) => {}
            AssistantContent::Text(text) => {
                if text.text.trim().is_empty() {
                    continue;
                }
                let id = text
                    .text_signature
                    .clone()
                    .filter(|id| same_model && id.starts_with("msg") && id.len() <= MAX_CALL_ID);
                push_output_text(out, text.text.clone(), id, count);
            }
            // Ran by another API's provider (Claude Code): history as text, not a
            // `function_call` that would need a `function_call_output` this API never saw.
            AssistantContent::ProviderToolCall(call) => push_output_text(out, call.as_text(), None, count),
            AssistantContent::ToolCall(call) => out.push(InputItem::FunctionCall {
                call_id: call_id(&call.id),
                name: &call.name,
                arguments: match &call.arguments {
                    Value::String(raw) => Cow::Borrowed(raw),
                    other => Cow::Owned(other.to_string()),
                },
                id: if same_model { item_id(&call.id) } else { None },
            }),
        }
    }
}

/// An assistant `message` item with one `output_text` part; `id` (a stored `msg…` id) or the
/// `count`-th `msg_N`.
fn push_output_text(out: &mut Vec<InputItem<'_>>, text: String, id: Option<String>, count: &mut usize) {
    *count += 1;
    out.push(InputItem::Message {
        role: "assistant",
        content: vec![Part::OutputText { text, annotations: [] }],
        id: Some(id.unwrap_or_else(|| format!("msg_{count}"))),
        status: Some("completed"),
    });
}

/// A stored reasoning item, when it has an id and its encrypted content: without it a stateless
/// request could not refer to it.
fn reasoning_item(signature: &str) -> Option<InputItem<'static>> {
    let item: Value = serde_json::from_str(signature).ok()?;
    if item.get("type").and_then(Value::as_str) != Some("reasoning") {
        return None;
    }
    let id = item.get("id").and_then(Value::as_str)?.to_owned();
    let encrypted_content = item.get("encrypted_content").and_then(Value::as_str)?.to_owned();
    Some(InputItem::Reasoning {
        id,
        summary: item.get("summary").cloned().unwrap_or(Value::Array(Vec::new())),
        encrypted_content,
    })
}

/// A `function_call_output`; the result's images go to `images` (or a note when the model
/// takes none).
fn tool_output<'a>(model: &Model, result: &ToolResultMessage, images: &mut Vec<Part<'a>>) -> InputItem<'a> {
    InputItem::FunctionCallOutput {
        call_id: call_id(&result.tool_call_id),
        output: tool_result_text(model, result, images, |image| image_part(&image.mime_type, &image.data)),
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
