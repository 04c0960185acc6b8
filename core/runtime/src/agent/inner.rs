//! The insides of a session ([`Inner`]) and the rules for touching them.
//!
//! # Locks
//!
//! `state` ([`State`]) and `manager` (the session file) are `std` mutexes; `tools`, `commands`,
//! `models` and `subscribers` are `std` read-write locks. Every guard lives for a short
//! synchronous section:
//!
//! - never across an `.await`: a run is a spawned task, so its future must be `Send`, and a
//!   `std` guard is not (the compiler refuses; `prompt::tests` checks the futures a host spawns);
//! - never while events go out ([`Inner::emit`], [`Inner::announce`], the extension runner):
//!   listeners and handlers may call back into the session and lock again;
//! - never two at once: copy what is needed out of one, drop its guard, then lock the next (two
//!   `lock_manager()` temporaries in one expression deadlock).
//!
//! # Busy
//!
//! `State::running` says a run or a compaction holds the session. The field is private to this
//! module: it is set only by [`Inner::try_claim`], which hands out the one [`Busy`] token, and
//! cleared only by [`State::unclaim`], which takes that token back (`run_loop::settle` at the end
//! of a run, `run_loop::release` after a compaction). So two runs never overlap, and a run is
//! started only by whoever claimed the session.
//!
//! # Closed
//!
//! `State::closed` is set once, by [`State::close`] (from `AgentSession::dispose`), and never
//! cleared. From then on [`State::ensure_open`] refuses with [`SessionError::Closed`]: a
//! closed session starts no run or compaction ([`Inner::try_claim`] checks it under the same
//! lock as the claim), queues nothing, and appends no entry to its file.

use super::error::SessionError;
use super::factory::FactoryConfig;
use crate::commands::CommandRegistry;
use crate::extensions::ExtensionRunner;
use crate::models::ModelRegistry;
use crate::sessions::SessionManager;
use crate::system_prompt::SystemPromptBuilder;
use crate::tools::ToolRegistry;
use chrono_tz::Tz;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock, Weak};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::extensions::ExtensionContext;
use volcanic_abstractions::extensions::events::{ExtensionEvent, SessionStartEvent, SessionStartReason};
use volcanic_abstractions::messages::Message;
use volcanic_abstractions::model::{Model, ThinkingLevel};
use volcanic_abstractions::sessions::SessionStoreError;
use volcanic_abstractions::ui::{ChatChannel, UserInterface};

pub(crate) type Listener = Arc<dyn Fn(&AgentSessionEvent) + Send + Sync>;

/// The token of a busy session (see the module docs): whoever holds it must end the busy
/// period, by running and settling ([`run_loop::run`](super::run_loop)) or releasing it.
#[derive(Debug)]
#[must_use = "a claimed session stays busy until its token is settled or released"]
pub(crate) struct Busy(());

/// Mutable state of a session (locked by [`Inner::lock_state`]; see the module docs).
pub(crate) struct State {
    pub model: Option<Model>,
    pub thinking: ThinkingLevel,
    pub time_zone: Option<Tz>,
    /// The context: messages on the branch (after the latest compaction).
    pub messages: Vec<Message>,
    /// A run or a compaction holds the session: set by [`Inner::try_claim`], cleared by
    /// [`State::unclaim`] (private: nothing else may change it).
    running: bool,
    /// The session was closed (see the module docs): set by [`State::close`] only.
    closed: bool,
    pub abort: CancellationToken,
    pub steering: VecDeque<Message>,
    pub follow_up: VecDeque<Message>,
    pub next_turn: Vec<Message>,
    pub system_prompt: String,
    /// Tokens and cost of the branch up to the newest compaction (its `details`).
    pub compacted_totals: (u64, f64),
    /// Leading messages from before the newest compaction (stale usage; see
    /// `SessionContext::from_before_compaction`).
    pub stale_prefix: usize,
    /// Models (`provider/id`) a failed call goes on with, in order ([`failover`](super::failover)).
    pub fallback_models: Vec<String>,
    /// The model answering for the rest of the run after a failover (`None`: `model`); set and
    /// cleared by [`failover`](super::failover) only.
    pub answering: Option<Model>,
}

impl State {
    /// The state of a session that is not running, with nothing queued.
    pub fn new(
        model: Option<Model>,
        thinking: ThinkingLevel,
        time_zone: Option<Tz>,
        messages: Vec<Message>,
        compacted_totals: (u64, f64),
        stale_prefix: usize,
    ) -> Self {
        State {
            model,
            thinking,
            time_zone,
            messages,
            running: false,
            closed: false,
            abort: CancellationToken::new(),
            steering: VecDeque::new(),
            follow_up: VecDeque::new(),
            next_turn: Vec::new(),
            system_prompt: String::new(),
            compacted_totals,
            stale_prefix,
            fallback_models: Vec::new(),
            answering: None,
        }
    }

    /// Whether a run or a compaction holds the session.
    pub fn running(&self) -> bool {
        self.running
    }

    /// Closes the session for good (see the module docs).
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// Whether the session was closed.
    pub fn closed(&self) -> bool {
        self.closed
    }

    /// `Err(`[`SessionError::Closed`]`)` once the session was closed.
    pub fn ensure_open(&self) -> Result<(), SessionError> {
        if self.closed {
            return Err(SessionError::Closed);
        }
        Ok(())
    }

    /// Ends the busy period `busy` stood for. The caller then tells the host (`agent_settled`)
    /// and sends `idle`.
    pub fn unclaim(&mut self, busy: Busy) {
        let Busy(()) = busy;
        self.running = false;
    }
}

