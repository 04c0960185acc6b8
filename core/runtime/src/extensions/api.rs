//! The per-extension API object and its binding to the session.

use super::bus::Bus;
use super::handlers::HandlerTable;
use async_trait::async_trait;
use serde_json::Value;
use std::any::{Any, TypeId};
use std::sync::{Arc, Mutex, RwLock, Weak};
use volcanic_abstractions::extensions::{
    CommandDefinition, CommandInfo, Delivery, EventBus, ExecOptions, ExecResult, ExtensionApi, ExtensionError,
    Subscription, ToolInfo,
};
use volcanic_abstractions::messages::{CustomMessage, ImageContent};
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_abstractions::processes::{ProcessSpawnPolicy, SecretRedactor};
use volcanic_abstractions::provider::ProviderRegistration;
use volcanic_abstractions::tools::Tool;

/// What the session does for extension actions. Implemented by `AgentSession`; the runner only
/// holds a weak reference, so an extension cannot keep a session alive.
#[async_trait]
pub trait SessionActions: Send + Sync {
    /// See `ExtensionApi::send_message`.
    fn send_message(
        &self,
        message: CustomMessage,
        delivery: Delivery,
        trigger_turn: bool,
    ) -> Result<(), ExtensionError>;
    /// See `ExtensionApi::send_user_message`.
    fn send_user_message(
        &self,
        text: String,
        images: Vec<ImageContent>,
        delivery: Delivery,
    ) -> Result<(), ExtensionError>;
    /// See `ExtensionApi::append_entry`.
    fn append_entry(&self, custom_type: &str, data: Value) -> Result<(), ExtensionError>;
    /// See `ExtensionApi::set_model`.
    async fn set_model(&self, provider: &str, id: &str) -> Result<bool, ExtensionError>;
    /// Current level.
    fn thinking_level(&self) -> ThinkingLevel;
    /// Sets the level.
    fn set_thinking_level(&self, level: ThinkingLevel) -> Result<(), ExtensionError>;
    /// Active tool names.
    fn active_tools(&self) -> Vec<String>;
    /// Sets active tools.
    fn set_active_tools(&self, names: Vec<String>);
    /// All tools.
    fn all_tools(&self) -> Vec<ToolInfo>;
    /// All commands.
    fn commands(&self) -> Vec<CommandInfo>;
    /// Display name.
    fn session_name(&self) -> Option<String>;
    /// Sets the display name.
    fn set_session_name(&self, name: &str) -> Result<(), ExtensionError>;
    /// Runs a process through the policy (`ExtensionExec`, origin = extension).
    async fn exec(
        &self,
        origin: &str,
        command: &str,
        args: &[String],
        options: ExecOptions,
    ) -> Result<ExecResult, ExtensionError>;
    /// Registers a tool after activation.
    fn register_tool(&self, extension: &str, tool: Arc<dyn Tool>);
    /// Registers a command after activation.
    fn register_command(&self, extension: &str, name: &str, definition: CommandDefinition);
    /// Registers a provider after activation.
    fn register_provider(&self, registration: ProviderRegistration);
    /// Removes a provider.
    fn unregister_provider(&self, name: &str);
}

enum BindState {
    Unbound,
    Bound(Weak<dyn SessionActions>),
    Stale,
}

/// Whether extension actions reach a session: unbound during activation, bound after, stale
/// once the session is replaced or reloaded.
pub struct Binding {
    state: RwLock<BindState>,
}

impl Binding {
    pub(crate) fn new() -> Self {
        Binding {
            state: RwLock::new(BindState::Unbound),
        }
    }

    pub(crate) fn bind(&self, actions: Weak<dyn SessionActions>) {
        *self.state.write().unwrap_or_else(|e| e.into_inner()) = BindState::Bound(actions);
    }

    pub(crate) fn invalidate(&self) {
        *self.state.write().unwrap_or_else(|e| e.into_inner()) = BindState::Stale;
    }

    /// Whether the session was replaced or reloaded.
    pub fn is_stale(&self) -> bool {
        matches!(*self.state.read().unwrap_or_else(|e| e.into_inner()), BindState::Stale)
    }

    /// The session, or the error for calling `member` now.
    pub fn actions(&self, member: &'static str) -> Result<Arc<dyn SessionActions>, ExtensionError> {
        match &*self.state.read().unwrap_or_else(|e| e.into_inner()) {
            BindState::Unbound => Err(ExtensionError::NotBound(member)),
            BindState::Stale => Err(ExtensionError::Stale),
            BindState::Bound(w) => w.upgrade().ok_or(ExtensionError::Stale),
        }
    }
}

/// Registrations made during activation; committed only if activation succeeds.
#[derive(Default)]
pub(crate) struct Staged {
    pub tools: Vec<Arc<dyn Tool>>,
    pub commands: Vec<(String, CommandDefinition)>,
    pub providers: Vec<ProviderRegistration>,
    pub unregister: Vec<String>,
}

/// The `ExtensionApi` of one extension in one session.
pub struct ExtensionApiImpl {
    pub(crate) name: String,
    pub(crate) index: usize,
    pub(crate) staged: Mutex<Option<Staged>>,
    pub(crate) handlers: Arc<HandlerTable>,
    pub(crate) binding: Arc<Binding>,
    pub(crate) bus: Arc<Bus>,
    pub(crate) processes: Arc<dyn ProcessSpawnPolicy>,
}

