//! The MCP feature (`volcanic-mcp`): a chat's agent uses MCP servers. On when the config has a
//! `[mcp]` section (even empty: then only workspaces' `.volcanic/mcp.json` files count):
//!
//! ```toml
//! [mcp]
//! start_wait_secs = 10          # how long a chat's first run waits for its servers (default 10)
//! max_tools = 100               # MCP tools per session; more are left out and reported
//! max_schema_bytes = 65536      # bytes of their schemas per session; likewise
//!
//! [mcp.servers.github]
//! command = "github-mcp-server"
//! args = ["stdio"]
//! env = { GITHUB_PERSONAL_ACCESS_TOKEN = "$GITHUB_TOKEN" }   # `$NAME`: the bot's environment
//! chats = ["123456789"]         # only these chats (default: every chat)
//! exclude_tools = ["delete_repository"]
//! call_timeout_secs = 60
//!
//! [mcp.servers.docs]
//! url = "https://mcp.example.com/mcp"
//! shared = true                 # one connection for all chats (default: one per chat)
//! ```
//!
//! A remote server that answers 401 shows "needs login" in `/mcp`; `/mcp login NAME` sends a
//! sign-in button (MCP authorization: discovery, dynamic or pre-registered client
//! `oauth = { client_id = "…", client_secret = "$SECRET", scopes = […] }`, PKCE). With
//! `[http] public_url` the browser comes back to `<public_url>/mcp/oauth/callback`; without it to
//! a loopback address the user pastes into the chat, taken before any session sees it. Tokens
//! are kept per chat and server in `state_dir/mcp/tokens` (0600), redacted, refreshed;
//! `/mcp logout NAME` revokes and deletes them.
//!
//! Per session the extension `mcp` (servers started on the chat's first run, their tools as
//! `<server>__<tool>`, re-listed after `list_changed`, a crashed server restarted with backoff,
//! questions from servers asked through the chat's buttons); the host command `/mcp` lists the chat's servers and their state. Every
//! `$NAME` value resolved is added to the policy's redactor, which also drops any inherited
//! variable holding it from every child process: it reaches its own server only.

use super::port::{ChatPort, Incoming, Target, UrlButton, chat_key};
use super::{CommandCall, FeatureCommand, HostFeature, Services, SessionPlace, Turn};
use async_trait::async_trait;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Html;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use volcanic_abstractions::extensions::ExtensionFactory;
use volcanic_mcp::config::{RawEntry, WORKSPACE_FILE};
use volcanic_mcp::session_server::Limits;
use volcanic_mcp::{DEFAULT_START_WAIT, McpHost};

/// `[mcp]`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Section {
    /// Seconds a chat's first run waits for its servers.
    #[serde(default)]
    start_wait_secs: Option<u64>,
    /// MCP tools per session (all servers), over it left out and reported.
    #[serde(default)]
    max_tools: Option<usize>,
    /// Bytes of the MCP tools' schemas and descriptions per session, over it left out and reported.
    #[serde(default)]
    max_schema_bytes: Option<usize>,
    /// `[mcp.servers.NAME]`, each checked on its own (a bad one never stops the others).
    #[serde(default)]
    servers: BTreeMap<String, toml::Value>,
}

/// The sign-in callback route on the bot's listener.
const CALLBACK_PATH: &str = "/mcp/oauth/callback";

/// Where the browser comes back to without a public URL: nothing listens there; the user pastes
/// the address into the chat.
const LOOPBACK_REDIRECT: &str = "http://127.0.0.1:53683/volcanic/mcp-oauth";

/// The feature: the process-wide client.
pub struct Mcp {
    host: Arc<McpHost>,
    /// The outgoing API (`None` in the console: no sign-ins there).
    chats: Option<Arc<dyn ChatPort>>,
    /// Where sign-ins bring the browser back: the callback route, else the loopback address.
    redirect_uri: String,
    /// `[http] public_url` is set: the callback route is served.
    callback: bool,
    /// Where to confirm a sign-in finished on the callback route, by session scope.
    targets: Arc<Mutex<HashMap<String, Target>>>,
}

