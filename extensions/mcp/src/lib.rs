//! The MCP client (issue 16): a chat's agent uses MCP servers, on the official SDK `rmcp` and
//! the contracts only.
//!
//! - Servers come from the host config (`[mcp.servers.NAME]`, for every chat or listed
//!   chats) and a workspace's `.volcanic/mcp.json` ([`config`]); secrets are named there and
//!   resolved by the host, reaching that server only; bad entries are reported by name.
//! - A stdio server starts through the session's process policy (`prepare_process`: deny-listed
//!   environment, its explicit `env`, the chat's `TZ`) in its own process group, lazily at the
//!   chat's first run, all in parallel; the run waits at most [`McpHost::start_wait`]. It stops
//!   with its session (its group killed) or at [`McpHost::stop_all`].
//! - Its tools appear as `<server>__<tool>` ([`names`]), results mapped by [`content`].
//!
//! - Questions from servers ([`elicit`]) go to the session's UI; `list_changed` re-lists the
//!   tools before the next model call; a server that exits is restarted with backoff; the tools
//!   of a session are bounded ([`slot::Limits`]).
//!
//! Not yet: OAuth, shared servers.

pub mod client;
pub mod config;
pub mod content;
pub mod elicit;
pub mod names;
pub mod server;
pub mod session;
pub mod slot;

use config::{BadEntry, Origin, RawEntry, ServerSpec};
use session::{ChatServers, McpExtension, ServerState};
use slot::Limits;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use volcanic_abstractions::extensions::{Extension, ExtensionFactory};

/// How long a run waits for its chat's servers by default.
pub const DEFAULT_START_WAIT: Duration = Duration::from_secs(10);

/// A host server entry: the server, and the chats it is for (empty: all).
#[derive(Debug, Clone)]
struct HostServer {
    spec: ServerSpec,
    chats: Vec<String>,
}

/// The process-wide MCP client: the host's servers, and every session's servers by chat.
#[derive(Debug)]
pub struct McpHost {
    servers: Vec<HostServer>,
    bad: Vec<BadEntry>,
    start_wait: Duration,
    limits: Limits,
    sessions: Mutex<HashMap<String, Weak<ChatServers>>>,
}

impl McpHost {
    /// From the host config's entries (each parsed by the host; an `Err` is that entry's parse
    /// error), with `lookup` reading the host environment for `$NAME`. Returns it with the secret
    /// values it resolved (for the host's redactor). Bad entries are kept to be reported.
    pub fn new(
        entries: Vec<(String, Result<RawEntry, String>)>,
        lookup: &dyn Fn(&str) -> Option<String>,
        start_wait: Duration,
    ) -> (McpHost, Vec<String>) {
        let (mut servers, mut bad, mut secrets) = (Vec::new(), Vec::new(), Vec::new());
        for (name, entry) in entries {
            let resolved = entry
                .map_err(|reason| BadEntry {
                    name: name.clone(),
                    reason,
                })
                .and_then(|raw| {
                    let chats = raw.chats.clone();
                    raw.resolve(&name, Origin::Host, lookup, &mut secrets)
                        .map(|s| s.map(|spec| HostServer { spec, chats }))
                });
            match resolved {
                Ok(Some(s)) => servers.push(s),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!("{e}");
                    bad.push(e);
                }
            }
        }
        let host = McpHost {
            servers,
            bad,
            start_wait,
            limits: Limits::default(),
            sessions: Mutex::default(),
        };
        (host, secrets)
    }

    /// With these bounds on each session's MCP tools (default [`Limits::default`]).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// How long a run waits for servers still starting.
    pub fn start_wait(&self) -> Duration {
        self.start_wait
    }

    /// The extension factory for a session of `chat` (its key, matched against a server's
    /// `chats`; `None` in the console) working in `workspace`. Each session made from it
    /// registers under `scope` (its chat and topic) for [`McpHost::status`].
    pub fn factory(self: &Arc<Self>, chat: Option<String>, scope: String, workspace: PathBuf) -> ExtensionFactory {
        let host = self.clone();
        Arc::new(move || {
            let specs = host
                .servers
                .iter()
                .filter(|s| s.chats.is_empty() || chat.as_ref().is_some_and(|c| s.chats.contains(c)))
                .map(|s| s.spec.clone())
                .collect();
            let servers = Arc::new(ChatServers::new(
                specs,
                host.bad.clone(),
                workspace.clone(),
                host.start_wait,
                host.limits,
            ));
            let mut sessions = host.sessions.lock().unwrap_or_else(|e| e.into_inner());
            sessions.retain(|_, w| w.strong_count() > 0);
            sessions.insert(scope.clone(), Arc::downgrade(&servers));
            Box::new(McpExtension { servers }) as Box<dyn Extension>
        })
    }

    /// `(name, state)` of the servers of the session at `scope` (of `chat`); before it has one,
    /// the host's servers for the chat as not started, and the bad host entries.
    pub fn status(&self, chat: &str, scope: &str) -> Vec<(String, ServerState)> {
        let live = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(scope)
            .and_then(Weak::upgrade);
        if let Some(s) = live {
            return s.states();
        }
        self.servers
            .iter()
            .filter(|s| s.chats.is_empty() || s.chats.iter().any(|c| c == chat))
            .map(|s| (s.spec.name.clone(), ServerState::NotStarted))
            .chain(
                self.bad
                    .iter()
                    .map(|b| (b.name.clone(), ServerState::Failed(b.reason.clone()))),
            )
            .collect()
    }

    /// Restarts server `name` of the session at `scope`; the answer for `/mcp restart NAME`.
    pub fn restart(&self, scope: &str, name: &str) -> String {
        let live = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(scope)
            .and_then(Weak::upgrade);
        match live {
            Some(s) => s.restart(name),
            None => "This chat has no running session: its servers start with its next message.".into(),
        }
    }

    /// Stops every session's servers (the bot stops).
    pub fn stop_all(&self) {
        let live: Vec<Arc<ChatServers>> = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        for s in live {
            s.stop();
        }
    }
}
