//! Extension events (spec: extensions.md, "Events"). Each is a mutable value handed to handlers
//! in load order, then registration order; a handler influences the runtime by changing it
//! (`block`, `cancel`, `mark_handled`, or replacing a field). Events whose [`ExtensionEvent::stopped`]
//! turns true stop further handlers.

use crate::messages::{AssistantMessage, CustomMessage, ImageContent, Message, ToolResultMessage, UserContent};
use crate::model::{Model, ThinkingLevel};
use crate::processes::{ProcessSpawnContext, ProcessSpawnRequest};
use crate::provider::AssistantMessageEvent;
use crate::sessions::CompactionEntry;
use crate::tools::ToolResult;
use serde_json::Value;

/// An event extensions can subscribe to with `ExtensionApiExt::on`.
pub trait ExtensionEvent: Send + Sync + 'static {
    /// pi's event name (`tool_call`, `session_start`, ...).
    const NAME: &'static str;
    /// True once a handler cancelled, blocked or consumed it: later handlers are skipped.
    fn stopped(&self) -> bool {
        false
    }
    /// Called when a handler fails (error or panic); dispatch goes on unless this stops it.
    /// `tool_call` blocks the tool, `process_spawn` fails the spawn; others ignore it.
    fn on_handler_error(&mut self, _extension: &str, _error: &str) {}
}

macro_rules! event {
    ($t:ty, $name:literal) => {
        impl ExtensionEvent for $t {
            const NAME: &'static str = $name;
        }
    };
    ($t:ty, $name:literal, |$s:ident| $stop:expr) => {
        impl ExtensionEvent for $t {
            const NAME: &'static str = $name;
            fn stopped(&self) -> bool {
                let $s = self;
                $stop
            }
        }
    };
}

/// Why a session (re)started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStartReason {
    /// A new session at startup.
    Startup,
    /// An existing session file was resumed.
    Resume,
    /// `/new`.
    New,
    /// Switched to another session file.
    Switch,
}

/// After activation, on new/resume/switch. Rebuild state from the branch here.
#[derive(Debug, Clone)]
pub struct SessionStartEvent {
    /// Why.
    pub reason: SessionStartReason,
}
event!(SessionStartEvent, "session_start");

/// Before the session is disposed or replaced. Handlers must be idempotent.
#[derive(Debug, Clone, Default)]
pub struct SessionShutdownEvent {}
event!(SessionShutdownEvent, "session_shutdown");

/// Before `/new` or a switch; `cancel()` keeps the current session.
#[derive(Debug, Clone, Default)]
pub struct SessionBeforeSwitchEvent {
    /// Target session file for a switch; `None` for a new session.
    pub target: Option<String>,
    /// Set by `cancel`.
    pub cancelled: bool,
}
impl SessionBeforeSwitchEvent {
    /// Keeps the current session.
    pub fn cancel(&mut self) {
        self.cancelled = true;
    }
}
event!(SessionBeforeSwitchEvent, "session_before_switch", |e| e.cancelled);

/// The session's display name changed.
#[derive(Debug, Clone, Default)]
pub struct SessionInfoChangedEvent {
    /// New name.
    pub name: Option<String>,
}
event!(SessionInfoChangedEvent, "session_info_changed");

/// User text before it becomes a prompt. Change `text`/`images`, or `mark_handled()` to consume it.
#[derive(Debug, Clone, Default)]
pub struct InputEvent {
    /// The text.
    pub text: String,
    /// Attached images.
    pub images: Vec<ImageContent>,
    /// Set by `mark_handled`: the input never becomes a prompt.
    pub handled: bool,
}
impl InputEvent {
    /// Consumes the input.
    pub fn mark_handled(&mut self) {
        self.handled = true;
    }
}
event!(InputEvent, "input", |e| e.handled);

/// What the system prompt is built from; extensions edit it in `before_agent_start`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SystemPromptOptions {
    /// Replaces the built-in base prompt when set.
    pub base_prompt: Option<String>,
    /// Extra sections `(title, body)` appended after the base prompt.
    pub sections: Vec<(String, String)>,
    /// Tools section lines `(name, snippet)`.
    pub tools: Vec<(String, String)>,
    /// Guideline bullets.
    pub guidelines: Vec<String>,
    /// Project context files `(path, content)` (AGENTS.md).
    pub context_files: Vec<(String, String)>,
    /// Skills `(name, description, path of its SKILL.md)`.
    pub skills: Vec<(String, String, String)>,
    /// Outputs of the skills' `session-start` hooks `(skill name, text)`, each rendered as a
    /// `<skill_session_context name="...">` block.
    pub skill_context: Vec<(String, String)>,
}

