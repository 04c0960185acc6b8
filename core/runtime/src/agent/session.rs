//! `AgentSession`: the conversation facade a host talks to.

pub use super::error::SessionError;
use super::inner::Inner;
use crate::models::now_ms;
use crate::sessions::SessionManager;
use chrono_tz::Tz;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::extensions::events::{
    ModelSelectEvent, SessionBeforeSwitchEvent, SessionShutdownEvent, SessionStartReason, ThinkingLevelSelectEvent,
};
use volcanic_abstractions::messages::{
    AssistantContent, ImageContent, Message, TextContent, UserBody, UserContent, UserMessage,
};
use volcanic_abstractions::model::{Model, ThinkingLevel};

/// Token and cost figures of the session (`/session`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionStats {
    /// Context tokens: the newest fresh usage plus estimates (4 characters per token) for newer
    /// messages; all estimated right after a compaction (see `compaction::context_tokens`).
    pub context_tokens: u64,
    /// Whether `context_tokens` is only an estimate (no usage since the last compaction).
    pub context_estimated: bool,
    /// The model's window (tokens).
    pub context_window: u64,
    /// Sum of input, output and cache tokens over the branch's assistant messages (compacted
    /// ones included).
    pub total_tokens: u64,
    /// Cost in USD over the branch (compacted messages included).
    pub cost: f64,
    /// Whether the context starts with a compaction summary.
    pub compacted: bool,
    /// Messages in the context.
    pub messages: usize,
    /// The session file.
    pub session_file: Option<PathBuf>,
}

/// One conversation: a session file, its extensions, tools and model, and the agent loop.
/// Cheap to clone (a handle).
#[derive(Clone)]
pub struct AgentSession {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for AgentSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSession")
            .field("session_id", &self.session_id())
            .field("cwd", &self.inner.cwd)
            .finish_non_exhaustive()
    }
}

/// Handle to remove a subscriber.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerId(u64);

