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
//!   tools before the next model call; a server that exits is restarted with backoff ([`link`]);
//!   the tools of a session are bounded ([`session_server::Limits`]).
//! - A host server marked `shared = true` runs once for all its chats: one process (through the
//!   host's policy, [`McpHost::with_processes`]) and one connection, started with the first
//!   chat's first run, its tools given to every session of those chats, restarted with backoff
//!   like the others, stopped at [`McpHost::stop_all`] only. It asks no questions (it serves
//!   several chats at once: elicitation is not offered).
//!
//! - A remote server answering 401 shows as "needs login"; `/mcp login NAME` signs the chat in
//!   ([`oauth`], [`logins`]): tokens per chat and server under the host's tokens folder, used
//!   and refreshed by the connection, revoked and deleted by `/mcp logout NAME`.

pub mod client;
pub mod config;
pub mod content;
pub mod elicit;
pub mod link;
pub mod logins;
pub mod names;
pub mod oauth;
pub mod server;
pub mod session;
pub mod session_server;

use config::{BadEntry, Origin, RawEntry, ServerSpec};
use link::{HostLauncher, Launcher, Link, LinkState};
use session::{ChatServers, McpExtension, ServerState};
use session_server::Limits;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use volcanic_abstractions::extensions::{Extension, ExtensionFactory};
use volcanic_abstractions::processes::{ProcessSpawnPolicy, SecretRedactor};

/// How long a run waits for its chat's servers by default.
pub const DEFAULT_START_WAIT: Duration = Duration::from_secs(10);

/// A host server entry: the server, and the chats it is for (empty: all).
#[derive(Debug, Clone)]
struct HostServer {
    spec: ServerSpec,
    chats: Vec<String>,
    /// Its link when `shared = true` (one for all its chats).
    shared: Option<Arc<Link>>,
    /// The OAuth client of `/mcp login` (default: dynamic registration).
    oauth: oauth::ClientSpec,
}

impl HostServer {
    fn serves(&self, chat: Option<&str>) -> bool {
        self.chats.is_empty() || chat.is_some_and(|c| self.chats.iter().any(|x| x == c))
    }
}

/// The process-wide MCP client: the host's servers, and every session's servers by chat.
#[derive(Debug)]
pub struct McpHost {
    servers: Vec<HostServer>,
    bad: Vec<BadEntry>,
    start_wait: Duration,
    limits: Limits,
    sessions: Mutex<HashMap<String, Weak<ChatServers>>>,
    /// Where the chats' OAuth tokens live, and the redactor they are given to.
    tokens: Option<Tokens>,
    logins: logins::Logins,
}

/// The chats' token folder and the redactor their tokens go to.
struct Tokens(PathBuf, Arc<dyn SecretRedactor>);

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Tokens").field(&self.0).finish_non_exhaustive()
    }
}

