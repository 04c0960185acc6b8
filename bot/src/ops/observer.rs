//! The metrics extension every agent session gets (chats, scheduled runs, A2A callers): it counts
//! from the session's own events, so the agent loop is not touched. `message_end` of an assistant
//! message is one model request (provider, model, stop reason, usage, cost); `tool_execution_end`
//! one tool run; `session_start` / `session_shutdown` (and the extension's drop, for a session
//! let go without a shutdown) move `volcanic_sessions_loaded`.

use super::metrics;
use async_trait::async_trait;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use volcanic_abstractions::extensions::events::{
    MessageEndEvent, SessionShutdownEvent, SessionStartEvent, ToolExecutionEndEvent,
};
use volcanic_abstractions::extensions::{BoxError, Extension, ExtensionApi, ExtensionApiExt, ExtensionFactory};
use volcanic_abstractions::messages::Message;

/// The extension's name (in logs and `/extensions`).
pub const NAME: &str = "metrics";

/// Its factory, for the session factory's extension list.
pub fn factory() -> ExtensionFactory {
    Arc::new(|| Box::new(Observer::default()) as Box<dyn Extension>)
}

/// One session's observer; `loaded` is whether it counts in `volcanic_sessions_loaded` now.
#[derive(Debug, Default)]
struct Observer {
    loaded: Arc<AtomicBool>,
}

impl Drop for Observer {
    fn drop(&mut self) {
        if self.loaded.swap(false, Ordering::SeqCst) {
            metrics::session_loaded(false);
        }
    }
}

#[async_trait]
impl Extension for Observer {
    fn name(&self) -> &str {
        NAME
    }

    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        api.on::<MessageEndEvent, _>(|e, _ctx, _cancel| {
            if let Message::Assistant(a) = &e.message {
                metrics::model_message(a);
            }
            Box::pin(async { Ok(()) })
        });
        api.on::<ToolExecutionEndEvent, _>(|e, _ctx, _cancel| {
            metrics::tool_run(&e.tool_name, e.is_error);
            Box::pin(async { Ok(()) })
        });
        let loaded = self.loaded.clone();
        api.on::<SessionStartEvent, _>(move |_e, _ctx, _cancel| {
            if !loaded.swap(true, Ordering::SeqCst) {
                metrics::session_loaded(true);
            }
            Box::pin(async { Ok(()) })
        });
        let loaded = self.loaded.clone();
        api.on::<SessionShutdownEvent, _>(move |_e, _ctx, _cancel| {
            if loaded.swap(false, Ordering::SeqCst) {
                metrics::session_loaded(false);
            }
            Box::pin(async { Ok(()) })
        });
        Ok(())
    }
}
