//! Our side of one MCP connection (rmcp's `ClientHandler`): the `initialize` parameters
//! (protocol 2025-11-25, elicitation offered when someone can answer), questions from the server
//! ([`crate::elicit`]) and `notifications/tools/list_changed`.

use crate::elicit::{Answer, Elicitor, apply_defaults, fields};
use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    ErrorData, FormElicitationCapability, Implementation, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use std::sync::Arc;

/// Called when the server says its tool list changed.
pub type OnToolsChanged = Arc<dyn Fn() + Send + Sync>;

/// The client's `initialize` parameters: protocol 2025-11-25 (rmcp's default, 2026-07-28, is
/// refused by 2025-11-25 servers and the conformance runner; PEERS.md); form elicitation offered
/// when `elicitation` is true.
pub fn client_config(elicitation: bool) -> ClientConfig {
    let mut caps = ClientCapabilities::default();
    if elicitation {
        let mut e = ElicitationCapability::new();
        e.form = Some(FormElicitationCapability::new());
        caps.elicitation = Some(e);
    }
    ClientConfig::new(caps, Implementation::new("volcanic", env!("CARGO_PKG_VERSION")))
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
}

/// The handler of one server's connection.
#[derive(Clone, Default)]
pub struct Handler {
    server: String,
    elicitor: Option<Arc<dyn Elicitor>>,
    on_tools_changed: Option<OnToolsChanged>,
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handler")
            .field("server", &self.server)
            .field("elicitation", &self.elicitor.is_some())
            .finish_non_exhaustive()
    }
}

impl Handler {
    /// For `server` (its name, shown in questions). Without an elicitor, elicitation is not
    /// offered, and a server asking anyway is declined (spec: a client without a UI).
    pub fn new(server: &str, elicitor: Option<Arc<dyn Elicitor>>, on_tools_changed: Option<OnToolsChanged>) -> Self {
        Handler {
            server: server.to_owned(),
            elicitor,
            on_tools_changed,
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        client_config(self.elicitor.is_some())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(elicitor) = &self.elicitor else {
            tracing::info!(server = %self.server, "MCP server asked a question; no one to ask here: declined");
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            // URL mode was not offered in `initialize`.
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let schema = serde_json::to_value(&requested_schema)
            .map_err(|e| ErrorData::invalid_params(format!("unreadable requestedSchema: {e}"), None))?;
        let fields = fields(&schema).map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let answer = elicitor
            .ask(&self.server, &message, &fields, context.ct.clone())
            .await
            .map_err(|e| {
                tracing::warn!(server = %self.server, "MCP question not asked: {e}");
                ErrorData::internal_error(e.to_string(), None)
            })?;
        Ok(match answer {
            Answer::Accept(mut content) => {
                apply_defaults(&fields, &mut content);
                ElicitResult::new(ElicitationAction::Accept).with_content(serde_json::Value::Object(content))
            }
            Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
            Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(server = %self.server, "MCP server: tool list changed");
        if let Some(f) = &self.on_tools_changed {
            f();
        }
    }
}