impl std::fmt::Debug for Mcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mcp")
            .field("host", &self.host)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

/// Builds it when the config has `[mcp]`.
pub fn build(services: &Services) -> anyhow::Result<Option<Arc<dyn HostFeature>>> {
    let Some(section) = services.section::<Section>("mcp")? else {
        return Ok(None);
    };
    let start_wait = match section.start_wait_secs {
        Some(0) => anyhow::bail!("config key `mcp.start_wait_secs`: must be at least 1"),
        Some(s) => Duration::from_secs(s),
        None => DEFAULT_START_WAIT,
    };
    let defaults = Limits::default();
    let limits = Limits {
        max_tools: section.max_tools.unwrap_or(defaults.max_tools),
        max_schema_bytes: section.max_schema_bytes.unwrap_or(defaults.max_schema_bytes),
    };
    if limits.max_tools == 0 || limits.max_schema_bytes == 0 {
        anyhow::bail!("config keys `mcp.max_tools` and `mcp.max_schema_bytes`: must be at least 1");
    }
    let entries = section
        .servers
        .into_iter()
        .map(|(name, value)| {
            let entry = value
                .try_into::<RawEntry>()
                .map_err(|e| format!("config key `mcp.servers.{name}`: {}", e.to_string().trim()));
            (name, entry)
        })
        .collect();
    let (host, secrets) = McpHost::new(entries, &|name| std::env::var(name).ok(), start_wait);
    // A shared server's process starts in the bot's own folder, never in a chat's workspace.
    let processes: Arc<dyn volcanic_abstractions::processes::ProcessSpawnPolicy> = services.processes.clone();
    let host = host
        .with_limits(limits)
        .with_processes(processes, services.state_dir.join("mcp-shared"))
        .with_tokens(services.state_dir.join("mcp").join("tokens"), services.redactor.clone());
    for secret in secrets {
        services.redactor.add_secret(&secret);
    }
    let public = services.config.public_url.trim().trim_end_matches('/');
    let redirect_uri = if public.is_empty() {
        LOOPBACK_REDIRECT.to_owned()
    } else {
        format!("{public}{CALLBACK_PATH}")
    };
    Ok(Some(Arc::new(Mcp {
        host: Arc::new(host),
        chats: services.chats.clone(),
        redirect_uri,
        callback: !public.is_empty(),
        targets: Arc::default(),
    })))
}

/// Where a session's servers are kept: its chat and topic (`console` without a chat).
fn scope(target: Option<Target>) -> String {
    match target {
        None => "console".into(),
        Some(Target { chat_id, thread: None }) => chat_key(chat_id),
        Some(Target {
            chat_id,
            thread: Some(t),
        }) => format!("{}/{t}", chat_key(chat_id)),
    }
}

const COMMANDS: &[FeatureCommand] = &[FeatureCommand {
    name: "mcp",
    description: "MCP servers of this chat and their state; /mcp login|logout|restart NAME",
    turn: Turn::AtOnce,
}];

/// The callback route's state.
#[derive(Clone)]
struct Callback {
    host: Arc<McpHost>,
    chats: Arc<dyn ChatPort>,
    redirect_uri: String,
    targets: Arc<Mutex<HashMap<String, Target>>>,
}

/// `GET /mcp/oauth/callback?code=…&state=…`: finishes the sign-in, confirms in its chat.
async fn callback(State(cb): State<Callback>, RawQuery(query): RawQuery) -> (StatusCode, Html<String>) {
    let url = format!("{}?{}", cb.redirect_uri, query.unwrap_or_default());
    match cb.host.finish_login(&url, None).await {
        Ok(whom) => {
            let target = cb
                .targets
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&whom.scope)
                .copied();
            if let Some(target) = target {
                let _ = cb.chats.send(target, &signed_in(&whom.server), &[]).await;
            }
            (
                StatusCode::OK,
                super::sign_in_page(
                    "Signed in",
                    &format!(
                        "Signed in to {}. You can close this page and go back to Telegram.",
                        whom.server
                    ),
                ),
            )
        }
        Err(e) => (StatusCode::BAD_REQUEST, super::sign_in_page("Not signed in", &e)),
    }
}

