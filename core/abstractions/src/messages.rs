//! Messages and content blocks, serialised exactly as pi writes them (`packages/ai/src/types.ts`,
//! and the coding agent's custom roles), so a session file written by pi reads here and ours in pi.
//!
//! Shapes (JSON):
//! - user: `{"role":"user","content": string | [text|image], "timestamp": ms}`
//! - assistant: `{"role":"assistant","content":[text|thinking|toolCall|providerToolCall],"api",
//!   "provider","model",
//!   "responseId"?, "usage", "stopReason", "errorMessage"?, "timestamp": ms}`
//! - tool result: `{"role":"toolResult","toolCallId","toolName","content":[text|image],"details"?,
//!   "isError","timestamp": ms}`
//! - custom (extension messages, shown to the model as user messages):
//!   `{"role":"custom","customType","content","display","details"?,"timestamp"}`
//! - `bashExecution`, `branchSummary`, `compactionSummary`: the coding agent's own roles.
//!
//! Timestamps in messages are Unix epoch milliseconds. Optional fields are omitted, never `null`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Unix epoch milliseconds, as pi stores message timestamps.
pub type TimestampMs = i64;

/// Plain text. `textSignature` is an opaque provider token (OpenAI Responses) kept for replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Provider-specific signature, replayed only to the provider that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_signature: Option<String>,
}

/// Model reasoning. `thinkingSignature` is the provider's opaque signature (Anthropic), which
/// must be sent back unchanged to the same provider and dropped for any other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    /// The reasoning text (empty for redacted thinking).
    pub thinking: String,
    /// Opaque provider signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    /// True when the provider returned redacted (encrypted) thinking; the data is in the signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<bool>,
}

/// An image, base64-encoded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64 of the image bytes (no `data:` prefix).
    pub data: String,
    /// MIME type, e.g. `image/png`.
    pub mime_type: String,
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// Provider-assigned id; results refer to it with `toolCallId`.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Parsed arguments (a JSON object; a malformed stream leaves what could be parsed).
    pub arguments: Value,
    /// Gemini's thought signature, replayed only to that provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

/// A tool call the provider ran itself, inside its own call, with its result once it came: what
/// Claude Code's `tool_use` and `tool_result` blocks are (its agent runs its own tools), and what
/// Anthropic's server tools are (`server_tool_use` + `web_search_tool_result`, both content of
/// the assistant message: <https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/web-search-tool>).
///
/// History, never a request: the runtime does not execute it and no `toolResult` message answers
/// it ([`AssistantMessage::tool_calls`] leaves it out). The call and its result are one block, so
/// a transcript cannot hold one without the other. Providers whose API has no such block get
/// [`ProviderToolCall::as_text`] instead. Our own extension of pi's format (`"type":
/// "providerToolCall"`); pi skips block types it does not know.
///
/// JSON: `{"type":"providerToolCall","id","name","arguments","result"?:{"content":[text|image],
/// "isError"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderToolCall {
    /// The provider's id of the call (e.g. Claude Code's `toolu_…`).
    pub id: String,
    /// Tool name, as the provider names it (`Bash`, `Read`, `web_search`).
    pub name: String,
    /// Its arguments (a JSON object as the provider gave it).
    pub arguments: Value,
    /// The result, absent while the tool runs or when none came (the call was cut off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ProviderToolResult>,
}

/// What a [`ProviderToolCall`] returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderToolResult {
    /// The output, as the provider kept it (it may be cut).
    pub content: Vec<UserContent>,
    /// True when the tool failed.
    #[serde(default)]
    pub is_error: bool,
}

/// How many characters of a provider tool call's arguments, and of its result, go into
/// [`ProviderToolCall::as_text`] (the rest is cut, marked with `[…]`).
pub const PROVIDER_TOOL_TEXT_CHARS: usize = 2_000;

impl ProviderToolCall {
    /// The call and its result as plain assistant text, for a provider whose API has no block
    /// for it (any but the one that ran it): `Ran tool `NAME` with ARGS`, then `Result:`,
    /// `Failed:` or `(no result)`, then the result's text (images noted, not sent). Arguments and
    /// result are each cut at [`PROVIDER_TOOL_TEXT_CHARS`] characters. Worded as pi words a
    /// user-run command (`Ran `cmd``), so it reads as history, not as a request.
    pub fn as_text(&self) -> String {
        let mut out = format!(
            "Ran tool `{}` with {}",
            self.name,
            cut(&self.arguments.to_string(), PROVIDER_TOOL_TEXT_CHARS)
        );
        match &self.result {
            None => out.push_str(
                "
(no result)",
            ),
            Some(r) => {
                out.push_str(if r.is_error {
                    "
Failed:
"
                } else {
                    "
Result:
"
                });
                let mut text = join_text(&r.content);
                let images = r.content.iter().filter(|c| matches!(c, UserContent::Image(_))).count();
                if images > 0 {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&format!("[{images} image(s) not shown]"));
                }
                if text.trim().is_empty() {
                    text = "(no output)".into();
                }
                out.push_str(&cut(&text, PROVIDER_TOOL_TEXT_CHARS));
            }
        }
        out
    }

    /// Size in characters for token estimates (name, arguments and the result's text).
    fn estimated_chars(&self) -> usize {
        self.name.len()
            + self.arguments.to_string().len()
            + self.result.as_ref().map_or(0, |r| join_text(&r.content).len())
    }
}

