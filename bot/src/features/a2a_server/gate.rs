//! The extension every A2A caller's session gets: it keeps the session to the caller's tools
//! (the model sees only those, and a call to another is blocked) and hands the pool the
//! session's bus, on which each task's inbound hop count is put as `a2a.inbound`.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use volcanic_abstractions::extensions::events::{BeforeAgentStartEvent, ToolCallEvent};
use volcanic_abstractions::extensions::{
    BoxError, EventBus, Extension, ExtensionApi, ExtensionApiExt, ExtensionFactory,
};

use super::pool::ToolPolicy;

/// Where the gate leaves the session's bus once activated.
pub type BusSlot = Arc<OnceLock<Arc<dyn EventBus>>>;

struct Gate {
    tools: ToolPolicy,
    caller: String,
    bus: BusSlot,
}

/// The gate's factory for one session of `caller`.
pub fn factory(tools: ToolPolicy, caller: String, bus: BusSlot) -> ExtensionFactory {
    Arc::new(move || {
        Box::new(Gate {
            tools: tools.clone(),
            caller: caller.clone(),
            bus: bus.clone(),
        }) as Box<dyn Extension>
    })
}

#[async_trait]
impl Extension for Gate {
    fn name(&self) -> &str {
        "a2a-server-gate"
    }

    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        let _ = self.bus.set(api.events());
        // Before each run: tools registered since (an MCP server's, say) are filtered too.
        let tools = self.tools.clone();
        let weak = Arc::downgrade(&api);
        api.on::<BeforeAgentStartEvent, _>(move |_e, _ctx, _cancel| {
            let tools = tools.clone();
            let api = weak.upgrade();
            Box::pin(async move {
                if let Some(api) = api {
                    let all = api.get_all_tools()?;
                    let allowed = all.into_iter().map(|t| t.name).filter(|n| tools.allows(n)).collect();
                    api.set_active_tools(allowed)?;
                }
                Ok(())
            })
        });
        let tools = self.tools.clone();
        let caller = self.caller.clone();
        api.on::<ToolCallEvent, _>(move |e, _ctx, _cancel| {
            let allowed = tools.allows(&e.tool_name);
            let caller = caller.clone();
            Box::pin(async move {
                if !allowed {
                    e.block(format!(
                        "the tool `{}` is not allowed for A2A caller `{caller}` (the owner lists a caller's \
                         tools in `[[a2a.server.callers]] tools`)",
                        e.tool_name
                    ));
                }
                Ok(())
            })
        });
        Ok(())
    }
}