/// Before a run starts.
#[derive(Debug, Clone, Default)]
pub struct BeforeAgentStartEvent {
    /// The prompt text that starts the run.
    pub prompt: String,
    /// Edit to change the system prompt.
    pub system_prompt_options: SystemPromptOptions,
    /// Replaces the whole system prompt when set.
    pub system_prompt_override: Option<String>,
    /// Messages added after the prompt.
    pub injected_messages: Vec<CustomMessage>,
}
event!(BeforeAgentStartEvent, "before_agent_start");

/// A run started.
#[derive(Debug, Clone, Default)]
pub struct AgentStartEvent {}
event!(AgentStartEvent, "agent_start");

/// A run ended.
#[derive(Debug, Clone, Default)]
pub struct AgentEndEvent {
    /// Messages added during the run.
    pub messages: Vec<Message>,
}
event!(AgentEndEvent, "agent_end");

/// The session is idle again (after `agent_end`, nothing queued).
#[derive(Debug, Clone, Default)]
pub struct AgentSettledEvent {}
event!(AgentSettledEvent, "agent_settled");

/// A turn (one model call and its tools) starts.
#[derive(Debug, Clone, Default)]
pub struct TurnStartEvent {
    /// 0-based turn index within the run.
    pub turn_index: usize,
}
event!(TurnStartEvent, "turn_start");

/// A turn ended. Set `continue_requested` to force another model call.
#[derive(Debug, Clone)]
pub struct TurnEndEvent {
    /// 0-based turn index.
    pub turn_index: usize,
    /// The assistant message of the turn.
    pub message: AssistantMessage,
    /// Its tool results in source order.
    pub tool_results: Vec<ToolResultMessage>,
    /// Forces another model call.
    pub continue_requested: bool,
}
event!(TurnEndEvent, "turn_end");

/// Before each model call: edit `messages` (the system prompt is not part of it).
#[derive(Debug, Clone, Default)]
pub struct ContextEvent {
    /// The transcript about to be sent.
    pub messages: Vec<Message>,
}
event!(ContextEvent, "context");

/// The provider payload is built: replace `payload` to change what is sent.
#[derive(Debug, Clone, Default)]
pub struct BeforeProviderRequestEvent {
    /// The provider's JSON request body.
    pub payload: Value,
}
event!(BeforeProviderRequestEvent, "before_provider_request");

/// A message starts (user, assistant or tool result).
#[derive(Debug, Clone)]
pub struct MessageStartEvent {
    /// The message.
    pub message: Message,
}
event!(MessageStartEvent, "message_start");

/// An assistant message streams.
#[derive(Debug, Clone)]
pub struct MessageUpdateEvent {
    /// The message so far.
    pub message: AssistantMessage,
    /// The provider event.
    pub event: AssistantMessageEvent,
}
event!(MessageUpdateEvent, "message_update");

/// A message is complete. `message` may be replaced (same role) before it is persisted.
#[derive(Debug, Clone)]
pub struct MessageEndEvent {
    /// The message.
    pub message: Message,
}
event!(MessageEndEvent, "message_end");

/// Before a tool runs: patch `input`, or `block(reason)`. A failing handler blocks the tool.
#[derive(Debug, Clone)]
pub struct ToolCallEvent {
    /// Call id.
    pub tool_call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// Arguments (validated again after handlers).
    pub input: Value,
    /// Set by `block`: the reason the model reads.
    pub blocked: Option<String>,
}
impl ToolCallEvent {
    /// Prevents the call; the model gets an error result with `reason`.
    pub fn block(&mut self, reason: impl Into<String>) {
        self.blocked = Some(reason.into());
    }
}
impl ExtensionEvent for ToolCallEvent {
    const NAME: &'static str = "tool_call";
    fn stopped(&self) -> bool {
        self.blocked.is_some()
    }
    fn on_handler_error(&mut self, extension: &str, error: &str) {
        self.block(format!("Tool call blocked: extension `{extension}` failed: {error}"));
    }
}

