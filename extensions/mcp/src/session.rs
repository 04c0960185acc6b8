//! The per-session part: a chat's servers, started on its first run (in parallel; the run waits
//! a bounded time), their tools registered as `<server>__<tool>`, stopped with the session.

use crate::client::Handler;
use crate::config::{BadEntry, ServerSpec, Transport};
use crate::names::tool_name;
use crate::server::{Connection, Launch};
use async_trait::async_trait;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::events::{BeforeAgentStartEvent, SessionShutdownEvent};
use volcanic_abstractions::extensions::{BoxError, Extension, ExtensionApi, ExtensionApiExt, ExtensionContext};
use volcanic_abstractions::processes::{ProcessPurpose, ProcessSpawnRequest};
use volcanic_abstractions::tools::{Tool, ToolError, ToolInvocation, ToolResult};
use volcanic_abstractions::ui::NotifyLevel;

/// A server's state, as `/mcp` shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerState {
    /// Not started yet (the chat has had no run in this session).
    NotStarted,
    /// Starting.
    Starting,
    /// Ready with this many tools (after the filters).
    Ready(usize),
    /// Could not start, or stopped by itself; with the reason.
    Failed(String),
    /// Stopped with its session.
    Stopped,
}

impl std::fmt::Display for ServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerState::NotStarted => f.write_str("not started (starts with the chat's next message)"),
            ServerState::Starting => f.write_str("starting"),
            ServerState::Ready(n) => write!(f, "ready, {n} tool{}", if *n == 1 { "" } else { "s" }),
            ServerState::Failed(why) => write!(f, "failed: {why}"),
            ServerState::Stopped => f.write_str("stopped"),
        }
    }
}

/// One server of one session.
#[derive(Debug)]
pub struct Slot {
    spec: ServerSpec,
    state: Mutex<ServerState>,
    conn: Mutex<Option<Arc<Connection>>>,
    stopped: AtomicBool,
}

impl Slot {
    fn set(&self, state: ServerState) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
    }

    /// Its state now (a ready server whose process exited is failed).
    pub fn state(&self) -> ServerState {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let closed = self
            .conn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|c| c.is_closed());
        match state {
            ServerState::Ready(_) if closed => ServerState::Failed("the server exited".into()),
            s => s,
        }
    }

    fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        if let Some(c) = self.conn.lock().unwrap_or_else(|e| e.into_inner()).take() {
            c.stop();
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*state, ServerState::Ready(_) | ServerState::Starting) {
            *state = ServerState::Stopped;
        }
    }
}

/// The servers of one session (the host keeps a weak reference for `/mcp` and shutdown).
#[derive(Debug)]
pub struct ChatServers {
    specs: Vec<ServerSpec>,
    bad: Vec<BadEntry>,
    workspace: PathBuf,
    start_wait: Duration,
    slots: Mutex<Option<Vec<Arc<Slot>>>>,
}

impl ChatServers {
    /// The host's servers for this chat; the workspace's are added at the first run.
    pub fn new(specs: Vec<ServerSpec>, bad: Vec<BadEntry>, workspace: PathBuf, start_wait: Duration) -> Self {
        ChatServers {
            specs,
            bad,
            workspace,
            start_wait,
            slots: Mutex::new(None),
        }
    }

    /// `(name, state)` of every server, then the bad entries as failed.
    pub fn states(&self) -> Vec<(String, ServerState)> {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut out: Vec<(String, ServerState)> = match slots {
            Some(slots) => slots.iter().map(|s| (s.spec.name.clone(), s.state())).collect(),
            None => self
                .specs
                .iter()
                .map(|s| (s.name.clone(), ServerState::NotStarted))
                .collect(),
        };
        out.extend(
            self.bad
                .iter()
                .map(|b| (b.name.clone(), ServerState::Failed(b.reason.clone()))),
        );
        out
    }

    /// Stops every server (idempotent).
    pub fn stop(&self) {
        for slot in self.slots.lock().unwrap_or_else(|e| e.into_inner()).iter().flatten() {
            slot.stop();
        }
    }

    /// Starts every server once (the first run of the session), waiting at most `start_wait`;
    /// servers still starting then register their tools when ready.
    async fn ensure_started(self: &Arc<Self>, api: Arc<dyn ExtensionApi>, ctx: Arc<dyn ExtensionContext>) {
        let slots = {
            let mut guard = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            if guard.is_some() {
                return;
            }
            // The workspace's file is read now, so an edit counts from the next session.
            let (workspace, bad) = crate::config::read_workspace(&self.workspace);
            let mut specs = self.specs.clone();
            for spec in workspace {
                if specs.iter().any(|s| s.name == spec.name) {
                    tracing::warn!(
                        server = %spec.name,
                        "{} names a server the host config has; the host's is used",
                        crate::config::WORKSPACE_FILE
                    );
                } else {
                    specs.push(spec);
                }
            }
            let slot = |spec, state, stopped| {
                Arc::new(Slot {
                    spec,
                    state: Mutex::new(state),
                    conn: Mutex::new(None),
                    stopped: AtomicBool::new(stopped),
                })
            };
            let mut slots: Vec<Arc<Slot>> = specs
                .into_iter()
                .map(|spec| slot(spec, ServerState::Starting, false))
                .collect();
            for b in bad {
                tracing::warn!("{b}");
                slots.push(slot(placeholder(&b.name), ServerState::Failed(b.reason), true));
            }
            *guard = Some(slots.clone());
            slots
        };
        let starts: Vec<_> = slots
            .iter()
            .filter(|s| s.state() == ServerState::Starting)
            .map(|slot| tokio::spawn(start_one(slot.clone(), api.clone(), ctx.clone())))
            .collect();
        if starts.is_empty() {
            return;
        }
        let all = futures::future::join_all(starts);
        if tokio::time::timeout(self.start_wait, all).await.is_err() {
            let late: Vec<String> = slots
                .iter()
                .filter(|s| s.state() == ServerState::Starting)
                .map(|s| s.spec.name.clone())
                .collect();
            tracing::warn!(servers = ?late, "MCP servers still starting after {} s; the run goes on without them", self.start_wait.as_secs());
            if let Some(ui) = ctx.ui() {
                ui.notify(
                    &format!(
                        "MCP server{} {} still starting after {} s: this answer goes on without {}",
                        if late.len() == 1 { "" } else { "s" },
                        late.join(", "),
                        self.start_wait.as_secs(),
                        if late.len() == 1 { "it" } else { "them" }
                    ),
                    NotifyLevel::Warning,
                )
                .await;
            }
        }
    }
}

