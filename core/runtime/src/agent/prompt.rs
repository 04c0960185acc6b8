//! Handing user input to a session (spec: architecture.md, "The agent loop", `PromptAsync`).
//!
//! [`AgentSession::submit`] gives a prompt its place and returns: a `/command` ran, an `input`
//! handler consumed it, it was queued behind the run in progress, or a run started with it. The
//! run goes on in a task of its own; its [`RunHandle`] says when and how it ended.
//! [`AgentSession::prompt`] is both in one call.
//!
//! Order by construction: `input` handlers run inside `submit`, so a prompt submitted after
//! `submit` returned is placed after this one, however long those handlers await. A host keeps a
//! chat's messages in order by awaiting each `submit` before handing over the next message, and
//! awaits the runs wherever it likes.

use super::inner::{Busy, Inner};
use super::session::{AgentSession, SessionError, user_message};
use crate::commands::CommandRegistry;
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::events::InputEvent;
use volcanic_abstractions::messages::{ImageContent, Message};

/// How a prompt that arrives during a run is queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueMode {
    /// Taken between tool batches of the current run.
    Steer,
    /// Taken when the current run would end, one at a time.
    FollowUp,
}

/// A prompt: text, images, and what to do if the agent is busy.
#[derive(Debug, Clone, Default)]
pub struct PromptInput {
    /// Text (a `/command` runs the command).
    pub text: String,
    /// Images.
    pub images: Vec<ImageContent>,
    /// Queueing when busy; `None` makes a busy session answer [`SessionError::Busy`].
    pub queue: Option<QueueMode>,
}

impl PromptInput {
    /// Text only, not queued.
    pub fn text(t: impl Into<String>) -> Self {
        PromptInput {
            text: t.into(),
            ..Default::default()
        }
    }
}

/// Where [`AgentSession::submit`] placed a prompt. Whatever it says, a prompt submitted after
/// this one is placed after it.
#[derive(Debug)]
#[must_use = "a started run's handle says when and how it ended"]
pub enum Submitted {
    /// A `/command` ran to its end, or an `input` handler consumed the prompt: nothing of it
    /// reached the transcript.
    Handled,
    /// Queued behind the run in progress, as `PromptInput::queue` said; that run takes it (a
    /// steering message between tool batches, a follow-up when it would end).
    Queued,
    /// A run started with it as its first message.
    Started(RunHandle),
}

/// A run started by [`AgentSession::submit`]. Dropping it leaves the run going.
#[derive(Debug)]
pub struct RunHandle(JoinHandle<Result<(), SessionError>>);

impl RunHandle {
    /// Waits for the end of the run and of follow-up runs that queued prompts started before the
    /// session settled (`agent_settled` has been sent). Errors: what ended the run early (the
    /// session file could not be written, no model); a model's refusal or error is an assistant
    /// message, not an `Err`. A panic in the run is resumed here.
    pub async fn finished(self) -> Result<(), SessionError> {
        match self.0.await {
            Ok(result) => result,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(SessionError::RunCancelled),
        }
    }
}

/// Where a message went: queued behind the run in progress, or the first of a new run's
/// messages (the session is claimed for it: running, with a fresh abort token).
pub(crate) enum Placed {
    Queued,
    Start(Busy, Vec<Message>),
}

/// Queues `message` during a run (`queue` `None`: [`SessionError::Busy`]), or marks the session
/// running and returns the new run's initial messages: `message`, then those held for the next
/// turn. Idle without a model: [`SessionError::NoModel`]; closed: [`SessionError::Closed`].
pub(crate) fn place(inner: &Inner, message: Message, queue: Option<QueueMode>) -> Result<Placed, SessionError> {
    let mut st = inner.lock_state();
    // Also before queueing: a closed session's run was aborted and takes nothing more.
    st.ensure_open()?;
    if st.running() {
        match queue {
            Some(QueueMode::Steer) => st.steering.push_back(message),
            Some(QueueMode::FollowUp) => st.follow_up.push_back(message),
            None => return Err(SessionError::Busy),
        }
        return Ok(Placed::Queued);
    }
    if st.model.is_none() {
        return Err(SessionError::NoModel);
    }
    let Some(busy) = inner.try_claim(&mut st)? else {
        return Err(SessionError::Busy);
    };
    let mut initial = vec![message];
    initial.append(&mut st.next_turn);
    Ok(Placed::Start(busy, initial))
}