impl AgentSession {
    /// Subscribes to session events. Listeners run synchronously on the loop: keep them fast.
    pub fn subscribe(&self, listener: impl Fn(&AgentSessionEvent) + Send + Sync + 'static) -> ListenerId {
        let id = self.inner.next_listener.fetch_add(1, Ordering::Relaxed);
        self.inner
            .subscribers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, Arc::new(listener)));
        ListenerId(id)
    }

    /// Removes a subscriber.
    pub fn unsubscribe(&self, id: ListenerId) {
        self.inner
            .subscribers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(i, _)| *i != id.0);
    }

    /// Session id.
    pub fn session_id(&self) -> String {
        self.inner.lock_manager().session_id().to_owned()
    }

    /// The session file.
    pub fn session_file(&self) -> Option<PathBuf> {
        self.inner.lock_manager().session_file()
    }

    /// Working directory.
    pub fn cwd(&self) -> PathBuf {
        self.inner.cwd.clone()
    }

    /// Current model.
    pub fn model(&self) -> Option<Model> {
        self.inner.lock_state().model.clone()
    }

    /// Models the session can use (provider has a key or needs none).
    pub fn available_models(&self) -> Vec<Model> {
        self.inner.models.read().unwrap_or_else(|e| e.into_inner()).available()
    }

    /// Current thinking level.
    pub fn thinking_level(&self) -> ThinkingLevel {
        self.inner.lock_state().thinking
    }

    /// The session's zone.
    pub fn time_zone(&self) -> Option<Tz> {
        self.inner.lock_state().time_zone
    }

    /// Sets the session's zone (applies from the next run; `TZ` of new processes at once).
    pub fn set_time_zone(&self, tz: Option<Tz>) {
        self.inner.lock_state().time_zone = tz;
    }

    /// Messages of the current context.
    pub fn messages(&self) -> Vec<Message> {
        self.inner.lock_state().messages.clone()
    }

    /// Whether the session was closed ([`dispose`](Self::dispose)): it refuses every run start
    /// and write with [`SessionError::Closed`].
    pub fn is_closed(&self) -> bool {
        self.inner.lock_state().closed()
    }

    /// Whether no run is in progress.
    pub fn is_idle(&self) -> bool {
        !self.inner.lock_state().running()
    }

    /// Waits until no run is in progress.
    pub async fn wait_for_idle(&self) {
        let mut rx = self.inner.idle.subscribe();
        let _ = rx.wait_for(|idle| *idle).await;
    }

    /// Aborts the current run (provider stream and tools are cancelled; queued messages dropped).
    pub fn abort(&self) {
        let mut st = self.inner.lock_state();
        st.steering.clear();
        st.follow_up.clear();
        st.abort.cancel();
    }

    /// Extensions whose activation failed: `(name, error)`.
    pub fn extension_errors(&self) -> Vec<(String, String)> {
        self.inner
            .runner
            .activation_failures()
            .into_iter()
            .map(|f| (f.extension, f.error))
            .collect()
    }

    /// Commands (`name`, description).
    pub fn commands(&self) -> Vec<volcanic_abstractions::extensions::CommandInfo> {
        self.inner.commands.read().unwrap_or_else(|e| e.into_inner()).list()
    }

    /// Switches the model (`provider/id`): persisted as a `model_change` entry.
    pub async fn set_model(&self, key: &str) -> Result<Model, SessionError> {
        let model = self
            .inner
            .models
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .require(key)?;
        self.inner
            .models
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .api_key(&model.provider)?;
        apply_model(&self.inner, model.clone()).await?;
        Ok(model)
    }

    /// The models (`provider/id`, in order) a failed model call goes on with
    /// (docs/providers.md, "Failover").
    pub fn fallback_models(&self) -> Vec<String> {
        self.inner.lock_state().fallback_models.clone()
    }

    /// Sets this session's fallback models (`None`: the factory's). Not persisted in the session
    /// file: the host keeps them with the chat's settings. Errors: a key the registry does not
    /// know or whose provider has no key (nothing is changed).
    pub fn set_fallback_models(&self, keys: Option<Vec<String>>) -> Result<Vec<String>, SessionError> {
        let keys = keys.unwrap_or_else(|| self.inner.config.fallback_models.clone());
        {
            let models = self.inner.models.read().unwrap_or_else(|e| e.into_inner());
            for key in &keys {
                super::failover::usable(&models, key)?;
            }
        }
        self.inner.lock_state().fallback_models = keys.clone();
        Ok(keys)
    }

    /// Sets the thinking level: persisted as a `thinking_level_change` entry.
    pub async fn set_thinking_level(&self, level: ThinkingLevel) -> Result<(), SessionError> {
        apply_thinking(&self.inner, level).await
    }

    /// Starts a new session file in the same scope (`/new`). `Err(Cancelled)` if an extension
    /// vetoed it. Aborts a running run first.
    pub async fn new_session(&self) -> Result<(), SessionError> {
        switch_session(&self.inner, None).await
    }

    /// Token and cost figures.
    pub fn stats(&self) -> SessionStats {
        let tokens = super::compact::current_tokens(&self.inner);
        let st = self.inner.lock_state();
        let (mut total_tokens, mut cost) = st.compacted_totals;
        for m in &st.messages[st.stale_prefix.min(st.messages.len())..] {
            if let Message::Assistant(a) = m {
                total_tokens += a.usage.context_tokens();
                cost += a.usage.cost.total;
            }
        }
        SessionStats {
            context_tokens: tokens.tokens,
            context_estimated: tokens.from_usage == 0,
            context_window: st.model.as_ref().map_or(0, |m| m.context_window),
            total_tokens,
            cost,
            compacted: st.stale_prefix > 0,
            messages: st.messages.len(),
            session_file: self.inner.lock_manager().session_file(),
        }
    }

    /// Compacts the conversation now (`/compact [instructions]`): waits for a run in progress to
    /// end, holds the session busy while the summary is written (prompts that arrive meanwhile are
    /// queued as usual and run afterwards), and returns the `compaction` entry written.
    /// Errors: nothing to compact, no model, the summary request failed, an extension cancelled,
    /// the session was closed ([`SessionError::Closed`]).
    pub async fn compact(
        &self,
        instructions: Option<String>,
    ) -> Result<volcanic_abstractions::sessions::CompactionEntry, SessionError> {
        let (busy, cancel) = loop {
            {
                let mut st = self.inner.lock_state();
                if let Some(busy) = self.inner.try_claim(&mut st)? {
                    break (busy, st.abort.clone());
                }
            }
            self.wait_for_idle().await;
        };
        let result = super::compact::compact(
            &self.inner,
            super::compact::CompactReason::Manual,
            instructions,
            &cancel,
        )
        .await;
        super::run_loop::release(&self.inner, busy);
        Ok(result?)
    }

    /// Closes the session: from now on it refuses every run start and every write to its file
    /// with [`SessionError::Closed`] (a run in progress is aborted). Then lets running turn-end
    /// hooks finish (each within its timeout, all within 10 s), emits `session_shutdown`, and
    /// makes every extension API and context of this session stale. Once: a second call (two
    /// closers at once, e.g. the idle eviction and the shutdown) returns at once.
    pub async fn dispose(&self) {
        {
            let mut st = self.inner.lock_state();
            if st.closed() {
                return;
            }
            st.close();
        }
        self.abort();
        let hooks = self.inner.skill_hooks.wait_turn_end();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), hooks).await;
        let mut ev = SessionShutdownEvent::default();
        self.inner
            .runner
            .emit(&mut ev, &self.inner.ctx(), &CancellationToken::new())
            .await;
        self.inner.runner.invalidate();
    }
}