/// `text` cut at `max` characters, marked `[…]` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push_str(" […]");
    out
}

/// A block of user or tool-result content: text or image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum UserContent {
    /// Text.
    Text(TextContent),
    /// Image.
    Image(ImageContent),
}

/// A block of assistant content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AssistantContent {
    /// Text.
    Text(TextContent),
    /// Reasoning.
    Thinking(ThinkingContent),
    /// Tool call (for the runtime to execute).
    ToolCall(ToolCall),
    /// A tool call the provider executed itself, with its result: history, never executed.
    ProviderToolCall(ProviderToolCall),
}

/// Why the model stopped. Wire names as pi's: `stop`, `length`, `toolUse`, `error`, `aborted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// Natural end of the answer.
    #[default]
    Stop,
    /// Hit the output token limit; tool calls in such a message are never executed.
    Length,
    /// The model asked for tools.
    ToolUse,
    /// The call failed; `errorMessage` says why.
    Error,
    /// The call was aborted by the user or host.
    Aborted,
}

/// Cost in USD, per category of tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// Input tokens cost (USD).
    pub input: f64,
    /// Output tokens cost (USD).
    pub output: f64,
    /// Cache-read tokens cost (USD).
    pub cache_read: f64,
    /// Cache-write tokens cost (USD).
    pub cache_write: f64,
    /// Sum of the above (USD).
    pub total: f64,
}

/// Token usage of one model call (tokens) and its cost (USD).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Uncached input tokens.
    pub input: u64,
    /// Output tokens (including reasoning).
    pub output: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write: u64,
    /// input + output + cache_read + cache_write.
    pub total_tokens: u64,
    /// Cost in USD.
    pub cost: Cost,
}

impl Usage {
    /// Tokens the context occupied for this call: everything sent plus what was produced.
    pub fn context_tokens(&self) -> u64 {
        if self.total_tokens > 0 {
            self.total_tokens
        } else {
            self.input + self.output + self.cache_read + self.cache_write
        }
    }
}

/// User content: pi accepts a plain string or a list of blocks; both are kept as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserBody {
    /// A plain string.
    Text(String),
    /// Text and image blocks.
    Blocks(Vec<UserContent>),
}

impl UserBody {
    /// The blocks of this body (a plain string becomes one text block).
    pub fn blocks(&self) -> Vec<UserContent> {
        match self {
            UserBody::Text(t) => vec![UserContent::Text(TextContent {
                text: t.clone(),
                text_signature: None,
            })],
            UserBody::Blocks(b) => b.clone(),
        }
    }

    /// All text of the body, blocks joined with newlines; images are skipped.
    pub fn text(&self) -> String {
        match self {
            UserBody::Text(t) => t.clone(),
            UserBody::Blocks(b) => join_text(b),
        }
    }
}

/// Joins the text blocks of user/tool-result content with newlines.
pub fn join_text(blocks: &[UserContent]) -> String {
    let mut out = String::new();
    for b in blocks {
        if let UserContent::Text(t) = b {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&t.text);
        }
    }
    out
}

/// A user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// Content.
    pub content: UserBody,
    /// Epoch ms.
    pub timestamp: TimestampMs,
}