impl AgentSession {
    /// Gives user input its place and returns (see the module docs): a registered `/command`
    /// runs at once, even during a run, and is awaited; otherwise the `input` event may transform
    /// or consume the text (its handlers are awaited); then a run starts in its own task, or,
    /// during a run, the prompt is queued as `input.queue` says.
    /// Errors: the command failed, the prompt is empty, the session is busy and `queue` is
    /// `None`, no model is selected, the session was closed ([`SessionError::Closed`]: nothing
    /// of the prompt was taken; hand it to a session opened again).
    pub async fn submit(&self, input: PromptInput) -> Result<Submitted, SessionError> {
        self.inner.lock_state().ensure_open()?;
        if let Some(result) = self.run_command(input.text.trim()).await {
            return result.map(|()| Submitted::Handled);
        }
        let mut ev = InputEvent {
            text: input.text,
            images: input.images,
            handled: false,
        };
        let cancel = self.inner.lock_state().abort.clone();
        self.inner.runner.emit(&mut ev, &self.inner.ctx(), &cancel).await;
        if ev.handled {
            return Ok(Submitted::Handled);
        }
        if ev.text.trim().is_empty() && ev.images.is_empty() {
            return Err(SessionError::EmptyPrompt);
        }
        Ok(
            match place(&self.inner, user_message(ev.text, ev.images), input.queue)? {
                Placed::Queued => Submitted::Queued,
                Placed::Start(busy, initial) => {
                    Submitted::Started(RunHandle(super::run_loop::spawn(self.inner.clone(), busy, initial)))
                }
            },
        )
    }

    /// [`submit`](Self::submit), then, when it started a run, waits for that run's end
    /// ([`RunHandle::finished`]).
    pub async fn prompt(&self, input: PromptInput) -> Result<(), SessionError> {
        match self.submit(input).await? {
            Submitted::Started(run) => run.finished().await,
            Submitted::Handled | Submitted::Queued => Ok(()),
        }
    }

    /// Runs `text` as a registered command; `None` when it names none.
    async fn run_command(&self, text: &str) -> Option<Result<(), SessionError>> {
        let (name, args) = CommandRegistry::parse(text)?;
        let cmd = self
            .inner
            .commands
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()?;
        let ctx = Arc::new(super::context::SessionCtx::new(
            self.inner.me.clone(),
            self.inner.runner.binding(),
        ));
        let result = (cmd.definition.handler)(args.to_owned(), ctx, CancellationToken::new()).await;
        Some(result.map_err(|source| SessionError::Command {
            name: cmd.name.clone(),
            source,
        }))
    }

    /// Queues a steering message (taken between tool batches); starts a run when idle and waits
    /// for it.
    pub async fn steer(&self, text: impl Into<String>) -> Result<(), SessionError> {
        self.prompt(PromptInput {
            text: text.into(),
            images: Vec::new(),
            queue: Some(QueueMode::Steer),
        })
        .await
    }

    /// Queues a follow-up (taken when the run would end); starts a run when idle and waits for it.
    pub async fn follow_up(&self, text: impl Into<String>) -> Result<(), SessionError> {
        self.prompt(PromptInput {
            text: text.into(),
            images: Vec::new(),
            queue: Some(QueueMode::FollowUp),
        })
        .await
    }

    /// Runs the agent on the transcript as it is, without a new message: for a run cut off by a
    /// crash after its prompt was persisted (the prompt is already the last message). Returns
    /// `Ok(false)` without running when the last message is not a user or custom message, or a
    /// run is in progress. Errors: as [`RunHandle::finished`]; no model; the session was closed
    /// ([`SessionError::Closed`]).
    pub async fn continue_run(&self) -> Result<bool, SessionError> {
        let busy = {
            let mut st = self.inner.lock_state();
            st.ensure_open()?;
            let pending = matches!(st.messages.last(), Some(Message::User(_) | Message::Custom(_)));
            if st.running() || !pending {
                return Ok(false);
            }
            if st.model.is_none() {
                return Err(SessionError::NoModel);
            }
            match self.inner.try_claim(&mut st)? {
                Some(busy) => busy,
                None => return Ok(false),
            }
        };
        super::run_loop::run(self.inner.clone(), busy, Vec::new()).await?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send<T: Send>(_: &T) {}

    /// A host spawns these futures; a lock guard held across an `.await` would make them `!Send`
    /// and fail this test's build.
    #[allow(dead_code)]
    fn prompt_futures_are_send(session: AgentSession) {
        send(&session.submit(PromptInput::default()));
        send(&session.prompt(PromptInput::default()));
        send(&session.continue_run());
        send(&session.compact(None));
    }
}
