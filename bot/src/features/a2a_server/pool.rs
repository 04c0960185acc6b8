//! `A2ASessionPool` (spec: architecture.md, "A2A server"): one agent session per (caller,
//! `contextId`), in the caller's workspace `workspaces/a2a-<caller>/`, one task at a time per
//! context, evicted when idle. It is the server's [`Executor`]: a task's message becomes a
//! prompt; tool starts become `working` updates; the answer becomes the task's artifact; a
//! question of the session's UI becomes `input-required`, answered by the caller's next message.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use a2a::TaskState;
use async_trait::async_trait;
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use volcanic_a2a::INBOUND_EVENT;
use volcanic_a2a_server::{ExecRequest, Executor, TaskEvents};
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::ui::UserInterface;
use volcanic_core::agent::{AgentSession, PromptInput, QueueMode};

use super::gate::{self, SessionBus};
use super::ui::TaskUi;
use crate::features::port::{CallerGrant, ChatPort, OwnSession, Target};
use run::{drive, forward, hop_of, prompt_text};

/// Which tools a caller's sessions may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolPolicy {
    /// Every tool but these.
    AllBut(Vec<String>),
    /// Only these.
    Only(Vec<String>),
}

impl ToolPolicy {
    /// Whether the tool `name` is allowed.
    pub fn allows(&self, name: &str) -> bool {
        match self {
            ToolPolicy::AllBut(denied) => !denied.iter().any(|d| d == name),
            ToolPolicy::Only(allowed) => allowed.iter().any(|a| a == name),
        }
    }
}

/// What the owner lets one caller do.
#[derive(Debug, Clone)]
pub struct CallerPolicy {
    /// Its tools.
    pub tools: ToolPolicy,
    /// The chat it acts for (zone, model, calendar, jobs); `None`: none.
    pub acts_for: Option<Target>,
    /// Model of its new sessions.
    pub model: Option<String>,
}

impl CallerPolicy {
    /// What features learn of the caller `name` with this policy.
    pub fn grant(&self, name: &str) -> CallerGrant {
        CallerGrant {
            name: name.to_owned(),
            bash: self.tools.allows("bash"),
        }
    }
}

/// A context's current task, as its session's run reports into it.
pub struct CurrentTask {
    id: String,
    events: TaskEvents,
    /// The task's cancel token (`CancelTask`).
    pub cancel: CancellationToken,
    /// Where the answer to the open question goes.
    pub question: Option<oneshot::Sender<String>>,
    /// Told when the turn is over (the task asked, or settled).
    turn_end: Option<oneshot::Sender<()>>,
}

/// What a run reports, applied in order by the context's forwarder.
pub enum Update {
    /// A `working` status with this text (a tool started, a notice).
    Progress(String),
    /// `input-required` with this question.
    Ask(String),
    /// The task's end.
    Done(Outcome),
}

/// How a task ended.
pub enum Outcome {
    /// Completed with this answer (the artifact).
    Answer(String),
    /// Failed, saying why.
    Failed(String),
    /// Stopped by `CancelTask` (already `canceled`).
    Canceled,
}

/// What a context's session, UI and forwarder share: the current task and the update queue.
pub struct Shared {
    task: Mutex<Option<CurrentTask>>,
    updates: mpsc::UnboundedSender<Update>,
}

impl Shared {
    /// The current task.
    pub fn lock(&self) -> MutexGuard<'_, Option<CurrentTask>> {
        self.task.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues an update for the current task.
    pub fn send(&self, update: Update) {
        let _ = self.updates.send(update);
    }
}

struct Context {
    session: AgentSession,
    shared: Arc<Shared>,
    bus: SessionBus,
    workspace: PathBuf,
    caller: String,
    last_active: Mutex<Instant>,
    /// The [`ContextUse`]s alive: taken under the pool's `contexts` lock, which eviction checks
    /// it under.
    in_use: AtomicUsize,
}

