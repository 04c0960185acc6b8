//! The A2A client feature: every chat's session gets the `a2a` tool (`volcanic-a2a`), on by
//! default (issue 14: "added to every chat session by the host"); `[a2a] enabled = false` turns
//! it off. The console (one session, no chat) gets it only with an `[a2a]` section.
//!
//! ```toml
//! [a2a]
//! enabled = true              # false: no chat gets the tool
//! send_wait_seconds = 60      # how long `send` waits for a final answer (1..=600)
//! max_hops = 3                # a chain of agents longer than this is refused
//! poll_seconds = 5            # a long task is polled after 5 s, doubling to poll_max_seconds
//! poll_max_seconds = 60
//! reconcile_seconds = 600     # every pending task is checked with GetTask this often
//! [a2a.credentials."https://agents.example.org"]   # an exact origin: scheme://host[:port]
//! token_env = "RESEARCH_AGENT_TOKEN"                        # sent as Authorization: Bearer …
//! # or an API key in a header: header = "X-API-Key", key_env = "RESEARCH_AGENT_KEY"
//! ```
//!
//! The agents themselves are listed per chat in its workspace, `.volcanic/a2a/agents.json`
//! (names and URLs only). A credential is sent only to its exact origin, also after redirects;
//! its value is redacted from tool output and its variable kept out of child processes
//! (`crate::secrets`). One client (HTTP and card cache) serves the whole process.
//!
//! In the Telegram host, a task still running after `send`'s wait goes to the process-wide
//! [`A2AWatchRegistry`], and its result comes back into the chat as a follow-up prompt
//! ([`ChatResults`], queued behind a running turn and journaled per task like a scheduled
//! slot's answer, so a crash never shows it twice). With `[http] public_url`, agents that
//! support push notify `<public_url>/a2a/push/<id>`. `/agents` shows the chat's agents and its
//! pending tasks.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use tokio_util::sync::CancellationToken;
use volcanic_a2a::{
    A2AResult, A2AResultDelivery, A2AWatchRegistry, A2aClient, A2aSettings, ChatRef, Credential, DEFAULT_MAX_HOPS,
    DEFAULT_SEND_WAIT, PUSH_ROUTE, PushRefused, PushSettings, WatchSettings, read_agents,
};
use volcanic_abstractions::extensions::ExtensionFactory;
use volcanic_abstractions::messages::Message;

use super::port::{ChatPort, Delivered, LinePrompt, Target, chat_key, settled_answer};
use super::{CommandCall, FeatureCommand, HostFeature, Services, SessionPlace, Turn};

/// `[a2a]`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    /// Whether chats get the tool (default on).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// First pause (seconds) between polls of a long task; doubles up to `poll_max_seconds`.
    #[serde(default = "default_poll")]
    pub poll_seconds: f64,
    /// Longest pause (seconds) between polls.
    #[serde(default = "default_poll_max")]
    pub poll_max_seconds: f64,
    /// How often (seconds) every pending task is checked with `GetTask` anyway.
    #[serde(default = "default_reconcile")]
    pub reconcile_seconds: f64,
    /// Seconds `send` waits for a final answer.
    #[serde(default = "default_wait")]
    pub send_wait_seconds: u64,
    /// Longest chain of agents.
    #[serde(default = "default_hops")]
    pub max_hops: u32,
    /// Credentials by origin.
    #[serde(default)]
    pub credentials: BTreeMap<String, CredentialSection>,
    /// `[a2a.server]`: read by the A2A server feature ([`super::a2a_server`]), not by the client.
    #[serde(default)]
    pub server: Option<super::a2a_server::ServerSection>,
}

/// `[a2a.credentials."<origin>"]`: a bearer token or an API-key header, each read from
/// an environment variable (never written in the config).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialSection {
    /// The variable holding a bearer token.
    pub token_env: Option<String>,
    /// The header an API key goes in.
    pub header: Option<String>,
    /// The variable holding the API key.
    pub key_env: Option<String>,
}

impl Default for Section {
    fn default() -> Self {
        Section {
            enabled: true,
            poll_seconds: default_poll(),
            poll_max_seconds: default_poll_max(),
            reconcile_seconds: default_reconcile(),
            send_wait_seconds: default_wait(),
            max_hops: default_hops(),
            credentials: BTreeMap::new(),
            server: None,
        }
    }
}

fn yes() -> bool {
    true
}

fn default_poll() -> f64 {
    5.0
}

fn default_poll_max() -> f64 {
    60.0
}

