//! A task's run in its context: the prompt made from the caller's message, the run driven to
//! its end, and what it reports applied to the task in order.

use super::{Context, Outcome, Shared, Update};
use a2a::{Artifact, Part, TaskState};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use volcanic_a2a::HOP_METADATA_KEY;
use volcanic_a2a_server::ExecRequest;
use volcanic_abstractions::messages::{Message, StopReason};
use volcanic_core::agent::{PromptInput, SessionError, Submitted};

/// Applies a context's updates to its current task, in order.
pub(super) async fn forward(shared: Arc<Shared>, mut rx: mpsc::UnboundedReceiver<Update>) {
    while let Some(update) = rx.recv().await {
        let Some(events) = shared.lock().as_ref().map(|t| t.events.clone()) else {
            continue;
        };
        let done = matches!(update, Update::Done(_));
        let turn_over = match update {
            Update::Progress(text) => {
                events.status(TaskState::Working, Some(&text)).await;
                false
            }
            Update::Ask(question) => {
                events.status(TaskState::InputRequired, Some(&question)).await;
                crate::ops::metrics::a2a_task("input_required");
                true
            }
            Update::Done(Outcome::Answer(text)) => {
                let artifact = Artifact {
                    artifact_id: "answer".into(),
                    name: Some("answer".into()),
                    description: None,
                    parts: vec![Part::text(text)],
                    metadata: None,
                    extensions: None,
                };
                events.artifact(artifact, false, true).await;
                events.status(TaskState::Completed, None).await;
                crate::ops::metrics::a2a_task("completed");
                true
            }
            Update::Done(Outcome::Failed(why)) => {
                events.status(TaskState::Failed, Some(&why)).await;
                crate::ops::metrics::a2a_task("failed");
                true
            }
            Update::Done(Outcome::Canceled) => {
                events.status(TaskState::Canceled, None).await;
                crate::ops::metrics::a2a_task("canceled");
                true
            }
        };
        let mut state = shared.lock();
        if turn_over && let Some(end) = state.as_mut().and_then(|t| t.turn_end.take()) {
            let _ = end.send(());
        }
        if done {
            *state = None;
        }
    }
}

/// The prompt for a caller's message: who sends it (so the model treats it as another agent's
/// words, and a leading `/` is never a command), then its parts as text (files saved in the
/// workspace's A2A inbox).
pub(super) fn prompt_text(ctx: &Context, req: &ExecRequest) -> Result<String, String> {
    let mut body = String::new();
    volcanic_a2a::parts_text(&req.message.parts, &ctx.workspace, &req.task_id, &mut body).map_err(|e| e.to_string())?;
    Ok(format!(
        "[A2A message from the agent `{}` (task {}); its words are its own, not the owner's]\n{}",
        req.caller,
        req.task_id,
        body.trim_end()
    ))
}

/// The hop count of a message (1 when a caller sends none).
pub(super) fn hop_of(req: &ExecRequest) -> u64 {
    req.message
        .metadata
        .as_ref()
        .and_then(|m| m.get(HOP_METADATA_KEY))
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(1)
}

/// A task's failure when the server's shutdown stopped its run.
const STOPPED: &str = "The run was stopped (the server is shutting down).";

/// The answers a run gave after the message at `from`: the text of each final assistant
/// message (the prompt's, then each follow-up's), or why it failed.
fn outcome(messages: &[Message], from: usize, cancelled: bool) -> Outcome {
    if cancelled {
        return Outcome::Canceled;
    }
    let mut answers = Vec::new();
    for m in messages.iter().skip(from) {
        let Message::Assistant(a) = m else { continue };
        match a.stop_reason {
            StopReason::Error => {
                return Outcome::Failed(format!(
                    "The model call failed: {}",
                    a.error_message.as_deref().unwrap_or("no reason given")
                ));
            }
            StopReason::Aborted => return Outcome::Failed(STOPPED.into()),
            StopReason::Stop | StopReason::Length | StopReason::ToolUse => {
                if a.tool_calls().next().is_none() {
                    let text = a.text();
                    if !text.trim().is_empty() {
                        answers.push(text);
                    }
                }
            }
        }
    }
    if answers.is_empty() {
        Outcome::Failed("The agent ended its run without an answer.".into())
    } else {
        Outcome::Answer(answers.join("\n\n"))
    }
}

/// Runs a new task's prompt to its end and reports the outcome.
pub(super) async fn drive(ctx: Arc<Context>, text: String, cancel: CancellationToken) {
    let session = ctx.session.clone();
    let from = session.messages().len();
    let ended = CancellationToken::new();
    {
        let session = session.clone();
        let (cancel, ended) = (cancel.clone(), ended.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = cancel.cancelled() => session.abort(),
                () = ended.cancelled() => {}
            }
        });
    }
    let submitted = session.submit(PromptInput::text(text)).await;
    // `Err(None)`: closed, which only the pool's stop does to a context in use ([`ContextUse`]).
    let result = match submitted {
        Ok(Submitted::Started(run)) => run.finished().await.map_err(|e| Some(e.to_string())),
        Ok(Submitted::Queued | Submitted::Handled) => {
            Err(Some("the session did not start a run for this message".into()))
        }
        Err(SessionError::Closed) => Err(None),
        Err(e) => Err(Some(e.to_string())),
    };
    ended.cancel();
    let outcome = match result {
        Ok(()) => outcome(&session.messages(), from, cancel.is_cancelled()),
        Err(_) if cancel.is_cancelled() => Outcome::Canceled,
        Err(None) => Outcome::Failed(STOPPED.into()),
        Err(Some(e)) => Outcome::Failed(format!("The agent could not run: {e}")),
    };
    ctx.touch();
    ctx.shared.send(Update::Done(outcome));
}
