//! What handlers, commands and tools see of their session.

use super::ExtensionError;
use crate::messages::AssistantMessage;
use crate::model::{Model, ThinkingLevel};
use crate::processes::{ProcessSpawnContext, ProcessSpawnError, ProcessSpawnRequest};
use crate::provider::{ProviderContext, StreamOptions};
use crate::sessions::SessionEntry;
use crate::ui::{ChatChannel, UserInterface};
use async_trait::async_trait;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Read-only view of the session's entries.
pub trait SessionView: Send + Sync {
    /// Session id.
    fn session_id(&self) -> String;
    /// Path of the session file, if file-backed.
    fn session_file(&self) -> Option<PathBuf>;
    /// Current leaf entry id.
    fn leaf_id(&self) -> Option<String>;
    /// Entries from the root to the leaf.
    fn branch(&self) -> Vec<SessionEntry>;
    /// One entry.
    fn entry(&self, id: &str) -> Option<SessionEntry>;
    /// The label of an entry, if any.
    fn label(&self, id: &str) -> Option<String>;
}

/// Models known to the session, and provider-neutral nested model calls.
#[async_trait]
pub trait ModelCatalog: Send + Sync {
    /// Every model with a configured provider.
    fn models(&self) -> Vec<Model>;
    /// A model by `provider/id`.
    fn find(&self, key: &str) -> Option<Model>;
    /// One complete (non-streamed to the caller) model call; failures are in the message's
    /// `stopReason`/`errorMessage`. The API key is resolved by the catalog.
    async fn complete(&self, model: &Model, context: ProviderContext, options: StreamOptions) -> AssistantMessage;
}

/// Context usage estimate (tokens).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ContextUsage {
    /// Tokens in the current context (from the last usage, plus estimates for newer messages).
    pub tokens: u64,
    /// The model's window.
    pub context_window: u64,
    /// tokens / window × 100.
    pub percent: f64,
    /// Whether `tokens` is only an estimate (about 4 characters per token): no provider usage
    /// since the last compaction.
    pub estimated: bool,
}

/// Given to handlers and tools.
#[async_trait]
pub trait ExtensionContext: Send + Sync {
    /// Working directory.
    fn cwd(&self) -> PathBuf;
    /// Session id.
    fn session_id(&self) -> String;
    /// The session's IANA zone, if one is set.
    fn time_zone(&self) -> Option<String>;
    /// Whether a UI is attached.
    fn has_ui(&self) -> bool {
        self.ui().is_some()
    }
    /// The UI, if any.
    fn ui(&self) -> Option<Arc<dyn UserInterface>>;
    /// The chat channel, if any.
    fn channel(&self) -> Option<Arc<dyn ChatChannel>>;
    /// Read-only session entries.
    fn session(&self) -> Result<Arc<dyn SessionView>, ExtensionError>;
    /// Models and nested calls.
    fn models(&self) -> Arc<dyn ModelCatalog>;
    /// Current model.
    fn model(&self) -> Option<Model>;
    /// Current thinking level.
    fn thinking_level(&self) -> ThinkingLevel;
    /// Cancelled on abort.
    fn signal(&self) -> CancellationToken;
    /// Whether no run is in progress.
    fn is_idle(&self) -> bool;
    /// Aborts the current run.
    fn abort(&self) -> Result<(), ExtensionError>;
    /// Whether steering or follow-up messages are queued.
    fn has_pending_messages(&self) -> bool;
    /// Context usage estimate.
    fn context_usage(&self) -> Option<ContextUsage>;
    /// The system prompt of the current (or last) run.
    fn system_prompt(&self) -> String;
    /// Requests a compaction: it runs once the session is idle (a run in progress ends first)
    /// and holds it busy meanwhile; the outcome arrives as `session_compact` (and the session
    /// events `compaction_start`/`compaction_end`). Errors: the context is stale.
    fn compact(&self, instructions: Option<String>) -> Result<(), ExtensionError>;
    /// Prepares a process: policy, session `TZ`, then `process_spawn` handlers.
    async fn prepare_process(&self, request: ProcessSpawnRequest) -> Result<ProcessSpawnContext, ProcessSpawnError>;
    /// What the built-in file tools may reach in this session: the process policy's
    /// [`file_boundary`](crate::processes::ProcessSpawnPolicy::file_boundary) for [`cwd`](Self::cwd)
    /// (the sandbox's); `None` (the default): no boundary.
    fn file_boundary(&self) -> Option<crate::processes::FileBoundary> {
        None
    }
}

/// Given to command handlers: a context that can also wait and replace the session.
#[async_trait]
pub trait ExtensionCommandContext: ExtensionContext {
    /// Waits until no run is in progress.
    async fn wait_for_idle(&self);
    /// Starts a new session file (`session_before_switch` may cancel). `Ok(false)` if cancelled.
    async fn new_session(&self) -> Result<bool, ExtensionError>;
    /// Switches to another session file. `Ok(false)` if cancelled.
    async fn switch_session(&self, path: PathBuf) -> Result<bool, ExtensionError>;
}
