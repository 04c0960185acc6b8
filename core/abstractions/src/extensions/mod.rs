//! The extension API (spec: extensions.md).
//!
//! An [`Extension`] is instantiated once per session (so its fields are per conversation) and
//! gets its own [`ExtensionApi`] in [`Extension::activate`], where it registers tools, commands,
//! providers and handlers. Registrations commit only if activation succeeds. Action members
//! (`send_message`, `append_entry`, `exec`, ...) return [`ExtensionError::NotBound`] during
//! activation and [`ExtensionError::Stale`] after the session was replaced or reloaded.
//!
//! Handlers have the shape `(event: &mut E, ctx, cancel) -> future of Result<(), BoxError>`:
//!
//! ```no_run
//! use volcanic_abstractions::extensions::{events::ToolCallEvent, ExtensionApi, ExtensionApiExt};
//! fn activate(api: &dyn ExtensionApi) {
//!     api.on::<ToolCallEvent, _>(|e, _ctx, _cancel| {
//!         Box::pin(async move {
//!             if e.tool_name == "bash" { e.block("no shell today"); }
//!             Ok(())
//!         })
//!     });
//! }
//! ```

pub mod context;
pub mod events;

pub use context::{ContextUsage, ExtensionCommandContext, ExtensionContext, ModelCatalog, SessionView};
use events::ExtensionEvent;

use crate::messages::{CustomMessage, ImageContent};
use crate::model::ThinkingLevel;
use crate::processes::{ProcessSpawnPolicy, SecretRedactor};
use crate::provider::ProviderRegistration;
use crate::tools::Tool;
use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::Value;
use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Any error a handler or extension returns.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Errors of the extension API's action members.
#[derive(Debug, thiserror::Error)]
pub enum ExtensionError {
    /// Called during `activate`: do registration there, act from a `session_start` handler.
    #[error("extension API member `{0}` called during activation; call it from a session_start handler instead")]
    NotBound(&'static str),
    /// The API or context belongs to a session that was replaced or reloaded.
    #[error("stale extension context: the session was replaced or reloaded")]
    Stale,
    /// The action failed.
    #[error("{0}")]
    Failed(String),
}

/// A compiled-in extension. One instance per session.
#[async_trait]
pub trait Extension: Send + Sync {
    /// Name (used in logs, `extension_error` events and settings).
    fn name(&self) -> &str;
    /// Registers tools, commands, providers and handlers. An `Err` discards every registration.
    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError>;
}

/// Creates one extension instance per session.
pub type ExtensionFactory = Arc<dyn Fn() -> Box<dyn Extension> + Send + Sync>;

/// How an injected message is delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Delivery {
    /// Taken between tool batches of the current run (or starts a run when idle).
    Steer,
    /// Taken when the current run would end (or starts a run when idle).
    #[default]
    FollowUp,
    /// Held until the next user prompt, appended after it.
    NextTurn,
}

/// A slash command handler: `(arguments after the name, ctx, cancel)`.
pub type CommandHandler = Arc<
    dyn Fn(String, Arc<dyn ExtensionCommandContext>, CancellationToken) -> BoxFuture<'static, Result<(), BoxError>>
        + Send
        + Sync,
>;

/// A slash command.
#[derive(Clone)]
pub struct CommandDefinition {
    /// One line for help menus.
    pub description: String,
    /// The handler.
    pub handler: CommandHandler,
}

impl std::fmt::Debug for CommandDefinition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandDefinition")
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

/// A command as listed by `get_commands`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    /// Name without `/` (after de-duplication: `name_2`, ...).
    pub name: String,
    /// Description.
    pub description: String,
    /// Registering extension, `None` for built-ins.
    pub source: Option<String>,
}

/// A tool as listed by `get_all_tools`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Argument schema.
    pub parameters: Value,
}

/// Options of `ExtensionApi::exec`.
#[derive(Debug, Clone, Default)]
pub struct ExecOptions {
    /// Set (or with `None`, remove) variables on top of the filtered base.
    pub env: BTreeMap<String, Option<String>>,
    /// Working directory; the session's cwd when `None`.
    pub cwd: Option<PathBuf>,
    /// Kill after this many ms.
    pub timeout_ms: Option<u64>,
}

/// Output of `ExtensionApi::exec`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecResult {
    /// Standard output (UTF-8, lossy).
    pub stdout: String,
    /// Standard error (UTF-8, lossy).
    pub stderr: String,
    /// Exit code; `None` when killed by a signal.
    pub code: Option<i32>,
    /// Whether it was killed (timeout or cancel).
    pub killed: bool,
}

/// Unsubscribes a handler. Dropping it keeps the handler registered.
pub struct Subscription(Option<Box<dyn FnOnce() + Send + Sync>>);

impl Subscription {
    /// A subscription that runs `f` on `unsubscribe`.
    pub fn new(f: impl FnOnce() + Send + Sync + 'static) -> Self {
        Subscription(Some(Box::new(f)))
    }
    /// Removes the handler.
    pub fn unsubscribe(mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Subscription")
    }
}

