//! The agent loop (spec: architecture.md, "The agent loop"):
//!
//! ```text
//! before_agent_start → agent_start
//! loop: turn_start → pending messages → context → stream → tools → turn_end
//!       next turn on: tool results (unless all terminate), steering, continue_requested, follow-up
//! agent_end → agent_settled
//! ```
//!
//! An error or abort ends the run after `turn_end`/`agent_end`. A `length` stop never runs its
//! tool calls. Steering is taken only between whole tool batches.

use super::accumulate::apply_event;
use super::compact::{self, CompactReason};
use super::session::{Inner, SessionError, has_tool_calls};
use super::tool_exec::execute_batch;
use crate::models::now_ms;
use chrono::Utc;
use futures::StreamExt;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::extensions::events::{
    AgentEndEvent, AgentSettledEvent, AgentStartEvent, BeforeAgentStartEvent, BeforeProviderRequestEvent, ContextEvent,
    MessageEndEvent, MessageStartEvent, MessageUpdateEvent, TurnEndEvent, TurnStartEvent,
};
use volcanic_abstractions::messages::{AssistantMessage, Message, StopReason, ToolResultMessage};
use volcanic_abstractions::provider::{AssistantMessageEvent, ProviderContext, StreamOptions, is_context_overflow};

/// Starts [`run`] in a task of its own (the caller's tracing span goes with it).
pub(crate) fn spawn(inner: Arc<Inner>, initial: Vec<Message>) -> tokio::task::JoinHandle<Result<(), SessionError>> {
    tokio::spawn(tracing::Instrument::in_current_span(run(inner, initial)))
}

/// [`spawn`] for a run no one waits for: its failure is logged as `what` failed.
pub(crate) fn spawn_detached(inner: Arc<Inner>, initial: Vec<Message>, what: &'static str) {
    tokio::spawn(tracing::Instrument::in_current_span(async move {
        if let Err(e) = run(inner, initial).await {
            tracing::warn!("{what} failed: {e}");
        }
    }));
}

/// Runs one agent run to its end. `initial`: the prompt and messages held for the next turn.
/// The caller has set `running` and a fresh abort token.
pub(crate) async fn run(inner: Arc<Inner>, initial: Vec<Message>) -> Result<(), SessionError> {
    let result = run_inner(&inner, initial).await;
    settle(&inner, result.is_err()).await;
    result
}

