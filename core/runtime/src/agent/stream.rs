//! The model call of a turn: the request (the `context` event, the tools, the payload hook), the
//! streamed events (`message_start`, `message_update`*), then the final message made safe to keep
//! (the redaction step, its cost) and persisted.

use super::accumulate::apply_event;
use super::error::SessionError;
use super::inner::Inner;
use super::persist::{Durable, end_message};
use crate::models::now_ms;
use futures::StreamExt;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::events::{AgentSessionEvent, ToolResultView};
use volcanic_abstractions::extensions::events::{
    BeforeProviderRequestEvent, ContextEvent, MessageStartEvent, MessageUpdateEvent,
};
use volcanic_abstractions::messages::{AssistantContent, AssistantMessage, Message, StopReason};
use volcanic_abstractions::model::Model;
use volcanic_abstractions::provider::{
    AssistantMessageEvent, ProviderContext, ProviderStream, StreamOptions, is_context_overflow,
};
use volcanic_abstractions::spend::SpendPurpose;

/// One model call, persisted (synced). `after_overflow`: this call retries one that overflowed;
/// a second overflow is explained.
pub(crate) async fn stream_turn(
    inner: &Arc<Inner>,
    system_prompt: &str,
    cancel: &CancellationToken,
    after_overflow: bool,
) -> Result<AssistantMessage, SessionError> {
    let (model, context, options) = request(inner, system_prompt, cancel).await?;
    let session_id = inner.lock_manager().session_id().to_owned();
    let hold = super::spend::admit(
        inner.spend_gate.as_ref(),
        &session_id,
        SpendPurpose::Turn,
        &model,
        super::compact::current_tokens(inner).tokens,
        options.max_tokens,
    )
    .await?;
    let stream = inner
        .models
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .stream(&model, context, options);
    let (message, started) = receive(inner, &model, stream, cancel).await;
    let message = finalize(inner, &model, message, after_overflow);
    if let Some(hold) = hold {
        hold.settle(&message).await;
    }
    if !started {
        let start = Message::Assistant(message.clone());
        let host = AgentSessionEvent::MessageStart { message: start.clone() };
        inner
            .announce(host, &mut MessageStartEvent { message: start }, cancel)
            .await;
    }
    // `end_message` keeps the role, so the message is an assistant message still.
    match end_message(inner, Message::Assistant(message.clone()), Durable::Now).await? {
        Message::Assistant(a) => Ok(a),
        Message::User(_)
        | Message::ToolResult(_)
        | Message::Custom(_)
        | Message::BashExecution(_)
        | Message::BranchSummary(_)
        | Message::CompactionSummary(_) => Ok(message),
    }
}

/// Whether the provider rejected the context as too long for the model's window.
pub(crate) fn is_overflow(a: &AssistantMessage) -> bool {
    a.stop_reason == StopReason::Error && a.error_message.as_deref().is_some_and(is_context_overflow)
}

/// What the provider is asked: the `context` event's messages, the active tools, the session's
/// thinking level, and a payload hook when an extension handles `before_provider_request`.
async fn request(
    inner: &Arc<Inner>,
    system_prompt: &str,
    cancel: &CancellationToken,
) -> Result<(Model, ProviderContext, StreamOptions), SessionError> {
    let (model, thinking, messages) = {
        let st = inner.lock_state();
        // After a failover the fallback answers the rest of the run (`failover`).
        let model = st.answering.clone().or_else(|| st.model.clone());
        (model, st.thinking, st.messages.clone())
    };
    let model = model.ok_or(SessionError::NoModel)?;
    let mut context_ev = ContextEvent { messages };
    inner.runner.emit(&mut context_ev, &inner.ctx(), cancel).await;
    let tools = inner.tools.read().unwrap_or_else(|e| e.into_inner()).specs();
    let context = ProviderContext {
        system_prompt: system_prompt.to_owned(),
        messages: context_ev.messages,
        tools,
    };
    let mut options = StreamOptions {
        thinking_level: if model.reasoning { thinking } else { Default::default() },
        cancel: cancel.child_token(),
        session_id: Some(inner.lock_manager().session_id().to_owned()),
        cwd: Some(inner.cwd.clone()),
        time_zone: Some(inner.zone_name()),
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
    Ok((model, context, options))
}

/// Reads the stream to its terminal event (or the abort): `message_start` with the first event,
/// then each delta as `message_update` (extensions first, then the host). Returns the final
/// message and whether `message_start` went out.
async fn receive(
    inner: &Arc<Inner>,
    model: &Model,
    mut stream: ProviderStream,
    cancel: &CancellationToken,
) -> (AssistantMessage, bool) {
    let mut partial = AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id, now_ms());
    let mut started = false;
    loop {
        let next = tokio::select! {
            ev = stream.next() => ev,
            () = cancel.cancelled() => {
                let mut m = partial.clone();
                m.stop_reason = StopReason::Aborted;
                m.error_message = Some("Request was aborted".into());
                return (m, started);
            }
        };
        let Some(ev) = next else {
            // The registry guarantees a terminal event; be safe anyway.
            let mut m = partial.clone();
            m.stop_reason = StopReason::Error;
            m.error_message = Some("provider stream ended without a terminal event".into());
            return (m, started);
        };
        apply_event(&mut partial, &ev);
        if !started {
            started = true;
            let start = Message::Assistant(partial.clone());
            let host = AgentSessionEvent::MessageStart { message: start.clone() };
            inner
                .announce(host, &mut MessageStartEvent { message: start }, cancel)
                .await;
            if matches!(ev, AssistantMessageEvent::Start { .. }) {
                continue;
            }
        }
        match ev {
            AssistantMessageEvent::Done { message, .. } => return (message, started),
            AssistantMessageEvent::Error { error, .. } => return (error, started),
            ev @ (AssistantMessageEvent::Start { .. }
            | AssistantMessageEvent::TextStart { .. }
            | AssistantMessageEvent::TextDelta { .. }
            | AssistantMessageEvent::TextEnd { .. }
            | AssistantMessageEvent::ThinkingStart { .. }
            | AssistantMessageEvent::ThinkingDelta { .. }
            | AssistantMessageEvent::ThinkingEnd { .. }
            | AssistantMessageEvent::ToolCallStart { .. }
            | AssistantMessageEvent::ToolCallDelta { .. }
            | AssistantMessageEvent::ToolCallEnd { .. }
            | AssistantMessageEvent::ProviderToolCall { .. }
            | AssistantMessageEvent::ProviderToolResult { .. }) => {
                if inner.runner.has_handlers::<MessageUpdateEvent>() {
                    let mut upd = MessageUpdateEvent {
                        message: partial.clone(),
                        event: ev.clone(),
                    };
                    inner.runner.emit(&mut upd, &inner.ctx(), cancel).await;
                }
                let progress = provider_tool_progress(&partial, &ev);
                inner.emit(AgentSessionEvent::MessageUpdate {
                    message: partial.clone(),
                    assistant_message_event: ev,
                });
                if let Some(progress) = progress {
                    inner.emit(progress);
                }
            }
        }
    }
}

