//! The Telegram side of the scheduler: [`TelegramDelivery`] runs a scheduled prompt in the chat's
//! session (queued behind any run in progress) and reports whether it worked: the provider's
//! failure after its own retries, or an answer Telegram did not take, is a failure the scheduler
//! retries; what the model says is not judged.

use super::api::Target;
use super::router::Host;
use async_trait::async_trait;
use std::sync::{OnceLock, Weak};
use volcanic_abstractions::messages::{Message, StopReason};
use volcanic_core::agent::{PromptInput, QueueMode};
use volcanic_scheduler::{DeliveryError, JobDelivery, JobTarget, ScheduledRun};

/// Delivers scheduled runs into chats. The host is set once it exists (the scheduler is made
/// before it: sessions get the scheduler's tool).
#[derive(Debug, Default)]
pub struct TelegramDelivery {
    host: OnceLock<Weak<Host>>,
    /// Set at shutdown: a run aborted then failed (and is retried after the restart), while a
    /// user's `/stop` is their choice.
    shutting_down: std::sync::atomic::AtomicBool,
}

impl TelegramDelivery {
    /// Connects the delivery to the host.
    pub fn bind(&self, host: Weak<Host>) {
        let _ = self.host.set(host);
    }

    /// Marks the shutdown (see the field).
    pub fn shutting_down(&self) {
        self.shutting_down.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn host(&self) -> Result<std::sync::Arc<Host>, DeliveryError> {
        self.host
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| DeliveryError("the bot is shutting down".into()))
    }
}

/// The chat target of a job.
pub fn target(t: JobTarget) -> Target {
    Target {
        chat_id: t.chat_id,
        thread: t.topic.and_then(|x| i32::try_from(x).ok()),
    }
}

/// The chat a workspace folder belongs to: the folder name is the chat key (`123` for a private
/// chat, `g123` for the group -123; see `chats::chat_key`).
pub fn chat_of_workspace(path: &std::path::Path) -> Option<i64> {
    let name = path.file_name()?.to_str()?;
    match name.strip_prefix('g') {
        Some(group) => group.parse::<i64>().ok().map(|id| -id),
        None => name.parse().ok(),
    }
}

/// The job target of a chat.
pub fn job_target(t: Target) -> JobTarget {
    JobTarget {
        chat_id: t.chat_id,
        topic: t.thread.map(i64::from),
    }
}

#[async_trait]
impl JobDelivery for TelegramDelivery {
    async fn run_prompt(&self, run: ScheduledRun) -> Result<String, DeliveryError> {
        let host = self.host()?;
        let slot = host.chats.slot(target(run.target));
        let session = host
            .chats
            .session(&slot)
            .await
            .map_err(|e| DeliveryError(format!("cannot open the chat's session: {e:#}")))?;
        // Queued behind a run in progress: failures of that run's answer are not ours.
        session.wait_for_idle().await;
        slot.output.flush().await;
        let failed_before = slot.output.failed_sends();
        let heading = run.prompt.lines().next().unwrap_or_default().to_owned();
        let input = PromptInput {
            text: run.prompt,
            images: Vec::new(),
            queue: Some(QueueMode::FollowUp),
        };
        session.prompt(input).await.map_err(|e| DeliveryError(e.to_string()))?;
        // Queued behind a run in progress: it ran at that run's end.
        session.wait_for_idle().await;
        let stopping = self.shutting_down.load(std::sync::atomic::Ordering::SeqCst);
        let outcome = outcome(&session.messages(), &heading, stopping);
        slot.output.flush().await;
        outcome?;
        let undelivered = slot.output.failed_sends() - failed_before;
        if undelivered > 0 {
            return Err(DeliveryError(format!(
                "{undelivered} part(s) of the answer could not be sent to Telegram"
            )));
        }
        Ok("sent".into())
    }

    async fn notify(&self, to: JobTarget, text: String) {
        match self.host() {
            Ok(host) => host.chats.slot(target(to)).output.notice(text),
            Err(e) => tracing::warn!(chat = to.chat_id, "scheduler notice not sent: {e}"),
        }
    }
}

/// How the run of the prompt whose first line is `heading` ended: the last assistant message
/// after it. An error stop is a failure, and so is an abort during shutdown; a user's `/stop` is
/// not.
fn outcome(messages: &[Message], heading: &str, shutting_down: bool) -> Result<(), DeliveryError> {
    let Some(start) = messages
        .iter()
        .rposition(|m| matches!(m, Message::User(u) if u.content.text().starts_with(heading)))
    else {
        return Err(DeliveryError("the scheduled prompt did not reach the session".into()));
    };
    let last = messages[start + 1..]
        .iter()
        .take_while(|m| !matches!(m, Message::User(_)))
        .filter_map(|m| match m {
            Message::Assistant(a) => Some(a),
            _ => None,
        })
        .last();
    match last {
        Some(a) if a.stop_reason == StopReason::Error => Err(DeliveryError(
            a.error_message
                .clone()
                .unwrap_or_else(|| "the model call failed".into()),
        )),
        Some(a) if a.stop_reason == StopReason::Aborted && shutting_down => {
            Err(DeliveryError("cut off by the bot's shutdown".into()))
        }
        Some(_) => Ok(()),
        None if shutting_down => Err(DeliveryError("cut off by the bot's shutdown".into())),
        None => Err(DeliveryError("the run ended without an answer".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_folders_map_back_to_their_chats() {
        for id in [12345_i64, -4567, -1_001_234_567_890] {
            let key = super::super::chats::chat_key(id);
            assert_eq!(chat_of_workspace(std::path::Path::new(&format!("/w/{key}"))), Some(id));
        }
        assert_eq!(chat_of_workspace(std::path::Path::new("/w/notes")), None);
    }
}