fn default_reconcile() -> f64 {
    600.0
}

fn default_wait() -> u64 {
    DEFAULT_SEND_WAIT.as_secs()
}

fn default_hops() -> u32 {
    DEFAULT_MAX_HOPS
}

/// The variables every credential is read from, with their config keys (for `crate::secrets`).
pub fn credential_variables(section: &toml::Table) -> Vec<(String, String)> {
    let Some(toml::Value::Table(credentials)) = section.get("credentials") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (origin, c) in credentials {
        for key in ["token_env", "key_env"] {
            if let Some(name) = c.get(key).and_then(toml::Value::as_str) {
                out.push((format!("a2a.credentials.\"{origin}\".{key}"), name.to_owned()));
            }
        }
    }
    out
}

/// The client's settings from the section; `env` reads a variable. Errors name the key.
pub fn settings(section: &Section, env: impl Fn(&str) -> Option<String>) -> anyhow::Result<A2aSettings> {
    if !(1..=600).contains(&section.send_wait_seconds) {
        anyhow::bail!("config key `a2a.send_wait_seconds`: between 1 and 600 seconds");
    }
    let mut s = A2aSettings {
        send_wait: Duration::from_secs(section.send_wait_seconds),
        max_hops: section.max_hops,
        ..A2aSettings::default()
    };
    for (origin, c) in &section.credentials {
        let key = format!("a2a.credentials.\"{origin}\"");
        let read = |field: &str, name: &str| {
            env(name)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| anyhow::anyhow!("config key `{key}.{field}`: the variable {name} is not set"))
        };
        let credential = match (&c.token_env, &c.header, &c.key_env) {
            (Some(var), None, None) => Credential::Bearer(read("token_env", var)?),
            (None, Some(header), Some(var)) => Credential::Header {
                name: header.clone(),
                value: read("key_env", var)?,
            },
            _ => anyhow::bail!("config key `{key}`: give token_env, or header and key_env"),
        };
        s.add_credential(origin, credential)
            .map_err(|e| anyhow::anyhow!("config key `{key}`: {e}"))?;
    }
    Ok(s)
}

/// The watch timings of the section. Errors name the key.
fn watch_settings(section: &Section) -> anyhow::Result<WatchSettings> {
    let secs = |key: &str, v: f64| {
        if v.is_finite() && (0.05..=86_400.0).contains(&v) {
            Ok(Duration::from_secs_f64(v))
        } else {
            Err(anyhow::anyhow!(
                "config key `a2a.{key}`: seconds between 0.05 and 86400"
            ))
        }
    };
    Ok(WatchSettings {
        poll_first: secs("poll_seconds", section.poll_seconds)?,
        poll_max: secs("poll_max_seconds", section.poll_max_seconds)?,
        reconcile_every: secs("reconcile_seconds", section.reconcile_seconds)?,
        ..WatchSettings::default()
    })
}

