//! One server of one session through its life: started, its tools registered within the
//! session's bounds, its list refreshed after `notifications/tools/list_changed` (before the
//! next model call), restarted with backoff after it exits, stopped with the session.

use crate::client::{Handler, OnToolsChanged};
use crate::config::{ServerSpec, Transport};
use crate::elicit::{Elicitor, UiElicitor};
use crate::names::tool_name;
use crate::server::{Connection, Launch};
use async_trait::async_trait;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::{ExtensionApi, ExtensionContext};
use volcanic_abstractions::processes::{ProcessPurpose, ProcessSpawnRequest};
use volcanic_abstractions::tools::{Tool, ToolError, ToolInvocation, ToolResult};

/// Restarts in a row (without a stable minute between them) before a server is given up.
pub const MAX_RESTARTS: u32 = 5;
/// A server up this long counts as stable: its next exit starts the backoff afresh.
pub const STABLE_AFTER: Duration = Duration::from_secs(60);
/// How often a running server's transport is checked.
const WATCH_EVERY: Duration = Duration::from_millis(250);
/// How long a `tools/list` after `list_changed` may take.
const REFRESH_TIMEOUT: Duration = Duration::from_secs(10);

/// The wait before restart `attempt` (1-based): 1 s, 2 s, 4 s, … at most 30 s.
pub fn backoff(attempt: u32) -> Duration {
    Duration::from_secs((1u64 << attempt.saturating_sub(1).min(5)).min(30))
}

/// Default of `mcp.max_tools`: MCP tools per session (providers cap a request's tools, e.g.
/// OpenAI at 128, and every tool costs context).
pub const DEFAULT_MAX_TOOLS: usize = 100;
/// Default of `mcp.max_schema_bytes`: the MCP tools' JSON Schemas per session, in bytes.
pub const DEFAULT_MAX_SCHEMA_BYTES: usize = 64 * 1024;

/// The bounds on what a session's servers add to every model request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// At most this many MCP tools (all servers together).
    pub max_tools: usize,
    /// At most this many bytes of their JSON Schemas (and descriptions).
    pub max_schema_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_tools: DEFAULT_MAX_TOOLS,
            max_schema_bytes: DEFAULT_MAX_SCHEMA_BYTES,
        }
    }
}

/// What a session's tools use so far.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    pub(crate) limits: Limits,
    tools: usize,
    bytes: usize,
}

impl Budget {
    pub(crate) fn new(limits: Limits) -> Self {
        Budget {
            limits,
            ..Budget::default()
        }
    }
}

/// What the session lends its servers (from its first run).
#[derive(Clone)]
pub(crate) struct Env {
    pub(crate) api: Weak<dyn ExtensionApi>,
    pub(crate) ctx: Arc<dyn ExtensionContext>,
    pub(crate) budget: Arc<Mutex<Budget>>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

/// A server's state, as `/mcp` shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerState {
    /// Not started yet (the chat has had no run in this session).
    NotStarted,
    /// Starting.
    Starting,
    /// Ready: its tools offered, those left out by the session's bounds, restarts so far.
    Ready {
        /// Tools the model sees.
        tools: usize,
        /// Tools over `mcp.max_tools` / `mcp.max_schema_bytes`.
        left_out: usize,
        /// Restarts after exits.
        restarts: u32,
    },
    /// It exited; restart `attempt` of [`MAX_RESTARTS`] is due.
    Restarting {
        /// 1-based.
        attempt: u32,
    },
    /// Could not start, or gave up after restarts; with the reason.
    Failed(String),
    /// Stopped with its session.
    Stopped,
}

impl std::fmt::Display for ServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |n: usize| if n == 1 { "" } else { "s" };
        match self {
            ServerState::NotStarted => f.write_str("not started (starts with the chat's next message)"),
            ServerState::Starting => f.write_str("starting"),
            ServerState::Ready {
                tools,
                left_out,
                restarts,
            } => {
                write!(f, "ready, {tools} tool{}", s(*tools))?;
                if *left_out > 0 {
                    write!(f, " ({left_out} left out: over mcp.max_tools or mcp.max_schema_bytes)")?;
                }
                if *restarts > 0 {
                    write!(f, ", restarted {restarts} time{}", s(*restarts as usize))?;
                }
                Ok(())
            }
            ServerState::Restarting { attempt } => {
                write!(f, "exited; restarting (attempt {attempt} of {MAX_RESTARTS})")
            }
            ServerState::Failed(why) => write!(f, "failed: {why}"),
            ServerState::Stopped => f.write_str("stopped"),
        }
    }
}