/// Bus shared by the extensions of one session: `emit(channel, data)` calls every `on(channel)`
/// handler synchronously, in subscription order.
pub trait EventBus: Send + Sync {
    /// Emits `data` on `channel`.
    fn emit(&self, channel: &str, data: Value);
    /// Subscribes to `channel`.
    fn on(&self, channel: &str, handler: Arc<dyn Fn(&Value) + Send + Sync>) -> Subscription;
}

/// A handler of event `E` as stored by the runtime.
pub type Handler<E> = Arc<
    dyn for<'a> Fn(&'a mut E, Arc<dyn ExtensionContext>, CancellationToken) -> BoxFuture<'a, Result<(), BoxError>>
        + Send
        + Sync,
>;

/// The per-extension API object. Implemented by the runtime.
#[async_trait]
pub trait ExtensionApi: Send + Sync {
    /// The extension's name.
    fn extension_name(&self) -> &str;
    /// Type-erased subscription; use [`ExtensionApiExt::on`]. `handler` is a `Handler<E>` boxed as
    /// `Any` for the event type `event`.
    fn on_erased(&self, event: TypeId, name: &'static str, handler: Box<dyn Any + Send + Sync>) -> Subscription;
    /// Adds a tool. First registration of a name wins; an extension tool replaces a built-in.
    fn register_tool(&self, tool: Arc<dyn Tool>);
    /// Adds `/name`; a duplicate becomes `name_2`, `name_3`.
    fn register_command(&self, name: &str, definition: CommandDefinition);
    /// Adds an LLM back end.
    fn register_provider(&self, registration: ProviderRegistration);
    /// Removes a provider registered by this extension.
    fn unregister_provider(&self, name: &str);
    /// Injects a custom message (the model sees it as a user message).
    fn send_message(
        &self,
        message: CustomMessage,
        delivery: Delivery,
        trigger_turn: bool,
    ) -> Result<(), ExtensionError>;
    /// Injects a user message; always triggers a turn.
    fn send_user_message(
        &self,
        text: String,
        images: Vec<ImageContent>,
        delivery: Delivery,
    ) -> Result<(), ExtensionError>;
    /// Persists extension state on the branch (a `custom` entry); never enters the model context.
    fn append_entry(&self, custom_type: &str, data: Value) -> Result<(), ExtensionError>;
    /// Switches the session's model (`provider`, `id`); `Ok(false)` when unknown or without a key.
    async fn set_model(&self, provider: &str, id: &str) -> Result<bool, ExtensionError>;
    /// The session's thinking level.
    fn get_thinking_level(&self) -> Result<ThinkingLevel, ExtensionError>;
    /// Sets the session's thinking level.
    fn set_thinking_level(&self, level: ThinkingLevel) -> Result<(), ExtensionError>;
    /// Names of the active tools.
    fn get_active_tools(&self) -> Result<Vec<String>, ExtensionError>;
    /// Activates exactly these tools (unknown names are ignored).
    fn set_active_tools(&self, names: Vec<String>) -> Result<(), ExtensionError>;
    /// Every known tool.
    fn get_all_tools(&self) -> Result<Vec<ToolInfo>, ExtensionError>;
    /// Every command.
    fn get_commands(&self) -> Result<Vec<CommandInfo>, ExtensionError>;
    /// Display name.
    fn get_session_name(&self) -> Result<Option<String>, ExtensionError>;
    /// Sets the display name (a `session_info` entry).
    fn set_session_name(&self, name: &str) -> Result<(), ExtensionError>;
    /// Runs a process in the session directory through the process policy.
    async fn exec(&self, command: &str, args: &[String], options: ExecOptions) -> Result<ExecResult, ExtensionError>;
    /// The session's event bus.
    fn events(&self) -> Arc<dyn EventBus>;
    /// A `tracing` span named after the extension.
    fn logger(&self) -> tracing::Span;
    /// The host's process policy (host hooks only). Works during activation.
    fn processes(&self) -> Arc<dyn ProcessSpawnPolicy>;
    /// The host's secret redactor. Works during activation.
    fn redactor(&self) -> Arc<dyn SecretRedactor>;
}

/// Typed subscription on top of [`ExtensionApi::on_erased`].
pub trait ExtensionApiExt {
    /// Subscribes to `E`.
    fn on<E, F>(&self, handler: F) -> Subscription
    where
        E: ExtensionEvent,
        F: for<'a> Fn(&'a mut E, Arc<dyn ExtensionContext>, CancellationToken) -> BoxFuture<'a, Result<(), BoxError>>
            + Send
            + Sync
            + 'static;
}

impl<A: ExtensionApi + ?Sized> ExtensionApiExt for A {
    fn on<E, F>(&self, handler: F) -> Subscription
    where
        E: ExtensionEvent,
        F: for<'a> Fn(&'a mut E, Arc<dyn ExtensionContext>, CancellationToken) -> BoxFuture<'a, Result<(), BoxError>>
            + Send
            + Sync
            + 'static,
    {
        let h: Handler<E> = Arc::new(handler);
        self.on_erased(TypeId::of::<E>(), E::NAME, Box::new(h))
    }
}
