//! One server kept up: connected through its `Launcher` (the session's process policy, or the
//! host's for a shared server), watched, restarted with backoff after it exits, its tools
//! re-listed after `list_changed`. Every session using it (a [`SessionServer`], one per session; several
//! for a shared server) is handed each new tool list.

use crate::client::{Handler, OnToolsChanged};
use crate::config::{ServerSpec, Transport};
use crate::elicit::{Elicitor, UiElicitor};
use crate::server::{Connection, Launch, StartError};
use crate::session_server::SessionServer;
use async_trait::async_trait;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use volcanic_abstractions::extensions::{ExtensionApi, ExtensionContext};
use volcanic_abstractions::processes::{ProcessPurpose, ProcessSpawnPolicy, ProcessSpawnRequest};

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

/// Where a link is in its life.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LinkState {
    /// Never started.
    Idle,
    /// Connecting (`initialize`, `tools/list`).
    Starting,
    /// Connected.
    Up,
    /// It exited; restart `attempt` of [`MAX_RESTARTS`] is due.
    Restarting { attempt: u32 },
    /// Could not start, or given up; the reason.
    Failed(String),
    /// It answered HTTP 401: a sign-in is needed (never restarted until then).
    NeedsLogin,
    /// Stopped for good.
    Stopped,
}

/// How a link's server is reached: a connection with our handler, and its first tool list.
#[async_trait]
pub(crate) trait Launcher: Send + Sync {
    /// Connects `spec`, with `on_changed` called at `notifications/tools/list_changed`.
    async fn connect(
        &self,
        spec: &ServerSpec,
        on_changed: OnToolsChanged,
    ) -> Result<(Connection, Vec<rmcp::model::Tool>), StartError>;
}

/// A session's own server: its process through the session's policy (the chat's `TZ`, its
/// workspace as the working directory), its questions through the session's UI.
pub(crate) struct SessionLauncher {
    pub(crate) api: Weak<dyn ExtensionApi>,
    pub(crate) ctx: Arc<dyn ExtensionContext>,
    /// Where the chat's OAuth tokens are: `(tokens folder, chat key)`; `None` in the console.
    pub(crate) tokens: Option<(PathBuf, String)>,
}

#[async_trait]
impl Launcher for SessionLauncher {
    async fn connect(
        &self,
        spec: &ServerSpec,
        on_changed: OnToolsChanged,
    ) -> Result<(Connection, Vec<rmcp::model::Tool>), StartError> {
        let api = self
            .api
            .upgrade()
            .ok_or_else(|| StartError::Prepare("the session has ended".into()))?;
        let launch = match &spec.transport {
            Transport::Stdio { command, args, env } => {
                let mut request = ProcessSpawnRequest::new(ProcessPurpose::McpServer, command.clone(), self.ctx.cwd());
                request.args = args.clone();
                request.env = env.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
                request.time_zone = self.ctx.time_zone();
                request.origin = format!("mcp:{}", spec.name);
                let process = self
                    .ctx
                    .prepare_process(request)
                    .await
                    .map_err(|e| StartError::Prepare(e.to_string()))?;
                Some(Launch {
                    process,
                    policy: api.processes(),
                })
            }
            Transport::Http { .. } => None,
        };
        let mut auth = None;
        if let (Transport::Http { url, .. }, Some((dir, chat))) = (&spec.transport, &self.tokens) {
            let file = crate::oauth::TokenFile::new(dir, chat, &spec.name, api.redactor());
            if file.exists() {
                auth = match crate::oauth::authorized_client(url, file).await {
                    Ok(client) => Some(client),
                    Err(crate::oauth::OAuthError::NotSignedIn) => return Err(StartError::NeedsLogin(String::new())),
                    Err(e) => return Err(StartError::Prepare(format!("OAuth: {e}"))),
                };
            }
        }
        let elicitor = self.ctx.ui().map(|ui| Arc::new(UiElicitor(ui)) as Arc<dyn Elicitor>);
        let handler = Handler::new(&spec.name, elicitor, Some(on_changed));
        Connection::start_with_auth(spec, launch, auth, api.redactor(), handler).await
    }
}

