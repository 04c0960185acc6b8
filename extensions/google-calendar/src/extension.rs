//! The per-session extension: registers the `calendar` tool bound to its chat.

use std::sync::Arc;

use async_trait::async_trait;
use volcanic_abstractions::extensions::{BoxError, Extension, ExtensionApi, ExtensionFactory};
use volcanic_abstractions::tools::typed;

use crate::connections::GoogleCalendarConnections;
use crate::flow::ChatRef;
use crate::tool::CalendarTool;

/// The `google-calendar` extension of one chat's session.
pub struct CalendarExtension {
    connections: Arc<GoogleCalendarConnections>,
    chat: ChatRef,
}

impl std::fmt::Debug for CalendarExtension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CalendarExtension")
            .field("chat", &self.chat)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Extension for CalendarExtension {
    fn name(&self) -> &str {
        "google-calendar"
    }

    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        api.register_tool(typed(CalendarTool::new(self.connections.clone(), self.chat.clone())));
        Ok(())
    }
}

impl GoogleCalendarConnections {
    /// The extension factory for a session of `chat` (the tool is there whether or not the
    /// chat is connected; unconnected, it answers with an error telling to run /calendar connect).
    pub fn extension_factory(self: &Arc<Self>, chat: ChatRef) -> ExtensionFactory {
        let connections = self.clone();
        Arc::new(move || {
            Box::new(CalendarExtension {
                connections: connections.clone(),
                chat: chat.clone(),
            }) as Box<dyn Extension>
        })
    }
}
