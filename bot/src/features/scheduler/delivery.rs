//! The scheduler's delivery into chats: [`ChatJobDelivery`] hands a scheduled prompt into the
//! chat's line through the chat port (queued behind any run in progress) and reports how it ended: the provider's failure
//! after its own retries, or an answer Telegram did not take, is a failure (retried by the
//! scheduler unless a tool had started); a run the shutdown cut off is left to the next start,
//! which follows the message rule (re-run once if no tool had started, else the chat is told);
//! a `/stop` is recorded as such. The first tool the prompt's run starts is recorded in the job's
//! file before it runs ([`ToolStarted`]). What the model says is not judged, but for a quiet
//! check-in's `NOTHING`: such a job runs in a session of its own and only an answer with
//! something to say is told to the chat.

use crate::features::a2a_server::pool::CallerPolicy;
use crate::features::port::{
    ChatPort, Delivered, DownLine, LinePrompt, LineWatch, OwnSession, PortError, Target, answer_after, chat_key,
};
use async_trait::async_trait;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::messages::{Message, StopReason};
use volcanic_abstractions::shortage::plain_text;
use volcanic_core::agent::{PromptInput, SessionError};
use volcanic_scheduler::{
    Answered, CaughtUp, DeliveryError, JobDelivery, JobOrigin, JobTarget, ScheduledRun, ToolStarted,
};

/// Delivers scheduled runs into chats through the host's [`ChatPort`].
#[derive(Debug)]
pub struct ChatJobDelivery {
    chats: Arc<dyn ChatPort>,
    /// The host's shutdown: a run aborted once it began failed (and is retried after the
    /// restart), while a user's `/stop` is their choice.
    shutdown: CancellationToken,
    /// The A2A callers' policies, by name: a caller's job runs with its own.
    callers: Arc<HashMap<String, CallerPolicy>>,
    /// Where the callers' workspaces are.
    workspaces_root: PathBuf,
}

