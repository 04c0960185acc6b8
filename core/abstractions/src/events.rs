//! Session events a host subscribes to (`AgentSession::subscribe`). Names and shapes are pi's
//! JSON event stream (`pi --mode json`). Order of one run:
//!
//! ```text
//! agent_start
//! ├─ turn_start
//! │  ├─ message_start / message_end            (prompt, injected and queued messages)
//! │  ├─ message_start                          (assistant)
//! │  │  message_update*                        (one per provider event)
//! │  │  message_end
//! │  ├─ tool_execution_start                   (source order)
//! │  │  tool_execution_update*
//! │  │  tool_execution_end                     (completion order)
//! │  ├─ message_start / message_end            (tool results, source order)
//! │  └─ turn_end
//! ├─ turn_start … (more turns)
//! agent_end
//! agent_settled                                (idle, nothing queued)
//! ```
//!
//! `extension_error`, `auto_retry_start/end` and `compaction_start/end` may appear anywhere inside;
//! `model_fallback` comes between a failed assistant `message_end` and the next `message_start`
//! of the same turn.
//! A tool the provider ran itself ([`ProviderToolCall`](crate::messages::ProviderToolCall),
//! e.g. Claude Code's) is shown with `tool_execution_start` and `tool_execution_end` among the
//! assistant's `message_update`s, as its events stream in; no tool result message follows.

use crate::messages::{AssistantMessage, Message, ToolResultMessage};
use crate::provider::AssistantMessageEvent;
use crate::tools::ToolResult;
use serde::Serialize;
use serde_json::Value;

/// A tool result as shown in `tool_execution_*` events: `{content, details?}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolResultView {
    /// Content blocks.
    pub content: Vec<crate::messages::UserContent>,
    /// Details.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl From<&ToolResult> for ToolResultView {
    fn from(r: &ToolResult) -> Self {
        ToolResultView {
            content: r.content.clone(),
            details: r.details.clone(),
        }
    }
}

/// One session event.
// Variants differ in size (a message vs. nothing); events are short-lived, boxing buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentSessionEvent {
    /// A run started.
    AgentStart,
    /// A run ended; the messages it added.
    AgentEnd {
        /// Messages added.
        messages: Vec<Message>,
    },
    /// Idle again, nothing queued.
    AgentSettled,
    /// A turn started.
    TurnStart,
    /// A turn ended.
    TurnEnd {
        /// The turn's assistant message.
        #[serde(serialize_with = "assistant_with_role")]
        message: AssistantMessage,
        /// Its tool results.
        #[serde(rename = "toolResults", serialize_with = "tool_results_with_role")]
        tool_results: Vec<ToolResultMessage>,
    },
    /// A message started.
    MessageStart {
        /// The message (for assistants: empty so far).
        message: Message,
    },
    /// An assistant message streamed a piece.
    MessageUpdate {
        /// The message so far.
        #[serde(serialize_with = "assistant_with_role")]
        message: AssistantMessage,
        /// The provider event.
        #[serde(rename = "assistantMessageEvent")]
        assistant_message_event: AssistantMessageEvent,
    },
    /// A message is complete (and persisted).
    MessageEnd {
        /// The message.
        message: Message,
    },
    /// A tool started.
    ToolExecutionStart {
        /// Call id.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        /// Tool.
        #[serde(rename = "toolName")]
        tool_name: String,
        /// Arguments.
        args: Value,
    },
    /// A tool reported progress.
    ToolExecutionUpdate {
        /// Call id.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        /// Tool.
        #[serde(rename = "toolName")]
        tool_name: String,
        /// Arguments.
        args: Value,
        /// Partial result.
        #[serde(rename = "partialResult")]
        partial_result: ToolResultView,
    },
    /// A tool finished.
    ToolExecutionEnd {
        /// Call id.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        /// Tool.
        #[serde(rename = "toolName")]
        tool_name: String,
        /// Result.
        result: ToolResultView,
        /// Error flag.
        #[serde(rename = "isError")]
        is_error: bool,
    },
    /// A transient provider error; the call is retried after `delay_ms`.
    AutoRetryStart {
        /// 1-based attempt about to be made.
        attempt: u32,
        /// Maximum attempts.
        #[serde(rename = "maxAttempts")]
        max_attempts: u32,
        /// Wait before the attempt (ms).
        #[serde(rename = "delayMs")]
        delay_ms: u64,
        /// The error.
        #[serde(rename = "errorMessage")]
        error_message: String,
    },
    /// Retrying ended.
    AutoRetryEnd {
        /// Whether a retry succeeded.
        success: bool,
        /// Attempts made.
        attempt: u32,
    },
    /// Compaction started (`reason`: `threshold`, `overflow` or `manual`).
    CompactionStart {
        /// Why.
        reason: String,
    },
    /// Compaction ended.
    CompactionEnd {
        /// Why it ran.
        reason: String,
        /// Whether a compaction entry was written.
        success: bool,
        /// Error or cancellation message.
        #[serde(rename = "errorMessage", skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
    },
    /// An extension handler failed; dispatch went on.
    ExtensionError {
        /// Extension name.
        extension: String,
        /// Event name.
        event: String,
        /// Error text.
        error: String,
    },
    /// A model call failed in a way another provider could answer (overloaded, a server error,
    /// a refused key, unreachable; after the provider's own retries), and the same turn goes on
    /// with the next of the session's fallback models (`fallback_models`). Sent before that
    /// model is asked; the failed message stays in the transcript (its error is not shown as the
    /// turn's end). Keys are `provider/id`.
    ModelFallback {
        /// The model whose call failed.
        from: String,
        /// The model answering instead.
        to: String,
        /// Why `from` failed (its redacted `errorMessage`).
        #[serde(rename = "errorMessage")]
        error_message: String,
    },
    /// The session file changed (`/new`, switch).
    SessionChanged {
        /// Session id.
        #[serde(rename = "sessionId")]
        session_id: String,
        /// Session file.
        #[serde(rename = "sessionFile", skip_serializing_if = "Option::is_none")]
        session_file: Option<String>,
    },
}

