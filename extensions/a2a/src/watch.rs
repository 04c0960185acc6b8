//! The process-wide [`A2AWatchRegistry`]: follows every task a `send` left running until it
//! settles, then hands its result to the chat through [`A2AResultDelivery`].
//!
//! A task is followed by push when the agent supports it and the host has a public URL (our
//! receiver `/a2a/push/<id>` wakes the follower, which confirms the state with `GetTask` before
//! acting), else by streaming subscribe (`SubscribeToTask` / `tasks/resubscribe`) when the card
//! offers streaming, else by polling `GetTask` with backoff ([`WatchSettings::poll_first`]
//! doubling to [`WatchSettings::poll_max`]). A stream that ends without a final state falls back
//! to polling. Every follower also asks `GetTask` on the slow timer
//! ([`WatchSettings::reconcile_every`]), and the registry re-reads every chat's `pending.json`
//! at start-up and on that timer, so a lost push or a dropped stream never loses a result.
//!
//! Exactly once: a pending entry is removed only after the host said the result's turn was
//! delivered; a crash before that delivers it again after the restart, and the host's delivery
//! (journaled per task, like scheduled deliveries) does not show an answer twice.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use a2a::Task;
use async_trait::async_trait;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use url::Url;

use crate::agents::AgentEntry;
use crate::calls;
use crate::card::AgentCardInfo;
use crate::client::{A2aClient, is_settled};
use crate::error::{A2aError, Result};
use crate::pending::{ChatRef, PENDING_FILE, PendingTask, now_secs, read_pending, write_pending};
use crate::push::{PushSettings, push_token};
use crate::render::{framed, state_name, task_text};

/// Timings and push of the registry.
#[derive(Debug, Clone)]
pub struct WatchSettings {
    /// First pause between polls (issue 14: 5 s).
    pub poll_first: Duration,
    /// Longest pause between polls (issue 14: 60 s); also the first pause before a failed
    /// delivery is tried again (doubling up to `reconcile_every`).
    pub poll_max: Duration,
    /// The slow timer: every follower asks `GetTask` at least this often, and every chat's
    /// `pending.json` is read again (tasks nobody follows get a follower).
    pub reconcile_every: Duration,
    /// Push receivers, when the host has a public URL.
    pub push: Option<PushSettings>,
    /// The folder whose sub-folders are the chats' workspaces (scanned for `pending.json`).
    pub workspaces_root: Option<PathBuf>,
}

impl Default for WatchSettings {
    fn default() -> Self {
        Self {
            poll_first: Duration::from_secs(5),
            poll_max: Duration::from_secs(60),
            reconcile_every: Duration::from_secs(600),
            push: None,
            workspaces_root: None,
        }
    }
}

/// A settled task for the chat, as the follow-up prompt the host hands its session.
#[derive(Debug, Clone)]
pub struct A2AResult {
    /// Where it goes.
    pub chat: ChatRef,
    /// The chat's workspace.
    pub workspace: PathBuf,
    /// The agent's name.
    pub agent: String,
    /// The task.
    pub task_id: String,
    /// Its state (`completed`, `failed`, `canceled`, `rejected`, `input-required`,
    /// `auth-required`, or `not-found` when the agent no longer knows it).
    pub state: String,
    /// The prompt's first line up to `.`: `[A2A result · agent <a> · task <t> · <state>` (with
    /// ` · round <n>` for input-required and auth-required, which may come more than once); the
    /// same for the same result, so the host journals its delivery under it.
    pub key: String,
    /// The whole prompt (the heading, then the task framed as untrusted data).
    pub prompt: String,
}

/// How the host hands a result to the chat's session (queued behind a running turn).
/// `Ok` means its turn ran and its answer was delivered (or was delivered before a restart);
/// only then is the task's entry removed from `pending.json`.
#[async_trait]
pub trait A2AResultDelivery: Send + Sync + std::fmt::Debug {
    /// Delivers `result`; an error (with its reason) is tried again later.
    async fn deliver(&self, result: A2AResult) -> std::result::Result<(), String>;
}