/// Shared insides of a session.
pub(crate) struct Inner {
    pub config: Arc<FactoryConfig>,
    pub cwd: PathBuf,
    pub scope: String,
    pub manager: Mutex<SessionManager>,
    pub state: Mutex<State>,
    pub tools: RwLock<ToolRegistry>,
    pub commands: RwLock<CommandRegistry>,
    pub models: RwLock<ModelRegistry>,
    pub runner: ExtensionRunner,
    pub subscribers: RwLock<Vec<(u64, Listener)>>,
    pub next_listener: AtomicU64,
    pub ui: Option<Arc<dyn UserInterface>>,
    pub channel: Option<Arc<dyn ChatChannel>>,
    /// The host's check before each model request (`agent::spend`).
    pub spend_gate: Option<Arc<dyn volcanic_abstractions::spend::SpendGate>>,
    /// The skills' hooks and `protected-paths` guard.
    pub skill_hooks: crate::skill_hooks::SkillHookRunner,
    pub prompt_builder: SystemPromptBuilder,
    pub compactor: crate::compaction::Compactor,
    /// Whether no run is in progress. Set with `send_replace`: `send` does nothing while no one
    /// is subscribed, which would leave it `true` during a run.
    pub idle: watch::Sender<bool>,
    pub me: Weak<Inner>,
}

impl Inner {
    /// The session's IANA time zone name, UTC when it has none (as its system prompt says).
    pub fn zone_name(&self) -> String {
        self.lock_state().time_zone.unwrap_or(chrono_tz::UTC).name().to_owned()
    }

    pub fn lock_state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn lock_manager(&self) -> std::sync::MutexGuard<'_, SessionManager> {
        self.manager.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the session busy (running, a fresh abort token, not idle) unless a run or a
    /// compaction already holds it (`Ok(None)`); `st` is this session's state, locked by the
    /// caller (so a check and the claim are one step). The one way a run or a compaction
    /// starts. Errors: [`SessionError::Closed`] once the session was closed.
    pub fn try_claim(&self, st: &mut State) -> Result<Option<Busy>, SessionError> {
        st.ensure_open()?;
        if st.running {
            return Ok(None);
        }
        st.running = true;
        st.abort = CancellationToken::new();
        self.idle.send_replace(false);
        Ok(Some(Busy(())))
    }

    /// Sends a session event to every subscriber (synchronously, in subscription order).
    pub fn emit(&self, event: AgentSessionEvent) {
        let listeners: Vec<Listener> = self
            .subscribers
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(_, l)| l.clone())
            .collect();
        for l in listeners {
            l(&event);
        }
    }

    /// Sends a session event to the host's subscribers, then its counterpart to the extensions:
    /// the order of every paired event of the loop (`agent_start`, `turn_start`, `message_start`,
    /// `tool_execution_start`/`_end`, `turn_end`, `agent_end`).
    pub async fn announce<E: ExtensionEvent>(
        &self,
        host: AgentSessionEvent,
        extensions: &mut E,
        cancel: &CancellationToken,
    ) {
        self.emit(host);
        self.runner.emit(extensions, &self.ctx(), cancel).await;
    }

    pub fn ctx(&self) -> Arc<dyn ExtensionContext> {
        Arc::new(super::context::SessionCtx::new(self.me.clone(), self.runner.binding()))
    }

    pub fn redact(&self, text: &str) -> String {
        volcanic_abstractions::processes::ProcessSpawnPolicy::redactor(&*self.config.processes).redact(text)
    }

    /// Emits `session_start` to extensions, then starts the skills' `session-start` hooks.
    pub async fn session_start(&self, reason: SessionStartReason) {
        let mut start = SessionStartEvent { reason };
        self.runner
            .emit(&mut start, &self.ctx(), &CancellationToken::new())
            .await;
        self.restart_session_hooks();
    }

    /// Puts what the session file has not synced yet on stable storage, waiting on a sync thread
    /// ([`crate::blocking::off_thread`]), never on an async worker.
    pub async fn sync_session(&self) -> Result<(), SessionError> {
        let Some(job) = self.lock_manager().sync_job()? else {
            return Ok(());
        };
        match crate::blocking::off_thread(job).await {
            Some(r) => Ok(r?),
            None => Err(SessionError::Store(SessionStoreError::Io {
                action: "sync",
                path: self.lock_manager().session_file().unwrap_or_default(),
                source: std::io::Error::other("the sync thread stopped (the program is shutting down)"),
            })),
        }
    }

    /// Resets the context from the session file's current branch.
    pub fn reload_context(&self) {
        let ctx = self.lock_manager().build_context();
        let mut st = self.lock_state();
        st.messages = ctx.messages;
        st.compacted_totals = compacted_totals(ctx.compaction.as_ref());
        st.stale_prefix = ctx.from_before_compaction;
    }

    /// What follows every successful compaction: the skills' `session-start` hooks start again
    /// (spec: architecture.md, "One conversation = one AgentSession", step 5).
    pub fn after_compaction(&self) {
        self.restart_session_hooks();
    }
}

/// `(totalTokens, cost)` from a compaction entry's details.
pub(crate) fn compacted_totals(c: Option<&volcanic_abstractions::sessions::CompactionEntry>) -> (u64, f64) {
    let details = c.and_then(|c| c.details.as_ref());
    (
        details
            .and_then(|d| d.get("totalTokens"))
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0),
        details
            .and_then(|d| d.get("cost"))
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(0.0),
    )
}
