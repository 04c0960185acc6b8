//! Compaction inside a session: threshold checks in the loop, overflow recovery, `/compact`.
//! The decisions and the summary request are the `Compactor`'s; this module runs them on the
//! session (events, the model call, the entry, the reloaded context).

use super::inner::Inner;
use crate::compaction::{CompactionError, ContextTokens, context_tokens, estimate_text_tokens};
use futures::StreamExt;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::extensions::events::{SessionBeforeCompactEvent, SessionCompactEvent};
use volcanic_abstractions::messages::{AssistantMessage, StopReason};
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_abstractions::provider::{AssistantMessageEvent, StreamOptions};
use volcanic_abstractions::sessions::CompactionEntry;
use volcanic_abstractions::spend::SpendPurpose;

/// Why a compaction runs (the `reason` of `compaction_start`/`compaction_end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompactReason {
    /// Context over window − reserve.
    Threshold,
    /// The provider rejected the context as too long.
    Overflow,
    /// `/compact` or an extension's `compact()`.
    Manual,
}

impl CompactReason {
    fn as_str(self) -> &'static str {
        match self {
            CompactReason::Threshold => "threshold",
            CompactReason::Overflow => "overflow",
            CompactReason::Manual => "manual",
        }
    }
}

/// Context tokens of the session now (usage where fresh, estimates elsewhere; the system prompt
/// and tool definitions are estimated when no usage is fresh; each tool's estimate is kept).
pub(crate) fn current_tokens(inner: &Inner) -> ContextTokens {
    let (mut tokens, system_prompt) = {
        let st = inner.lock_state();
        (
            context_tokens(&st.messages, st.stale_prefix, 0),
            estimate_text_tokens(&st.system_prompt),
        )
    };
    if tokens.from_usage == 0 {
        let overhead = system_prompt
            + inner
                .tools
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .definition_tokens();
        tokens.tokens += overhead;
        tokens.estimated += overhead;
    }
    tokens
}

/// Compacts when the context is over the threshold. Failures are reported as
/// `compaction_end` and logged; the run goes on (an overflow would still be recovered).
pub(crate) async fn compact_if_needed(inner: &Arc<Inner>, cancel: &CancellationToken) -> bool {
    let window = inner.lock_state().model.as_ref().map_or(0, |m| m.context_window);
    let tokens = current_tokens(inner).tokens;
    if !inner.compactor.should_compact(tokens, window) {
        return false;
    }
    match compact(inner, CompactReason::Threshold, None, cancel).await {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(tokens, window, "threshold compaction failed: {e}");
            false
        }
    }
}

/// Runs one compaction: `compaction_start`, plan, `session_before_compact` (cancel or override),
/// the summary request (no tools), the `compaction` entry, the context rebuilt from the file,
/// `session_compact`, `compaction_end`. The caller holds the session busy.
pub(crate) async fn compact(
    inner: &Arc<Inner>,
    reason: CompactReason,
    instructions: Option<String>,
    cancel: &CancellationToken,
) -> Result<CompactionEntry, CompactionError> {
    inner.emit(AgentSessionEvent::CompactionStart {
        reason: reason.as_str().to_owned(),
    });
    let result = run(inner, instructions, cancel).await;
    inner.emit(AgentSessionEvent::CompactionEnd {
        reason: reason.as_str().to_owned(),
        success: result.is_ok(),
        error_message: result.as_ref().err().map(|e| inner.redact(&e.to_string())),
    });
    if result.is_ok() {
        inner.after_compaction();
    }
    result
}

async fn run(
    inner: &Arc<Inner>,
    instructions: Option<String>,
    cancel: &CancellationToken,
) -> Result<CompactionEntry, CompactionError> {
    let model = inner.lock_state().model.clone().ok_or(CompactionError::NoModel)?;
    let tokens_before = current_tokens(inner).tokens;
    let branch = inner.lock_manager().try_branch_entries()?;
    let plan = inner.compactor.plan(&branch, model.context_window, tokens_before)?;
    let mut before = SessionBeforeCompactEvent {
        preparation: plan.preparation(),
        custom_instructions: instructions.clone(),
        cancelled: false,
        override_summary: None,
    };
    inner.runner.emit(&mut before, &inner.ctx(), cancel).await;
    if before.cancelled {
        return Err(CompactionError::Cancelled);
    }
    let entry = match &before.override_summary {
        Some(o) => inner.compactor.entry(&plan, &o.summary, Some(o)),
        None => {
            let context = inner.compactor.summary_request(&plan, &model, instructions.as_deref());
            let session_id = inner.lock_manager().session_id().to_owned();
            let options = StreamOptions {
                thinking_level: ThinkingLevel::Off,
                max_tokens: Some(inner.compactor.summary_max_tokens(&model)),
                cancel: cancel.child_token(),
                session_id: Some(session_id.clone()),
                cwd: Some(inner.cwd.clone()),
                time_zone: Some(inner.zone_name()),
                ..Default::default()
            };
            let gate = inner.spend_gate.as_ref();
            let reply = super::spend::complete(
                gate,
                &session_id,
                SpendPurpose::Compaction,
                &model,
                context,
                options,
                |c, o| {
                    inner
                        .models
                        .read()
                        .unwrap_or_else(|e| e.into_inner())
                        .stream(&model, c, o)
                },
            )
            .await
            .map_err(|refused| CompactionError::Summary(refused.message))?;
            match reply.stop_reason {
                StopReason::Aborted => return Err(CompactionError::Aborted),
                StopReason::Error => {
                    let e = reply.error_message.unwrap_or_else(|| "unknown error".into());
                    return Err(CompactionError::Summary(inner.redact(&e)));
                }
                StopReason::Stop | StopReason::Length | StopReason::ToolUse => {}
            }
            let text = reply.text();
            if text.trim().is_empty() {
                return Err(CompactionError::Summary("the model returned an empty summary".into()));
            }
            inner.compactor.entry(&plan, &text, None)
        }
    };
    inner.lock_manager().append_compaction(entry.clone())?;
    inner.reload_context();
    let mut done = SessionCompactEvent {
        compaction: entry.clone(),
        from_extension: before.override_summary.is_some(),
    };
    inner
        .runner
        .emit(&mut done, &inner.ctx(), &CancellationToken::new())
        .await;
    Ok(entry)
}

/// The terminal message of a provider stream (an aborted message when `cancel` fires first).
pub(crate) async fn final_message(
    mut stream: volcanic_abstractions::provider::ProviderStream,
    cancel: &CancellationToken,
) -> AssistantMessage {
    loop {
        let next = tokio::select! {
            ev = stream.next() => ev,
            () = cancel.cancelled() => {
                let mut m = AssistantMessage::empty("", "", "", crate::models::now_ms());
                m.stop_reason = StopReason::Aborted;
                return m;
            }
        };
        match next {
            Some(AssistantMessageEvent::Done { message, .. }) => return message,
            Some(AssistantMessageEvent::Error { error, .. }) => return error,
            Some(_) => {}
            None => {
                let mut m = AssistantMessage::empty("", "", "", crate::models::now_ms());
                m.stop_reason = StopReason::Error;
                m.error_message = Some("provider stream ended without a terminal event".into());
                return m;
            }
        }
    }
}