type Key = (PathBuf, String);

#[derive(Debug)]
struct Follow {
    wake: Arc<Notify>,
    push_id: Option<String>,
}

/// The registry (see the module docs). One per process; cheap to share (`Arc`).
#[derive(Debug)]
pub struct A2AWatchRegistry {
    client: Arc<A2aClient>,
    delivery: Arc<dyn A2AResultDelivery>,
    settings: WatchSettings,
    shutdown: CancellationToken,
    /// Tasks with a live follower. Taken together with file updates (`io`).
    followed: Mutex<HashMap<Key, Follow>>,
    /// Serialises every read-modify-write of a `pending.json`.
    io: Mutex<()>,
    /// Problems found (corrupt files), for `/agents` and the log.
    problems: Mutex<Vec<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl A2AWatchRegistry {
    /// A registry on `client` delivering through `delivery`; its followers stop at `shutdown`.
    pub fn new(
        client: Arc<A2aClient>,
        delivery: Arc<dyn A2AResultDelivery>,
        settings: WatchSettings,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Self {
            client,
            delivery,
            settings,
            shutdown,
            followed: Mutex::default(),
            io: Mutex::default(),
            problems: Mutex::default(),
        })
    }

    /// The client it uses.
    pub fn client(&self) -> &Arc<A2aClient> {
        &self.client
    }

    /// Whether push receivers are set up for agents that support push.
    pub fn has_push(&self) -> bool {
        self.settings.push.is_some()
    }

