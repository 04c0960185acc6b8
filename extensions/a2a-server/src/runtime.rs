//! One caller's state ([`Tenant`]): its tasks, their event channels, runs and push queues. The
//! server keeps one per caller (`A2AServerCache` in the spec), so nothing crosses callers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use a2a::{
    A2AError, Artifact, Message, SendMessageRequest, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};
use chrono::Utc;
use futures::FutureExt;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use crate::config::Limits;
use crate::error::{invalid_params, task_not_found, unsupported};
use crate::executor::{ExecRequest, Executor, TaskEvents};
use crate::push::{Delivery, Pusher};
use crate::store::{PushTarget, StoredTask, TaskDir};

/// Events buffered per open stream before a slow reader misses some.
const STREAM_BUFFER: usize = 64;
/// The status message of a task found running after a restart.
pub const INTERRUPTED: &str =
    "The server stopped while this task was running; it did not finish. Send the request again.";

/// The status message of a task that waited for input when the server stopped, with an
/// executor whose questions do not survive a restart.
pub const QUESTION_LOST: &str =
    "The server restarted while this task waited for an answer; its question is gone. Send the request again.";

/// Whether a task waits for the caller (the turn is over but the task is not).
pub fn interrupted(s: &TaskState) -> bool {
    matches!(s, TaskState::InputRequired | TaskState::AuthRequired)
}

struct Record {
    stored: StoredTask,
    tx: broadcast::Sender<StreamResponse>,
    /// Set while a turn runs (the task is busy); a clone of `abort`.
    cancel: Option<CancellationToken>,
    /// Cancelled by `CancelTask`, for the task's whole life: an executor waiting on a question
    /// of an `input-required` task (no turn running) is told too.
    abort: CancellationToken,
    push_queue: Option<mpsc::UnboundedSender<Delivery>>,
    /// Counts turns, so the end of an old turn never touches a newer one.
    turn: u64,
    /// Follow-ups taken during the current turn.
    follow_ups: usize,
}

impl Record {
    fn new(stored: StoredTask) -> Record {
        let buffer = if stored.task.status.state.is_terminal() {
            1
        } else {
            STREAM_BUFFER
        };
        Record {
            stored,
            tx: broadcast::channel(buffer).0,
            cancel: None,
            abort: CancellationToken::new(),
            push_queue: None,
            turn: 0,
            follow_ups: 0,
        }
    }
    fn running(&self) -> bool {
        self.cancel.is_some()
    }
}

/// What a send started: the task as it is now and the stream of what follows.
pub struct Started {
    /// The task right after the message was accepted.
    pub task: Task,
    /// Its events from then on.
    pub events: broadcast::Receiver<StreamResponse>,
}

/// One caller's tasks.
pub struct Tenant {
    /// The caller's name.
    pub name: String,
    tasks: Mutex<HashMap<String, Record>>,
    dir: Option<TaskDir>,
    limits: Limits,
    executor: Arc<dyn Executor>,
    pusher: Arc<Pusher>,
}

/// `task` with only its last `n` history messages (`None`: all; 0: none) and, when
/// `artifacts` is false, no artifacts.
pub fn trimmed(task: &Task, n: Option<usize>, artifacts: bool) -> Task {
    let mut t = task.clone();
    if let (Some(n), Some(h)) = (n, t.history.as_mut()) {
        if n == 0 {
            t.history = None;
        } else if h.len() > n {
            h.drain(..h.len() - n);
        }
    }
    if !artifacts {
        t.artifacts = None;
    }
    t
}

