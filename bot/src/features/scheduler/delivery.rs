//! The Telegram side of the scheduler: [`TelegramDelivery`] runs a scheduled prompt in the chat's
//! session (queued behind any run in progress) and reports how it ended: the provider's failure
//! after its own retries, or an answer Telegram did not take, is a failure (retried by the
//! scheduler unless a tool had started); a run the shutdown cut off is left to the next start,
//! which follows the message rule (re-run once if no tool had started, else the chat is told);
//! a `/stop` is recorded as such. The first tool the prompt's run starts is recorded in the job's
//! file before it runs ([`ToolStarted`]). What the model says is not judged.

use crate::telegram::{Chat, ChatDelivery, Target, prompt_digest};
use async_trait::async_trait;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::messages::{Message, StopReason};
use volcanic_core::agent::{PromptInput, QueueMode};
use volcanic_scheduler::{DeliveryError, JobDelivery, JobTarget, ScheduledRun, ToolStarted};

/// Delivers scheduled runs into chats (through the host's [`ChatDelivery`], bound to the host
/// once it exists: the scheduler is made before it, since sessions get the scheduler's tool).
#[derive(Debug)]
pub struct TelegramDelivery {
    chats: Arc<ChatDelivery>,
    /// The host's shutdown: a run aborted once it began failed (and is retried after the
    /// restart), while a user's `/stop` is their choice.
    shutdown: CancellationToken,
}

impl TelegramDelivery {
    /// A delivery into `chats`, shutting down with `shutdown`.
    pub fn new(chats: Arc<ChatDelivery>, shutdown: CancellationToken) -> Self {
        TelegramDelivery { chats, shutdown }
    }

    fn chat(&self, to: Target) -> Result<Chat, DeliveryError> {
        self.chats
            .chat(to)
            .ok_or_else(|| DeliveryError::CutOff("the bot is shutting down".into()))
    }

    fn stopping(&self) -> bool {
        self.shutdown.is_cancelled()
    }
}

/// Follows one scheduled prompt through the session's events (a synchronous listener): its
/// user message reaching the transcript (matched by the envelope's first line), the first tool
/// started while it is unanswered (recorded durably before the tool runs), and its answer.
struct RunWatch {
    heading: String,
    tool_started: ToolStarted,
    state: Mutex<WatchState>,
}

#[derive(Default)]
struct WatchState {
    /// The prompt is in the transcript and not answered yet.
    active: bool,
    /// A tool started on its behalf.
    tool: bool,
}