    /// Reconciles every chat's pending tasks now, then on the slow timer, until shutdown.
    pub fn start(self: &Arc<Self>) {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                me.reconcile_all();
                tokio::select! {
                    () = tokio::time::sleep(me.settings.reconcile_every) => {}
                    () = me.shutdown.cancelled() => return,
                }
            }
        });
    }

    /// Gives every pending task of every workspace that has no follower one (which begins with
    /// `GetTask`).
    pub fn reconcile_all(self: &Arc<Self>) {
        let Some(root) = &self.settings.workspaces_root else {
            return;
        };
        let Ok(dirs) = std::fs::read_dir(root) else { return };
        for dir in dirs.flatten() {
            let ws = dir.path();
            if ws.join(PENDING_FILE).is_file() {
                self.reconcile(&ws);
            }
        }
    }

    /// [`reconcile_all`](Self::reconcile_all) for one workspace.
    pub fn reconcile(self: &Arc<Self>, workspace: &Path) {
        let _io = lock(&self.io);
        for entry in self.read(workspace) {
            let key = (workspace.to_path_buf(), entry.task_id.clone());
            let mut followed = lock(&self.followed);
            if followed.contains_key(&key) {
                continue;
            }
            let wake = Arc::new(Notify::new());
            followed.insert(
                key.clone(),
                Follow {
                    wake: wake.clone(),
                    push_id: entry.push_id.clone(),
                },
            );
            tokio::spawn(self.clone().follow(key, entry, wake, true));
        }
    }

    /// The pending tasks of `workspace` (for `/agents`).
    pub fn pending(&self, workspace: &Path) -> Vec<PendingTask> {
        let _io = lock(&self.io);
        self.read(workspace)
    }

    /// Problems found so far (a corrupt `pending.json` set aside, …).
    pub fn problems(&self) -> Vec<String> {
        lock(&self.problems).clone()
    }

    fn read(&self, workspace: &Path) -> Vec<PendingTask> {
        match read_pending(workspace) {
            Ok(list) => list,
            Err(e) => {
                tracing::error!("A2A pending tasks: {e}");
                let mut problems = lock(&self.problems);
                // The last few are enough for /agents (a file unreadable for days repeats).
                if problems.len() >= 10 {
                    problems.remove(0);
                }
                problems.push(e.to_string());
                Vec::new()
            }
        }
    }

    /// Read-modify-write of `workspace`'s `pending.json` (under `io`).
    fn update(&self, workspace: &Path, f: impl FnOnce(&mut Vec<PendingTask>)) -> Result<()> {
        let mut list = self.read(workspace);
        let before = list.clone();
        f(&mut list);
        if list == before {
            return Ok(());
        }
        write_pending(workspace, &list)
    }

    /// Follows `task` of `agent` (whose card is `card`) for the chat `chat` from now on: it is
    /// written to the chat's `pending.json` first, then a push receiver is registered when
    /// possible. Returns how it is followed (`push`, `subscribe` or `polling`).
    ///
    /// # Errors
    /// [`A2aError::File`] when `pending.json` cannot be written (then nothing follows it).
    pub async fn watch(
        self: &Arc<Self>,
        workspace: &Path,
        chat: ChatRef,
        agent: &AgentEntry,
        card: &AgentCardInfo,
        task: &Task,
    ) -> Result<&'static str> {
        let push = self.settings.push.as_ref().filter(|_| card.push);
        let push_id = push.map(|_| uuid::Uuid::new_v4().simple().to_string());
        let mut entry = PendingTask {
            agent: agent.name.clone(),
            url: agent.url.to_string(),
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            chat,
            state: state_name(&task.status.state).to_owned(),
            since: now_secs(),
            push_id: None,
        };
        let key = (workspace.to_path_buf(), task.id.clone());
        let wake = Arc::new(Notify::new());
        {
            let _io = lock(&self.io);
            self.update(workspace, |list| {
                list.retain(|t| t.task_id != entry.task_id);
                list.push(entry.clone());
            })?;
            let mut followed = lock(&self.followed);
            if followed.contains_key(&key) {
                // Followed already (an answer to an input-required task that was not delivered).
                return Ok("already followed");
            }
            followed.insert(
                key.clone(),
                Follow {
                    wake: wake.clone(),
                    push_id: push_id.clone(),
                },
            );
        }
        let mut how = if card.streaming { "subscribe" } else { "polling" };
        if let (Some(push), Some(id)) = (push, &push_id) {
            let url = push.receiver(id);
            let params = calls::push_params(card.dialect, &task.id, url.as_str(), &push_token(&push.key, id));
            match self
                .client
                .rpc_named(card, calls::push_method(card.dialect), params)
                .await
            {
                Ok(_) => {
                    how = "push";
                    entry.push_id = push_id.clone();
                    let _io = lock(&self.io);
                    let marked = self.update(workspace, |list| {
                        for t in list.iter_mut().filter(|t| t.task_id == entry.task_id) {
                            t.push_id.clone_from(&push_id);
                        }
                    });
                    if let Err(e) = marked {
                        tracing::warn!(task = %task.id, "A2A push receiver not recorded: {e}");
                    }
                }
                Err(e) => tracing::warn!(task = %task.id, "A2A push not set up, following otherwise: {e}"),
            }
        }
        tokio::spawn(self.clone().follow(key, entry, wake, false));
        Ok(how)
    }

    /// A push notification for receiver `id`: `token` is what came in `X-A2A-Notification-Token`
    /// (or `A2A-Notification-Token`, or `Authorization: Bearer …`), `body` the JSON body in
    /// either dialect. Wakes the task's follower, which confirms with `GetTask`.
    ///
    /// # Errors
    /// [`PushRefused`] saying why (unknown receiver, wrong token, a body that is not JSON or
    /// names another task).
    pub fn on_push(&self, id: &str, tokens: &[&str], body: &[u8]) -> std::result::Result<(), PushRefused> {
        let push = self.settings.push.as_ref().ok_or(PushRefused::Unknown)?;
        let expected = push_token(&push.key, id);
        if !tokens
            .iter()
            .any(|t| crate::push::same(t.as_bytes(), expected.as_bytes()))
        {
            return Err(PushRefused::Token);
        }
        let followed = lock(&self.followed);
        let (key, follow) = followed
            .iter()
            .find(|(_, f)| f.push_id.as_deref() == Some(id))
            .ok_or(PushRefused::Unknown)?;
        let v: serde_json::Value = serde_json::from_slice(body).map_err(|_| PushRefused::Body)?;
        if calls::pushed_task_id(&v).is_some_and(|t| t != key.1) {
            return Err(PushRefused::Body);
        }
        follow.wake.notify_one();
        Ok(())
    }

    /// Follows one task until its result is delivered or the process stops.
    async fn follow(self: Arc<Self>, key: Key, entry: PendingTask, wake: Arc<Notify>, check_first: bool) {
        let workspace = key.0.clone();
        let mut pause = self.settings.poll_first;
        let mut stream_ok = true;
        let mut check = check_first;
        // After a failed delivery (e.g. the model's provider is down): poll_max, doubling up to
        // the slow timer, so a long outage does not prompt the chat every minute.
        let mut retry = self.settings.poll_max;
        let mut card: Option<AgentCardInfo> = None;
        loop {
            if self.shutdown.is_cancelled() {
                return;
            }
            let c = match &card {
                Some(c) => c.clone(),
                None => match self.card(&entry).await {
                    Ok(c) => {
                        card = Some(c.clone());
                        c
                    }
                    Err(e) => {
                        tracing::warn!(task = %entry.task_id, agent = %entry.agent, "A2A watch: {e}");
                        if !self.pause(&wake, self.settings.poll_max).await {
                            return;
                        }
                        continue;
                    }
                },
            };
            let pushed = entry.push_id.is_some() && self.settings.push.is_some();
            if !check {
                if c.streaming && stream_ok && !pushed {
                    let deadline = Instant::now() + self.settings.reconcile_every;
                    let params = calls::subscribe_params(&entry.task_id);
                    let streamed = tokio::select! {
                        r = self.client.follow_stream(&c, calls::subscribe_method(c.dialect), params, deadline) => r,
                        () = self.shutdown.cancelled() => return,
                    };
                    match streamed {
                        Ok(t) if is_settled(&t.status.state) => {}
                        Ok(_) => {
                            tracing::info!(task = %entry.task_id, "A2A stream ended without a final state; polling");
                            stream_ok = false;
                        }
                        Err(e) => {
                            tracing::info!(task = %entry.task_id, "A2A subscribe failed ({e}); polling");
                            stream_ok = false;
                        }
                    }
                } else {
                    let wait = if pushed { self.settings.reconcile_every } else { pause };
                    if !self.pause(&wake, wait).await {
                        return;
                    }
                    pause = (pause * 2).min(self.settings.poll_max);
                }
            }
            check = false;
            // The state is always confirmed with GetTask before acting.
            let task = match self.client.get_task(&c, &entry.task_id).await {
                Ok(t) => t,
                Err(A2aError::Rpc { code: -32001, .. }) => {
                    let result = self.gone(&entry, &workspace);
                    if self.deliver(&key, result).await || !self.pause(&wake, retry).await {
                        return;
                    }
                    retry = (retry * 2).min(self.settings.reconcile_every.max(self.settings.poll_max));
                    check = true;
                    continue;
                }
                Err(e) => {
                    tracing::warn!(task = %entry.task_id, agent = %entry.agent, "A2A watch: {e}");
                    card = None;
                    continue;
                }
            };
            if !is_settled(&task.status.state) {
                continue;
            }
            match self.result(&entry, &workspace, &task) {
                Ok(result) => {
                    if self.deliver(&key, result).await {
                        return;
                    }
                }
                Err(e) => tracing::error!(task = %entry.task_id, "A2A result not rendered: {e}"),
            }
            if !self.pause(&wake, retry).await {
                return;
            }
            retry = (retry * 2).min(self.settings.reconcile_every.max(self.settings.poll_max));
            check = true;
        }
    }

    async fn card(&self, entry: &PendingTask) -> Result<AgentCardInfo> {
        let url = Url::parse(&entry.url).map_err(|e| A2aError::Invalid(format!("{}: {e}", entry.url)))?;
        self.client.card(&url, false).await
    }

    /// Sleeps `d`, or until woken; `false` at shutdown.
    async fn pause(&self, wake: &Notify, d: Duration) -> bool {
        tokio::select! {
            () = tokio::time::sleep(d) => true,
            () = wake.notified() => true,
            () = self.shutdown.cancelled() => false,
        }
    }

    /// Hands `result` to the host; on success removes the entry and the follower (one critical
    /// section, so a reconcile never sees the entry without its follower). `true` when done.
    async fn deliver(&self, key: &Key, result: A2AResult) -> bool {
        let task_id = result.task_id.clone();
        match self.delivery.deliver(result).await {
            Ok(()) => {
                let _io = lock(&self.io);
                if let Err(e) = self.update(&key.0, |list| list.retain(|t| t.task_id != task_id)) {
                    // Kept: delivered again after a restart, which the host's journal makes a no-op.
                    tracing::error!(task = %task_id, "A2A result delivered but not marked: {e}");
                }
                lock(&self.followed).remove(key);
                true
            }
            Err(e) => {
                if !self.shutdown.is_cancelled() {
                    tracing::warn!(task = %task_id, "A2A result not delivered yet: {e}");
                }
                false
            }
        }
    }

    fn result(&self, entry: &PendingTask, workspace: &Path, task: &Task) -> Result<A2AResult> {
        let state = state_name(&task.status.state);
        let next = match state {
            "input-required" => format!(
                " It asks for input: answer it with the a2a tool (action send, agent `{}`, task_id {}), \
                 asking the user first if you need to.",
                entry.agent, task.id
            ),
            "auth-required" => " It needs an authorization that it must get elsewhere: tell the user.".into(),
            _ => " Tell the user what came of it.".into(),
        };
        let body = task_text(task, workspace, 0)?;
        Ok(self.prompt(entry, workspace, state, &next, &body))
    }

    fn gone(&self, entry: &PendingTask, workspace: &Path) -> A2AResult {
        let body = "The agent answered TaskNotFound (-32001): it no longer knows this task; its result is lost.";
        self.prompt(entry, workspace, "not-found", " Tell the user.", body)
    }

    fn prompt(&self, entry: &PendingTask, workspace: &Path, state: &str, next: &str, body: &str) -> A2AResult {
        // A task may ask for input more than once: each round (a new entry, made by the `send`
        // that answered the last one) is its own delivery.
        let round = match state {
            "input-required" | "auth-required" => format!(" · round {}", entry.since),
            _ => String::new(),
        };
        let key = format!(
            "[A2A result · agent {} · task {} · {state}{round}",
            entry.agent, entry.task_id
        );
        let head = format!(
            "{key}. This message comes from the A2A watch, not typed by the user now.]\n\
             The task you handed to agent `{}` earlier is {state}.{next}",
            entry.agent
        );
        let cap = self.client.settings().result_cap;
        A2AResult {
            chat: entry.chat,
            workspace: workspace.to_path_buf(),
            agent: entry.agent.clone(),
            task_id: entry.task_id.clone(),
            state: state.to_owned(),
            key,
            prompt: framed(&entry.agent, &head, body, cap),
        }
    }
}

/// Why a push notification was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PushRefused {
    /// No task waits on this receiver (HTTP 404).
    #[error("no task waits on this receiver")]
    Unknown,
    /// The token is missing or wrong (HTTP 401).
    #[error("missing or wrong notification token")]
    Token,
    /// The body is not JSON or names another task (HTTP 400).
    #[error("the body is not a task, a status or an artifact event of this receiver's task")]
    Body,
}