impl Context {
    fn touch(&self) {
        *self.last_active.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// Whether eviction may close it: unused for the idle time (`idle`; `None`: any time), no
    /// task (running or asking), no run, no [`ContextUse`].
    fn evictable(&self, idle: Option<Duration>) -> bool {
        let unused =
            idle.is_none_or(|idle| self.last_active.lock().unwrap_or_else(|e| e.into_inner()).elapsed() >= idle);
        unused && self.in_use.load(Ordering::SeqCst) == 0 && self.shared.lock().is_none() && self.session.is_idle()
    }

    /// Takes `self` for a use; call it holding the pool's `contexts` lock.
    fn take(self: &Arc<Self>) -> ContextUse {
        self.in_use.fetch_add(1, Ordering::SeqCst);
        self.touch();
        ContextUse(self.clone())
    }
}

/// A context taken by `A2ASessionPool::context` for one request (a task's start or answer, a
/// follow-up): while it lives, neither the idle sweep nor a new context's `make_room` evicts
/// it. Otherwise a context made or found for a task could be evicted before the task was set
/// in it (a flood of new contexts at the caller's bound): the task then ran in a closed session
/// (before closed sessions refused prompts: without its tool gate, whose handlers the close
/// had cleared), while the caller's next message loaded a second copy of its file (issue 25).
struct ContextUse(Arc<Context>);

impl std::ops::Deref for ContextUse {
    type Target = Arc<Context>;
    fn deref(&self) -> &Arc<Context> {
        &self.0
    }
}

impl Drop for ContextUse {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_use.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The sessions of every caller's contexts.
pub struct A2ASessionPool {
    chats: Arc<dyn ChatPort>,
    callers: HashMap<String, CallerPolicy>,
    workspaces_root: PathBuf,
    contexts: tokio::sync::Mutex<HashMap<(String, String), Arc<Context>>>,
    idle: Duration,
    max_contexts: usize,
    shutdown: CancellationToken,
}

/// How long and how many contexts the pool keeps.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// A context's session unused this long is evicted.
    pub idle: Duration,
    /// Most contexts per caller in memory (`[a2a.server] max_contexts_per_caller`).
    pub max_contexts: usize,
}

impl A2ASessionPool {
    /// A pool making sessions through `chats`, for `callers`, within `bounds`.
    pub fn new(
        chats: Arc<dyn ChatPort>,
        callers: HashMap<String, CallerPolicy>,
        workspaces_root: PathBuf,
        bounds: Bounds,
        shutdown: CancellationToken,
    ) -> Arc<A2ASessionPool> {
        Arc::new(A2ASessionPool {
            chats,
            callers,
            workspaces_root,
            contexts: tokio::sync::Mutex::default(),
            idle: bounds.idle,
            max_contexts: bounds.max_contexts,
            shutdown,
        })
    }

    /// The workspace of `caller`.
    pub fn workspace(&self, caller: &str) -> PathBuf {
        super::caller_workspace(&self.workspaces_root, caller)
    }

