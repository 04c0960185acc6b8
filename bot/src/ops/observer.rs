//! The operations extension every agent session gets (chats, scheduled runs, A2A callers): it
//! counts and traces from the session's own events, so the agent loop is not touched.
//! `message_end` of an assistant message is one model request (provider, model, stop reason,
//! usage, cost); `tool_execution_end` one tool run; `session_start` / `session_shutdown` (and the
//! extension's drop, for a session let go without a shutdown) move `volcanic_sessions_loaded`.
//! With traces on, `agent_start` … `agent_end` is a `run` span, `turn_start` … the assistant's
//! `message_end` a `model_request`, `tool_execution_start` … `_end` a `tool` ([`super::traces`]).

use super::{metrics, traces};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use volcanic_abstractions::extensions::events::{
    AgentEndEvent, AgentStartEvent, MessageEndEvent, SessionShutdownEvent, SessionStartEvent, ToolExecutionEndEvent,
    ToolExecutionStartEvent, TurnStartEvent,
};
use volcanic_abstractions::extensions::{BoxError, Extension, ExtensionApi, ExtensionApiExt, ExtensionFactory};
use volcanic_abstractions::messages::Message;

/// The extension's name (in logs and `/extensions`).
pub const NAME: &str = "operations";

/// Its factory, for the session factory's extension list.
pub fn factory() -> ExtensionFactory {
    Arc::new(|| Box::new(Observer::default()) as Box<dyn Extension>)
}

/// The open spans of a session's current run (only with traces on).
#[derive(Debug, Default)]
struct RunSpans {
    run: Option<tracing::Span>,
    model: Option<tracing::Span>,
    /// By tool call id.
    tools: HashMap<String, tracing::Span>,
}

/// One session's observer; `loaded` is whether it counts in `volcanic_sessions_loaded` now.
#[derive(Debug, Default)]
struct Observer {
    loaded: Arc<AtomicBool>,
    spans: Arc<Mutex<RunSpans>>,
}

impl Drop for Observer {
    fn drop(&mut self) {
        set_loaded(&self.loaded, false);
    }
}

/// Moves `volcanic_sessions_loaded` when the session's `loaded` state changes to `now` (a
/// shutdown followed by the drop counts once).
fn set_loaded(loaded: &AtomicBool, now: bool) {
    if loaded.swap(now, Ordering::SeqCst) != now {
        metrics::session_loaded(now);
    }
}

fn lock(spans: &Mutex<RunSpans>) -> std::sync::MutexGuard<'_, RunSpans> {
    spans.lock().unwrap_or_else(|e| e.into_inner())
}

#[async_trait]
impl Extension for Observer {
    fn name(&self) -> &str {
        NAME
    }

    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        let spans = self.spans.clone();
        api.on::<MessageEndEvent, _>(move |e, _ctx, _cancel| {
            if let Message::Assistant(a) = &e.message {
                metrics::model_message(a);
                if let Some(span) = lock(&spans).model.take() {
                    traces::model_done(&span, a);
                }
            }
            Box::pin(async { Ok(()) })
        });
        let spans = self.spans.clone();
        api.on::<ToolExecutionEndEvent, _>(move |e, _ctx, _cancel| {
            metrics::tool_run(&e.tool_name, e.is_error);
            if let Some(span) = lock(&spans).tools.remove(&e.tool_call_id) {
                span.record("outcome", if e.is_error { "error" } else { "ok" });
            }
            Box::pin(async { Ok(()) })
        });
        self.trace_runs(api.as_ref());
        let loaded = self.loaded.clone();
        api.on::<SessionStartEvent, _>(move |_e, _ctx, _cancel| {
            set_loaded(&loaded, true);
            Box::pin(async { Ok(()) })
        });
        let loaded = self.loaded.clone();
        api.on::<SessionShutdownEvent, _>(move |_e, _ctx, _cancel| {
            set_loaded(&loaded, false);
            Box::pin(async { Ok(()) })
        });
        Ok(())
    }
}

impl Observer {
    /// The spans of runs, model requests and tools (opened here, closed by the end handlers).
    fn trace_runs(&self, api: &dyn ExtensionApi) {
        let spans = self.spans.clone();
        api.on::<AgentStartEvent, _>(move |_e, ctx, _cancel| {
            if traces::enabled() {
                let update = super::answers::update_span_for(&ctx.session_id());
                lock(&spans).run = Some(traces::run(update.as_ref()));
            }
            Box::pin(async { Ok(()) })
        });
        let spans = self.spans.clone();
        api.on::<TurnStartEvent, _>(move |_e, _ctx, _cancel| {
            let mut s = lock(&spans);
            if let Some(run) = &s.run {
                s.model = Some(traces::model_request(run));
            }
            Box::pin(async { Ok(()) })
        });
        let spans = self.spans.clone();
        api.on::<ToolExecutionStartEvent, _>(move |e, _ctx, _cancel| {
            let mut s = lock(&spans);
            if let Some(run) = &s.run {
                let span = traces::tool(run, &e.tool_name);
                s.tools.insert(e.tool_call_id.clone(), span);
            }
            Box::pin(async { Ok(()) })
        });
        let spans = self.spans.clone();
        api.on::<AgentEndEvent, _>(move |_e, _ctx, _cancel| {
            // Closed here: whatever a cut-off run left open ends with it.
            *lock(&spans) = RunSpans::default();
            Box::pin(async { Ok(()) })
        });
    }
}