/// A slot standing for a bad workspace entry (never started).
fn placeholder(name: &str) -> ServerSpec {
    ServerSpec {
        name: name.to_owned(),
        transport: Transport::Stdio {
            command: String::new(),
            args: Vec::new(),
            env: Default::default(),
        },
        include_tools: Vec::new(),
        exclude_tools: Vec::new(),
        call_timeout: Duration::ZERO,
    }
}

/// Starts one server through the session's process policy and registers its tools.
async fn start_one(slot: Arc<Slot>, api: Arc<dyn ExtensionApi>, ctx: Arc<dyn ExtensionContext>) {
    let spec = &slot.spec;
    let launch = match &spec.transport {
        Transport::Stdio { command, args, env } => {
            let mut request = ProcessSpawnRequest::new(ProcessPurpose::McpServer, command.clone(), ctx.cwd());
            request.args = args.clone();
            request.env = env.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
            request.time_zone = ctx.time_zone();
            request.origin = format!("mcp:{}", spec.name);
            match ctx.prepare_process(request).await {
                Ok(process) => Some(Launch {
                    process,
                    policy: api.processes(),
                }),
                Err(e) => {
                    slot.set(ServerState::Failed(e.to_string()));
                    return;
                }
            }
        }
        Transport::Http { .. } => None,
    };
    match Connection::start(spec, launch, api.redactor(), Handler::default()).await {
        Err(e) => {
            tracing::warn!(server = %spec.name, "MCP server failed to start: {e}");
            slot.set(ServerState::Failed(e.to_string()));
        }
        Ok((conn, tools)) => {
            let conn = Arc::new(conn);
            if slot.stopped.load(Ordering::SeqCst) {
                conn.stop();
                return;
            }
            let mut count = 0;
            for t in tools.into_iter().filter(|t| spec.wants(&t.name)) {
                api.register_tool(Arc::new(McpTool::new(spec, &t, conn.clone())));
                count += 1;
            }
            tracing::info!(server = %spec.name, tools = count, "MCP server ready");
            *slot.conn.lock().unwrap_or_else(|e| e.into_inner()) = Some(conn);
            slot.set(ServerState::Ready(count));
        }
    }
}

/// One MCP tool, as the model sees it.
struct McpTool {
    name: String,
    remote: String,
    description: String,
    schema: Arc<Value>,
    timeout: Duration,
    conn: Arc<Connection>,
}

impl McpTool {
    fn new(spec: &ServerSpec, tool: &rmcp::model::Tool, conn: Arc<Connection>) -> Self {
        let mut schema = Value::Object((*tool.input_schema).clone());
        if let Some(o) = schema.as_object_mut() {
            // Providers take a plain object schema; `$schema` is noise to them.
            o.remove("$schema");
            o.entry("type").or_insert_with(|| Value::String("object".into()));
            o.entry("properties")
                .or_insert_with(|| Value::Object(Default::default()));
        }
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or("(no description)");
        McpTool {
            name: tool_name(&spec.name, &tool.name),
            remote: tool.name.to_string(),
            description: format!("{description} (MCP server `{}`)", spec.name),
            schema: Arc::new(schema),
            timeout: spec.call_timeout,
            conn,
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> Arc<Value> {
        self.schema.clone()
    }
    async fn execute(
        &self,
        args: Value,
        _invocation: ToolInvocation,
        cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        self.conn.call(&self.remote, args, self.timeout, cancel).await
    }
}

/// The session's extension `mcp`.
pub(crate) struct McpExtension {
    pub(crate) servers: Arc<ChatServers>,
}

#[async_trait]
impl Extension for McpExtension {
    fn name(&self) -> &str {
        "mcp"
    }

    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        // Weak: the handler lives in the API's own table.
        let (servers, me) = (self.servers.clone(), Arc::downgrade(&api));
        api.on::<BeforeAgentStartEvent, _>(move |_e, ctx, _cancel| {
            let (servers, api) = (servers.clone(), me.upgrade());
            Box::pin(async move {
                if let Some(api) = api {
                    servers.ensure_started(api, ctx).await;
                }
                Ok(())
            })
        });
        let servers = self.servers.clone();
        api.on::<SessionShutdownEvent, _>(move |_e, _ctx, _cancel| {
            servers.stop();
            Box::pin(async { Ok(()) })
        });
        Ok(())
    }
}