/// A shared server (`shared = true`, one for all chats): its process through the host's policy
/// (the host's `TZ`, `cwd` as the working directory). It asks no questions: it serves several
/// chats at once, so elicitation is not offered (a question is declined, as without a UI).
pub struct HostLauncher {
    policy: Option<Arc<dyn ProcessSpawnPolicy>>,
    cwd: PathBuf,
}

impl HostLauncher {
    /// With the host's process policy (`None`: a shared stdio server cannot start) and the
    /// folder its processes start in (made when missing).
    pub fn new(policy: Option<Arc<dyn ProcessSpawnPolicy>>, cwd: PathBuf) -> Self {
        HostLauncher { policy, cwd }
    }
}

#[async_trait]
impl Launcher for HostLauncher {
    async fn connect(
        &self,
        spec: &ServerSpec,
        on_changed: OnToolsChanged,
    ) -> Result<(Connection, Vec<rmcp::model::Tool>), StartError> {
        let handler = Handler::new(&spec.name, None, Some(on_changed));
        let Some(policy) = &self.policy else {
            return match spec.transport {
                Transport::Http { .. } => Connection::start(spec, None, Arc::new(Plain), handler).await,
                Transport::Stdio { .. } => Err(StartError::Prepare(
                    "a shared stdio server needs the host's process policy".into(),
                )),
            };
        };
        let launch = match &spec.transport {
            Transport::Stdio { command, args, env } => {
                std::fs::create_dir_all(&self.cwd)
                    .map_err(|e| StartError::Prepare(format!("cannot make its folder {}: {e}", self.cwd.display())))?;
                let mut request = ProcessSpawnRequest::new(ProcessPurpose::McpServer, command.clone(), &self.cwd);
                request.args = args.clone();
                request.env = env.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
                request.origin = format!("mcp:{} (shared)", spec.name);
                let process = policy
                    .prepare(&request)
                    .map_err(|e| StartError::Prepare(e.to_string()))?;
                Some(Launch {
                    process,
                    policy: policy.clone(),
                })
            }
            Transport::Http { .. } => None,
        };
        Connection::start(spec, launch, policy.redactor(), handler).await
    }
}

/// No secrets to redact (a host without a policy: tests).
struct Plain;
impl volcanic_abstractions::processes::SecretRedactor for Plain {
    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
    fn add_secret(&self, _: &str) {}
}

