//! The agent loop (spec: architecture.md, "The agent loop"), one named step per line of the
//! spec's diagram:
//!
//! ```text
//! run     threshold compaction       compact::compact_if_needed
//!         skill hooks                skills::before_run (session-start, previous turn-end)
//!         before_agent_start         before_agent_start (system prompt, injected messages)
//!         agent_start
//!         turns                      Run::turn, as long as next_turn finds more to do
//!         agent_end                  finish (turn-end hooks start; the file is synced)
//!         agent_settled              settle (follow-ups that raced the end run first)
//! turn    turn_start
//!         pending messages           persist::add_message (durable with the answer)
//!         compaction between turns   compact::compact_if_needed
//!         context, stream            Run::model_call → stream::stream_turn (error redacted);
//!                                    an overflow gets one compaction and one retry; a failure
//!                                    another provider could answer goes on with the next
//!                                    fallback model (failover::stream_with_failover)
//!         tool calls                 Run::tools → tool_exec::execute_batch (results redacted),
//!                                    each result persisted and synced
//!         turn_end
//! ```
//!
//! An error or abort ends the run after `turn_end`/`agent_end`. A `length` stop never runs its
//! tool calls. Steering is taken only between whole tool batches, follow-ups one at a time.
//! Paired events go out through [`Inner::announce`] (the host's first, then the extensions');
//! `message_end` (extensions first: they may replace the message) and `message_update` are
//! emitted in [`persist`](super::persist) and [`stream`](super::stream).
//!
//! A run holds the session's [`Busy`] token from its start (`prompt::place`, `continue_run`) to
//! [`settle`]; see [`inner`](super::inner) for the lock rules.

use super::compact::{self, CompactReason};
use super::error::SessionError;
use super::failover::stream_with_failover;
use super::inner::{Busy, Inner, State};
use super::persist::{Durable, add_message};
use super::session::has_tool_calls;
use super::skills::RunSkills;
use super::stream::is_overflow;
use super::tool_exec::execute_batch;
use crate::compaction::CompactionError;
use chrono::Utc;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::extensions::events::{
    AgentEndEvent, AgentSettledEvent, AgentStartEvent, BeforeAgentStartEvent, TurnEndEvent, TurnStartEvent,
};
use volcanic_abstractions::messages::{AssistantMessage, Message, StopReason, ToolResultMessage};

/// Starts [`run`] in a task of its own (the caller's tracing span goes with it).
pub(crate) fn spawn(
    inner: Arc<Inner>,
    busy: Busy,
    initial: Vec<Message>,
) -> tokio::task::JoinHandle<Result<(), SessionError>> {
    tokio::spawn(tracing::Instrument::in_current_span(run(inner, busy, initial)))
}

/// [`spawn`] for a run no one waits for: its failure is logged as `what` failed.
pub(crate) fn spawn_detached(inner: Arc<Inner>, busy: Busy, initial: Vec<Message>, what: &'static str) {
    tokio::spawn(tracing::Instrument::in_current_span(async move {
        if let Err(e) = run(inner, busy, initial).await {
            tracing::warn!("{what} failed: {e}");
        }
    }));
}

/// Runs one agent run to its end and settles the session. `initial`: the prompt and the
/// messages held for the next turn (empty to continue the transcript as it is).
pub(crate) async fn run(inner: Arc<Inner>, busy: Busy, initial: Vec<Message>) -> Result<(), SessionError> {
    let result = run_once(&inner, initial).await;
    settle(&inner, busy, result.is_err()).await;
    result
}

/// One run, step by step as the module docs draw it.
async fn run_once(inner: &Arc<Inner>, initial: Vec<Message>) -> Result<(), SessionError> {
    let cancel = inner.lock_state().abort.clone();
    let mut compacted = compact::compact_if_needed(inner, &cancel).await;
    let skills = super::skills::before_run(inner, &cancel).await;
    let (system_prompt, injected) = before_agent_start(inner, &initial, &skills, &cancel).await;
    inner
        .announce(AgentSessionEvent::AgentStart, &mut AgentStartEvent::default(), &cancel)
        .await;
    let mut pending = initial;
    skills.add_notice(&mut pending);
    pending.extend(injected);
    let mut run = Run {
        inner,
        cancel,
        system_prompt,
        added: Vec::new(),
        turn_index: 0,
    };
    let outcome = loop {
        let turn = match run.turn(pending, compacted).await {
            Ok(turn) => turn,
            Err(e) => break Err(e),
        };
        compacted = false;
        let next = next_turn(&mut inner.lock_state(), &turn, &run.cancel);
        match next {
            Some(next) => pending = next,
            None => break Ok(()),
        }
    };
    super::failover::reset(inner);
    finish(inner, run.added, outcome).await
}