/// One server of one session.
pub struct Slot {
    pub(crate) spec: ServerSpec,
    state: Mutex<ServerState>,
    conn: Mutex<Option<Arc<Connection>>>,
    stopped: AtomicBool,
    /// `list_changed` was seen: re-list before the next model call.
    stale: AtomicBool,
    /// Its tools ever registered, by their name on the server.
    tools: Mutex<BTreeMap<String, Arc<McpTool>>>,
    left_out: AtomicUsize,
    restarts: AtomicU32,
    /// Bumped by every start: a watcher of an older one stops watching.
    generation: AtomicU64,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("server", &self.spec.name)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Slot {
    pub(crate) fn new(spec: ServerSpec, state: ServerState, stopped: bool) -> Arc<Slot> {
        Arc::new(Slot {
            spec,
            state: Mutex::new(state),
            conn: Mutex::new(None),
            stopped: AtomicBool::new(stopped),
            stale: AtomicBool::new(false),
            tools: Mutex::default(),
            left_out: AtomicUsize::new(0),
            restarts: AtomicU32::new(0),
            generation: AtomicU64::new(0),
        })
    }

    fn set(&self, state: ServerState) {
        *lock(&self.state) = state;
    }

    fn set_ready(&self) {
        let tools = lock(&self.tools).values().filter(|t| t.available()).count();
        self.set(ServerState::Ready {
            tools,
            left_out: self.left_out.load(Ordering::SeqCst),
            restarts: self.restarts.load(Ordering::SeqCst),
        });
    }

    /// Its state now (a ready server whose process just exited shows as restarting).
    pub fn state(&self) -> ServerState {
        let state = lock(&self.state).clone();
        let closed = self.connection().is_some_and(|c| c.is_closed());
        match state {
            ServerState::Ready { .. } if closed => ServerState::Restarting { attempt: 1 },
            s => s,
        }
    }

    fn connection(&self) -> Option<Arc<Connection>> {
        lock(&self.conn).clone()
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        if let Some(c) = lock(&self.conn).take() {
            c.stop();
        }
        let mut state = lock(&self.state);
        if matches!(
            *state,
            ServerState::Ready { .. } | ServerState::Starting | ServerState::Restarting { .. }
        ) {
            *state = ServerState::Stopped;
        }
    }
}

/// Starts the slot's server, registers its tools, then watches it (restarts after an exit).
pub(crate) async fn start(slot: Arc<Slot>, env: Env) {
    let generation = slot.generation.fetch_add(1, Ordering::SeqCst) + 1;
    match connect(&slot, &env).await {
        Err(e) => {
            tracing::warn!(server = %slot.spec.name, "MCP server failed to start: {e}");
            slot.set(ServerState::Failed(e));
        }
        Ok((conn, tools)) => {
            if install(&slot, &env, conn, tools) {
                tracing::info!(server = %slot.spec.name, state = %slot.state(), "MCP server ready");
                tokio::spawn(watch(slot, env, generation));
            }
        }
    }
}

/// Connects (a stdio server through the session's process policy) with our handler.
async fn connect(slot: &Arc<Slot>, env: &Env) -> Result<(Arc<Connection>, Vec<rmcp::model::Tool>), String> {
    let api = env.api.upgrade().ok_or("the session has ended")?;
    let spec = &slot.spec;
    let launch = match &spec.transport {
        Transport::Stdio {
            command,
            args,
            env: vars,
        } => {
            let mut request = ProcessSpawnRequest::new(ProcessPurpose::McpServer, command.clone(), env.ctx.cwd());
            request.args = args.clone();
            request.env = vars.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
            request.time_zone = env.ctx.time_zone();
            request.origin = format!("mcp:{}", spec.name);
            let process = env.ctx.prepare_process(request).await.map_err(|e| e.to_string())?;
            Some(Launch {
                process,
                policy: api.processes(),
            })
        }
        Transport::Http { .. } => None,
    };
    let weak = Arc::downgrade(slot);
    let on_changed: OnToolsChanged = Arc::new(move || {
        if let Some(s) = weak.upgrade() {
            s.stale.store(true, Ordering::SeqCst);
        }
    });
    let elicitor = env.ctx.ui().map(|ui| Arc::new(UiElicitor(ui)) as Arc<dyn Elicitor>);
    let handler = Handler::new(&spec.name, elicitor, Some(on_changed));
    let (conn, tools) = Connection::start(spec, launch, api.redactor(), handler)
        .await
        .map_err(|e| e.to_string())?;
    Ok((Arc::new(conn), tools))
}

/// Makes `conn` the slot's connection and syncs its tools; false when the session stopped meanwhile.
fn install(slot: &Arc<Slot>, env: &Env, conn: Arc<Connection>, tools: Vec<rmcp::model::Tool>) -> bool {
    if slot.is_stopped() {
        conn.stop();
        return false;
    }
    if let Some(old) = lock(&slot.conn).replace(conn) {
        old.stop();
    }
    sync_tools(slot, env, tools);
    slot.set_ready();
    true
}

/// Registers the server's new tools (within the session's bounds), updates the known ones'
/// schemas, and switches the active set: tools it no longer offers off, offered ones on.
fn sync_tools(slot: &Arc<Slot>, env: &Env, listed: Vec<rmcp::model::Tool>) {
    let Some(api) = env.api.upgrade() else { return };
    let spec = &slot.spec;
    let listed: Vec<_> = listed.into_iter().filter(|t| spec.wants(&t.name)).collect();
    let mut mine = lock(&slot.tools);
    let mut budget = lock(&env.budget);
    let mut left_out = 0;
    for t in &listed {
        if let Some(known) = mine.get(t.name.as_ref()) {
            known.update(t);
            continue;
        }
        let tool = Arc::new(McpTool::new(spec, t, Arc::downgrade(slot)));
        let size = tool.size();
        if budget.tools >= budget.limits.max_tools || budget.bytes + size > budget.limits.max_schema_bytes {
            left_out += 1;
            continue;
        }
        budget.tools += 1;
        budget.bytes += size;
        api.register_tool(tool.clone());
        mine.insert(t.name.to_string(), tool);
    }
    for (remote, tool) in mine.iter() {
        let offered = listed.iter().any(|t| t.name == *remote);
        tool.available.store(offered, Ordering::SeqCst);
    }
    slot.left_out.store(left_out, Ordering::SeqCst);
    if left_out > 0 {
        tracing::warn!(
            server = %spec.name,
            "{left_out} MCP tools left out: the session has {} of at most {} tools and {} of at most {} schema bytes \
             (mcp.max_tools, mcp.max_schema_bytes)",
            budget.tools, budget.limits.max_tools, budget.bytes, budget.limits.max_schema_bytes
        );
    }
    if let Ok(mut active) = api.get_active_tools() {
        let before = active.clone();
        for tool in mine.values() {
            let on = active.contains(&tool.name);
            if tool.available() && !on {
                active.push(tool.name.clone());
            } else if !tool.available() && on {
                active.retain(|n| *n != tool.name);
            }
        }
        if active != before
            && let Err(e) = api.set_active_tools(active)
        {
            tracing::warn!(server = %spec.name, "cannot update the active tools: {e}");
        }
    }
}

/// Restarts the slot's server now (`/mcp restart NAME`): the running one is stopped, its
/// watcher let go, the restart count and backoff start afresh. `false` for a bad entry's slot.
pub(crate) fn restart_now(slot: &Arc<Slot>, env: &Env) -> bool {
    if slot.is_stopped() {
        return false;
    }
    slot.generation.fetch_add(1, Ordering::SeqCst);
    if let Some(old) = lock(&slot.conn).take() {
        old.stop();
    }
    slot.restarts.store(0, Ordering::SeqCst);
    slot.set(ServerState::Starting);
    tracing::info!(server = %slot.spec.name, "MCP server restarted by /mcp restart");
    tokio::spawn(start(slot.clone(), env.clone()));
    true
}

/// Re-lists the tools when the server said they changed (called before each model call).
pub(crate) async fn refresh_if_stale(slot: &Arc<Slot>, env: &Env) {
    if !slot.stale.swap(false, Ordering::SeqCst) {
        return;
    }
    let Some(conn) = slot.connection() else { return };
    match tokio::time::timeout(REFRESH_TIMEOUT, conn.list_tools()).await {
        Ok(Ok(tools)) => {
            sync_tools(slot, env, tools);
            if matches!(slot.state(), ServerState::Ready { .. }) {
                slot.set_ready();
            }
            tracing::info!(server = %slot.spec.name, state = %slot.state(), "MCP tools re-listed after list_changed");
        }
        Ok(Err(e)) => tracing::warn!(server = %slot.spec.name, "MCP tools/list after list_changed failed: {e}"),
        Err(_) => tracing::warn!(server = %slot.spec.name, "MCP tools/list after list_changed: no answer in time"),
    }
}

/// Watches a running server; after it exits, restarts it with backoff ([`backoff`]) up to
/// [`MAX_RESTARTS`] times in a row, then gives it up (failed, with the reason).
async fn watch(slot: Arc<Slot>, env: Env, generation: u64) {
    let name = slot.spec.name.clone();
    let (mut up_since, mut attempt) = (Instant::now(), 0u32);
    let replaced = |slot: &Slot| slot.is_stopped() || slot.generation.load(Ordering::SeqCst) != generation;
    loop {
        tokio::time::sleep(WATCH_EVERY).await;
        if replaced(&slot) {
            return;
        }
        if !slot.connection().is_none_or(|c| c.is_closed()) {
            continue;
        }
        if up_since.elapsed() >= STABLE_AFTER {
            attempt = 0;
        }
        loop {
            attempt += 1;
            if attempt > MAX_RESTARTS {
                let why = format!("exited {MAX_RESTARTS} times in a row; not restarted again");
                tracing::error!(server = %name, "MCP server {why}");
                slot.set(ServerState::Failed(why));
                return;
            }
            let delay = backoff(attempt);
            slot.set(ServerState::Restarting { attempt });
            tracing::warn!(server = %name, "MCP server exited; restart {attempt} of {MAX_RESTARTS} in {} s", delay.as_secs());
            tokio::time::sleep(delay).await;
            if replaced(&slot) {
                return;
            }
            match connect(&slot, &env).await {
                Ok((conn, tools)) => {
                    slot.restarts.fetch_add(1, Ordering::SeqCst);
                    if !install(&slot, &env, conn, tools) {
                        return;
                    }
                    tracing::info!(server = %name, state = %slot.state(), "MCP server restarted");
                    up_since = Instant::now();
                    break;
                }
                Err(e) => tracing::warn!(server = %name, "MCP server restart {attempt} failed: {e}"),
            }
        }
    }
}

/// One MCP tool, as the model sees it; calls go to its server's current connection.
pub(crate) struct McpTool {
    name: String,
    remote: String,
    description: String,
    schema: Mutex<Arc<Value>>,
    available: AtomicBool,
    timeout: Duration,
    slot: Weak<Slot>,
}

/// A tool's input schema as providers take it: a plain object schema, without `$schema`.
fn provider_schema(tool: &rmcp::model::Tool) -> Value {
    let mut schema = Value::Object((*tool.input_schema).clone());
    if let Some(o) = schema.as_object_mut() {
        o.remove("$schema");
        o.entry("type").or_insert_with(|| Value::String("object".into()));
        o.entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
    }
    schema
}

impl McpTool {
    fn new(spec: &ServerSpec, tool: &rmcp::model::Tool, slot: Weak<Slot>) -> Self {
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or("(no description)");
        McpTool {
            name: tool_name(&spec.name, &tool.name),
            remote: tool.name.to_string(),
            description: format!("{description} (MCP server `{}`)", spec.name),
            schema: Mutex::new(Arc::new(provider_schema(tool))),
            available: AtomicBool::new(true),
            timeout: spec.call_timeout,
            slot,
        }
    }

