//! The Messages API request body: system prompt, transcript, tools, thinking and limits.
//!
//! Transcript mapping (pi's `convertMessages` in `packages/ai/src/providers/anthropic.ts`):
//! - user text/images → content blocks (images as base64 sources; replaced by a note when the
//!   model takes no images); blank text is dropped, an empty message skipped;
//! - assistant text / thinking (with signature) / redacted thinking / tool calls →
//!   `text`, `thinking`, `redacted_thinking`, `tool_use`; thinking without a signature (an
//!   aborted stream) goes back as plain text, as the API rejects unsigned thinking;
//! - consecutive tool results → one user message of `tool_result` blocks (`is_error` kept);
//! - custom messages → user content; `bashExecution` and summaries → user text worded as pi
//!   words them (`volcanic-provider-support`).
//!
//! Prompt caching as pi does it: `cache_control: ephemeral` on the system block and on the last
//! block of the last user message. Tool-call ids are made to match `^[a-zA-Z0-9_-]{1,64}$`
//! (the same mapping for a call and its result).

use serde::Serialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use volcanic_abstractions::provider::ToolSpec;
use volcanic_abstractions::{
    AssistantContent, AssistantMessage, Message, Model, ProviderContext, StreamOptions, ThinkingLevel,
    ToolResultMessage, UserBody, UserContent,
};
use volcanic_provider_support::{
    IMAGE_OMITTED, RequestBody, bash_execution_text, branch_summary_text, compaction_summary_text, sanitize_id,
};

/// Output tokens kept for the answer on top of the thinking budget.
const ANSWER_TOKENS: u64 = 4096;
/// The smallest thinking budget the API accepts.
const MIN_BUDGET: u64 = 1024;
/// Output limit used when a model does not state one.
const FALLBACK_MAX_TOKENS: u64 = 4096;
/// Longest tool-call id the API accepts.
const MAX_ID_LEN: usize = 64;

/// The thinking budget of a level (`off` → none).
pub fn thinking_budget(level: ThinkingLevel) -> Option<u64> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some(1024),
        ThinkingLevel::Low => Some(2048),
        ThinkingLevel::Medium => Some(8192),
        ThinkingLevel::High => Some(16384),
        ThinkingLevel::Xhigh => Some(32000),
    }
}

/// `max_tokens` and the thinking budget for a call: the caller's limit (else the model's),
/// raised to budget + 4096 when thinking needs room, capped at the model's limit; the budget
/// shrinks when the cap leaves too little room, and thinking is dropped below 1024 tokens.
pub(crate) fn limits(model: &Model, options: &StreamOptions) -> (u64, Option<u64>) {
    let model_max = if model.max_tokens > 0 {
        model.max_tokens
    } else {
        FALLBACK_MAX_TOKENS
    };
    let max_tokens = options.max_tokens.unwrap_or(model_max).clamp(1, model_max);
    let budget = if model.reasoning {
        thinking_budget(options.thinking_level)
    } else {
        None
    };
    let Some(budget) = budget else {
        return (max_tokens, None);
    };
    let max_tokens = max_tokens.max(budget + ANSWER_TOKENS).min(model_max);
    let budget = if max_tokens > budget {
        budget
    } else {
        max_tokens.saturating_sub(MIN_BUDGET)
    };
    if budget < MIN_BUDGET {
        (max_tokens, None)
    } else {
        (max_tokens, Some(budget))
    }
}

#[derive(Debug, Serialize)]
pub struct Body<'a> {
    model: &'a str,
    max_tokens: u64,
    stream: bool,
    /// The system prompt (with `cache_control`), left out when empty.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    system: Vec<Marked<'a>>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: Vec<ToolRef<'a>>,
}

impl<'a> RequestBody<'a> for Body<'a> {
    /// The body of one call to `model` with `context`.
    fn new(model: &'a Model, context: &'a ProviderContext, options: &StreamOptions) -> Self {
        let (max_tokens, budget) = limits(model, options);
        let system = if context.system_prompt.is_empty() {
            Vec::new()
        } else {
            vec![Marked {
                block: Block::Text {
                    text: Cow::Borrowed(&context.system_prompt),
                },
                cache_control: Some(EPHEMERAL),
            }]
        };
        Body {
            model: &model.id,
            max_tokens,
            stream: true,
            system,
            messages: messages(model, &context.messages),
            thinking: budget.map(|budget_tokens| Thinking {
                kind: "enabled",
                budget_tokens,
            }),
            // The API refuses a temperature together with thinking.
            temperature: options.temperature.filter(|_| budget.is_none()),
            tools: context.tools.iter().map(ToolRef).collect(),
        }
    }
}