impl AgentSessionEvent {
    /// pi's event name.
    pub fn name(&self) -> &'static str {
        match self {
            AgentSessionEvent::AgentStart => "agent_start",
            AgentSessionEvent::AgentEnd { .. } => "agent_end",
            AgentSessionEvent::AgentSettled => "agent_settled",
            AgentSessionEvent::TurnStart => "turn_start",
            AgentSessionEvent::TurnEnd { .. } => "turn_end",
            AgentSessionEvent::MessageStart { .. } => "message_start",
            AgentSessionEvent::MessageUpdate { .. } => "message_update",
            AgentSessionEvent::MessageEnd { .. } => "message_end",
            AgentSessionEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentSessionEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentSessionEvent::ToolExecutionEnd { .. } => "tool_execution_end",
            AgentSessionEvent::AutoRetryStart { .. } => "auto_retry_start",
            AgentSessionEvent::AutoRetryEnd { .. } => "auto_retry_end",
            AgentSessionEvent::CompactionStart { .. } => "compaction_start",
            AgentSessionEvent::CompactionEnd { .. } => "compaction_end",
            AgentSessionEvent::ExtensionError { .. } => "extension_error",
            AgentSessionEvent::ModelFallback { .. } => "model_fallback",
            AgentSessionEvent::SessionChanged { .. } => "session_changed",
        }
    }
}
/// A message serialized with its `role`, as pi's events carry every message.
#[derive(Serialize)]
struct WithRole<'a, T: Serialize> {
    role: &'static str,
    #[serde(flatten)]
    message: &'a T,
}

fn assistant_with_role<S: serde::Serializer>(m: &AssistantMessage, s: S) -> Result<S::Ok, S::Error> {
    WithRole {
        role: "assistant",
        message: m,
    }
    .serialize(s)
}

fn tool_results_with_role<S: serde::Serializer>(v: &[ToolResultMessage], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|m| WithRole {
        role: "toolResult",
        message: m,
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_message_in_an_event_carries_its_role() {
        let assistant = AssistantMessage::empty("anthropic-messages", "anthropic", "m", 1);
        let result = ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            content: Vec::new(),
            details: None,
            is_error: false,
            timestamp: 2,
        };
        let turn_end = serde_json::to_value(AgentSessionEvent::TurnEnd {
            message: assistant.clone(),
            tool_results: vec![result],
        })
        .unwrap();
        assert_eq!(turn_end["type"], "turn_end");
        assert_eq!(turn_end["message"]["role"], "assistant");
        assert_eq!(turn_end["message"]["provider"], "anthropic");
        assert_eq!(turn_end["toolResults"][0]["role"], "toolResult");
        assert_eq!(turn_end["toolResults"][0]["toolCallId"], "c1");
        let update = serde_json::to_value(AgentSessionEvent::MessageUpdate {
            message: assistant,
            assistant_message_event: AssistantMessageEvent::TextStart { content_index: 0 },
        })
        .unwrap();
        assert_eq!(update["message"]["role"], "assistant");
    }
}
