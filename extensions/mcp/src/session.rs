//! The per-session part: a chat's servers, started on its first run (in parallel; the run waits
//! a bounded time), their tools registered as `<server>__<tool>` ([`crate::session_server`]), re-listed
//! before a model call after `list_changed`, stopped with the session.

use crate::config::{BadEntry, ServerSpec, Transport};
use crate::link::{Link, SessionLauncher};
pub use crate::session_server::ServerState;
use crate::session_server::{Budget, Env, Limits, SessionServer};
use async_trait::async_trait;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use volcanic_abstractions::extensions::events::{BeforeAgentStartEvent, ContextEvent, SessionShutdownEvent};
use volcanic_abstractions::extensions::{BoxError, Extension, ExtensionApi, ExtensionApiExt, ExtensionContext};
use volcanic_abstractions::ui::NotifyLevel;

/// The servers of one session (the host keeps a weak reference for `/mcp` and shutdown).
#[derive(Debug)]
pub struct ChatServers {
    specs: Vec<ServerSpec>,
    shared: Vec<Arc<Link>>,
    bad: Vec<BadEntry>,
    tokens: Option<(PathBuf, String)>,
    /// Where the workspace's own servers are listed from; `None`: not read.
    workspace: Option<PathBuf>,
    start_wait: Duration,
    limits: Limits,
    servers: Mutex<Option<Vec<Arc<SessionServer>>>>,
    env: Mutex<Option<Env>>,
}

impl ChatServers {
    /// The host's servers for this chat (its own `specs`, and the `shared` ones every chat
    /// uses); the workspace's are added at the first run.
    pub(crate) fn new(
        specs: Vec<ServerSpec>,
        shared: Vec<Arc<Link>>,
        bad: Vec<BadEntry>,
        tokens: Option<(PathBuf, String)>,
        workspace: Option<PathBuf>,
        start_wait: Duration,
        limits: Limits,
    ) -> Self {
        ChatServers {
            specs,
            shared,
            bad,
            tokens,
            workspace,
            start_wait,
            limits,
            servers: Mutex::new(None),
            env: Mutex::new(None),
        }
    }