impl ChatJobDelivery {
    /// A delivery into `chats`, shutting down with `shutdown`; the jobs of `callers` run in
    /// sessions of their own under `workspaces_root`.
    pub fn new(
        chats: Arc<dyn ChatPort>,
        shutdown: CancellationToken,
        callers: Arc<HashMap<String, CallerPolicy>>,
        workspaces_root: PathBuf,
    ) -> Self {
        ChatJobDelivery {
            chats,
            shutdown,
            callers,
            workspaces_root,
        }
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

impl LineWatch for RunWatch {
    fn resumed(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).active = true;
    }

    fn on_event(&self, e: &AgentSessionEvent) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match e {
            AgentSessionEvent::MessageEnd {
                message: Message::User(u),
            } => {
                if u.content.text().starts_with(&self.heading) {
                    st.active = true;
                }
            }
            AgentSessionEvent::ToolExecutionStart { tool_name, .. } => {
                if st.active && !st.tool {
                    st.tool = true;
                    drop(st);
                    // On disk before the tool runs: a crash from here on never starts the run again.
                    if let Err(e) = self.tool_started.record() {
                        tracing::error!(tool = %tool_name, "cannot record that a scheduled run's tool started: {e}");
                    }
                }
            }
            // The prompt's answer (or its run's end by an error or abort).
            AgentSessionEvent::TurnEnd { message, .. } => {
                if st.active && message.tool_calls().next().is_none() {
                    st.active = false;
                }
            }
            AgentSessionEvent::MessageEnd { .. }
            | AgentSessionEvent::AgentStart
            | AgentSessionEvent::AgentEnd { .. }
            | AgentSessionEvent::AgentSettled
            | AgentSessionEvent::TurnStart
            | AgentSessionEvent::MessageStart { .. }
            | AgentSessionEvent::MessageUpdate { .. }
            | AgentSessionEvent::ToolExecutionUpdate { .. }
            | AgentSessionEvent::ToolExecutionEnd { .. }
            | AgentSessionEvent::AutoRetryStart { .. }
            | AgentSessionEvent::AutoRetryEnd { .. }
            | AgentSessionEvent::CompactionStart { .. }
            | AgentSessionEvent::CompactionEnd { .. }
            | AgentSessionEvent::ExtensionError { .. }
            | AgentSessionEvent::ModelFallback { .. }
            | AgentSessionEvent::SessionChanged { .. } => {}
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

/// The job target of a chat.
pub fn job_target(t: Target) -> JobTarget {
    JobTarget {
        chat_id: t.chat_id,
        topic: t.thread.map(i64::from),
    }
}

impl ChatJobDelivery {
    /// A job of the caller `name`: run in a session of the caller's own (its tools, its
    /// workspace), never in the chat's; its answer is told to the chat, marked as the caller's.
    async fn run_as_caller(
        &self,
        name: &str,
        run: ScheduledRun,
        watch: Arc<RunWatch>,
    ) -> Result<Answered, DeliveryError> {
        let policy = self.callers.get(name).ok_or_else(|| {
            DeliveryError::Failed(format!(
                "the A2A caller `{name}` is no longer configured ([[a2a.server.callers]]): its job was not run"
            ))
        })?;
        let to = target(run.target);
        let spec = super::super::a2a_server::job_session(&self.workspaces_root, name, policy, to, &run.job_id);
        let heading = format!("Scheduled job {} of the A2A caller `{name}`", run.job_id);
        self.run_own(spec, heading, " (run as the A2A caller)", run, watch)
            .await
    }

    /// A quiet check-in of the chat's own: run in a session of the job's own (the chat's
    /// workspace, tools and settings, scope `<chat>/quiet-<id>`), so nothing shows in the chat
    /// while it checks and its hourly "nothing" does not fill the chat's context; an answer
    /// other than `NOTHING` is told to the chat (docs/scheduling.md, "Quiet check-ins").
    async fn run_quiet(&self, run: ScheduledRun, watch: Arc<RunWatch>) -> Result<Answered, DeliveryError> {
        let to = target(run.target);
        let chat = chat_key(to.chat_id);
        // The id comes from a file the agent can edit: only its letters and digits name a folder.
        let id: String = run
            .job_id
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(32)
            .collect();
        let spec = OwnSession {
            cwd: self.workspaces_root.join(&chat),
            scope: format!("{chat}/quiet-{id}"),
            acts_for: Some(to),
            model: None,
            ui: None,
            extra_extensions: Vec::new(),
            caller: None,
        };
        let heading = format!("🔔 Check-in {}", run.job_id);
        self.run_own(spec, heading, " (quiet check-in)", run, watch).await
    }

    /// Runs `run` in the session `spec` makes and tells the chat its answer under `heading`
    /// (`how` is added to the recorded delivery), unless it is a quiet run's `NOTHING`. Exactly
    /// once, as for the chat's own jobs: a run cut off by a crash before any tool is asked
    /// again, after a tool it is not; a slot whose answer the job's transcript already holds is
    /// not asked again but told from there, unless it was told before the crash ([`TOLD_FILE`]
    /// beside the job's session file names the last slot told).
    async fn run_own(
        &self,
        spec: OwnSession,
        heading: String,
        how: &str,
        run: ScheduledRun,
        watch: Arc<RunWatch>,
    ) -> Result<Answered, DeliveryError> {
        let failed = |why: String| DeliveryError::Failed(why);
        let to = target(run.target);
        let session = self
            .chats
            .own_session(spec)
            .await
            .map_err(|e| failed(format!("cannot open the job's session: {e:#}")))?;
        let key = slot_key(&run.prompt).to_owned();
        let told = session
            .session_file()
            .and_then(|f| f.parent().map(|d| d.join(TOLD_FILE)));
        let quiet = |answer: &str| run.quiet && volcanic_scheduler::envelope::is_nothing(answer);
        if let Some(answer) = slot_answer(&session.messages(), &key) {
            session.dispose().await;
            if quiet(&answer) {
                return Ok(Answered::Quiet);
            }
            if told.as_deref().is_some_and(|f| was_told(f, &key)) {
                return Ok(Answered::Sent(format!("sent before the restart{how}")));
            }
            self.tell_answer(&heading, to, &answer, told.as_deref(), &key).await?;
            return Ok(Answered::Sent(format!("sent (an answer the slot already had{how})")));
        }
        let listener = session.subscribe(move |e| watch.on_event(e));
        let prompted = tokio::select! {
            r = session.prompt(PromptInput::text(run.prompt.clone())) => r.map_err(|e| match e {
                SessionError::Allowance(refused) => DeliveryError::Skipped(refused.message),
                e => failed(e.to_string()),
            }),
            () = self.shutdown.cancelled() => {
                session.abort();
                Err(DeliveryError::CutOff("cut off by the bot's shutdown".into()))
            }
        };
        session.wait_for_idle().await;
        session.unsubscribe(listener);
        let messages = session.messages();
        session.dispose().await;
        prompted.map_err(|e| match e {
            DeliveryError::Failed(e) if self.stopping() => DeliveryError::CutOff(e),
            e => e,
        })?;
        let first_line = run.prompt.lines().next().unwrap_or_default();
        outcome(&messages, first_line, self.stopping(), run.tool_started.was_recorded())?;
        let answer = slot_answer(&messages, &key).unwrap_or_default();
        if quiet(&answer) {
            return Ok(Answered::Quiet);
        }
        self.tell_answer(&heading, to, &answer, told.as_deref(), &key).await?;
        Ok(Answered::Sent(format!("sent{how}")))
    }

    /// Tells the chat `to` a job's `answer` under `heading`, then notes slot `key` as told in
    /// `told`. (A crash between the two tells it again: the window is the write of one small
    /// file.)
    async fn tell_answer(
        &self,
        heading: &str,
        to: Target,
        answer: &str,
        told: Option<&std::path::Path>,
        key: &str,
    ) -> Result<(), DeliveryError> {
        self.chats
            .notice(to, format!("{heading}:\n\n{answer}"))
            .await
            .map_err(|e| DeliveryError::Failed(e.to_string()))?;
        if let Some(file) = told
            && let Err(e) = std::fs::write(file, key)
        {
            tracing::warn!(file = %file.display(), "cannot note a job's answer as told: {e}");
        }
        Ok(())
    }
}

/// Beside a job's own session file (a caller's job, a quiet check-in): the [`slot_key`] of the last slot whose answer was told.
const TOLD_FILE: &str = "told-slot";

/// Whether `file` names slot `key` as told.
fn was_told(file: &std::path::Path, key: &str) -> bool {
    std::fs::read_to_string(file).is_ok_and(|k| k == key)
}

/// The answer `messages` hold for the newest prompt of slot `key`, if its run finished.
fn slot_answer(messages: &[Message], key: &str) -> Option<String> {
    let at = messages
        .iter()
        .rposition(|m| matches!(m, Message::User(u) if slot_key(&u.content.text()) == key))?;
    answer_after(messages, at).map(|(_, text)| text)
}

impl ChatJobDelivery {
    /// [`JobDelivery::run_prompt`] before its failure is made fit for the chat.
    async fn run_in_chat(&self, run: ScheduledRun) -> Result<Answered, DeliveryError> {
        let heading = run.prompt.lines().next().unwrap_or_default().to_owned();
        let watch = Arc::new(RunWatch {
            heading: heading.clone(),
            tool_started: run.tool_started.clone(),
            state: Mutex::default(),
        });
        match &run.origin {
            JobOrigin::Chat if run.quiet => return self.run_quiet(run, watch).await,
            JobOrigin::Chat => {}
            JobOrigin::Caller { name } => {
                let name = name.clone();
                return self.run_as_caller(&name, run, watch).await;
            }
        }
        // A slot cut off by a crash and run again: its prompt may be in the transcript already.
        let key = slot_key(&run.prompt).to_owned();
        let line = LinePrompt {
            to: target(run.target),
            key: key.clone(),
            is_this: Box::new(move |text| slot_key(text) == key),
            text: run.prompt,
            watch: Some(watch),
        };
        let delivered = self.chats.deliver(line).await.map_err(|e| match e {
            PortError::ShuttingDown => DeliveryError::CutOff(e.to_string()),
            // The chat's allowance is spent: no request was made (the gate told the chat, once).
            PortError::Spent(why) => DeliveryError::Skipped(why),
            PortError::Session(_) | PortError::Prompt(_) | PortError::Refused(_) => {
                DeliveryError::Failed(e.to_string())
            }
        })?;
        let (messages, undelivered) = match delivered {
            Delivered::Earlier => return Ok(Answered::Sent("sent (an answer the slot already had)".into())),
            Delivered::Ran { messages, undelivered } => (messages, undelivered),
        };
        let tool = run.tool_started.was_recorded();
        outcome(&messages, &heading, self.stopping(), tool)?;
        if undelivered > 0 {
            return Err(DeliveryError::Failed(format!(
                "{undelivered} part(s) of the answer could not be sent to Telegram"
            )));
        }
        Ok(Answered::Sent("sent".into()))
    }
}

#[async_trait]
impl JobDelivery for ChatJobDelivery {
    async fn run_prompt(&self, run: ScheduledRun) -> Result<Answered, DeliveryError> {
        // Every way a run fails ends here, and the scheduler quotes it to the chat (`/jobs`, its
        // notes): one place keeps the OS error's text out of it.
        self.run_in_chat(run).await.map_err(plain_failure)
    }

    async fn while_down(&self, caught: &[CaughtUp]) -> Result<(), DeliveryError> {
        let lines = caught
            .iter()
            .map(|c| {
                let line = DownLine {
                    key: c.key.clone(),
                    text: c.line.clone(),
                };
                (target(c.target), line)
            })
            .collect();
        self.chats
            .while_down(lines)
            .await
            .map_err(|e| DeliveryError::Failed(e.to_string()))
    }

    async fn notify(&self, to: JobTarget, text: String) -> Result<(), DeliveryError> {
        self.chats.notice(target(to), text).await.map_err(|e| match e {
            PortError::ShuttingDown => {
                tracing::warn!(chat = to.chat_id, "scheduler notice not sent: {e}");
                DeliveryError::CutOff(e.to_string())
            }
            PortError::Session(_) | PortError::Prompt(_) | PortError::Spent(_) | PortError::Refused(_) => {
                DeliveryError::Failed(e.to_string())
            }
        })
    }
}

/// `e` as the chat may be shown it: a failure that met a shortage on this machine (its text
/// carries the OS error, e.g. `Too many open files (os error 24)` from the session file) says
/// plainly what ran short instead ([`plain_text`]); any other failure is kept as it was (issue 25:
/// the chat never sees a raw OS error).
fn plain_failure(e: DeliveryError) -> DeliveryError {
    match e {
        DeliveryError::Failed(why) => DeliveryError::Failed(plain_text(why)),
        e @ (DeliveryError::CutOff(_) | DeliveryError::Stopped(_) | DeliveryError::Skipped(_)) => e,
    }
}

/// What names a scheduled prompt's slot: its heading up to the slot's time (`[Scheduled job
/// <id> · <schedule> · slot <time>`), without how late it runs (that differs when a cut-off
/// slot runs again after a restart).
fn slot_key(prompt: &str) -> &str {
    let first = prompt.lines().next().unwrap_or_default();
    if !first.starts_with(volcanic_scheduler::envelope::HEADING_START) {
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
        .filter_map(|m| if let Message::Assistant(a) = m { Some(a) } else { None })
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
    fn a_failure_that_met_a_shortage_is_told_without_the_os_text() {
        let emfile = std::io::Error::from_raw_os_error(libc::EMFILE);
        let why = format!("session store: cannot open for appending /s.jsonl: {emfile}");
        match plain_failure(DeliveryError::Failed(why)) {
            DeliveryError::Failed(e) => assert_eq!(e, "the bot's machine is short of open files"),
            other => panic!("{other:?}"),
        }
        let model = "the provider is overloaded (529)".to_owned();
        assert!(matches!(plain_failure(DeliveryError::Failed(model.clone())), DeliveryError::Failed(e) if e == model));
        let stopped = format!("stopped in the chat ({emfile})");
        assert!(
            matches!(plain_failure(DeliveryError::Stopped(stopped.clone())), DeliveryError::Stopped(e) if e == stopped)
        );
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