/// The host's progress event for a tool the provider ran itself (`tool_execution_start` when the
/// call streams in, `tool_execution_end` with its result), the same lines our own tools show.
/// Only hosts see it: extensions' tool hooks are for tools the runtime runs.
fn provider_tool_progress(partial: &AssistantMessage, ev: &AssistantMessageEvent) -> Option<AgentSessionEvent> {
    match ev {
        AssistantMessageEvent::ProviderToolCall { tool_call, .. } => Some(AgentSessionEvent::ToolExecutionStart {
            tool_call_id: tool_call.id.clone(),
            tool_name: tool_call.name.clone(),
            args: tool_call.arguments.clone(),
        }),
        AssistantMessageEvent::ProviderToolResult { content_index, result } => {
            let Some(AssistantContent::ProviderToolCall(call)) = partial.content.get(*content_index) else {
                return None;
            };
            Some(AgentSessionEvent::ToolExecutionEnd {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                result: ToolResultView {
                    content: result.content.clone(),
                    details: None,
                },
                is_error: result.is_error,
            })
        }
        AssistantMessageEvent::Start { .. }
        | AssistantMessageEvent::TextStart { .. }
        | AssistantMessageEvent::TextDelta { .. }
        | AssistantMessageEvent::TextEnd { .. }
        | AssistantMessageEvent::ThinkingStart { .. }
        | AssistantMessageEvent::ThinkingDelta { .. }
        | AssistantMessageEvent::ThinkingEnd { .. }
        | AssistantMessageEvent::ToolCallStart { .. }
        | AssistantMessageEvent::ToolCallDelta { .. }
        | AssistantMessageEvent::ToolCallEnd { .. }
        | AssistantMessageEvent::Done { .. }
        | AssistantMessageEvent::Error { .. } => None,
    }
}

/// The final message as it is kept: a `toolUse` stop with only provider-run calls becomes `stop`
/// (nothing is left for the runtime to run: the turn ends with the answer), a second overflow
/// explained, the error message redacted, the cost computed when the provider gave none.
fn finalize(inner: &Inner, model: &Model, mut message: AssistantMessage, after_overflow: bool) -> AssistantMessage {
    if after_overflow && is_overflow(&message) {
        let error = message.error_message.take().unwrap_or_default();
        message.error_message = Some(format!(
            "{error} (still too long for the model's context window after compacting the \
             conversation; start a new session with /new)"
        ));
    }
    if message.stop_reason == StopReason::ToolUse
        && message.tool_calls().next().is_none()
        && message.provider_tool_calls().next().is_some()
    {
        message.stop_reason = StopReason::Stop;
    }
    redact_error(inner, &mut message);
    if message.usage.cost.total == 0.0 {
        message.usage.cost = model.cost_of(&message.usage);
    }
    message
}

/// The redaction step of a model call: a provider's error text may quote a key or a header.
/// (Tool results, updates and errors are redacted in `tool_exec`.)
fn redact_error(inner: &Inner, message: &mut AssistantMessage) {
    if let Some(err) = message.error_message.take() {
        message.error_message = Some(inner.redact(&err));
    }
}