/// Ends a run: follow-ups that raced with its end start a new one; then the session settles
/// (`agent_settled`, idle).
async fn settle(inner: &Arc<Inner>, failed: bool) {
    loop {
        let next: Vec<Message> = {
            let mut st = inner.lock_state();
            let q = take_queued(&mut st);
            if q.is_empty() || failed {
                st.running = false;
                Vec::new()
            } else {
                st.abort = CancellationToken::new();
                q
            }
        };
        if next.is_empty() {
            break;
        }
        if let Err(e) = run_inner(inner, next).await {
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
fn take_queued(st: &mut super::session::State) -> Vec<Message> {
    let mut q: Vec<Message> = st.follow_up.pop_front().into_iter().collect();
    q.extend(st.steering.drain(..));
    q
}

/// Ends busy work outside a run (a manual compaction): prompts queued meanwhile start a run in
/// the background; otherwise the session is idle again.
pub(crate) fn release(inner: &Arc<Inner>) {
    let queued: Vec<Message> = {
        let mut st = inner.lock_state();
        let q = take_queued(&mut st);
        if q.is_empty() {
            st.running = false;
        } else {
            st.abort = CancellationToken::new();
        }
        q
    };
    if queued.is_empty() {
        inner.idle.send_replace(true);
    } else {
        spawn_detached(inner.clone(), queued, "queued run after compaction");
    }
}

async fn run_inner(inner: &Arc<Inner>, initial: Vec<Message>) -> Result<(), SessionError> {
    let ctx = inner.ctx();
    let cancel = inner.lock_state().abort.clone();
    // Threshold compaction before anything is added (spec: "The agent loop").
    let mut compacted = compact::compact_if_needed(inner, &cancel).await;
    let prompt_text = initial.first().map(prompt_text).unwrap_or_default();
    // Then the skills: session-start hooks and the previous turn-end hooks, each until its deadline.
    let skills = super::skills::before_run(inner, &cancel).await;
    let tools = inner.tools.read().unwrap_or_else(|e| e.into_inner()).active();
    let mut before = BeforeAgentStartEvent {
        prompt: prompt_text,
        system_prompt_options: inner.prompt_builder.options(&tools),
        system_prompt_override: None,
        injected_messages: Vec::new(),
    };
    skills.apply(&mut before.system_prompt_options);
    inner.runner.emit(&mut before, &ctx, &cancel).await;
    let tz = inner.lock_state().time_zone;
    let system_prompt = before.system_prompt_override.clone().unwrap_or_else(|| {
        inner
            .prompt_builder
            .render(&before.system_prompt_options, Utc::now(), tz)
    });
    inner.lock_state().system_prompt = system_prompt.clone();

    inner.emit(AgentSessionEvent::AgentStart);
    inner.runner.emit(&mut AgentStartEvent::default(), &ctx, &cancel).await;

    let mut pending = initial;
    skills.add_notice(&mut pending);
    pending.extend(before.injected_messages.into_iter().map(Message::Custom));
    let mut added: Vec<Message> = Vec::new();
    let mut turn_index = 0usize;
    let outcome: Result<(), SessionError> = loop {
        inner.emit(AgentSessionEvent::TurnStart);
        inner
            .runner
            .emit(&mut TurnStartEvent { turn_index }, &ctx, &cancel)
            .await;
        // Prompts and injected messages are written without waiting for the disk (the model
        // request does not wait for it); the assistant message's synced append makes them
        // durable, or `finish` does.
        for m in pending.drain(..) {
            match add_message(inner, m, Durable::Later).await {
                Ok(m) => added.push(m),
                Err(e) => return finish(inner, added, Err(e)).await,
            }
        }
        if !compacted {
            compact::compact_if_needed(inner, &cancel).await;
        }
        // A context overflow is recovered by one compaction and one retry; a second overflow in
        // the same turn ends the run (the message says so).
        let mut retried = false;
        let assistant = loop {
            let mut a = match stream_turn(inner, &system_prompt, &cancel, retried).await {
                Ok(a) => a,
                Err(e) => return finish(inner, added, Err(e)).await,
            };
            if retried || !is_overflow(&a) || cancel.is_cancelled() {
                break a;
            }
            retried = true;
            match compact::compact(inner, CompactReason::Overflow, None, &cancel).await {
                Ok(_) => continue,
                Err(e) => {
                    let error = a.error_message.take().unwrap_or_default();
                    a.error_message = Some(match e {
                        crate::compaction::CompactionError::NothingToCompact => format!(
                            "{error} (the latest message alone is too long for the model's context \
                             window: send a shorter one, or split it)"
                        ),
                        e => format!(
                            "{error} (the conversation is too long for the model's context window, and \
                             compacting it failed: {e}; start a new session with /new)"
                        ),
                    });
                    break a;
                }
            }
        };
        compacted = false;
        added.push(Message::Assistant(assistant.clone()));
        let mut results: Vec<ToolResultMessage> = Vec::new();
        let failed = matches!(assistant.stop_reason, StopReason::Error | StopReason::Aborted);
        let mut all_terminate = false;
        if !failed && has_tool_calls(&assistant.content) {
            let batch = execute_batch(inner, &assistant, &cancel).await;
            all_terminate = batch.all_terminate;
            for r in batch.results {
                match add_message(inner, Message::ToolResult(r), Durable::Now).await {
                    Ok(Message::ToolResult(r)) => {
                        added.push(Message::ToolResult(r.clone()));
                        results.push(r);
                    }
                    Ok(other) => added.push(other),
                    Err(e) => return finish(inner, added, Err(e)).await,
                }
            }
        }
        inner.emit(AgentSessionEvent::TurnEnd {
            message: assistant.clone(),
            tool_results: results.clone(),
        });
        let mut turn_end = TurnEndEvent {
            turn_index,
            message: assistant.clone(),
            tool_results: results.clone(),
            continue_requested: false,
        };
        inner.runner.emit(&mut turn_end, &ctx, &cancel).await;
        turn_index += 1;
        if failed || cancel.is_cancelled() {
            break Ok(());
        }
        // Between whole batches: steering first.
        let steering: Vec<Message> = inner.lock_state().steering.drain(..).collect();
        if !results.is_empty() && !all_terminate {
            pending = steering;
            continue;
        }
        if !steering.is_empty() {
            pending = steering;
            continue;
        }
        if turn_end.continue_requested {
            continue;
        }
        // One at a time (see `take_queued`).
        let follow: Vec<Message> = inner.lock_state().follow_up.pop_front().into_iter().collect();
        if !follow.is_empty() {
            pending = follow;
            continue;
        }
        break Ok(());
    };
    finish(inner, added, outcome).await
}

async fn finish(
    inner: &Arc<Inner>,
    added: Vec<Message>,
    outcome: Result<(), SessionError>,
) -> Result<(), SessionError> {
    inner.emit(AgentSessionEvent::AgentEnd {
        messages: added.clone(),
    });
    let mut end = AgentEndEvent { messages: added };
    inner
        .runner
        .emit(&mut end, &inner.ctx(), &CancellationToken::new())
        .await;
    super::skills::after_run(inner);
    // A run that ended before an assistant message still makes its prompt durable.
    if let Err(e) = inner.sync_session().await {
        tracing::error!("cannot sync the session file: {e}");
        if outcome.is_ok() {
            return Err(e);
        }
    }
    outcome
}

fn prompt_text(m: &Message) -> String {
    match m {
        Message::User(u) => u.content.text(),
        Message::Custom(c) => c.content.text(),
        _ => String::new(),
    }
}

/// When a message's append waits for stable storage. Either way the line is written at once, and
/// the wait is on a sync thread ([`Inner::sync_session`]), never on an async worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durable {
    /// Synced (with everything before it) before the message counts as added.
    Now,
    /// Synced with the next `Now` message, or at the end of the run.
    Later,
}

/// Emits start/end for a complete message (prompt, injected, tool result), lets `message_end`
/// handlers replace it (same role), persists it and adds it to the context.
pub(crate) async fn add_message(
    inner: &Arc<Inner>,
    message: Message,
    durable: Durable,
) -> Result<Message, SessionError> {
    let ctx = inner.ctx();
    let cancel = CancellationToken::new();
    inner.emit(AgentSessionEvent::MessageStart {
        message: message.clone(),
    });
    inner
        .runner
        .emit(
            &mut MessageStartEvent {
                message: message.clone(),
            },
            &ctx,
            &cancel,
        )
        .await;
    end_message(inner, message, durable).await
}

async fn end_message(inner: &Arc<Inner>, message: Message, durable: Durable) -> Result<Message, SessionError> {
    let mut ev = MessageEndEvent {
        message: message.clone(),
    };
    inner
        .runner
        .emit(&mut ev, &inner.ctx(), &CancellationToken::new())
        .await;
    let message = if ev.message.role() == message.role() {
        ev.message
    } else {
        tracing::warn!("message_end handler changed the role; replacement ignored");
        message
    };
    inner.lock_manager().unsynced(|m| m.append_message(message.clone()))?;
    // In the file now, so in the context too, even if the sync fails.
    inner.lock_state().messages.push(message.clone());
    if durable == Durable::Now {
        inner.sync_session().await?;
    }
    inner.emit(AgentSessionEvent::MessageEnd {
        message: message.clone(),
    });
    Ok(message)
}

/// Whether the provider rejected the context as too long for the model's window.
fn is_overflow(a: &AssistantMessage) -> bool {
    a.stop_reason == StopReason::Error && a.error_message.as_deref().is_some_and(is_context_overflow)
}

/// One model call: context event, payload hook, streaming events, the persisted final message.
/// `after_overflow`: this call retries one that overflowed; a second overflow is explained.
async fn stream_turn(
    inner: &Arc<Inner>,
    system_prompt: &str,
    cancel: &CancellationToken,
    after_overflow: bool,
) -> Result<AssistantMessage, SessionError> {
    let ctx = inner.ctx();
    let (model, thinking, messages) = {
        let st = inner.lock_state();
        (st.model.clone(), st.thinking, st.messages.clone())
    };
    let model = model.ok_or(SessionError::NoModel)?;
    let mut context_ev = ContextEvent { messages };
    inner.runner.emit(&mut context_ev, &ctx, cancel).await;
    let tools = inner.tools.read().unwrap_or_else(|e| e.into_inner()).specs();
    let provider_ctx = ProviderContext {
        system_prompt: system_prompt.to_owned(),
        messages: context_ev.messages,
        tools,
    };
    let mut options = StreamOptions {
        thinking_level: if model.reasoning { thinking } else { Default::default() },
        cancel: cancel.child_token(),
        session_id: Some(inner.lock_manager().session_id().to_owned()),
        ..Default::default()
    };
    if inner.runner.has_handlers::<BeforeProviderRequestEvent>() {
        let weak = inner.me.clone();
        options.on_payload = Some(Arc::new(move |payload| {
            let weak = weak.clone();
            Box::pin(async move {
                let Some(inner) = weak.upgrade() else { return payload };
                let mut ev = BeforeProviderRequestEvent { payload };
                inner
                    .runner
                    .emit(&mut ev, &inner.ctx(), &CancellationToken::new())
                    .await;
                ev.payload
            })
        }));
    }
    let mut stream = inner
        .models
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .stream(&model, provider_ctx, options);
    let mut partial = AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id, now_ms());
    let mut started = false;
    let final_message = loop {
        let next = tokio::select! {
            ev = stream.next() => ev,
            () = cancel.cancelled() => {
                let mut m = partial.clone();
                m.stop_reason = StopReason::Aborted;
                m.error_message = Some("Request was aborted".into());
                break m;
            }
        };
        let Some(ev) = next else {
            // The registry guarantees a terminal event; be safe anyway.
            let mut m = partial.clone();
            m.stop_reason = StopReason::Error;
            m.error_message = Some("provider stream ended without a terminal event".into());
            break m;
        };
        apply_event(&mut partial, &ev);
        if !started {
            started = true;
            let start = Message::Assistant(partial.clone());
            inner.emit(AgentSessionEvent::MessageStart { message: start.clone() });
            inner
                .runner
                .emit(&mut MessageStartEvent { message: start }, &ctx, cancel)
                .await;
            if matches!(ev, AssistantMessageEvent::Start { .. }) {
                continue;
            }
        }
        match ev {
            AssistantMessageEvent::Done { message, .. } => break message,
            AssistantMessageEvent::Error { error, .. } => break error,
            ev => {
                if inner.runner.has_handlers::<MessageUpdateEvent>() {
                    let mut upd = MessageUpdateEvent {
                        message: partial.clone(),
                        event: ev.clone(),
                    };
                    inner.runner.emit(&mut upd, &ctx, cancel).await;
                }
                inner.emit(AgentSessionEvent::MessageUpdate {
                    message: partial.clone(),
                    assistant_message_event: ev,
                });
            }
        }
    };
    let mut final_message = final_message;
    if after_overflow && is_overflow(&final_message) {
        let error = final_message.error_message.take().unwrap_or_default();
        final_message.error_message = Some(format!(
            "{error} (still too long for the model's context window after compacting the \
             conversation; start a new session with /new)"
        ));
    }
    if let Some(err) = final_message.error_message.take() {
        final_message.error_message = Some(inner.redact(&err));
    }
    if final_message.usage.cost.total == 0.0 {
        final_message.usage.cost = model.cost_of(&final_message.usage);
    }
    if !started {
        let start = Message::Assistant(final_message.clone());
        inner.emit(AgentSessionEvent::MessageStart { message: start.clone() });
        inner
            .runner
            .emit(&mut MessageStartEvent { message: start }, &ctx, cancel)
            .await;
    }
    // `end_message` keeps the role, so the message is an assistant message still.
    match end_message(inner, Message::Assistant(final_message.clone()), Durable::Now).await? {
        Message::Assistant(a) => Ok(a),
        _ => Ok(final_message),
    }
}