    /// `(name, state)` of every server, then the bad entries as failed.
    pub fn states(&self) -> Vec<(String, ServerState)> {
        let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut out: Vec<(String, ServerState)> = match servers {
            Some(servers) => servers.iter().map(|s| (s.spec.name.clone(), s.state())).collect(),
            None => self
                .specs
                .iter()
                .map(|s| (s.name.clone(), ServerState::NotStarted))
                .chain(
                    self.shared
                        .iter()
                        .map(|l| (l.spec.name.clone(), crate::shared_state(l))),
                )
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
        // The session's context is let go with it.
        self.env.lock().unwrap_or_else(|e| e.into_inner()).take();
        for server in self.servers.lock().unwrap_or_else(|e| e.into_inner()).iter().flatten() {
            server.stop();
        }
    }

    /// Starts every server once (the first run of the session), waiting at most `start_wait`;
    /// servers still starting then register their tools when ready.
    async fn ensure_started(self: &Arc<Self>, api: Arc<dyn ExtensionApi>, ctx: Arc<dyn ExtensionContext>) {
        let servers = {
            let mut guard = self.servers.lock().unwrap_or_else(|e| e.into_inner());
            if guard.is_some() {
                return;
            }
            // The workspace's file is read now, so an edit counts from the next session.
            let (workspace, bad) = self
                .workspace
                .as_deref()
                .map(crate::config::read_workspace)
                .unwrap_or_default();
            let mut specs = self.specs.clone();
            for spec in workspace {
                if specs
                    .iter()
                    .chain(self.shared.iter().map(|l| &l.spec))
                    .any(|s| s.name == spec.name)
                {
                    tracing::warn!(
                        server = %spec.name,
                        "{} names a server the host config has; the host's is used",
                        crate::config::WORKSPACE_FILE
                    );
                } else {
                    specs.push(spec);
                }
            }
            let launcher = Arc::new(SessionLauncher {
                api: Arc::downgrade(&api),
                ctx: ctx.clone(),
                tokens: self.tokens.clone(),
            });
            let mut servers: Vec<Arc<SessionServer>> = specs
                .into_iter()
                .map(|spec| SessionServer::new(Link::new(spec, launcher.clone()), false))
                .chain(self.shared.iter().map(|l| SessionServer::new(l.clone(), true)))
                .collect();
            for b in bad {
                tracing::warn!("{b}");
                servers.push(SessionServer::new(
                    Link::unusable(placeholder(&b.name), b.reason),
                    false,
                ));
            }
            *guard = Some(servers.clone());
            servers
        };
        let env = Env {
            api: Arc::downgrade(&api),
            budget: Arc::new(Mutex::new(Budget::new(self.limits))),
        };
        *self.env.lock().unwrap_or_else(|e| e.into_inner()) = Some(env.clone());
        // Every server subscribes to its link (a failed shared server may be restarted later).
        let starts: Vec<_> = servers
            .iter()
            .map(|server| tokio::spawn(crate::session_server::start(server.clone(), env.clone())))
            .collect();
        if starts.is_empty() {
            return;
        }
        let all = futures::future::join_all(starts);
        if tokio::time::timeout(self.start_wait, all).await.is_err() {
            let late: Vec<String> = servers
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

impl ChatServers {
    /// Restarts server `name` of this session; says what happened (for `/mcp restart`).
    pub fn restart(&self, name: &str) -> String {
        let env = self.env.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let (Some(_), Some(servers)) = (env, servers) else {
            return "The servers of this chat have not started yet: they start with its next message.".into();
        };
        match servers.iter().find(|s| s.spec.name == name) {
            None => format!("No MCP server `{name}` in this chat (/mcp lists them)."),
            Some(server) if server.link.restart_now() => {
                if server.shared {
                    format!("Restarting the shared MCP server `{name}` (for every chat); /mcp shows when it is ready.")
                } else {
                    format!("Restarting MCP server `{name}`; /mcp shows when it is ready.")
                }
            }
            Some(_) => format!("MCP server `{name}` cannot be restarted: fix its entry (see /mcp)."),
        }
    }

    /// Restarts server `name` (after a sign-in) and waits at most `wait` for it to be up, so
    /// the chat's next message has its tools.
    pub(crate) async fn restart_and_wait(&self, name: &str, wait: Duration) {
        let server = self
            .servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .flatten()
            .find(|s| s.spec.name == name)
            .cloned();
        let Some(server) = server else { return };
        if !server.link.restart_now() {
            return;
        }
        let deadline = tokio::time::Instant::now() + wait;
        while server.state() == ServerState::Starting && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The `WWW-Authenticate` challenge of server `name`'s last call refused for scope (HTTP
    /// 403 `insufficient_scope`), if its connection had one.
    pub(crate) fn scope_challenge(&self, name: &str) -> Option<String> {
        let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
        let server = servers.iter().find(|s| s.spec.name == name)?;
        server.link.connection()?.insufficient_scope()
    }

    /// The spec of server `name` of this session (the workspace's too, once started).
    pub(crate) fn spec(&self, name: &str) -> Option<(ServerSpec, bool)> {
        let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match servers {
            Some(servers) => servers
                .iter()
                .find(|s| s.spec.name == name)
                .map(|s| (s.spec.clone(), s.shared)),
            None => self.specs.iter().find(|s| s.name == name).map(|s| (s.clone(), false)),
        }
    }

    /// Re-lists the tools of the servers that said their list changed (before a model call).
    async fn refresh(&self) {
        let env = self.env.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let (Some(_), Some(servers)) = (env, servers) {
            for server in &servers {
                server.link.refresh_if_stale().await;
            }
        }
    }
}

impl Drop for ChatServers {
    /// A session dropped without `session_shutdown` still stops its servers (their watchers
    /// would otherwise keep them running).
    fn drop(&mut self) {
        self.stop();
    }
}

/// The spec of a server standing for a bad workspace entry (never started).
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
        api.on::<ContextEvent, _>(move |_e, _ctx, _cancel| {
            let servers = servers.clone();
            Box::pin(async move {
                servers.refresh().await;
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