    /// Starts the idle sweep.
    pub fn start(self: &Arc<Self>) {
        let me = Arc::downgrade(self);
        let shutdown = self.shutdown.clone();
        let every = (self.idle / 2).clamp(Duration::from_millis(500), Duration::from_secs(60));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let Some(pool) = me.upgrade() else { return };
                pool.evict_idle().await;
            }
        });
    }

    /// Drops the contexts idle for longer than the idle time, with no task and no use. Their
    /// sessions close after the lock is given back: idle, they write nothing more, so a new
    /// context on the same file meanwhile is safe.
    async fn evict_idle(&self) {
        let mut gone = Vec::new();
        {
            let mut contexts = self.contexts.lock().await;
            contexts.retain(|_, c| {
                let keep = !c.evictable(Some(self.idle));
                if !keep {
                    gone.push(c.clone());
                }
                keep
            });
        }
        for c in gone {
            tracing::info!(caller = %c.caller, "A2A context session evicted from memory after idling");
            c.session.dispose().await;
        }
    }

    /// Stops every run and closes every session (its running tasks fail at the next start).
    pub async fn stop(&self) {
        let all: Vec<Arc<Context>> = self.contexts.lock().await.drain().map(|(_, c)| c).collect();
        for c in &all {
            c.session.abort();
        }
        for c in all {
            c.session.wait_for_idle().await;
            c.session.dispose().await;
        }
    }

    /// Keeps `caller` under its bound before a new context: at the bound its longest-idle
    /// context with no task and no use is evicted (its session closed in the background); when
    /// every one is working or in use, the new one is refused, saying so.
    fn make_room(&self, contexts: &mut HashMap<(String, String), Arc<Context>>, caller: &str) -> anyhow::Result<()> {
        let mine: Vec<(&(String, String), &Arc<Context>)> = contexts.iter().filter(|((c, _), _)| c == caller).collect();
        if mine.len() < self.max_contexts {
            return Ok(());
        }
        let oldest = mine
            .into_iter()
            .filter(|(_, c)| c.evictable(None))
            .min_by_key(|(_, c)| *c.last_active.lock().unwrap_or_else(|e| e.into_inner()))
            .map(|(key, _)| key.clone());
        let Some(key) = oldest else {
            anyhow::bail!(
                "caller {caller} has {} contexts working already (the bound `max_contexts_per_caller`); \
                 wait for one to finish, or continue one by its contextId",
                self.max_contexts
            );
        };
        if let Some(gone) = contexts.remove(&key) {
            tracing::info!(caller = %caller, "A2A context session evicted to make room for a new one");
            tokio::spawn(async move { gone.session.dispose().await });
        }
        Ok(())
    }

    /// The context `(caller, context_id)`, its session made (or resumed) on first use, taken
    /// for a use (not evicted until the [`ContextUse`] is dropped).
    async fn context(&self, caller: &str, context_id: &str) -> anyhow::Result<ContextUse> {
        let key = (caller.to_owned(), context_id.to_owned());
        let mut contexts = self.contexts.lock().await;
        if let Some(c) = contexts.get(&key) {
            return Ok(c.take());
        }
        let policy = self
            .callers
            .get(caller)
            .ok_or_else(|| anyhow::anyhow!("caller {caller} has no policy"))?;
        self.make_room(&mut contexts, caller)?;
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            task: Mutex::new(None),
            updates: tx,
        });
        let bus = SessionBus::default();
        let workspace = self.workspace(caller);
        // Context ids come from outside: hashed, they cannot name another folder.
        let scope = format!("a2a-{caller}/{}", digest(context_id));
        let ui: Arc<dyn UserInterface> = Arc::new(TaskUi::new(shared.clone()));
        let spec = session_spec(caller, policy, workspace.clone(), scope, Some(ui), bus.clone());
        let session = self.chats.own_session(spec).await?;
        {
            let shared = shared.clone();
            session.subscribe(move |e| {
                if let AgentSessionEvent::ToolExecutionStart { tool_name, .. } = e {
                    shared.send(Update::Progress(format!("Using the tool `{tool_name}`")));
                }
            });
        }
        tokio::spawn(forward(shared.clone(), rx));
        let context = Arc::new(Context {
            session,
            shared,
            bus,
            workspace,
            caller: caller.to_owned(),
            last_active: Mutex::new(Instant::now()),
            in_use: AtomicUsize::new(0),
        });
        contexts.insert(key, context.clone());
        Ok(context.take())
    }
}

/// The session of caller `name` under `policy` in `cwd` with store `scope`: acting for its
/// chat, with its model, kept to its tools by the gate (which leaves the session's bus in
/// `bus`), questions going to `ui`.
pub(super) fn session_spec(
    name: &str,
    policy: &CallerPolicy,
    cwd: PathBuf,
    scope: String,
    ui: Option<Arc<dyn UserInterface>>,
    bus: SessionBus,
) -> OwnSession {
    OwnSession {
        cwd,
        scope,
        acts_for: policy.acts_for,
        model: policy.model.clone(),
        ui,
        extra_extensions: vec![gate::factory(policy.tools.clone(), name.to_owned(), bus)],
        caller: Some(policy.grant(name)),
    }
}