/// A run in progress: what its turns share.
struct Run<'a> {
    inner: &'a Arc<Inner>,
    cancel: CancellationToken,
    system_prompt: String,
    /// Every message the run added, for `agent_end`.
    added: Vec<Message>,
    turn_index: usize,
}

/// How a turn ended, for [`next_turn`].
struct TurnOutcome {
    /// The model call failed or was aborted.
    failed: bool,
    /// Tool results were added and not all of them asked to end the run.
    tools_ran: bool,
    /// A `turn_end` handler asked for another turn.
    continue_requested: bool,
}

impl Run<'_> {
    /// One turn, step by step as the module docs draw it. `compacted`: the run's threshold
    /// check compacted just now, so the check between turns is skipped once.
    async fn turn(&mut self, pending: Vec<Message>, compacted: bool) -> Result<TurnOutcome, SessionError> {
        let (inner, cancel) = (self.inner, &self.cancel.clone());
        let mut start = TurnStartEvent {
            turn_index: self.turn_index,
        };
        inner.announce(AgentSessionEvent::TurnStart, &mut start, cancel).await;
        // Written without waiting for the disk (the model request does not wait for it): the
        // answer's synced append makes them durable, or `finish` does.
        for m in pending {
            self.added.push(add_message(inner, m, Durable::Later).await?);
        }
        if !compacted {
            compact::compact_if_needed(inner, cancel).await;
        }
        let assistant = self.model_call().await?;
        self.added.push(Message::Assistant(assistant.clone()));
        let failed = matches!(assistant.stop_reason, StopReason::Error | StopReason::Aborted);
        let (results, all_terminate) = if !failed && has_tool_calls(&assistant.content) {
            self.tools(&assistant).await?
        } else {
            (Vec::new(), false)
        };
        let host = AgentSessionEvent::TurnEnd {
            message: assistant.clone(),
            tool_results: results.clone(),
        };
        let mut end = TurnEndEvent {
            turn_index: self.turn_index,
            message: assistant,
            tool_results: results.clone(),
            continue_requested: false,
        };
        inner.announce(host, &mut end, cancel).await;
        self.turn_index += 1;
        Ok(TurnOutcome {
            failed,
            tools_ran: !results.is_empty() && !all_terminate,
            continue_requested: end.continue_requested,
        })
    }

    /// The model call with failover and overflow recovery: a context overflow gets one
    /// compaction and one retry; a second overflow, or a compaction that cannot help, ends the
    /// turn with a message saying why.
    async fn model_call(&self) -> Result<AssistantMessage, SessionError> {
        let (inner, cancel) = (self.inner, &self.cancel);
        let first = stream_with_failover(inner, &self.system_prompt, cancel, false).await?;
        if !is_overflow(&first) || cancel.is_cancelled() {
            return Ok(first);
        }
        match compact::compact(inner, CompactReason::Overflow, None, cancel).await {
            Ok(_) => stream_with_failover(inner, &self.system_prompt, cancel, true).await,
            Err(e) => Ok(overflow_not_recovered(first, &e)),
        }
    }

    /// Runs the message's tool calls (redacted in `tool_exec`) and persists each result, synced.
    /// Returns the results and whether every one asked to end the run.
    async fn tools(&mut self, assistant: &AssistantMessage) -> Result<(Vec<ToolResultMessage>, bool), SessionError> {
        let batch = execute_batch(self.inner, assistant, &self.cancel).await;
        let mut results = Vec::with_capacity(batch.results.len());
        for r in batch.results {
            let persisted = add_message(self.inner, Message::ToolResult(r), Durable::Now).await?;
            if let Message::ToolResult(r) = &persisted {
                results.push(r.clone());
            }
            self.added.push(persisted);
        }
        Ok((results, batch.all_terminate))
    }
}

/// `before_agent_start`: the system prompt (its options with the skills; an extension's override,
/// or rendered now in the session's zone; kept for `ctx.system_prompt()`) and the custom messages
/// extensions inject.
async fn before_agent_start(
    inner: &Arc<Inner>,
    initial: &[Message],
    skills: &RunSkills,
    cancel: &CancellationToken,
) -> (String, Vec<Message>) {
    let tools = inner.tools.read().unwrap_or_else(|e| e.into_inner()).active();
    let mut before = BeforeAgentStartEvent {
        prompt: initial.first().map(prompt_text).unwrap_or_default(),
        system_prompt_options: inner.prompt_builder.options(&tools),
        system_prompt_override: None,
        injected_messages: Vec::new(),
    };
    skills.apply(&mut before.system_prompt_options);
    inner.runner.emit(&mut before, &inner.ctx(), cancel).await;
    let tz = inner.lock_state().time_zone;
    let system_prompt = before.system_prompt_override.take().unwrap_or_else(|| {
        inner
            .prompt_builder
            .render(&before.system_prompt_options, Utc::now(), tz)
    });
    inner.lock_state().system_prompt = system_prompt.clone();
    let injected = before.injected_messages.into_iter().map(Message::Custom).collect();
    (system_prompt, injected)
}

