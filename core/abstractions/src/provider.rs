//! The provider contract: one call returns a stream of [`AssistantMessageEvent`]s.
//!
//! Order of one stream (pi's `AssistantMessageEvent`, `packages/ai/src/types.ts`):
//!
//! ```text
//! start
//! ( text_start text_delta* text_end
//! | thinking_start thinking_delta* thinking_end
//! | toolcall_start toolcall_delta* toolcall_end
//! | provider_toolcall )*
//! provider_toolresult   <- any time after its provider_toolcall
//! done | error          <- exactly one, always last
//! ```
//!
//! `provider_toolcall`/`provider_toolresult` (ours, not pi's) carry a tool call the provider ran
//! itself ([`ProviderToolCall`]): a whole block at once, then its result when it came.
//!
//! A provider never fails out of band: HTTP errors, broken streams, aborts and bad payloads end the
//! stream with `error`, whose message has `stopReason` `error` or `aborted` and an `errorMessage`
//! ([`ProviderFailure::of`] tells what kind of failure that message reports).

mod failure;

pub use failure::ProviderFailure;

use crate::messages::{AssistantMessage, Message, ProviderToolCall, ProviderToolResult, StopReason, ToolCall};
use crate::model::{Model, ThinkingLevel};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// One event of a provider stream. Deltas carry only the new piece; consumers accumulate
/// (see [`AssistantMessage`] building in the runtime). `content_index` is the block's index in
/// the final message's `content`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantMessageEvent {
    /// The call started; the message has api/provider/model set and no content.
    Start {
        /// Initial message.
        partial: AssistantMessage,
    },
    /// A text block begins.
    TextStart {
        /// Block index.
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
    /// More text.
    TextDelta {
        /// Block index.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// New text.
        delta: String,
    },
    /// A text block ended.
    TextEnd {
        /// Block index.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The whole block text.
        content: String,
    },
    /// A thinking block begins.
    ThinkingStart {
        /// Block index.
        #[serde(rename = "contentIndex")]
        content_index: usize,
    },
    /// More thinking.
    ThinkingDelta {
        /// Block index.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// New text.
        delta: String,
    },
    /// A thinking block ended.
    ThinkingEnd {
        /// Block index.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The whole block text.
        content: String,
        /// Signature, if the provider gave one.
        #[serde(skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// A tool call begins.
    #[serde(rename = "toolcall_start")]
    ToolCallStart {
        /// Block index.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// More argument JSON text.
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta {
        /// Block index.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// JSON text fragment.
        delta: String,
    },
    /// A tool call ended with its parsed arguments.
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        /// Block index.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The complete call.
        #[serde(rename = "toolCall")]
        tool_call: ToolCall,
    },
    /// A tool call the provider ran itself: a whole block at `content_index` (its result
    /// usually comes later with `provider_toolresult`). Progress and history, never executed.
    #[serde(rename = "provider_toolcall")]
    ProviderToolCall {
        /// Block index.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The call (its `result`, if already known).
        #[serde(rename = "toolCall")]
        tool_call: ProviderToolCall,
    },
    /// The result of the provider's own tool call at `content_index`.
    #[serde(rename = "provider_toolresult")]
    ProviderToolResult {
        /// Block index of the call.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The result.
        result: ProviderToolResult,
    },
    /// The call finished; the final message.
    Done {
        /// `stop`, `length` or `toolUse`.
        reason: StopReason,
        /// Final message.
        message: AssistantMessage,
    },
    /// The call failed or was aborted; the final message carries `errorMessage`.
    Error {
        /// `error` or `aborted`.
        reason: StopReason,
        /// Final message.
        error: AssistantMessage,
    },
}

impl AssistantMessageEvent {
    /// Whether this is the terminal event (`done` or `error`).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            AssistantMessageEvent::Done { .. } | AssistantMessageEvent::Error { .. }
        )
    }

    /// pi's event name (`text_delta`, `toolcall_end`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            AssistantMessageEvent::Start { .. } => "start",
            AssistantMessageEvent::TextStart { .. } => "text_start",
            AssistantMessageEvent::TextDelta { .. } => "text_delta",
            AssistantMessageEvent::TextEnd { .. } => "text_end",
            AssistantMessageEvent::ThinkingStart { .. } => "thinking_start",
            AssistantMessageEvent::ThinkingDelta { .. } => "thinking_delta",
            AssistantMessageEvent::ThinkingEnd { .. } => "thinking_end",
            AssistantMessageEvent::ToolCallStart { .. } => "toolcall_start",
            AssistantMessageEvent::ToolCallDelta { .. } => "toolcall_delta",
            AssistantMessageEvent::ToolCallEnd { .. } => "toolcall_end",
            AssistantMessageEvent::ProviderToolCall { .. } => "provider_toolcall",
            AssistantMessageEvent::ProviderToolResult { .. } => "provider_toolresult",
            AssistantMessageEvent::Done { .. } => "done",
            AssistantMessageEvent::Error { .. } => "error",
        }
    }
}