fn signed_in(server: &str) -> String {
    format!("Signed in to {server}: its tools are available from your next message.")
}

impl Mcp {
    /// `/mcp login NAME`: the sign-in button; `None` when it was sent.
    async fn login(&self, call: CommandCall<'_>, name: &str) -> Option<String> {
        let Some(chats) = &self.chats else {
            return Some("Sign-ins are kept per chat: use /mcp login in a Telegram chat.".into());
        };
        let chat = chat_key(call.target.chat_id);
        let scope = scope(Some(call.target));
        let url = match self.host.login(&chat, &scope, name, &self.redirect_uri).await {
            Ok(url) => url,
            Err(e) => return Some(format!("⚠️ {e}")),
        };
        let Ok(parsed) = url::Url::parse(&url) else {
            return Some(format!("⚠️ the sign-in address of {name} is not a valid URL"));
        };
        self.targets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(scope, call.target);
        let text = if self.callback {
            format!(
                "Open the link below and sign in to {name}; I confirm here when it is done. The link works once, for 10 minutes."
            )
        } else {
            format!(
                "Open the link below and sign in to {name}. Your browser then lands on a page that does not load \
                 (an address starting with http://127.0.0.1): copy that whole address from the address bar and send \
                 it here. I take it before the assistant sees it and delete it. The link works once, for 10 minutes."
            )
        };
        let button = [UrlButton {
            text: format!("Sign in to {name}"),
            url: parsed,
        }];
        if call.message.is_group() && self.callback {
            // The callback cannot tell who opened the link: in a group only the user who asked
            // gets it, privately (as the calendar's sign-in does).
            let private = Target {
                chat_id: call.message.from_id,
                thread: None,
            };
            let text = format!(
                "Sign-in to {name} for the group you ran /mcp login in: open the link below and sign in; I confirm \
                 in the group when it is done. The link works once, for 10 minutes. Do not share it: whoever signs \
                 in with it connects their account to the group."
            );
            return Some(match chats.send(private, &text, &button).await {
                Ok(_) => "I sent you the sign-in link in a private message.".to_owned(),
                Err(e) => {
                    tracing::info!(
                        chat = call.target.chat_id,
                        "cannot send the MCP sign-in link privately: {e}"
                    );
                    format!(
                        "⚠️ I can send the sign-in link only privately, and cannot write to you yet: open a private \
                         chat with @{}, press Start, then run /mcp login {name} here again.",
                        call.bot_username
                    )
                }
            });
        }
        match chats.send(call.target, &text, &button).await {
            Ok(_) => None,
            Err(e) => Some(format!("⚠️ cannot send the sign-in link: {e}")),
        }
    }
}