/// `{"type": "enabled", "budget_tokens": …}`.
#[derive(Debug, Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u64,
}

/// `{"type": "ephemeral"}`: prompt caching up to this block.
#[derive(Debug, Clone, Copy, Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

/// One message of the `messages` array.
#[derive(Debug, Serialize)]
pub(crate) struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Marked<'a>>,
}

/// A content block, with `cache_control` when it is the last block of the last user message.
#[derive(Debug, Serialize)]
struct Marked<'a> {
    #[serde(flatten)]
    block: Block<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

impl<'a> From<Block<'a>> for Marked<'a> {
    fn from(block: Block<'a>) -> Self {
        Marked {
            block,
            cache_control: None,
        }
    }
}

/// Content blocks of the Messages API.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: Cow<'a, str>,
    },
    Image {
        source: ImageSource<'a>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: String,
        name: &'a str,
        /// The arguments: an object (anything else goes as `{}`).
        input: Cow<'a, Map<String, Value>>,
    },
    ToolResult {
        tool_use_id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<ResultContent<'a>>,
        is_error: bool,
    },
}

/// `{"type": "base64", "media_type": …, "data": …}`.
#[derive(Debug, Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

/// A tool result's content: its text, or blocks when it has images.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ResultContent<'a> {
    Text(String),
    Blocks(Vec<Marked<'a>>),
}

fn text_block(text: impl Into<Cow<'static, str>>) -> Marked<'static> {
    Block::Text { text: text.into() }.into()
}

/// A tool as the API wants it, written from its spec without copying the schema.
#[derive(Debug)]
struct ToolRef<'a>(&'a ToolSpec);

impl serde::Serialize for ToolRef<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("name", &self.0.name)?;
        map.serialize_entry("description", &self.0.description)?;
        map.serialize_entry("input_schema", &SchemaRef(&self.0.parameters))?;
        map.end()
    }
}

/// An input schema, with `"type": "object"` when it has no type.
struct SchemaRef<'a>(&'a Value);

impl serde::Serialize for SchemaRef<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let empty = Map::new();
        let schema = self.0.as_object().unwrap_or(&empty);
        if schema.contains_key("type") {
            return schema.serialize(s);
        }
        let mut map = s.serialize_map(Some(schema.len() + 1))?;
        for (k, v) in schema {
            map.serialize_entry(k, v)?;
        }
        map.serialize_entry("type", "object")?;
        map.end()
    }
}

/// A tool-call id as the API accepts it.
pub(crate) fn tool_id(id: &str) -> String {
    sanitize_id(id, MAX_ID_LEN, |c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The transcript as API messages, with `cache_control` on the last user block.
pub(crate) fn messages<'a>(model: &Model, transcript: &'a [Message]) -> Vec<WireMessage<'a>> {
    let mut out: Vec<WireMessage<'a>> = Vec::new();
    let mut index = 0;
    while let Some(message) = transcript.get(index) {
        index += 1;
        match message {
            Message::User(user) => push_user(&mut out, body_blocks(model, &user.content)),
            Message::Custom(custom) => push_user(&mut out, body_blocks(model, &custom.content)),
            Message::BashExecution(bash) => {
                if let Some(text) = bash_execution_text(bash) {
                    push_user(&mut out, vec![text_block(text)]);
                }
            }
            Message::BranchSummary(summary) => {
                push_user(&mut out, vec![text_block(branch_summary_text(summary))]);
            }
            Message::CompactionSummary(summary) => {
                push_user(&mut out, vec![text_block(compaction_summary_text(summary))]);
            }
            Message::Assistant(assistant) => {
                let content = assistant_blocks(assistant);
                if !content.is_empty() {
                    out.push(WireMessage {
                        role: "assistant",
                        content,
                    });
                }
            }
            Message::ToolResult(first) => {
                let mut content = vec![tool_result(model, first)];
                while let Some(Message::ToolResult(next)) = transcript.get(index) {
                    content.push(tool_result(model, next));
                    index += 1;
                }
                out.push(WireMessage { role: "user", content });
            }
        }
    }
    // Prompt caching as pi does it: up to the last block of the last user message.
    if let Some(last) = out.last_mut().filter(|m| m.role == "user")
        && let Some(block) = last.content.last_mut()
    {
        block.cache_control = Some(EPHEMERAL);
    }
    out
}