/// What the next turn starts with, or `None` when the run ends (spec: "more tool calls or
/// steering messages or continue requested? → next turn; follow-up queued? → next turn"). An
/// error or abort ends the run; steering is taken whole, between batches; a follow-up one at a
/// time (see [`take_queued`]).
fn next_turn(st: &mut State, turn: &TurnOutcome, cancel: &CancellationToken) -> Option<Vec<Message>> {
    if turn.failed || cancel.is_cancelled() {
        return None;
    }
    let steering: Vec<Message> = st.steering.drain(..).collect();
    if turn.tools_ran || !steering.is_empty() || turn.continue_requested {
        return Some(steering);
    }
    st.follow_up.pop_front().map(|m| vec![m])
}

/// The assistant message of an overflow the compaction could not recover, saying what to do.
fn overflow_not_recovered(mut a: AssistantMessage, e: &CompactionError) -> AssistantMessage {
    let error = a.error_message.take().unwrap_or_default();
    a.error_message = Some(match e {
        CompactionError::NothingToCompact => format!(
            "{error} (the latest message alone is too long for the model's context window: send a \
             shorter one, or split it)"
        ),
        e => format!(
            "{error} (the conversation is too long for the model's context window, and compacting \
             it failed: {e}; start a new session with /new)"
        ),
    });
    a
}

/// `agent_end`, then the skills' turn-end hooks start, then the session file is synced (a run
/// that ended before an answer still makes its prompt durable).
async fn finish(
    inner: &Arc<Inner>,
    added: Vec<Message>,
    outcome: Result<(), SessionError>,
) -> Result<(), SessionError> {
    let host = AgentSessionEvent::AgentEnd {
        messages: added.clone(),
    };
    inner
        .announce(host, &mut AgentEndEvent { messages: added }, &CancellationToken::new())
        .await;
    super::skills::after_run(inner);
    if let Err(e) = inner.sync_session().await {
        tracing::error!("cannot sync the session file: {e}");
        if outcome.is_ok() {
            return Err(e);
        }
    }
    outcome
}

/// Ends a run, consuming the session's busy token: follow-ups that raced with its end start a
/// new run first; then the session settles (`agent_settled`, idle).
async fn settle(inner: &Arc<Inner>, busy: Busy, failed: bool) {
    loop {
        let next: Vec<Message> = {
            let mut st = inner.lock_state();
            let q = take_queued(&mut st);
            if q.is_empty() || failed {
                st.unclaim(busy);
                break;
            }
            st.abort = CancellationToken::new();
            q
        };
        if let Err(e) = run_once(inner, next).await {
            tracing::warn!("follow-up run failed: {e}");
        }
    }
    // Subscribers see `AgentSettled` before `wait_for_idle` returns (a host that waits for idle
    // to shut down must not exit before they recorded the end of the run).
    inner.emit(AgentSessionEvent::AgentSettled);
    inner.idle.send_replace(true);
    let mut settled = AgentSettledEvent::default();
    inner
        .runner
        .emit(&mut settled, &inner.ctx(), &CancellationToken::new())
        .await;
}

/// What a new run starts with when prompts were queued while busy: the oldest follow-up, then
/// all steering. Follow-ups are taken one at a time (pi's `followUpMode: "one-at-a-time"`): each
/// gets a turn and an answer of its own, so a host knows which prompt a tool ran for and which
/// answer belongs to which message; the rest wait for the end of that turn.
fn take_queued(st: &mut State) -> Vec<Message> {
    let mut q: Vec<Message> = st.follow_up.pop_front().into_iter().collect();
    q.extend(st.steering.drain(..));
    q
}

/// Ends busy work outside a run (a manual compaction), consuming its token: prompts queued
/// meanwhile start a run in the background (which settles the session); otherwise the session
/// is idle again.
pub(crate) fn release(inner: &Arc<Inner>, busy: Busy) {
    let queued: Vec<Message> = {
        let mut st = inner.lock_state();
        let q = take_queued(&mut st);
        if q.is_empty() {
            st.unclaim(busy);
            drop(st);
            inner.idle.send_replace(true);
            return;
        }
        st.abort = CancellationToken::new();
        q
    };
    spawn_detached(inner.clone(), busy, queued, "queued run after compaction");
}

fn prompt_text(m: &Message) -> String {
    match m {
        Message::User(u) => u.content.text(),
        Message::Custom(c) => c.content.text(),
        Message::Assistant(_)
        | Message::ToolResult(_)
        | Message::BashExecution(_)
        | Message::BranchSummary(_)
        | Message::CompactionSummary(_) => String::new(),
    }
}