#[async_trait]
impl HostFeature for Mcp {
    fn name(&self) -> &'static str {
        "mcp"
    }

    fn session_extensions(&self, place: &SessionPlace<'_>) -> Vec<ExtensionFactory> {
        let chat = place.chat.map(|t| chat_key(t.chat_id));
        // A caller without `bash` wrote what its workspace's file names: never started.
        let workspace = place
            .caller
            .is_none_or(|c| c.bash)
            .then(|| place.workspace.to_path_buf());
        vec![self.host.factory(chat, scope(place.chat), workspace)]
    }

    async fn stop(&self) {
        self.host.stop_all();
    }

    fn routes(&self) -> Option<axum::Router> {
        let chats = self.chats.clone()?;
        self.callback.then(|| {
            axum::Router::new()
                .route(CALLBACK_PATH, axum::routing::get(callback))
                .with_state(Callback {
                    host: self.host.clone(),
                    chats,
                    redirect_uri: self.redirect_uri.clone(),
                    targets: self.targets.clone(),
                })
        })
    }

    fn takes(&self, text: &str) -> bool {
        self.host.is_login_callback(text)
    }

    /// A pasted loopback address: deleted (it carries a code), the sign-in finished, answered.
    async fn take(&self, m: &Incoming, text: &str) {
        let Some(chats) = &self.chats else { return };
        let target = m.target();
        let deleted = chats.delete(target, m.message_id).await;
        let mut answer = match self.host.finish_login(text, Some(&chat_key(m.chat_id))).await {
            Ok(whom) => signed_in(&whom.server),
            Err(e) => format!("⚠️ {e}"),
        };
        if let Err(e) = deleted {
            tracing::warn!(chat = m.chat_id, "could not delete a pasted sign-in address: {e}");
            answer.push_str(
                "\n\n⚠️ I could not delete your message with the address (it carries a sign-in code): please delete it yourself.",
            );
        }
        let _ = chats.send(target, &answer, &[]).await;
    }

    fn chat_files(&self, chat_key: &str) -> Vec<std::path::PathBuf> {
        self.host.token_dir(chat_key).into_iter().collect()
    }

    fn commands(&self) -> &[FeatureCommand] {
        COMMANDS
    }

    async fn command(&self, _name: &str, call: CommandCall<'_>) -> Option<String> {
        let mut words = call.args.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (None, _, _) => {}
            (Some("restart"), Some(name), None) => {
                return Some(self.host.restart(&scope(Some(call.target)), name));
            }
            (Some("login"), Some(name), None) => return self.login(call, name).await,
            (Some("logout"), Some(name), None) => {
                let chat = chat_key(call.target.chat_id);
                return Some(self.host.logout(&chat, &scope(Some(call.target)), name).await);
            }
            _ => {
                return Some(
                    "Usage: /mcp (the servers and their state), /mcp login NAME, /mcp logout NAME or /mcp restart NAME"
                        .into(),
                );
            }
        }
        let states = self
            .host
            .status(&chat_key(call.target.chat_id), &scope(Some(call.target)));
        if states.is_empty() {
            return Some(format!(
                "No MCP servers for this chat. Add one in the bot's config ([mcp.servers.NAME]) \
                 or in the workspace's {WORKSPACE_FILE}."
            ));
        }
        let lines: Vec<String> = states
            .iter()
            .map(|(name, state)| {
                let shared = if self.host.is_shared(name) { " (shared)" } else { "" };
                let hint = if *state == volcanic_mcp::session::ServerState::NeedsLogin && shared.is_empty() {
                    format!(" (/mcp login {name} signs in)")
                } else {
                    String::new()
                };
                format!("- {name}{shared}: {state}{hint}")
            })
            .collect();
        Some(format!("MCP servers:\n{}", lines.join("\n")))
    }

    fn help(&self) -> &[&'static str] {
        &[
            "/mcp - MCP servers of this chat and their state; /mcp login|logout NAME signs in or out of one; /mcp restart NAME restarts one",
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example config's `[mcp]` block (commented out there) is a valid section.
    #[test]
    fn the_example_configs_block_parses() {
        let text = include_str!("../../../config/volcanic.example.toml");
        let block: String = text
            .lines()
            .skip_while(|l| !l.starts_with("# [mcp]"))
            .take_while(|l| l.starts_with('#') && (!l.starts_with("# [") || l.starts_with("# [mcp")))
            .map(|l| l.trim_start_matches('#').trim_start())
            .collect::<Vec<_>>()
            .join("\n");
        let table: toml::Table = block.parse().unwrap_or_else(|e| panic!("{e}"));
        let section: Section = toml::Value::Table(table["mcp"].as_table().cloned().unwrap_or_default())
            .try_into()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(section.servers.len(), 4);
        for (name, value) in section.servers {
            let raw: RawEntry = value.try_into().unwrap_or_else(|e| panic!("{name}: {e}"));
            let lookup = |_: &str| Some("a-secret-value".to_owned());
            let spec = raw.resolve(&name, volcanic_mcp::config::Origin::Host, &lookup, &mut Vec::new());
            assert!(matches!(spec, Ok(Some(_))), "{name}: {spec:?}");
        }
    }
}