/// A shared server's state for `/mcp` outside a session (its tool count before a session's
/// bounds are applied).
pub(crate) fn shared_state(link: &Link) -> ServerState {
    match link.state() {
        LinkState::Idle => ServerState::NotStarted,
        LinkState::Starting => ServerState::Starting,
        LinkState::Up => ServerState::Ready {
            tools: link.listed().iter().filter(|t| link.spec.wants(&t.name)).count(),
            left_out: 0,
            restarts: link.restarts(),
        },
        LinkState::Restarting { attempt } => ServerState::Restarting { attempt },
        LinkState::Failed(why) => ServerState::Failed(why),
        LinkState::NeedsLogin => ServerState::NeedsLogin,
        LinkState::Stopped => ServerState::Stopped,
    }
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
                    let (chats, shared) = (raw.chats.clone(), raw.shared);
                    let oauth = raw.oauth_client(&name, Origin::Host, lookup, &mut secrets)?;
                    raw.resolve(&name, Origin::Host, lookup, &mut secrets).map(|s| {
                        s.map(|spec| HostServer {
                            shared: shared
                                .then(|| Link::new(spec.clone(), Arc::new(HostLauncher::new(None, ".".into())))),
                            spec,
                            chats,
                            oauth,
                        })
                    })
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
            tokens: None,
            logins: Default::default(),
        };
        (host, secrets)
    }

    /// With these bounds on each session's MCP tools (default [`Limits::default`]).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Shared servers' processes start through `policy` (the host's: deny-listed environment,
    /// their explicit `env`, the host's `TZ`) in `cwd` (made when missing). Without it a shared
    /// stdio server fails to start, saying so.
    pub fn with_processes(mut self, policy: Arc<dyn ProcessSpawnPolicy>, cwd: PathBuf) -> Self {
        let launcher: Arc<dyn Launcher> = Arc::new(HostLauncher::new(Some(policy), cwd));
        for s in &mut self.servers {
            if s.shared.is_some() {
                s.shared = Some(Link::new(s.spec.clone(), launcher.clone()));
            }
        }
        self
    }

    /// Chats' OAuth tokens live in `dir` (`<dir>/<chat>/<server>.json`, under the host's state
    /// folder, never in a workspace), each token given to `redactor`. Without it `/mcp login`
    /// is refused (the console).
    pub fn with_tokens(mut self, dir: PathBuf, redactor: Arc<dyn SecretRedactor>) -> Self {
        self.tokens = Some(Tokens(dir, redactor));
        self
    }

    /// How long a run waits for servers still starting.
    pub fn start_wait(&self) -> Duration {
        self.start_wait
    }

    /// The extension factory for a session of `chat` (its key, matched against a server's
    /// `chats`; `None` in the console) whose workspace's own servers (`.volcanic/mcp.json`) are
    /// read from `workspace`; `None`: that file is not read (a session whose user may not run
    /// commands: a server the file names is a command it wrote). Each session made from it
    /// registers under `scope` (its chat and topic) for [`McpHost::status`].
    pub fn factory(
        self: &Arc<Self>,
        chat: Option<String>,
        scope: String,
        workspace: Option<PathBuf>,
    ) -> ExtensionFactory {
        let host = self.clone();
        Arc::new(move || {
            let mine = host.servers.iter().filter(|s| s.serves(chat.as_deref()));
            let specs = mine
                .clone()
                .filter(|s| s.shared.is_none())
                .map(|s| s.spec.clone())
                .collect();
            let shared = mine.filter_map(|s| s.shared.clone()).collect();
            let tokens = host
                .tokens
                .as_ref()
                .zip(chat.as_ref())
                .map(|(Tokens(dir, _), chat)| (dir.clone(), chat.clone()));
            let servers = Arc::new(ChatServers::new(
                specs,
                shared,
                host.bad.clone(),
                tokens,
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
            .filter(|s| s.serves(Some(chat)))
            .map(|s| {
                let state = s.shared.as_deref().map_or(ServerState::NotStarted, shared_state);
                (s.spec.name.clone(), state)
            })
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
            None => match self
                .servers
                .iter()
                .find(|s| s.spec.name == name)
                .and_then(|s| s.shared.as_ref())
            {
                Some(link) if link.restart_now() => {
                    format!("Restarting the shared MCP server `{name}` (for every chat); /mcp shows when it is ready.")
                }
                _ => "This chat has no running session: its servers start with its next message.".into(),
            },
        }
    }

    /// The live session at `scope`, if any.
    fn live(&self, scope: &str) -> Option<Arc<ChatServers>> {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(scope)
            .and_then(Weak::upgrade)
    }

    /// Server `name` as the chat `chat` (session at `scope`) has it: its URL, whether it is
    /// shared, its OAuth client; an `Err` says why it cannot sign in.
    fn remote(&self, chat: &str, scope: &str, name: &str) -> Result<(String, oauth::ClientSpec), String> {
        let host = self
            .servers
            .iter()
            .find(|s| s.spec.name == name && s.serves(Some(chat)));
        let (spec, shared, client) = match (host, self.live(scope).and_then(|l| l.spec(name))) {
            (Some(h), _) => (h.spec.clone(), h.shared.is_some(), h.oauth.clone()),
            (None, Some((spec, shared))) => (spec, shared, oauth::ClientSpec::default()),
            (None, None) => return Err(format!("No MCP server `{name}` in this chat (/mcp lists them).")),
        };
        if shared {
            return Err(format!(
                "MCP server `{name}` is shared by all chats, so it cannot use one chat's sign-in: give it a \
                 static `headers` token in the bot's config instead."
            ));
        }
        match spec.transport {
            config::Transport::Http { url, .. } => Ok((url, client)),
            config::Transport::Stdio { .. } => Err(format!(
                "MCP server `{name}` runs as a local process: it takes its secrets through `env`, not a sign-in."
            )),
        }
    }

    /// Starts a sign-in to server `name` for `chat` (session at `scope`): the address the user
    /// opens, which brings the browser back to `redirect_uri`. `Err` says what is wrong.
    pub async fn login(&self, chat: &str, scope: &str, name: &str, redirect_uri: &str) -> Result<String, String> {
        let Some(Tokens(dir, redactor)) = &self.tokens else {
            return Err("Sign-ins are kept per chat: use /mcp login in a Telegram chat.".into());
        };
        let (url, mut client) = self.remote(chat, scope, name)?;
        let file = oauth::TokenFile::new(dir, chat, name, redactor.clone());
        // After a 403 for scope, a step-up: the refused call's challenge, and the scopes granted
        // so far with those it asks for (the new token must not lose what the old one could do).
        let step_up = self.live(scope).and_then(|l| l.scope_challenge(name));
        let challenge = match step_up {
            Some(c) => {
                client.scopes = oauth::step_up_scopes(&client.scopes, &file, &c);
                Some(c)
            }
            None => oauth::probe_challenge(&url).await,
        };
        let login = oauth::Login::begin(&url, &client, redirect_uri, challenge.as_deref(), file)
            .await
            .map_err(|e| format!("Cannot start the sign-in to `{name}`: {e}"))?;
        let address = login.url().to_owned();
        let whom = logins::LoginFor {
            chat: chat.to_owned(),
            scope: scope.to_owned(),
            server: name.to_owned(),
        };
        self.logins.add(login, whom)?;
        Ok(address)
    }

    /// The folder of the chat `chat`'s tokens (moved with a group that becomes a supergroup).
    pub fn token_dir(&self, chat: &str) -> Option<PathBuf> {
        self.tokens.as_ref().map(|Tokens(dir, _)| dir.join(chat))
    }

    /// Whether `text` is the (pasted) address a sign-in under way is waiting for.
    pub fn is_login_callback(&self, text: &str) -> bool {
        self.logins.is_callback(text)
    }

    /// Finishes the sign-in `callback_url` answers (from the callback route, or pasted in
    /// `chat`): the code exchanged, the tokens saved, the server of the chat's session
    /// restarted with them. Returns who signed in.
    pub async fn finish_login(&self, callback_url: &str, chat: Option<&str>) -> Result<logins::LoginFor, String> {
        let (login, whom) = self.logins.take(callback_url, chat)?;
        login
            .finish(callback_url)
            .await
            .map_err(|e| format!("The sign-in to `{}` failed: {e}", whom.server))?;
        tracing::info!(chat = %whom.chat, server = %whom.server, "MCP sign-in done");
        if let Some(live) = self.live(&whom.scope) {
            live.restart_and_wait(&whom.server, self.start_wait).await;
        }
        Ok(whom)
    }

    /// Signs `chat` out of server `name`: its tokens revoked where the server allows it, and
    /// deleted; the server of the session restarted without them. The answer for `/mcp logout`.
    pub async fn logout(&self, chat: &str, scope: &str, name: &str) -> String {
        let Some(Tokens(dir, redactor)) = &self.tokens else {
            return "Sign-ins are kept per chat: use /mcp logout in a Telegram chat.".into();
        };
        let url = match self.remote(chat, scope, name) {
            Ok((url, _)) => url,
            Err(e) => return e,
        };
        let file = oauth::TokenFile::new(dir, chat, name, redactor.clone());
        if !file.exists() {
            return format!("This chat is not signed in to `{name}`.");
        }
        let answer = match oauth::logout(&url, &file).await {
            Ok(true) => format!("Signed out of `{name}`: its tokens were revoked and deleted."),
            Ok(false) => format!(
                "Signed out of `{name}`: its tokens were deleted (the server did not revoke them; it offers no revocation or refused)."
            ),
            Err(e) => return format!("Cannot sign out of `{name}`: {e}"),
        };
        if let Some(live) = self.live(scope) {
            live.restart(name);
        }
        answer
    }

    /// Whether server `name` is a shared one (`/mcp` marks it).
    pub fn is_shared(&self, name: &str) -> bool {
        self.servers.iter().any(|s| s.spec.name == name && s.shared.is_some())
    }

    /// Stops every session's servers and the shared ones (the bot stops).
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
        for link in self.servers.iter().filter_map(|s| s.shared.as_ref()) {
            link.stop();
        }
    }
}
