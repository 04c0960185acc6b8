//! The seam between the protocol and whatever does the work: an [`Executor`] runs one turn of a
//! task and reports through [`TaskEvents`]. The test kit's is scripted by message-id prefix (the
//! A2A TCK's behaviours); the bot's, `A2ASessionPool`, runs an agent session per (caller,
//! contextId).

use std::sync::Arc;

use a2a::{Artifact, Message, Part, Role, TaskState};
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::runtime::Tenant;

/// One turn to run: a new task's first message, or the answer to an `input-required` task.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// The authenticated caller's name.
    pub caller: String,
    /// The task's id.
    pub task_id: String,
    /// The task's context id (generated when the message had none).
    pub context_id: String,
    /// The caller's message (1.0 shape, whatever dialect it came in).
    pub message: Message,
    /// Whether this continues a task that was waiting for input.
    pub resumed: bool,
    /// Cancelled when the caller cancels the task (`CancelTask`), also while it waits for input;
    /// the executor should stop soon. One token per task, the same in every turn.
    pub cancel: CancellationToken,
}

/// Runs tasks. Implementations must report a final state (completed, failed, canceled,
/// rejected), an interrupted one (input-required, auth-required), or a direct [`Message`]
/// through `events`; a turn that returns without one fails the task with a message saying so.
#[async_trait]
pub trait Executor: Send + Sync + 'static {
    /// Runs one turn of a task.
    async fn execute(&self, request: ExecRequest, events: TaskEvents);

    /// Whether a task waiting for input can still be answered after the server restarts. When
    /// not (the bot's questions live in a running session), such tasks are failed at start,
    /// saying so, like a task that was working. Default: they can.
    fn questions_survive_restart(&self) -> bool {
        true
    }

    /// Whether a context holds one unfinished task at a time: a new task in a context whose
    /// task is still submitted, working or waiting for input is refused with
    /// `UnsupportedOperation`, naming that task (the bot runs one session per context). Default:
    /// any number.
    fn one_task_per_context(&self) -> bool {
        false
    }

    /// Whether a message carrying the id of a task whose turn is still running is handed to
    /// [`follow_up`](Executor::follow_up) (queued behind the work in progress) instead of being
    /// refused with `UnsupportedOperation`. Default: refused.
    fn takes_follow_ups(&self) -> bool {
        false
    }

    /// A further message for a task whose turn is running (already in the task's history);
    /// the running turn goes on and settles the task. Called only when
    /// [`takes_follow_ups`](Executor::takes_follow_ups) says so.
    async fn follow_up(&self, _request: ExecRequest, _events: TaskEvents) {}
}

/// Where an executor reports a task's progress; every call updates the stored task, the open
/// streams and the push targets, in order.
#[derive(Clone)]
pub struct TaskEvents {
    pub(crate) tenant: Arc<Tenant>,
    pub(crate) task_id: String,
    pub(crate) context_id: String,
}

impl TaskEvents {
    /// Moves the task to `state`, with an optional agent message (e.g. the question of
    /// `input-required`, the reason of `failed`). Ignored once the task is final.
    pub async fn status(&self, state: TaskState, text: Option<&str>) {
        let message = text.map(|t| self.agent_message(vec![Part::text(t)]));
        self.tenant.apply_status(&self.task_id, state, message).await;
    }

    /// Adds an artifact (or a chunk of one: `append` adds its parts to the artifact with the same
    /// id; `last_chunk` marks the end).
    pub async fn artifact(&self, artifact: Artifact, append: bool, last_chunk: bool) {
        self.tenant
            .apply_artifact(&self.task_id, artifact, append, last_chunk)
            .await;
    }

    /// Answers with a direct message instead of a task (only as the turn's first event of a new
    /// task; the task is then forgotten, as the spec's message-only exchange has none).
    pub async fn reply(&self, parts: Vec<Part>) {
        let message = self.agent_message(parts);
        self.tenant.apply_reply(&self.task_id, message).await;
    }

    /// An agent message in this task's context.
    pub fn agent_message(&self, parts: Vec<Part>) -> Message {
        let mut m = Message::new(Role::Agent, parts);
        m.task_id = Some(self.task_id.clone());
        m.context_id = Some(self.context_id.clone());
        m
    }
}