/// An assistant message: the result of one provider call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// Content blocks in the order streamed.
    pub content: Vec<AssistantContent>,
    /// Wire API that produced it (`anthropic-messages`, `openai-completions`, ...).
    pub api: String,
    /// Provider name (`anthropic`, `openai`, a custom one).
    pub provider: String,
    /// Model id.
    pub model: String,
    /// Provider's response id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// Usage and cost.
    #[serde(default)]
    pub usage: Usage,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Set when `stop_reason` is `error` or `aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Epoch ms.
    pub timestamp: TimestampMs,
}

impl AssistantMessage {
    /// An empty message for the given model, stamped now.
    pub fn empty(api: &str, provider: &str, model: &str, timestamp: TimestampMs) -> Self {
        AssistantMessage {
            content: Vec::new(),
            api: api.to_owned(),
            provider: provider.to_owned(),
            model: model.to_owned(),
            response_id: None,
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            error_message: None,
            timestamp,
        }
    }

    /// The tool calls of this message for the runtime to execute, in source order (without the
    /// [`ProviderToolCall`]s, which the provider ran itself).
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|c| match c {
            AssistantContent::ToolCall(t) => Some(t),
            AssistantContent::Text(_) | AssistantContent::Thinking(_) | AssistantContent::ProviderToolCall(_) => None,
        })
    }

    /// The tool calls the provider ran itself, in source order.
    pub fn provider_tool_calls(&self) -> impl Iterator<Item = &ProviderToolCall> {
        self.content.iter().filter_map(|c| match c {
            AssistantContent::ProviderToolCall(t) => Some(t),
            AssistantContent::Text(_) | AssistantContent::Thinking(_) | AssistantContent::ToolCall(_) => None,
        })
    }

    /// All text blocks joined (no separator), as a final answer is shown.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for c in &self.content {
            if let AssistantContent::Text(t) = c {
                out.push_str(&t.text);
            }
        }
        out
    }
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The call this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// What the model sees.
    pub content: Vec<UserContent>,
    /// Structured data for hosts and extensions; never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// True when the tool failed.
    pub is_error: bool,
    /// Epoch ms.
    pub timestamp: TimestampMs,
}

/// A message injected by an extension; the model sees it as a user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessage {
    /// The extension's type tag.
    pub custom_type: String,
    /// Content.
    pub content: UserBody,
    /// Whether hosts should show it.
    #[serde(default)]
    pub display: bool,
    /// Extension data; never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Epoch ms.
    pub timestamp: TimestampMs,
}

/// A shell command the user ran directly (pi's `!cmd`); the model sees command and output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BashExecutionMessage {
    /// The command line.
    pub command: String,
    /// Its output.
    pub output: String,
    /// Exit code, if it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Whether it was cancelled.
    #[serde(default)]
    pub cancelled: bool,
    /// Whether the output was truncated.
    #[serde(default)]
    pub truncated: bool,
    /// Path of the full output when truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    /// Epoch ms.
    pub timestamp: TimestampMs,
    /// pi: when true the message is not sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_from_context: Option<bool>,
}

/// A summary standing in for an abandoned branch or compacted history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryMessage {
    /// The summary text.
    pub summary: String,
    /// For compaction summaries: tokens before compaction; for branch summaries absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<u64>,
    /// For branch summaries: the entry the branch left from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_id: Option<String>,
    /// Epoch ms.
    pub timestamp: TimestampMs,
}

/// Any message of a transcript. The `role` tag and field names are pi's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    /// From the user.
    User(UserMessage),
    /// From the model.
    Assistant(AssistantMessage),
    /// A tool's result.
    ToolResult(ToolResultMessage),
    /// Injected by an extension.
    Custom(CustomMessage),
    /// A user-run shell command.
    BashExecution(BashExecutionMessage),
    /// Summary of an abandoned branch.
    BranchSummary(SummaryMessage),
    /// Summary of compacted history.
    CompactionSummary(SummaryMessage),
}

impl Message {
    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>, timestamp: TimestampMs) -> Self {
        Message::User(UserMessage {
            content: UserBody::Blocks(vec![UserContent::Text(TextContent {
                text: text.into(),
                text_signature: None,
            })]),
            timestamp,
        })
    }

    /// The pi role name (`user`, `assistant`, `toolResult`, ...).
    pub fn role(&self) -> &'static str {
        match self {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
            Message::Custom(_) => "custom",
            Message::BashExecution(_) => "bashExecution",
            Message::BranchSummary(_) => "branchSummary",
            Message::CompactionSummary(_) => "compactionSummary",
        }
    }

    /// Epoch ms of the message.
    pub fn timestamp(&self) -> TimestampMs {
        match self {
            Message::User(m) => m.timestamp,
            Message::Assistant(m) => m.timestamp,
            Message::ToolResult(m) => m.timestamp,
            Message::Custom(m) => m.timestamp,
            Message::BashExecution(m) => m.timestamp,
            Message::BranchSummary(m) | Message::CompactionSummary(m) => m.timestamp,
        }
    }

    /// Rough size in characters used for token estimates (about 4 characters per token);
    /// an image counts as 4800 characters (about 1200 tokens).
    pub fn estimated_chars(&self) -> usize {
        const IMAGE_CHARS: usize = 4800;
        let user = |b: &[UserContent]| -> usize {
            b.iter()
                .map(|c| match c {
                    UserContent::Text(t) => t.text.len(),
                    UserContent::Image(_) => IMAGE_CHARS,
                })
                .sum()
        };
        let body = |b: &UserBody| match b {
            UserBody::Text(t) => t.len(),
            UserBody::Blocks(b) => user(b),
        };
        match self {
            Message::User(m) => body(&m.content),
            Message::Assistant(m) => m
                .content
                .iter()
                .map(|c| match c {
                    AssistantContent::Text(t) => t.text.len(),
                    AssistantContent::Thinking(t) => t.thinking.len(),
                    AssistantContent::ToolCall(t) => t.name.len() + t.arguments.to_string().len(),
                    AssistantContent::ProviderToolCall(t) => t.estimated_chars(),
                })
                .sum(),
            Message::ToolResult(m) => user(&m.content),
            Message::Custom(m) => body(&m.content),
            Message::BashExecution(m) => m.command.len() + m.output.len(),
            Message::BranchSummary(m) | Message::CompactionSummary(m) => m.summary.len(),
        }
    }
}

#[cfg(test)]
#[path = "messages_tests.rs"]
mod tests;