/// The key push tokens are derived from: `<state_dir>/a2a/push.key`, 32 random bytes made once
/// (owner-only), never in a workspace.
fn push_key(state_dir: &Path) -> anyhow::Result<Vec<u8>> {
    let path = state_dir.join("a2a").join("push.key");
    match std::fs::read(&path) {
        Ok(k) if k.len() >= 32 => return Ok(k),
        Ok(_) => anyhow::bail!("{}: shorter than 32 bytes; delete it to make a new one", path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => anyhow::bail!("{}: {e}", path.display()),
    }
    let key: [u8; 32] = rand::random();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("tmp");
    {
        use std::io::Write;
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let mut f = opts.open(&tmp)?;
        f.write_all(&key)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, &path)?;
    Ok(key.to_vec())
}

/// The feature: one client (and, in the Telegram host, one watch registry) for the process.
#[derive(Debug)]
pub struct A2a {
    client: Arc<A2aClient>,
    registry: Option<Arc<A2AWatchRegistry>>,
    workspaces_root: PathBuf,
}

/// Builds it for every chat of the Telegram host unless `[a2a] enabled = false`; in the
/// console (one session, no chat) only with an `[a2a]` section.
pub fn build(services: &Services) -> anyhow::Result<Option<Arc<dyn HostFeature>>> {
    let section = match services.section::<Section>("a2a")? {
        Some(s) => s,
        None if services.chats.is_some() => Section::default(),
        None => return Ok(None),
    };
    if !section.enabled {
        return Ok(None);
    }
    let settings = settings(&section, |name| std::env::var(name).ok())?;
    let mut watch = watch_settings(&section)?;
    for c in settings.credentials.values() {
        services.redactor.add_secret(c.secret());
    }
    let client = A2aClient::new(settings).map_err(|e| anyhow::anyhow!("A2A client: {e}"))?;
    let registry = match &services.chats {
        Some(chats) => {
            let public = services.config.public_url.trim();
            if !public.is_empty() {
                watch.push = Some(PushSettings {
                    public_url: url::Url::parse(public)
                        .map_err(|e| anyhow::anyhow!("config key `http.public_url`: {e}"))?,
                    key: push_key(&services.state_dir)?,
                });
            }
            watch.workspaces_root = Some(services.workspaces_root.clone());
            let delivery = Arc::new(ChatResults {
                chats: chats.clone(),
                shutdown: services.shutdown.clone(),
            });
            Some(A2AWatchRegistry::new(
                client.clone(),
                delivery,
                watch,
                services.shutdown.clone(),
            ))
        }
        None => None,
    };
    Ok(Some(Arc::new(A2a {
        client,
        registry,
        workspaces_root: services.workspaces_root.clone(),
    })))
}

const COMMANDS: &[FeatureCommand] = &[FeatureCommand {
    name: "agents",
    description: "The chat's A2A agents and pending tasks",
    turn: Turn::Waits,
}];

#[async_trait]
impl HostFeature for A2a {
    fn name(&self) -> &'static str {
        "a2a"
    }

    fn session_extensions(&self, place: &SessionPlace<'_>) -> Vec<ExtensionFactory> {
        match (&self.registry, place.chat) {
            (Some(registry), Some(t)) => vec![registry.extension_factory(ChatRef {
                chat_id: t.chat_id,
                topic: t.thread.map(i64::from),
            })],
            _ => vec![self.client.extension_factory()],
        }
    }

    fn routes(&self) -> Option<axum::Router> {
        let registry = self.registry.clone().filter(|r| r.has_push())?;
        Some(
            axum::Router::new()
                .route(PUSH_ROUTE, axum::routing::post(push))
                .with_state(registry),
        )
    }

    fn start(&self) {
        if let Some(r) = &self.registry {
            r.start();
        }
    }

    fn commands(&self) -> &[FeatureCommand] {
        COMMANDS
    }

    async fn command(&self, _name: &str, call: CommandCall<'_>) -> Option<String> {
        Some(self.agents(call.target).await)
    }

    fn help(&self) -> &[&'static str] {
        &["/agents - the chat's A2A agents (dialect, reachability) and pending tasks"]
    }
}

impl A2a {
    /// `/agents`: the chat's agents, their dialect and reachability, its pending tasks.
    async fn agents(&self, target: Target) -> String {
        let ws = self.workspaces_root.join(chat_key(target.chat_id));
        let mut out = String::from("A2A agents of this chat (.volcanic/a2a/agents.json):\n");
        match read_agents(&ws) {
            Ok(list) if list.is_empty() => {
                out.push_str("none yet: ask me to add one (a name and its base URL), or write the file yourself.\n")
            }
            Ok(list) => {
                for a in list {
                    let line = match self.client.card(&a.url, false).await {
                        Ok(c) => format!(
                            "✅ {} — {} ({}; streaming {}, push {})",
                            a.name,
                            c.name,
                            c.dialect.label(),
                            if c.streaming { "yes" } else { "no" },
                            if c.push { "yes" } else { "no" }
                        ),
                        Err(e) => format!("⚠️ {} — not reachable: {e}", a.name),
                    };
                    let _ = writeln!(out, "{line}\n   {}", a.url);
                }
            }
            Err(e) => {
                let _ = writeln!(out, "⚠️ {e}");
            }
        }
        let Some(registry) = &self.registry else { return out };
        let pending = registry.pending(&ws);
        if pending.is_empty() {
            out.push_str("\nNo pending tasks.");
        } else {
            out.push_str("\nPending tasks (their results come to the chat by themselves):\n");
            for t in pending.iter().filter(|t| t.chat.chat_id == target.chat_id) {
                let how = if t.push_id.is_some() { ", push" } else { "" };
                let _ = writeln!(out, "• {} task {}: {}{how}", t.agent, t.task_id, t.state);
            }
        }
        for p in registry.problems() {
            let _ = write!(out, "\n⚠️ {p}");
        }
        out
    }
}