/// A user message from text and images.
pub(crate) fn user_message(text: String, images: Vec<ImageContent>) -> Message {
    let mut blocks = vec![UserContent::Text(TextContent {
        text,
        text_signature: None,
    })];
    blocks.extend(images.into_iter().map(UserContent::Image));
    Message::User(UserMessage {
        content: UserBody::Blocks(blocks),
        timestamp: now_ms(),
    })
}

pub(crate) async fn apply_model(inner: &Arc<Inner>, model: Model) -> Result<(), SessionError> {
    let previous = {
        let st = inner.lock_state();
        st.ensure_open()?;
        st.model.clone()
    };
    inner.lock_manager().append_model_change(&model.provider, &model.id)?;
    inner.lock_state().model = Some(model.clone());
    let mut ev = ModelSelectEvent { model, previous };
    inner
        .runner
        .emit(&mut ev, &inner.ctx(), &CancellationToken::new())
        .await;
    Ok(())
}

pub(crate) async fn apply_thinking(inner: &Arc<Inner>, level: ThinkingLevel) -> Result<(), SessionError> {
    let previous = {
        let st = inner.lock_state();
        st.ensure_open()?;
        st.thinking
    };
    inner.lock_manager().append_thinking_level_change(level)?;
    inner.lock_state().thinking = level;
    let mut ev = ThinkingLevelSelectEvent { level, previous };
    inner
        .runner
        .emit(&mut ev, &inner.ctx(), &CancellationToken::new())
        .await;
    Ok(())
}

/// `/new` (target `None`) or a switch to another file.
pub(crate) async fn switch_session(inner: &Arc<Inner>, target: Option<PathBuf>) -> Result<(), SessionError> {
    inner.lock_state().ensure_open()?;
    let mut ev = SessionBeforeSwitchEvent {
        target: target.as_ref().map(|p| p.display().to_string()),
        cancelled: false,
    };
    inner
        .runner
        .emit(&mut ev, &inner.ctx(), &CancellationToken::new())
        .await;
    if ev.cancelled {
        return Err(SessionError::Cancelled);
    }
    {
        let mut st = inner.lock_state();
        st.abort.cancel();
        st.steering.clear();
        st.follow_up.clear();
        st.next_turn.clear();
    }
    let mut idle = inner.idle.subscribe();
    let _ = idle.wait_for(|i| *i).await;
    let mut shutdown = SessionShutdownEvent::default();
    inner
        .runner
        .emit(&mut shutdown, &inner.ctx(), &CancellationToken::new())
        .await;
    let store = inner.config.store.clone();
    let manager = match &target {
        None => SessionManager::create(store, &inner.scope, &inner.cwd),
        Some(p) => SessionManager::open(store, &p.clone().into()),
    }?;
    let (model, thinking) = {
        let ctx = manager.build_context();
        let st = inner.lock_state();
        let model = ctx
            .model
            .as_ref()
            .and_then(|(p, id)| {
                inner
                    .models
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .find(&format!("{p}/{id}"))
            })
            .or_else(|| st.model.clone());
        let thinking = if target.is_some() {
            ctx.thinking_level
        } else {
            st.thinking
        };
        (model, thinking)
    };
    *inner.lock_manager() = manager;
    inner.skill_hooks.new_conversation();
    inner.reload_context();
    {
        let mut st = inner.lock_state();
        st.model = model.clone();
        st.thinking = thinking;
    }
    if target.is_none() {
        // A new file starts like pi's: the model and level it runs with.
        let mut mgr = inner.lock_manager();
        if let Some(m) = &model {
            mgr.append_model_change(&m.provider, &m.id)?;
        }
        mgr.append_thinking_level_change(thinking)?;
    }
    // One guard: two `lock_manager()` temporaries in one statement would deadlock.
    let (session_id, session_file) = {
        let mgr = inner.lock_manager();
        (
            mgr.session_id().to_owned(),
            mgr.session_file().map(|p| p.display().to_string()),
        )
    };
    inner.emit(AgentSessionEvent::SessionChanged {
        session_id,
        session_file,
    });
    let reason = if target.is_some() {
        SessionStartReason::Switch
    } else {
        SessionStartReason::New
    };
    inner.session_start(reason).await;
    Ok(())
}

/// Whether an assistant message asks for tools.
pub(crate) fn has_tool_calls(content: &[AssistantContent]) -> bool {
    content.iter().any(|c| matches!(c, AssistantContent::ToolCall(_)))
}