impl Tenant {
    pub(crate) fn new(
        name: String,
        dir: Option<TaskDir>,
        limits: Limits,
        executor: Arc<dyn Executor>,
        pusher: Arc<Pusher>,
    ) -> Result<Arc<Tenant>, crate::ServerError> {
        let mut tasks = HashMap::new();
        if let Some(d) = &dir {
            let questions_lost = !executor.questions_survive_restart();
            for mut stored in d.load()? {
                let why = match stored.task.status.state {
                    TaskState::Submitted | TaskState::Working => Some(INTERRUPTED),
                    ref s if interrupted(s) && questions_lost => Some(QUESTION_LOST),
                    _ => None,
                };
                if let Some(why) = why {
                    let mut m = Message::new(a2a::Role::Agent, vec![a2a::Part::text(why)]);
                    m.task_id = Some(stored.task.id.clone());
                    m.context_id = Some(stored.task.context_id.clone());
                    stored.task.status = TaskStatus {
                        state: TaskState::Failed,
                        message: Some(m),
                        timestamp: Some(Utc::now()),
                    };
                    d.save(&stored);
                }
                tasks.insert(stored.task.id.clone(), Record::new(stored));
            }
        }
        Ok(Arc::new(Tenant {
            name,
            tasks: Mutex::new(tasks),
            dir,
            limits,
            executor,
            pusher,
        }))
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Record>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn save(&self, r: &Record) {
        if let Some(d) = &self.dir {
            d.save(&r.stored);
        }
    }

    /// Sends `event` to the open streams and the push targets of `r`.
    fn publish(&self, r: &mut Record, event: StreamResponse) {
        if !r.stored.push.is_empty() {
            let v1 = serde_json::to_value(&event).unwrap_or_default();
            let v03 = volcanic_a2a_dialect::task_to_03(serde_json::to_value(&r.stored.task).unwrap_or_default());
            let queue = r.push_queue.get_or_insert_with(|| self.pusher.queue());
            let _ = queue.send(Delivery {
                targets: r.stored.push.clone(),
                v1,
                v03,
            });
        }
        let _ = r.tx.send(event);
    }

    /// Accepts a message: a new task, or the answer to a task waiting for input. Starts the
    /// executor's turn and returns the task as accepted with a receiver of what follows.
    pub fn send(self: &Arc<Self>, req: SendMessageRequest, push_v03: bool) -> Result<Started, A2AError> {
        let mut message = req.message;
        if message.message_id.is_empty() {
            return Err(invalid_params("message.messageId is required"));
        }
        if message.parts.is_empty() {
            return Err(invalid_params("message.parts is empty: send at least one part"));
        }
        if message.parts.len() > self.limits.max_parts {
            return Err(invalid_params(format!(
                "message has {} parts; this server takes at most {}",
                message.parts.len(),
                self.limits.max_parts
            )));
        }
        if message.role == a2a::Role::Unspecified {
            message.role = a2a::Role::User;
        }
        let inline_push = req
            .configuration
            .as_ref()
            .and_then(|c| c.task_push_notification_config.clone());
        if let Some(p) = &inline_push {
            crate::push::check_url(&p.url, self.pusher.allow_loopback).map_err(invalid_params)?;
        }
        let mut tasks = self.lock();
        if self.executor.one_task_per_context()
            && message.task_id.as_deref().is_none_or(str::is_empty)
            && let Some(ctx) = message.context_id.as_deref().filter(|c| !c.is_empty())
            && let Some(busy) = tasks
                .values()
                .map(|r| &r.stored.task)
                .find(|t| t.context_id == ctx && !t.status.state.is_terminal())
        {
            return Err(unsupported(format!(
                "this context is busy with task {0}: send the message with taskId {0} to add it to that \
                 task, wait for it to finish, or use another contextId",
                busy.id
            )));
        }
        let running = tasks.values().filter(|r| r.running()).count();
        let (task_id, context_id, resumed) = match message.task_id.clone().filter(|t| !t.is_empty()) {
            Some(id) => {
                let r = tasks.get(&id).ok_or_else(|| task_not_found(&id))?;
                let t = &r.stored.task;
                if let Some(c) = message.context_id.as_deref().filter(|c| !c.is_empty())
                    && c != t.context_id
                {
                    return Err(invalid_params(format!(
                        "message.contextId {c:?} is not the context of task {id} ({:?})",
                        t.context_id
                    )));
                }
                if t.status.state.is_terminal() {
                    return Err(unsupported(format!(
                        "task {id} is already {:?}: it takes no more messages; start a new task",
                        t.status.state
                    )));
                }
                if r.running() && !self.executor.takes_follow_ups() {
                    return Err(unsupported(format!(
                        "task {id} is still working: send the next message when it asks for input or finishes"
                    )));
                }
                (id, t.context_id.clone(), true)
            }
            None => {
                let ctx = message
                    .context_id
                    .clone()
                    .filter(|c| !c.is_empty())
                    .unwrap_or_else(a2a::new_context_id);
                (a2a::new_task_id(), ctx, false)
            }
        };
        let follow_up = resumed && tasks.get(&task_id).is_some_and(Record::running);
        if running >= self.limits.max_concurrent_tasks && !follow_up {
            return Err(unsupported(format!(
                "caller {} already has {running} tasks running (limit {}): wait for one to finish",
                self.name, self.limits.max_concurrent_tasks
            )));
        }
        message.task_id = Some(task_id.clone());
        message.context_id = Some(context_id.clone());
        if !resumed {
            self.evict_settled(&mut tasks);
            let task = Task {
                id: task_id.clone(),
                context_id: context_id.clone(),
                status: TaskStatus {
                    state: TaskState::Submitted,
                    message: None,
                    timestamp: Some(Utc::now()),
                },
                artifacts: None,
                history: Some(Vec::new()),
                metadata: req.metadata.clone(),
            };
            tasks.insert(task_id.clone(), Record::new(StoredTask { task, push: Vec::new() }));
        }
        let Some(r) = tasks.get_mut(&task_id) else {
            return Err(task_not_found(&task_id));
        };
        if follow_up && r.follow_ups >= self.limits.max_follow_ups {
            return Err(unsupported(format!(
                "task {task_id} already has {} messages queued behind its work (limit {}): wait for its answer",
                r.follow_ups, self.limits.max_follow_ups
            )));
        }
        if let Some(p) = &inline_push {
            let id = p.id.as_deref().filter(|i| !i.is_empty()).unwrap_or(&task_id);
            self.check_push_room(r, id)?;
        }
        if let Some(mut p) = inline_push {
            p.task_id = task_id.clone();
            let id =
                p.id.clone()
                    .filter(|i| !i.is_empty())
                    .unwrap_or_else(|| task_id.clone());
            p.id = Some(id.clone());
            r.stored.push.retain(|t| t.config.id.as_deref() != Some(id.as_str()));
            r.stored.push.push(PushTarget {
                config: p,
                v03: push_v03,
            });
        }
        let history = r.stored.task.history.get_or_insert_with(Vec::new);
        history.push(message.clone());
        if history.len() > self.limits.max_history {
            history.drain(..history.len() - self.limits.max_history);
        }
        let cancel = r.abort.clone();
        if follow_up {
            r.follow_ups += 1;
        } else {
            r.cancel = Some(cancel.clone());
            r.turn += 1;
            r.follow_ups = 0;
        }
        let turn = r.turn;
        self.save(r);
        let started = Started {
            task: r.stored.task.clone(),
            events: r.tx.subscribe(),
        };
        drop(tasks);

        let request = ExecRequest {
            caller: self.name.clone(),
            task_id: task_id.clone(),
            context_id: context_id.clone(),
            message,
            resumed,
            cancel,
        };
        let events = TaskEvents {
            tenant: self.clone(),
            task_id: task_id.clone(),
            context_id,
        };
        let me = self.clone();
        if follow_up {
            // The running turn takes it; its end settles the task.
            tokio::spawn(async move { me.executor.follow_up(request, events).await });
            return Ok(started);
        }
        tokio::spawn(async move {
            let run = std::panic::AssertUnwindSafe(me.executor.execute(request, events)).catch_unwind();
            let why = match run.await {
                Ok(()) => "The agent ended its turn without an answer.",
                Err(_) => "The agent failed while working on this task.",
            };
            me.end_turn(&task_id, turn, why);
        });
        Ok(started)
    }

    /// Forgets the oldest settled tasks beyond the kept limit.
    fn evict_settled(&self, tasks: &mut HashMap<String, Record>) {
        while tasks.len() >= self.limits.max_tasks_kept {
            let oldest = tasks
                .values()
                .filter(|r| !r.running())
                .min_by_key(|r| r.stored.task.status.timestamp)
                .map(|r| r.stored.task.id.clone());
            let Some(id) = oldest else { return };
            tasks.remove(&id);
            if let Some(d) = &self.dir {
                d.remove(&id);
            }
        }
    }

    /// After a turn: a task the executor left working fails with `why`.
    fn end_turn(&self, id: &str, turn: u64, why: &str) {
        let mut tasks = self.lock();
        let Some(r) = tasks.get_mut(id) else { return };
        if r.running() && r.turn == turn {
            let state = &r.stored.task.status.state;
            if !state.is_terminal() && !interrupted(state) {
                drop(tasks);
                self.set_status(id, TaskState::Failed, Some(self.agent_text(id, why)));
                return;
            }
            r.cancel = None;
        }
    }

    fn agent_text(&self, id: &str, text: &str) -> Message {
        let mut m = Message::new(a2a::Role::Agent, vec![a2a::Part::text(text)]);
        m.task_id = Some(id.to_owned());
        if let Some(r) = self.lock().get(id) {
            m.context_id = Some(r.stored.task.context_id.clone());
        }
        m
    }

    pub(crate) async fn apply_status(&self, id: &str, state: TaskState, message: Option<Message>) {
        self.set_status(id, state, message);
    }

    fn set_status(&self, id: &str, state: TaskState, message: Option<Message>) {
        let mut tasks = self.lock();
        let Some(r) = tasks.get_mut(id) else { return };
        if r.stored.task.status.state.is_terminal() {
            return;
        }
        let settled = state.is_terminal() || interrupted(&state);
        if let Some(m) = &message {
            let history = r.stored.task.history.get_or_insert_with(Vec::new);
            history.push(m.clone());
            if history.len() > self.limits.max_history {
                history.drain(..history.len() - self.limits.max_history);
            }
        }
        let status = TaskStatus {
            state,
            message,
            timestamp: Some(Utc::now()),
        };
        r.stored.task.status = status.clone();
        if settled {
            r.cancel = None;
        }
        self.save(r);
        let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: id.to_owned(),
            context_id: r.stored.task.context_id.clone(),
            status,
            metadata: None,
        });
        self.publish(r, event);
        if r.stored.task.status.state.is_terminal() {
            // Nothing follows a final state: open streams drain and close, and the channel's
            // buffer is freed (a settled task is only read through GetTask / ListTasks).
            r.tx = broadcast::channel(1).0;
        }
    }

    pub(crate) async fn apply_artifact(&self, id: &str, artifact: Artifact, append: bool, last_chunk: bool) {
        let mut tasks = self.lock();
        let Some(r) = tasks.get_mut(id) else { return };
        if r.stored.task.status.state.is_terminal() {
            return;
        }
        let list = r.stored.task.artifacts.get_or_insert_with(Vec::new);
        match list.iter_mut().find(|a| a.artifact_id == artifact.artifact_id) {
            Some(existing) if append => existing.parts.extend(artifact.parts.iter().cloned()),
            Some(existing) => *existing = artifact.clone(),
            None => list.push(artifact.clone()),
        }
        self.save(r);
        let event = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: id.to_owned(),
            context_id: r.stored.task.context_id.clone(),
            artifact,
            append: append.then_some(true),
            last_chunk: last_chunk.then_some(true),
            metadata: None,
        });
        self.publish(r, event);
    }

    pub(crate) async fn apply_reply(&self, id: &str, message: Message) {
        let mut tasks = self.lock();
        let Some(mut r) = tasks.remove(id) else { return };
        if let Some(d) = &self.dir {
            d.remove(id);
        }
        let _ = r.tx.send(StreamResponse::Message(message));
        r.cancel = None;
    }

    /// The task `id` (`history`: its last n messages).
    pub fn get(&self, id: &str, history: Option<usize>) -> Result<Task, A2AError> {
        let tasks = self.lock();
        let r = tasks.get(id).ok_or_else(|| task_not_found(id))?;
        Ok(trimmed(
            &r.stored.task,
            history.map(|h| h.min(self.limits.max_history)),
            true,
        ))
    }

    /// All tasks matching the filter, newest status first.
    pub fn list(
        &self,
        context: Option<&str>,
        state: Option<&TaskState>,
        after: Option<chrono::DateTime<Utc>>,
    ) -> Vec<Task> {
        let tasks = self.lock();
        let mut out: Vec<Task> = tasks
            .values()
            .map(|r| &r.stored.task)
            .filter(|t| context.is_none_or(|c| t.context_id == c))
            .filter(|t| state.is_none_or(|s| &t.status.state == s))
            .filter(|t| after.is_none_or(|a| t.status.timestamp.is_some_and(|ts| ts > a)))
            .cloned()
            .collect();
        out.sort_by(|a, b| {
            b.status
                .timestamp
                .cmp(&a.status.timestamp)
                .then_with(|| b.id.cmp(&a.id))
        });
        out
    }

    /// Cancels `id`: its run is told to stop and it becomes canceled.
    pub fn cancel(&self, id: &str) -> Result<Task, A2AError> {
        {
            let tasks = self.lock();
            let r = tasks.get(id).ok_or_else(|| task_not_found(id))?;
            if r.stored.task.status.state.is_terminal() {
                return Err(A2AError::task_not_cancelable(id));
            }
            r.abort.cancel();
        }
        self.set_status(id, TaskState::Canceled, None);
        self.get(id, None)
    }

    /// A snapshot of `id` and its events from now on; a settled task has none to give.
    pub fn subscribe(&self, id: &str) -> Result<Started, A2AError> {
        let tasks = self.lock();
        let r = tasks.get(id).ok_or_else(|| task_not_found(id))?;
        if r.stored.task.status.state.is_terminal() {
            return Err(unsupported(format!(
                "task {id} is already {:?}: there is nothing to subscribe to; use GetTask",
                r.stored.task.status.state
            )));
        }
        Ok(Started {
            task: r.stored.task.clone(),
            events: r.tx.subscribe(),
        })
    }

    /// Whether task `r` may take the push config `id` (a new one within the limit, or a
    /// replacement).
    fn check_push_room(&self, r: &Record, id: &str) -> Result<(), A2AError> {
        let replaces = r.stored.push.iter().any(|t| t.config.id.as_deref() == Some(id));
        if !replaces && r.stored.push.len() >= self.limits.max_push_configs {
            return Err(invalid_params(format!(
                "task {} has {} push configs (limit {}): delete one first",
                r.stored.task.id,
                r.stored.push.len(),
                self.limits.max_push_configs
            )));
        }
        Ok(())
    }

    /// Adds or replaces a push config of task `cfg.task_id` (id defaults to the task's id).
    pub fn set_push(
        &self,
        mut cfg: a2a::TaskPushNotificationConfig,
        v03: bool,
    ) -> Result<a2a::TaskPushNotificationConfig, A2AError> {
        crate::push::check_url(&cfg.url, self.pusher.allow_loopback).map_err(invalid_params)?;
        let mut tasks = self.lock();
        let r = tasks
            .get_mut(&cfg.task_id)
            .ok_or_else(|| task_not_found(&cfg.task_id))?;
        let id = cfg
            .id
            .clone()
            .filter(|i| !i.is_empty())
            .unwrap_or_else(|| cfg.task_id.clone());
        self.check_push_room(r, &id)?;
        cfg.id = Some(id.clone());
        cfg.tenant = None;
        r.stored.push.retain(|t| t.config.id.as_deref() != Some(id.as_str()));
        r.stored.push.push(PushTarget {
            config: cfg.clone(),
            v03,
        });
        self.save(r);
        Ok(cfg)
    }

    /// The push configs of task `task_id`.
    pub fn push_configs(&self, task_id: &str) -> Result<Vec<a2a::TaskPushNotificationConfig>, A2AError> {
        let tasks = self.lock();
        let r = tasks.get(task_id).ok_or_else(|| task_not_found(task_id))?;
        Ok(r.stored.push.iter().map(|t| t.config.clone()).collect())
    }

    /// Removes a push config; removing one that is gone is not an error.
    pub fn delete_push(&self, task_id: &str, id: &str) -> Result<(), A2AError> {
        let mut tasks = self.lock();
        let r = tasks.get_mut(task_id).ok_or_else(|| task_not_found(task_id))?;
        r.stored.push.retain(|t| t.config.id.as_deref() != Some(id));
        self.save(r);
        Ok(())
    }
}