fn push_user<'a>(out: &mut Vec<WireMessage<'a>>, content: Vec<Marked<'a>>) {
    if !content.is_empty() {
        out.push(WireMessage { role: "user", content });
    }
}

/// A user message's content as blocks (plain text is one text block).
fn body_blocks<'a>(model: &Model, body: &'a UserBody) -> Vec<Marked<'a>> {
    match body {
        UserBody::Text(text) if text.trim().is_empty() => Vec::new(),
        UserBody::Text(text) => vec![
            Block::Text {
                text: Cow::Borrowed(text),
            }
            .into(),
        ],
        UserBody::Blocks(blocks) => user_blocks(model, blocks),
    }
}

fn user_blocks<'a>(model: &Model, blocks: &'a [UserContent]) -> Vec<Marked<'a>> {
    blocks
        .iter()
        .filter_map(|block| match block {
            UserContent::Text(text) => (!text.text.trim().is_empty()).then(|| {
                Marked::from(Block::Text {
                    text: Cow::Borrowed(&text.text),
                })
            }),
            UserContent::Image(image) => Some(if model.takes_images() {
                Block::Image {
                    source: ImageSource {
                        kind: "base64",
                        media_type: &image.mime_type,
                        data: &image.data,
                    },
                }
                .into()
            } else {
                text_block(IMAGE_OMITTED)
            }),
        })
        .collect()
}

fn assistant_blocks(message: &AssistantMessage) -> Vec<Marked<'_>> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Text(text) => (!text.text.trim().is_empty()).then(|| {
                Marked::from(Block::Text {
                    text: Cow::Borrowed(&text.text),
                })
            }),
            AssistantContent::Thinking(thinking) => {
                let signature = thinking.thinking_signature.as_deref().filter(|s| !s.trim().is_empty());
                match (thinking.redacted == Some(true), signature) {
                    (true, Some(data)) => Some(Block::RedactedThinking { data }.into()),
                    (true, None) => None,
                    (false, _) if thinking.thinking.trim().is_empty() => None,
                    (false, Some(signature)) => Some(
                        Block::Thinking {
                            thinking: &thinking.thinking,
                            signature,
                        }
                        .into(),
                    ),
                    // Unsigned thinking (an aborted stream) goes back as plain text.
                    (false, None) => Some(
                        Block::Text {
                            text: Cow::Borrowed(&thinking.thinking),
                        }
                        .into(),
                    ),
                }
            }
            AssistantContent::ToolCall(call) => Some(
                Block::ToolUse {
                    id: tool_id(&call.id),
                    name: &call.name,
                    input: match &call.arguments {
                        Value::Object(map) => Cow::Borrowed(map),
                        _ => Cow::Owned(Map::new()),
                    },
                }
                .into(),
            ),
            // Ran by another API's provider (Claude Code): history as text, not a `tool_use`
            // that would need a `tool_result` this API never saw.
            AssistantContent::ProviderToolCall(call) => Some(
                Block::Text {
                    text: Cow::Owned(call.as_text()),
                }
                .into(),
            ),
        })
        .collect()
}

fn tool_result<'a>(model: &Model, result: &'a ToolResultMessage) -> Marked<'a> {
    let has_images = result
        .content
        .iter()
        .any(|block| matches!(block, UserContent::Image(_)));
    let content = if has_images {
        let mut blocks = user_blocks(model, &result.content);
        if !blocks.iter().any(|b| matches!(b.block, Block::Text { .. })) {
            blocks.insert(0, text_block("(see attached image)"));
        }
        Some(ResultContent::Blocks(blocks))
    } else {
        let text = volcanic_abstractions::join_text(&result.content);
        (!text.is_empty()).then_some(ResultContent::Text(text))
    };
    Block::ToolResult {
        tool_use_id: tool_id(&result.tool_call_id),
        content,
        is_error: result.is_error,
    }
    .into()
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
