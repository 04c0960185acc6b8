//! One server as one session uses it: its tools registered within the session's bounds, updated
//! whenever its `Link` lists them again (after `notifications/tools/list_changed`, before the
//! next model call; after a restart), calls sent to the link's connection.

use crate::config::ServerSpec;
use crate::link::{Link, LinkState};
use crate::names::tool_name;
use async_trait::async_trait;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::ExtensionApi;
use volcanic_abstractions::tools::{Tool, ToolError, ToolInvocation, ToolResult};

pub use crate::link::{MAX_RESTARTS, STABLE_AFTER, backoff};

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
    /// It answered HTTP 401: `/mcp login NAME` signs in.
    NeedsLogin,
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
            ServerState::NeedsLogin => f.write_str("needs login"),
            ServerState::Stopped => f.write_str("stopped"),
        }
    }
}

/// One server as one session uses it: its tools registered in the session (within its
/// bounds), calls going to the server's `Link` (the session's own, or a shared one).
pub struct SessionServer {
    pub(crate) spec: ServerSpec,
    pub(crate) link: Arc<Link>,
    /// The link serves every chat (`shared = true`): the session never stops it.
    pub(crate) shared: bool,
    /// The session's side, from its first run.
    env: Mutex<Option<Env>>,
    stopped: AtomicBool,
    /// Its tools ever registered, by their name on the server.
    tools: Mutex<BTreeMap<String, Arc<McpTool>>>,
    left_out: AtomicUsize,
}

impl std::fmt::Debug for SessionServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionServer")
            .field("server", &self.spec.name)
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SessionServer {
    pub(crate) fn new(link: Arc<Link>, shared: bool) -> Arc<SessionServer> {
        Arc::new(SessionServer {
            spec: link.spec.clone(),
            link,
            shared,
            env: Mutex::new(None),
            stopped: AtomicBool::new(false),
            tools: Mutex::default(),
            left_out: AtomicUsize::new(0),
        })
    }

    /// Its state in this session (a shared server's as it is for everyone, with this
    /// session's tool counts).
    pub fn state(&self) -> ServerState {
        let link = self.link.state();
        if self.stopped.load(Ordering::SeqCst) && !matches!(link, LinkState::Failed(_)) {
            return ServerState::Stopped;
        }
        match link {
            LinkState::Idle | LinkState::Starting => ServerState::Starting,
            LinkState::Up => ServerState::Ready {
                tools: lock(&self.tools).values().filter(|t| t.available()).count(),
                left_out: self.left_out.load(Ordering::SeqCst),
                restarts: self.link.restarts(),
            },
            LinkState::Restarting { attempt } => ServerState::Restarting { attempt },
            LinkState::Failed(why) => ServerState::Failed(why),
            LinkState::NeedsLogin => ServerState::NeedsLogin,
            LinkState::Stopped => ServerState::Stopped,
        }
    }

    /// Lets the session go: its own server stopped, a shared one left running for the others.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        lock(&self.env).take();
        if !self.shared {
            self.link.stop();
        }
    }

    /// Syncs the session's tools with `listed` (the server's list now).
    pub(crate) fn sync(self: &Arc<Self>, listed: &[rmcp::model::Tool]) {
        let env = lock(&self.env).clone();
        if let Some(env) = env
            && !self.stopped.load(Ordering::SeqCst)
        {
            sync_tools(self, &env, listed);
        }
    }
}

/// Starts the server (a shared one only once, for everyone), and registers its tools
/// in the session now and whenever its list changes.
pub(crate) async fn start(server: Arc<SessionServer>, env: Env) {
    *lock(&server.env) = Some(env);
    server.link.subscribe(&server);
    server.link.start_once().await;
    // A shared server already up before this session: its tools as listed.
    if server.link.state() == LinkState::Up {
        server.sync(&server.link.listed());
    }
}

/// Registers the server's new tools (within the session's bounds), updates the known ones'
/// schemas, and switches the active set: tools it no longer offers off, offered ones on.
fn sync_tools(server: &Arc<SessionServer>, env: &Env, listed: &[rmcp::model::Tool]) {
    let Some(api) = env.api.upgrade() else { return };
    let spec = &server.spec;
    let listed: Vec<_> = listed.iter().filter(|t| spec.wants(&t.name)).collect();
    let mut mine = lock(&server.tools);
    let mut budget = lock(&env.budget);
    let mut left_out = 0;
    for t in &listed {
        if let Some(known) = mine.get(t.name.as_ref()) {
            known.update(t);
            continue;
        }
        let tool = Arc::new(McpTool::new(spec, t, Arc::downgrade(server)));
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
    server.left_out.store(left_out, Ordering::SeqCst);
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

/// One MCP tool, as the model sees it; calls go to its server's current connection.
pub(crate) struct McpTool {
    name: String,
    remote: String,
    description: String,
    schema: Mutex<Arc<Value>>,
    available: AtomicBool,
    timeout: Duration,
    server: Weak<SessionServer>,
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
    fn new(spec: &ServerSpec, tool: &rmcp::model::Tool, server: Weak<SessionServer>) -> Self {
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
            server,
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
        let server = self
            .server
            .upgrade()
            .ok_or_else(|| ToolError::msg("the MCP servers of this session were stopped"))?;
        let name = &server.spec.name;
        if !self.available() {
            return Err(ToolError::msg(format!(
                "MCP server `{name}` no longer offers `{}`",
                self.remote
            )));
        }
        match server.state() {
            ServerState::Restarting { attempt } => {
                return Err(ToolError::msg(format!(
                    "MCP server `{name}` exited and is being restarted (attempt {attempt} of {MAX_RESTARTS}); \
                     try `{}` again in a few seconds",
                    self.name
                )));
            }
            ServerState::Failed(why) => {
                return Err(ToolError::msg(format!("MCP server `{name}` is not available: {why}")));
            }
            ServerState::NeedsLogin if server.shared => {
                return Err(ToolError::msg(format!(
                    "MCP server `{name}` refuses the bot without a sign-in, and being shared by all chats it \
                     cannot use one chat's: the bot's config must give it a token (`headers`)"
                )));
            }
            ServerState::NeedsLogin => return Err(ToolError::msg(crate::server::needs_login_message(name))),
            ServerState::NotStarted | ServerState::Starting | ServerState::Ready { .. } | ServerState::Stopped => {}
        }
        let conn = server
            .link
            .connection()
            .ok_or_else(|| ToolError::msg(format!("MCP server `{name}` is not running")))?;
        conn.call(&self.remote, args, self.timeout, cancel).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