/// After a tool ran: edit `content`, `details`, `is_error`.
#[derive(Debug, Clone)]
pub struct ToolResultEvent {
    /// Call id.
    pub tool_call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// Arguments it ran with.
    pub input: Value,
    /// What the model will see.
    pub content: Vec<UserContent>,
    /// Details.
    pub details: Option<Value>,
    /// Error flag.
    pub is_error: bool,
}
event!(ToolResultEvent, "tool_result");

/// A tool started.
#[derive(Debug, Clone)]
pub struct ToolExecutionStartEvent {
    /// Call id.
    pub tool_call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// Arguments.
    pub args: Value,
}
event!(ToolExecutionStartEvent, "tool_execution_start");

/// A tool reported progress.
#[derive(Debug, Clone)]
pub struct ToolExecutionUpdateEvent {
    /// Call id.
    pub tool_call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// Partial result (redacted).
    pub partial_result: ToolResult,
}
event!(ToolExecutionUpdateEvent, "tool_execution_update");

/// A tool finished (fires in completion order).
#[derive(Debug, Clone)]
pub struct ToolExecutionEndEvent {
    /// Call id.
    pub tool_call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// Final result (redacted).
    pub result: ToolResult,
    /// Error flag.
    pub is_error: bool,
}
event!(ToolExecutionEndEvent, "tool_execution_end");

/// Before a process the agent asked for starts: replace `context`. A failing handler fails the spawn.
#[derive(Debug, Clone)]
pub struct ProcessSpawnEvent {
    /// What was asked.
    pub request: ProcessSpawnRequest,
    /// What will be started.
    pub context: ProcessSpawnContext,
    /// Set when a handler failed: the spawn fails with this message.
    pub failed: Option<String>,
}
impl ExtensionEvent for ProcessSpawnEvent {
    const NAME: &'static str = "process_spawn";
    fn stopped(&self) -> bool {
        self.failed.is_some()
    }
    fn on_handler_error(&mut self, extension: &str, error: &str) {
        self.failed = Some(format!("extension `{extension}`: {error}"));
    }
}

/// What a compaction is about to do.
#[derive(Debug, Clone, Default)]
pub struct CompactionPreparation {
    /// Messages that would be summarised.
    pub messages_to_summarize: Vec<Message>,
    /// First entry kept verbatim.
    pub first_kept_entry_id: String,
    /// Context tokens before compaction.
    pub tokens_before: u64,
    /// The previous compaction's summary, if any.
    pub previous_summary: Option<String>,
}

/// An extension's own summary in place of the model's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactionOverride {
    /// Summary text.
    pub summary: String,
    /// Details stored in the entry.
    pub details: Option<Value>,
}

/// Compaction is about to run: `cancel()` it, or set `override_summary`.
#[derive(Debug, Clone, Default)]
pub struct SessionBeforeCompactEvent {
    /// What would be summarised.
    pub preparation: CompactionPreparation,
    /// User instructions (`/compact ...`).
    pub custom_instructions: Option<String>,
    /// Set by `cancel`.
    pub cancelled: bool,
    /// An extension's summary.
    pub override_summary: Option<CompactionOverride>,
}
impl SessionBeforeCompactEvent {
    /// Cancels the compaction.
    pub fn cancel(&mut self) {
        self.cancelled = true;
    }
}
event!(SessionBeforeCompactEvent, "session_before_compact", |e| e.cancelled);

/// A compaction entry was written.
#[derive(Debug, Clone)]
pub struct SessionCompactEvent {
    /// The entry.
    pub compaction: CompactionEntry,
    /// Whether an extension supplied the summary.
    pub from_extension: bool,
}
event!(SessionCompactEvent, "session_compact");

/// The session's model changed.
#[derive(Debug, Clone)]
pub struct ModelSelectEvent {
    /// New model.
    pub model: Model,
    /// Previous model.
    pub previous: Option<Model>,
}
event!(ModelSelectEvent, "model_select");

/// The thinking level changed.
#[derive(Debug, Clone)]
pub struct ThinkingLevelSelectEvent {
    /// New level.
    pub level: ThinkingLevel,
    /// Previous level.
    pub previous: ThinkingLevel,
}
event!(ThinkingLevelSelectEvent, "thinking_level_select");