    /// What it adds to a request: its schema and description, in bytes.
    fn size(&self) -> usize {
        lock(&self.schema).to_string().len() + self.description.len() + self.name.len()
    }

    fn update(&self, tool: &rmcp::model::Tool) {
        *lock(&self.schema) = Arc::new(provider_schema(tool));
    }

    fn available(&self) -> bool {
        self.available.load(Ordering::SeqCst)
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
        lock(&self.schema).clone()
    }
    async fn execute(
        &self,
        args: Value,
        _invocation: ToolInvocation,
        cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        let slot = self
            .slot
            .upgrade()
            .ok_or_else(|| ToolError::msg("the MCP servers of this session were stopped"))?;
        let server = &slot.spec.name;
        if !self.available() {
            return Err(ToolError::msg(format!(
                "MCP server `{server}` no longer offers `{}`",
                self.remote
            )));
        }
        match slot.state() {
            ServerState::Restarting { attempt } => {
                return Err(ToolError::msg(format!(
                    "MCP server `{server}` exited and is being restarted (attempt {attempt} of {MAX_RESTARTS}); \
                     try `{}` again in a few seconds",
                    self.name
                )));
            }
            ServerState::Failed(why) => {
                return Err(ToolError::msg(format!("MCP server `{server}` is not available: {why}")));
            }
            _ => {}
        }
        let conn = slot
            .connection()
            .ok_or_else(|| ToolError::msg(format!("MCP server `{server}` is not running")))?;
        conn.call(&self.remote, args, self.timeout, cancel).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_thirty_seconds() {
        let waits: Vec<u64> = (1..=8).map(|a| backoff(a).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
    }

    #[test]
    fn ready_shows_left_out_tools_and_restarts() {
        let s = ServerState::Ready {
            tools: 1,
            left_out: 2,
            restarts: 1,
        };
        assert_eq!(
            s.to_string(),
            "ready, 1 tool (2 left out: over mcp.max_tools or mcp.max_schema_bytes), restarted 1 time"
        );
    }
}