/// A tool as the provider describes it to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// JSON Schema of the arguments (an object schema); shared with the tool, which builds it
    /// once ([`Tool::parameters`](crate::tools::Tool::parameters)).
    pub parameters: Arc<Value>,
}

/// What one provider call sends: system prompt, normalised transcript, tools.
#[derive(Debug, Clone, Default)]
pub struct ProviderContext {
    /// System prompt.
    pub system_prompt: String,
    /// Transcript, already normalised for this provider.
    pub messages: Vec<Message>,
    /// Tools offered.
    pub tools: Vec<ToolSpec>,
}

/// Rewrites the provider's JSON payload just before it is sent (`before_provider_request`).
pub type PayloadHook = Arc<dyn Fn(Value) -> BoxFuture<'static, Value> + Send + Sync>;

/// Per-call options.
#[derive(Clone, Default)]
pub struct StreamOptions {
    /// API key (never logged).
    pub api_key: Option<String>,
    /// Reasoning effort.
    pub thinking_level: ThinkingLevel,
    /// Output token limit; the model's `max_tokens` when `None`.
    pub max_tokens: Option<u64>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Cancelled on abort: the stream ends with `error` / `aborted`.
    pub cancel: CancellationToken,
    /// Session id, for providers with session-keyed prompt caching.
    pub session_id: Option<String>,
    /// Extra HTTP headers.
    pub headers: Vec<(String, String)>,
    /// Payload rewrite hook.
    pub on_payload: Option<PayloadHook>,
    /// Maximum attempts for transient errors (429, 5xx, overloaded, connection reset); 0 = default.
    pub max_retries: u32,
    /// The session's working directory, for a provider that runs a program as the model (Claude
    /// Code runs `claude` there); `None` outside a session.
    pub cwd: Option<std::path::PathBuf>,
    /// The session's IANA time zone (e.g. `Asia/Tokyo`; UTC when the session has none), for a
    /// provider that runs a program as the model (its `TZ`); `None` outside a session.
    pub time_zone: Option<String>,
}

impl std::fmt::Debug for StreamOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamOptions")
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("thinking_level", &self.thinking_level)
            .field("max_tokens", &self.max_tokens)
            .field("session_id", &self.session_id)
            .field("cwd", &self.cwd)
            .field("time_zone", &self.time_zone)
            .finish_non_exhaustive()
    }
}

/// A stream of provider events.
pub type ProviderStream = BoxStream<'static, AssistantMessageEvent>;

/// An LLM back end for one wire API.
pub trait Provider: Send + Sync {
    /// The wire API this provider speaks.
    fn api(&self) -> crate::model::Api;

    /// Starts one call. Never fails out of band: every failure is an `error` event.
    fn stream(&self, model: &Model, context: ProviderContext, options: StreamOptions) -> ProviderStream;
}

/// How a context-overflow error is recognised across providers (Anthropic "prompt is too long",
/// OpenAI `context_length_exceeded`, llama.cpp/Ollama wordings).
pub fn is_context_overflow(error_message: &str) -> bool {
    let m = error_message.to_ascii_lowercase();
    [
        "prompt is too long",
        "context_length_exceeded",
        "maximum context length",
        "context length exceeded",
        "exceeds the context window",
        "input is too long",
        "too many tokens",
        "context window",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// Registration of a provider by an extension or host: a name (`provider` part of keys),
/// the implementation, and the models it serves.
#[derive(Clone)]
pub struct ProviderRegistration {
    /// Provider name, e.g. `anthropic`.
    pub name: String,
    /// The implementation.
    pub provider: Arc<dyn Provider>,
    /// Models served, each with `provider == name`.
    pub models: Vec<Model>,
    /// API key, if known at registration.
    pub api_key: Option<String>,
    /// Env variable holding the key (read at call time when `api_key` is `None`).
    pub api_key_env: Option<String>,
}

impl std::fmt::Debug for ProviderRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderRegistration")
            .field("name", &self.name)
            .field("models", &self.models.len())
            .field("api_key_env", &self.api_key_env)
            .finish_non_exhaustive()
    }
}