impl ExtensionApiImpl {
    fn stage<R>(&self, f: impl FnOnce(&mut Staged) -> R) -> Option<R> {
        self.staged.lock().unwrap_or_else(|e| e.into_inner()).as_mut().map(f)
    }

    fn act(&self, member: &'static str) -> Result<Arc<dyn SessionActions>, ExtensionError> {
        self.binding.actions(member)
    }
}

#[async_trait]
impl ExtensionApi for ExtensionApiImpl {
    fn extension_name(&self) -> &str {
        &self.name
    }

    fn on_erased(&self, event: TypeId, name: &'static str, handler: Box<dyn Any + Send + Sync>) -> Subscription {
        // Handlers registered during activation are held back until it succeeds.
        let pending = self.staged.lock().unwrap_or_else(|e| e.into_inner()).is_some();
        let id = self
            .handlers
            .add(event, name, self.index, &self.name, Arc::from(handler), pending);
        let table = self.handlers.clone();
        Subscription::new(move || table.remove(id))
    }

    fn register_tool(&self, tool: Arc<dyn Tool>) {
        let staged = self.stage(|s| s.tools.push(tool.clone()));
        if staged.is_none() {
            match self.act("register_tool") {
                Ok(a) => a.register_tool(&self.name, tool),
                Err(e) => tracing::warn!(extension = %self.name, "register_tool: {e}"),
            }
        }
    }

    fn register_command(&self, name: &str, definition: CommandDefinition) {
        let staged = self.stage(|s| s.commands.push((name.to_owned(), definition.clone())));
        if staged.is_none() {
            match self.act("register_command") {
                Ok(a) => a.register_command(&self.name, name, definition),
                Err(e) => tracing::warn!(extension = %self.name, "register_command: {e}"),
            }
        }
    }

    fn register_provider(&self, registration: ProviderRegistration) {
        let staged = self.stage(|s| s.providers.push(registration.clone()));
        if staged.is_none() {
            match self.act("register_provider") {
                Ok(a) => a.register_provider(registration),
                Err(e) => tracing::warn!(extension = %self.name, "register_provider: {e}"),
            }
        }
    }

    fn unregister_provider(&self, name: &str) {
        let staged = self.stage(|s| {
            s.providers.retain(|p| p.name != name);
            s.unregister.push(name.to_owned());
        });
        if staged.is_none()
            && let Ok(a) = self.act("unregister_provider")
        {
            a.unregister_provider(name);
        }
    }

    fn send_message(
        &self,
        message: CustomMessage,
        delivery: Delivery,
        trigger_turn: bool,
    ) -> Result<(), ExtensionError> {
        self.act("send_message")?.send_message(message, delivery, trigger_turn)
    }

    fn send_user_message(
        &self,
        text: String,
        images: Vec<ImageContent>,
        delivery: Delivery,
    ) -> Result<(), ExtensionError> {
        self.act("send_user_message")?.send_user_message(text, images, delivery)
    }

    fn append_entry(&self, custom_type: &str, data: Value) -> Result<(), ExtensionError> {
        self.act("append_entry")?.append_entry(custom_type, data)
    }

    async fn set_model(&self, provider: &str, id: &str) -> Result<bool, ExtensionError> {
        self.act("set_model")?.set_model(provider, id).await
    }

    fn get_thinking_level(&self) -> Result<ThinkingLevel, ExtensionError> {
        Ok(self.act("get_thinking_level")?.thinking_level())
    }

    fn set_thinking_level(&self, level: ThinkingLevel) -> Result<(), ExtensionError> {
        self.act("set_thinking_level")?.set_thinking_level(level)
    }

    fn get_active_tools(&self) -> Result<Vec<String>, ExtensionError> {
        Ok(self.act("get_active_tools")?.active_tools())
    }

    fn set_active_tools(&self, names: Vec<String>) -> Result<(), ExtensionError> {
        self.act("set_active_tools")?.set_active_tools(names);
        Ok(())
    }

    fn get_all_tools(&self) -> Result<Vec<ToolInfo>, ExtensionError> {
        Ok(self.act("get_all_tools")?.all_tools())
    }

    fn get_commands(&self) -> Result<Vec<CommandInfo>, ExtensionError> {
        Ok(self.act("get_commands")?.commands())
    }

    fn get_session_name(&self) -> Result<Option<String>, ExtensionError> {
        Ok(self.act("get_session_name")?.session_name())
    }

    fn set_session_name(&self, name: &str) -> Result<(), ExtensionError> {
        self.act("set_session_name")?.set_session_name(name)
    }

    async fn exec(&self, command: &str, args: &[String], options: ExecOptions) -> Result<ExecResult, ExtensionError> {
        self.act("exec")?.exec(&self.name, command, args, options).await
    }

    fn events(&self) -> Arc<dyn EventBus> {
        self.bus.clone()
    }

    fn logger(&self) -> tracing::Span {
        // Made when asked, not held: a span kept per extension per loaded session took a slot of
        // the subscriber's registry each (about ten per session), and the registry keeps every
        // slot it ever grew to (docs/benchmarks.md, "Memory over a long run").
        tracing::info_span!("extension", name = %self.name)
    }

    fn processes(&self) -> Arc<dyn ProcessSpawnPolicy> {
        self.processes.clone()
    }

    fn redactor(&self) -> Arc<dyn SecretRedactor> {
        self.processes.redactor()
    }
}