/// One server kept up, for one session or (shared) for all.
pub(crate) struct Link {
    pub(crate) spec: ServerSpec,
    launcher: Option<Arc<dyn Launcher>>,
    state: Mutex<LinkState>,
    conn: Mutex<Option<Arc<Connection>>>,
    stopped: AtomicBool,
    /// `list_changed` was seen: re-list before the next model call.
    stale: AtomicBool,
    /// Its tools as last listed.
    listed: Mutex<Vec<rmcp::model::Tool>>,
    /// The sessions using it.
    subscribers: Mutex<Vec<Weak<SessionServer>>>,
    restarts: AtomicU32,
    /// Bumped by every start: a watcher of an older one stops watching.
    generation: AtomicU64,
    /// Held while the first start runs: another session waits for it instead of starting twice.
    first: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("server", &self.spec.name)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Link {
    /// A server to start with `launcher`.
    pub(crate) fn new(spec: ServerSpec, launcher: Arc<dyn Launcher>) -> Arc<Link> {
        Self::make(spec, Some(launcher), LinkState::Idle)
    }

    /// A bad entry's stand-in, failed for `why` and never started.
    pub(crate) fn unusable(spec: ServerSpec, why: String) -> Arc<Link> {
        Self::make(spec, None, LinkState::Failed(why))
    }

    fn make(spec: ServerSpec, launcher: Option<Arc<dyn Launcher>>, state: LinkState) -> Arc<Link> {
        Arc::new(Link {
            spec,
            launcher,
            state: Mutex::new(state),
            conn: Mutex::new(None),
            stopped: AtomicBool::new(false),
            stale: AtomicBool::new(false),
            listed: Mutex::default(),
            subscribers: Mutex::default(),
            restarts: AtomicU32::new(0),
            generation: AtomicU64::new(0),
            first: tokio::sync::Mutex::new(()),
        })
    }

    /// Its state now (a connected server whose transport just closed shows as restarting).
    pub(crate) fn state(&self) -> LinkState {
        let state = lock(&self.state).clone();
        match state {
            LinkState::Up if self.connection().is_some_and(|c| c.needs_login()) => LinkState::NeedsLogin,
            LinkState::Up if self.connection().is_some_and(|c| c.is_closed()) => LinkState::Restarting { attempt: 1 },
            s => s,
        }
    }

    fn set(&self, state: LinkState) {
        if !self.is_stopped() {
            *lock(&self.state) = state;
        }
    }

    /// The current connection, if any.
    pub(crate) fn connection(&self) -> Option<Arc<Connection>> {
        lock(&self.conn).clone()
    }

    /// Restarts after exits so far.
    pub(crate) fn restarts(&self) -> u32 {
        self.restarts.load(Ordering::SeqCst)
    }

    /// Its tools as last listed.
    pub(crate) fn listed(&self) -> Vec<rmcp::model::Tool> {
        lock(&self.listed).clone()
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Hands `server` every tool list from now on.
    pub(crate) fn subscribe(&self, server: &Arc<SessionServer>) {
        let mut subscribers = lock(&self.subscribers);
        subscribers.retain(|s| s.strong_count() > 0);
        subscribers.push(Arc::downgrade(server));
    }

    /// Starts it unless it was started before; a second caller waits for the first start.
    pub(crate) async fn start_once(self: &Arc<Self>) {
        let _first = self.first.lock().await;
        {
            let mut state = lock(&self.state);
            if *state != LinkState::Idle || self.is_stopped() {
                return;
            }
            *state = LinkState::Starting;
        }
        start(self.clone()).await;
    }

    /// Restarts it now (`/mcp restart NAME`): the running one is stopped, its watcher let go,
    /// the restart count and backoff start afresh. `false` for a bad entry or a stopped link.
    pub(crate) fn restart_now(self: &Arc<Self>) -> bool {
        if self.is_stopped() || self.launcher.is_none() {
            return false;
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
        if let Some(old) = lock(&self.conn).take() {
            old.stop();
        }
        self.restarts.store(0, Ordering::SeqCst);
        self.set(LinkState::Starting);
        tracing::info!(server = %self.spec.name, "MCP server restarted by /mcp restart");
        tokio::spawn(start(self.clone()));
        true
    }

    /// Re-lists the tools when the server said they changed (called before each model call).
    pub(crate) async fn refresh_if_stale(&self) {
        if !self.stale.swap(false, Ordering::SeqCst) {
            return;
        }
        let Some(conn) = self.connection() else { return };
        let name = &self.spec.name;
        match tokio::time::timeout(REFRESH_TIMEOUT, conn.list_tools()).await {
            Ok(Ok(tools)) => {
                self.publish(tools);
                tracing::info!(server = %name, "MCP tools re-listed after list_changed");
            }
            Ok(Err(e)) => tracing::warn!(server = %name, "MCP tools/list after list_changed failed: {e}"),
            Err(_) => tracing::warn!(server = %name, "MCP tools/list after list_changed: no answer in time"),
        }
    }

    /// Stops it for good: the connection closed (a stdio server's process group killed).
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        if let Some(c) = lock(&self.conn).take() {
            c.stop();
        }
        let mut state = lock(&self.state);
        if !matches!(*state, LinkState::Failed(_)) {
            *state = LinkState::Stopped;
        }
    }

    /// Keeps `tools` and hands them to every session using it.
    fn publish(&self, tools: Vec<rmcp::model::Tool>) {
        *lock(&self.listed) = tools.clone();
        let subscribers: Vec<Arc<SessionServer>> = lock(&self.subscribers).iter().filter_map(Weak::upgrade).collect();
        for server in subscribers {
            server.sync(&tools);
        }
    }

    async fn connect(self: &Arc<Self>) -> Result<(Arc<Connection>, Vec<rmcp::model::Tool>), StartError> {
        let launcher = self
            .launcher
            .as_ref()
            .ok_or_else(|| StartError::Prepare("a bad entry is never started".into()))?;
        let weak = Arc::downgrade(self);
        let on_changed: OnToolsChanged = Arc::new(move || {
            if let Some(l) = weak.upgrade() {
                l.stale.store(true, Ordering::SeqCst);
            }
        });
        let (conn, tools) = launcher.connect(&self.spec, on_changed).await?;
        Ok((Arc::new(conn), tools))
    }

    /// Makes `conn` the connection and hands out its tools; false when stopped meanwhile.
    fn install(&self, conn: Arc<Connection>, tools: Vec<rmcp::model::Tool>) -> bool {
        if self.is_stopped() {
            conn.stop();
            return false;
        }
        if let Some(old) = lock(&self.conn).replace(conn) {
            old.stop();
        }
        self.set(LinkState::Up);
        self.publish(tools);
        true
    }
}

/// Starts the link's server, then watches it (restarts after an exit).
async fn start(link: Arc<Link>) {
    let generation = link.generation.fetch_add(1, Ordering::SeqCst) + 1;
    match link.connect().await {
        Err(StartError::NeedsLogin(_)) => {
            tracing::info!(server = %link.spec.name, "MCP server needs a sign-in (HTTP 401)");
            link.set(LinkState::NeedsLogin);
        }
        Err(e) => {
            tracing::warn!(server = %link.spec.name, "MCP server failed to start: {e}");
            link.set(LinkState::Failed(e.to_string()));
        }
        Ok((conn, tools)) => {
            if link.install(conn, tools) {
                tracing::info!(server = %link.spec.name, "MCP server ready");
                tokio::spawn(watch(link, generation));
            }
        }
    }
}

/// Watches a running server; after it exits, restarts it with backoff ([`backoff`]) up to
/// [`MAX_RESTARTS`] times in a row, then gives it up (failed, with the reason).
async fn watch(link: Arc<Link>, generation: u64) {
    let name = link.spec.name.clone();
    let (mut up_since, mut attempt) = (Instant::now(), 0u32);
    let replaced = |link: &Link| link.is_stopped() || link.generation.load(Ordering::SeqCst) != generation;
    loop {
        tokio::time::sleep(WATCH_EVERY).await;
        if replaced(&link) {
            return;
        }
        if link.connection().is_some_and(|c| c.needs_login()) {
            // Refused with 401: restarting would not help; `/mcp login` does.
            tracing::info!(server = %name, "MCP server needs a sign-in (HTTP 401 on a call)");
            return;
        }
        if !link.connection().is_none_or(|c| c.is_closed()) {
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
                link.set(LinkState::Failed(why));
                return;
            }
            let delay = backoff(attempt);
            link.set(LinkState::Restarting { attempt });
            tracing::warn!(server = %name, "MCP server exited; restart {attempt} of {MAX_RESTARTS} in {} s", delay.as_secs());
            tokio::time::sleep(delay).await;
            if replaced(&link) {
                return;
            }
            match link.connect().await {
                Ok((conn, tools)) => {
                    link.restarts.fetch_add(1, Ordering::SeqCst);
                    if !link.install(conn, tools) {
                        return;
                    }
                    tracing::info!(server = %name, "MCP server restarted");
                    up_since = Instant::now();
                    break;
                }
                Err(StartError::NeedsLogin(_)) => {
                    tracing::info!(server = %name, "MCP server needs a sign-in (HTTP 401)");
                    link.set(LinkState::NeedsLogin);
                    return;
                }
                Err(e) => tracing::warn!(server = %name, "MCP server restart {attempt} failed: {e}"),
            }
        }
    }
}

#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;