impl RunWatch {
    fn on_event(&self, e: &AgentSessionEvent) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match e {
            AgentSessionEvent::MessageEnd {
                message: Message::User(u),
            } if u.content.text().starts_with(&self.heading) => st.active = true,
            AgentSessionEvent::ToolExecutionStart { tool_name, .. } if st.active && !st.tool => {
                st.tool = true;
                drop(st);
                // On disk before the tool runs: a crash from here on never starts the run again.
                if let Err(e) = self.tool_started.record() {
                    tracing::error!(tool = %tool_name, "cannot record that a scheduled run's tool started: {e}");
                }
            }
            // The prompt's answer (or its run's end by an error or abort).
            AgentSessionEvent::TurnEnd { message, .. } if st.active && message.tool_calls().next().is_none() => {
                st.active = false;
            }
            _ => {}
        }
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
        let chat = self.chat(target(run.target))?;
        let output = chat.output();
        let session = chat
            .session()
            .await
            .map_err(|e| DeliveryError::Failed(format!("cannot open the chat's session: {e:#}")))?;
        // Queued behind a run in progress: failures of that run's answer are not ours.
        session.wait_for_idle().await;
        output.flush().await;
        let failed_before = output.failed_sends();
        let heading = run.prompt.lines().next().unwrap_or_default().to_owned();
        let watch = Arc::new(RunWatch {
            heading: heading.clone(),
            tool_started: run.tool_started.clone(),
            state: Mutex::default(),
        });
        let listener = {
            let watch = watch.clone();
            session.subscribe(move |e| watch.on_event(e))
        };
        // A slot cut off by a crash and run again: its prompt may be in the transcript already.
        let messages = session.messages();
        let key = slot_key(&run.prompt);
        // Its answer's delivery is journaled under this ([`Chat::queue_slot`]).
        let slot_digest = prompt_digest(key);
        let earlier = messages
            .iter()
            .rposition(|m| matches!(m, Message::User(u) if slot_key(&u.content.text()) == key));
        let answered = earlier
            .and_then(|i| crate::telegram::answer_after(&messages, i))
            .and_then(|(at, answer)| match &messages[at] {
                Message::Assistant(a) if a.stop_reason != StopReason::Error => Some((a.timestamp, answer)),
                _ => None,
            });
        if let Some((stamp, answer)) = answered {
            // Answered already: not asked again. Shown by this process (a run that took the prompt
            // along), or before the crash: delivered from the chunk after the last one Telegram
            // took or had on the wire ([`Chat::deliver_slot_answer`]).
            session.unsubscribe(listener);
            if !output.was_shown(stamp) {
                chat.deliver_slot_answer(slot_digest, answer);
                output.flush().await;
            }
            return Ok("sent (an answer the slot already had)".into());
        }
        let prompted = match earlier.filter(|i| i + 1 == messages.len()) {
            // The prompt is the last message: its run goes on from it (not asked twice).
            Some(i) => {
                watch.state.lock().unwrap_or_else(|e| e.into_inner()).active = true;
                let digest = match &messages[i] {
                    Message::User(u) => prompt_digest(&u.content.text()),
                    _ => String::new(),
                };
                chat.resume_slot(slot_digest.clone(), &digest);
                let went_on = session.continue_run().await;
                if !matches!(went_on, Ok(true)) {
                    chat.forget_slot(slot_digest.clone());
                }
                went_on.map(|_| ())
            }
            None => {
                chat.queue_slot(slot_digest.clone(), &run.prompt);
                let input = PromptInput {
                    text: run.prompt,
                    images: Vec::new(),
                    queue: Some(QueueMode::FollowUp),
                };
                let prompted = session.prompt(input).await;
                if prompted.is_err() {
                    chat.forget_slot(slot_digest.clone());
                }
                prompted
            }
        };
        // Queued behind a run in progress: it ran at that run's end.
        session.wait_for_idle().await;
        session.unsubscribe(listener);
        prompted.map_err(|e| DeliveryError::Failed(e.to_string()))?;
        let tool = run.tool_started.was_recorded();
        let outcome = outcome(&session.messages(), &heading, self.stopping(), tool);
        output.flush().await;
        outcome?;
        let undelivered = output.failed_sends() - failed_before;
        if undelivered > 0 {
            return Err(DeliveryError::Failed(format!(
                "{undelivered} part(s) of the answer could not be sent to Telegram"
            )));
        }
        Ok("sent".into())
    }

    async fn notify(&self, to: JobTarget, text: String) -> Result<(), DeliveryError> {
        let chat = self.chat(target(to)).inspect_err(|e| {
            tracing::warn!(chat = to.chat_id, "scheduler notice not sent: {e}");
        })?;
        let output = chat.output();
        let failed_before = output.failed_sends();
        output.notice(text);
        output.flush().await;
        if output.failed_sends() > failed_before {
            return Err(DeliveryError::Failed("Telegram did not take the notice".into()));
        }
        Ok(())
    }
}

/// What names a scheduled prompt's slot: its heading up to the slot's time (`[Scheduled job
/// <id> · <schedule> · slot <time>`), without how late it runs (that differs when a cut-off
/// slot runs again after a restart).
fn slot_key(prompt: &str) -> &str {
    let first = prompt.lines().next().unwrap_or_default();
    if !first.starts_with("[Scheduled job ") {
        return first;
    }
    let end = [" · running ", ". This message"]
        .iter()
        .filter_map(|m| first.find(m))
        .min()
        .unwrap_or(first.len());
    &first[..end]
}

