//! The per-session extension: the `a2a` tool and the session's inbound hop count, taken from
//! the `a2a.inbound` event on the session's bus (the bot's A2A server feature emits it with
//! `{"hop": N}`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use volcanic_abstractions::extensions::{BoxError, Extension, ExtensionApi, ExtensionFactory};
use volcanic_abstractions::tools::typed;

use crate::client::A2aClient;
use crate::pending::ChatRef;
use crate::tool::A2aTool;
use crate::watch::A2AWatchRegistry;

/// The bus channel carrying the inbound hop count, `{"hop": N}`.
pub const INBOUND_EVENT: &str = "a2a.inbound";

/// The `a2a` extension of one session.
#[derive(Debug)]
pub struct A2aExtension {
    client: Arc<A2aClient>,
    hop: Arc<AtomicU32>,
    watch: Option<(Arc<A2AWatchRegistry>, ChatRef)>,
}

#[async_trait]
impl Extension for A2aExtension {
    fn name(&self) -> &str {
        "a2a"
    }

    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        let hop = self.hop.clone();
        // The subscription lives as long as the session's bus.
        let _subscription = api.events().on(
            INBOUND_EVENT,
            Arc::new(move |data| {
                if let Some(n) = data.get("hop").and_then(serde_json::Value::as_u64) {
                    hop.store(u32::try_from(n).unwrap_or(u32::MAX), Ordering::Relaxed);
                }
            }),
        );
        let tool = match &self.watch {
            Some((registry, chat)) => A2aTool::watched(self.client.clone(), self.hop.clone(), registry.clone(), *chat),
            None => A2aTool::new(self.client.clone(), self.hop.clone()),
        };
        api.register_tool(typed(tool));
        Ok(())
    }
}

impl A2aClient {
    /// The extension factory for a chat's sessions (each session its own hop count).
    pub fn extension_factory(self: &Arc<Self>) -> ExtensionFactory {
        let client = self.clone();
        Arc::new(move || {
            Box::new(A2aExtension {
                client: client.clone(),
                hop: Arc::new(AtomicU32::new(0)),
                watch: None,
            }) as Box<dyn Extension>
        })
    }
}

impl A2AWatchRegistry {
    /// The extension factory for the sessions of `chat`: their long tasks are followed here
    /// and their results delivered to `chat`.
    pub fn extension_factory(self: &Arc<Self>, chat: ChatRef) -> ExtensionFactory {
        let registry = self.clone();
        Arc::new(move || {
            Box::new(A2aExtension {
                client: registry.client().clone(),
                hop: Arc::new(AtomicU32::new(0)),
                watch: Some((registry.clone(), chat)),
            }) as Box<dyn Extension>
        })
    }
}