/// The first 12 bytes of the SHA-256 of `id`, in hex: a folder name for an id from outside.
pub(super) fn digest(id: &str) -> String {
    Sha256::digest(id.as_bytes())[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[async_trait]
impl Executor for A2ASessionPool {
    async fn execute(&self, req: ExecRequest, events: TaskEvents) {
        let ctx = match self.context(&req.caller, &req.context_id).await {
            Ok(c) => c,
            Err(e) => {
                let why = format!("Could not open a session for this context: {e:#}");
                events.status(TaskState::Failed, Some(&why)).await;
                crate::ops::metrics::a2a_task("failed");
                return;
            }
        };
        let (end_tx, end_rx) = oneshot::channel();
        if req.resumed {
            let answer_to = {
                let mut state = ctx.shared.lock();
                match state.as_mut().filter(|t| t.id == req.task_id) {
                    Some(t) if t.question.is_some() => {
                        t.turn_end = Some(end_tx);
                        t.question.take()
                    }
                    _ => None,
                }
            };
            let Some(answer_to) = answer_to else {
                let why = "This task's question is no longer open (the server restarted since it was asked): \
                           start a new task.";
                events.status(TaskState::Failed, Some(why)).await;
                crate::ops::metrics::a2a_task("failed");
                return;
            };
            events.status(TaskState::Working, None).await;
            let answer = req.message.text().map(str::to_owned).unwrap_or_else(|| {
                let mut out = String::new();
                let _ = volcanic_a2a::parts_text(&req.message.parts, &ctx.workspace, &req.task_id, &mut out);
                out
            });
            let _ = answer_to.send(answer.trim().to_owned());
        } else {
            let busy = {
                let mut state = ctx.shared.lock();
                match state.as_ref() {
                    Some(t) => Some(t.id.clone()),
                    None => {
                        *state = Some(CurrentTask {
                            id: req.task_id.clone(),
                            events: events.clone(),
                            cancel: req.cancel.clone(),
                            question: None,
                            turn_end: Some(end_tx),
                        });
                        None
                    }
                }
            };
            if let Some(other) = busy {
                // The server admits one unfinished task per context; this is a last guard.
                let why = format!("this context is busy with task {other}");
                events.status(TaskState::Rejected, Some(&why)).await;
                crate::ops::metrics::a2a_task("rejected");
                return;
            }
            let text = match prompt_text(&ctx, &req) {
                Ok(t) => t,
                Err(e) => {
                    ctx.shared.send(Update::Done(Outcome::Failed(format!(
                        "The message could not be read: {e}"
                    ))));
                    let _ = end_rx.await;
                    return;
                }
            };
            if let Some(bus) = ctx.bus.get() {
                bus.emit(INBOUND_EVENT, serde_json::json!({ "hop": hop_of(&req) }));
            }
            events.status(TaskState::Working, None).await;
            tokio::spawn(drive(ctx.clone(), text, req.cancel.clone()));
        }
        let _ = end_rx.await;
    }

    fn questions_survive_restart(&self) -> bool {
        // A question lives in its session's run, which a restart ends.
        false
    }

    fn one_task_per_context(&self) -> bool {
        true
    }

    fn takes_follow_ups(&self) -> bool {
        true
    }

    async fn follow_up(&self, req: ExecRequest, _events: TaskEvents) {
        let Ok(ctx) = self.context(&req.caller, &req.context_id).await else {
            return;
        };
        if ctx.shared.lock().as_ref().is_none_or(|t| t.id != req.task_id) {
            return;
        }
        let Ok(text) = prompt_text(&ctx, &req) else { return };
        let input = PromptInput {
            text,
            images: Vec::new(),
            queue: Some(QueueMode::FollowUp),
        };
        if let Err(e) = ctx.session.submit(input).await {
            tracing::warn!(caller = %req.caller, task = %req.task_id, "an A2A follow-up was not taken: {e}");
        }
    }
}

mod run;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "pool_tests.rs"]
mod tests;