/// How the run of the prompt whose first line is `heading` ended: the last assistant message
/// after it. An error stop is a failure. A run that ended by an abort, or right after a tool
/// batch (its tools cut short), is cut off when the bot is shutting down (`shutting_down`) and
/// stopped otherwise (a user's `/stop`): never `Ok`. `tool`: a tool of the run had started.
fn outcome(messages: &[Message], heading: &str, shutting_down: bool, tool: bool) -> Result<(), DeliveryError> {
    let cut_off = || DeliveryError::CutOff("cut off by the bot's shutdown".into());
    let Some(start) = messages
        .iter()
        .rposition(|m| matches!(m, Message::User(u) if u.content.text().starts_with(heading)))
    else {
        if shutting_down {
            return Err(cut_off());
        }
        return Err(DeliveryError::Failed(
            "the scheduled prompt did not reach the session".into(),
        ));
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
        Some(a) if a.stop_reason == StopReason::Error => Err(DeliveryError::Failed(
            a.error_message
                .clone()
                .unwrap_or_else(|| "the model call failed".into()),
        )),
        Some(a) if matches!(a.stop_reason, StopReason::Aborted | StopReason::ToolUse) => {
            if shutting_down {
                Err(cut_off())
            } else {
                Err(DeliveryError::Stopped(format!(
                    "stopped in the chat{}",
                    if tool { " after a tool had started" } else { "" }
                )))
            }
        }
        Some(_) => Ok(()),
        None if shutting_down => Err(cut_off()),
        None => Err(DeliveryError::Failed("the run ended without an answer".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_named_without_how_late_it_runs() {
        let on_time = "[Scheduled job ab12 · every 1 h · slot Mon 2026-11-30 09:00 CET. This message comes from the scheduler, not typed by the user now.]\nwater the plants";
        let late = "[Scheduled job ab12 · every 1 h · slot Mon 2026-11-30 09:00 CET · running 5 s late: the bot was down. This message comes from the scheduler, not typed by the user now.]\nwater the plants";
        let other = "[Scheduled job ab12 · every 1 h · slot Mon 2026-11-30 10:00 CET. This message comes from the scheduler, not typed by the user now.]";
        assert_eq!(slot_key(on_time), slot_key(late));
        assert_eq!(
            slot_key(on_time),
            "[Scheduled job ab12 · every 1 h · slot Mon 2026-11-30 09:00 CET"
        );
        assert_ne!(slot_key(on_time), slot_key(other));
        assert_eq!(slot_key("hello\nthere"), "hello");
    }

    #[test]
    fn workspace_folders_map_back_to_their_chats() {
        for id in [12345_i64, -4567, -1_001_234_567_890] {
            let key = crate::telegram::chat_key(id);
            assert_eq!(chat_of_workspace(std::path::Path::new(&format!("/w/{key}"))), Some(id));
        }
        assert_eq!(chat_of_workspace(std::path::Path::new("/w/notes")), None);
    }

    fn transcript(stop: StopReason) -> Vec<Message> {
        use volcanic_abstractions::messages::{AssistantMessage, UserBody, UserMessage};
        let mut a = AssistantMessage::empty("anthropic-messages", "anthropic", "m", 0);
        a.stop_reason = stop;
        vec![
            Message::User(UserMessage {
                content: UserBody::Text("[Scheduled job abc]\nrun the backup".into()),
                timestamp: 0,
            }),
            Message::Assistant(a),
        ]
    }

    #[test]
    fn a_run_ended_by_an_abort_or_during_its_tools_is_never_ok() {
        let h = "[Scheduled job abc]";
        for stop in [StopReason::Aborted, StopReason::ToolUse] {
            let m = transcript(stop);
            assert!(matches!(outcome(&m, h, true, true), Err(DeliveryError::CutOff(_))));
            match outcome(&m, h, false, true) {
                Err(DeliveryError::Stopped(e)) => assert!(e.contains("after a tool had started"), "{e}"),
                other => panic!("{other:?}"),
            }
        }
        assert!(outcome(&transcript(StopReason::Stop), h, true, true).is_ok());
        assert!(matches!(
            outcome(&transcript(StopReason::Error), h, false, false),
            Err(DeliveryError::Failed(_))
        ));
        assert!(matches!(outcome(&[], h, true, false), Err(DeliveryError::CutOff(_))));
    }
}