/// `POST /a2a/push/{id}`: a push notification, answered at once (the follower confirms the
/// state with `GetTask`). The token comes in `X-A2A-Notification-Token` (1.0 and 0.3 SDKs),
/// `A2A-Notification-Token`, or `Authorization: Bearer`.
async fn push(
    State(registry): State<Arc<A2AWatchRegistry>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> StatusCode {
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
    let tokens: Vec<&str> = [
        header("x-a2a-notification-token"),
        header("a2a-notification-token"),
        header("authorization").and_then(|v| v.strip_prefix("Bearer ")),
    ]
    .into_iter()
    .flatten()
    .collect();
    match registry.on_push(&id, &tokens, &body) {
        Ok(()) => StatusCode::OK,
        Err(e) => {
            tracing::warn!("A2A push to receiver {id} refused: {e}");
            match e {
                PushRefused::Unknown => StatusCode::NOT_FOUND,
                PushRefused::Token => StatusCode::UNAUTHORIZED,
                PushRefused::Body => StatusCode::BAD_REQUEST,
            }
        }
    }
}

/// Delivers A2A results into their chats through the chat port: the result as a follow-up prompt
/// of the chat's session (queued behind a run in progress), its answer journaled under the
/// result's key, as a scheduled slot's is ([`ChatPort::deliver`]). After a restart a result whose
/// prompt is in the transcript is not asked again: its run goes on, or its answer is delivered
/// from where the journal says it stopped, or not at all when it was shown whole.
#[derive(Debug)]
pub struct ChatResults {
    chats: Arc<dyn ChatPort>,
    shutdown: CancellationToken,
}

#[async_trait]
impl A2AResultDelivery for ChatResults {
    async fn deliver(&self, r: A2AResult) -> Result<(), String> {
        let heading = format!("{}.", r.key);
        let line = LinePrompt {
            to: Target {
                chat_id: r.chat.chat_id,
                thread: r.chat.topic.and_then(|t| i32::try_from(t).ok()),
            },
            key: r.key,
            is_this: Box::new({
                let heading = heading.clone();
                move |text| text.starts_with(&heading)
            }),
            text: r.prompt,
            watch: None,
        };
        let (messages, undelivered) = match self.chats.deliver(line).await.map_err(|e| e.to_string())? {
            Delivered::Earlier => return Ok(()),
            Delivered::Ran { messages, undelivered } => (messages, undelivered),
        };
        let is_ours = |m: &Message| matches!(m, Message::User(u) if u.content.text().starts_with(&heading));
        let done = messages
            .iter()
            .rposition(is_ours)
            .and_then(|i| settled_answer(&messages, i))
            .is_some();
        if !done {
            return Err(if self.shutdown.is_cancelled() {
                "cut off by the bot's shutdown".into()
            } else {
                "the chat's run ended without an answer".into()
            });
        }
        if undelivered > 0 {
            return Err("Telegram did not take the whole answer".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str) -> Section {
        toml::from_str(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn credentials_come_from_variables_and_bad_ones_name_their_key() {
        let env = |n: &str| (n == "TOK").then(|| "tok-value-123".to_owned());
        let ok = settings(
            &section("[credentials.\"https://a.example\"]\ntoken_env = \"TOK\""),
            env,
        );
        let ok = ok.unwrap_or_else(|e| panic!("{e}"));
        let url = url::Url::parse("https://a.example/rpc").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            ok.credential_for(&url).map(|c| c.secret().to_owned()),
            Some("tok-value-123".into())
        );
        assert_eq!(ok.send_wait, DEFAULT_SEND_WAIT);
        for (text, needle) in [
            (
                "[credentials.\"https://a.example\"]\ntoken_env = \"MISSING\"",
                "MISSING is not set",
            ),
            (
                "[credentials.\"https://a.example\"]\nheader = \"X-Key\"",
                "give token_env, or header and key_env",
            ),
            (
                "[credentials.\"https://a.example/path\"]\ntoken_env = \"TOK\"",
                "without a path",
            ),
            ("send_wait_seconds = 0", "send_wait_seconds"),
        ] {
            let e = settings(&section(text), env)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains(needle) && e.contains("a2a"), "{text}: {e}");
        }
        let e = watch_settings(&section("poll_seconds = 0"))
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("a2a.poll_seconds")));
        assert!(!section("enabled = false").enabled && Section::default().enabled);
        let table: toml::Table = toml::from_str("[credentials.\"https://a.example\"]\nheader = \"X\"\nkey_env = \"K\"")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            credential_variables(&table),
            vec![(
                "a2a.credentials.\"https://a.example\".key_env".to_owned(),
                "K".to_owned()
            )]
        );
    }
}
