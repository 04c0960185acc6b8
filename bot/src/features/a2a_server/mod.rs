//! The A2A server feature (issue 15): other agents call the assistant over A2A, each caller an
//! isolated tenant, served by `volcanic-a2a-server` on the bot's one HTTP listener.
//!
//! ```toml
//! [http]
//! public_url = "https://bot.example.org"     # the card names <public_url>/a2a
//! [a2a.server]
//! name = "Ada's assistant"                    # the card (optional; defaults in docs/a2a-server.md)
//! description = "Answers about Ada's calendar"
//! [[a2a.server.skills]]
//! id = "calendar"
//! name = "Calendar"
//! description = "What is on Ada's calendar"
//! examples = ["What do I have on Friday?"]
//! [[a2a.server.callers]]
//! name = "laptop"                 # its tenant: workspaces/a2a-laptop/, <state_dir>/a2a/laptop/
//! token_env = "A2A_LAPTOP_TOKEN"  # the bearer token it presents (16+ characters)
//! tools = ["read", "ls", "grep", "find", "calendar"]  # optional; default: all but bash, write, edit
//! chat = 123456789                # optional: acts for this chat (its zone, model, calendar, jobs)
//! ```
//!
//! Each caller's tasks live in its own store; one agent session per (caller, `contextId`)
//! ([`pool::A2ASessionPool`]). Without `[http] public_url` the server does not start (the
//! bot refuses the config, naming the key).

mod gate;
pub mod pool;
mod ui;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use volcanic_a2a_server::{A2aServer, Caller, CardInfo, Limits, ServerConfig, Skill, valid_caller_name};

use super::{HostFeature, Services};
use crate::config::Config;
use crate::features::port::{OwnSession, Target};
use pool::{A2ASessionPool, CallerPolicy, ToolPolicy};

/// The folder name of a caller's workspace: this prefix and its name (a chat's folder is digits,
/// or `g` and digits, so the two never meet).
const WORKSPACE_PREFIX: &str = "a2a-";

/// The workspace of caller `name` under `workspaces_root`: `<root>/a2a-<name>/`.
pub fn caller_workspace(workspaces_root: &Path, name: &str) -> PathBuf {
    workspaces_root.join(format!("{WORKSPACE_PREFIX}{name}"))
}

/// The caller whose workspace `path` is (the inverse of [`caller_workspace`] on its folder's
/// name); `None` for any other folder.
pub fn caller_of_workspace(path: &Path) -> Option<&str> {
    path.file_name()?
        .to_str()?
        .strip_prefix(WORKSPACE_PREFIX)
        .filter(|n| valid_caller_name(n))
}

/// The session a scheduled job of caller `name` runs in: the caller's workspace and policy
/// (its tools, its model, acting for `to`, the chat the job is aimed at), the job's own store
/// scope `a2a-<name>/job-<digest of the id>` (ids come from a file the caller may write), no
/// questions (there is no one to ask).
pub fn job_session(workspaces_root: &Path, name: &str, policy: &CallerPolicy, to: Target, job_id: &str) -> OwnSession {
    let policy = CallerPolicy {
        acts_for: Some(to),
        ..policy.clone()
    };
    let scope = format!("{WORKSPACE_PREFIX}{name}/job-{}", pool::digest(job_id));
    let cwd = caller_workspace(workspaces_root, name);
    pool::session_spec(name, &policy, cwd, scope, None, gate::SessionBus::default())
}

/// Tools a caller's sessions lack unless its `tools` lists them: they change the owner's files
/// or run commands.
pub const DENIED_BY_DEFAULT: &[&str] = &["bash", "write", "edit"];

/// `[a2a.server]`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// Whether the server runs (default: yes, once the section exists).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The card's name.
    pub name: Option<String>,
    /// The card's description.
    pub description: Option<String>,
    /// The card's skills.
    #[serde(default)]
    pub skills: Vec<SkillSection>,
    /// Text of the authenticated extended card; unset: no extended card.
    pub extended_description: Option<String>,
    /// Who may call.
    #[serde(default)]
    pub callers: Vec<CallerSection>,
    /// Allow push targets on loopback (tests only).
    #[serde(default)]
    pub allow_loopback_push: bool,
    /// Largest request body, bytes.
    pub max_body_bytes: Option<usize>,
    /// Most parts in one message.
    pub max_parts: Option<usize>,
    /// Most history messages kept per task.
    pub max_history: Option<usize>,
    /// Most tasks one caller may have running at once.
    pub max_concurrent_tasks: Option<usize>,
    /// Most tasks kept per caller.
    pub max_tasks_kept: Option<usize>,
    /// Most push configs per task.
    pub max_push_configs: Option<usize>,
    /// Most messages queued behind one task's running work.
    pub max_follow_ups: Option<usize>,
    /// Minutes a context's session stays in memory unused, fractions allowed (default:
    /// `session_idle_minutes`).
    pub idle_minutes: Option<f64>,
    /// Most contexts (live sessions, each with its own copies of the host's non-shared MCP
    /// servers) one caller has in memory; at the bound a new context evicts that caller's
    /// longest-idle one, or is refused while all are working (default
    /// [`DEFAULT_MAX_CONTEXTS`]).
    pub max_contexts_per_caller: Option<usize>,
}

/// Contexts one caller keeps in memory unless `max_contexts_per_caller` says otherwise.
pub const DEFAULT_MAX_CONTEXTS: usize = 8;

/// `[[a2a.server.skills]]`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillSection {
    /// Stable id.
    pub id: String,
    /// Name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Keywords.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Example prompts.
    #[serde(default)]
    pub examples: Vec<String>,
}

/// `[[a2a.server.callers]]`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallerSection {
    /// Its tenant name (`[A-Za-z0-9_-]`, 1–64 characters).
    pub name: String,
    /// The variable holding its bearer token.
    pub token_env: String,
    /// The tools its sessions may use (`"*"`: all); unset: all but [`DENIED_BY_DEFAULT`].
    pub tools: Option<Vec<String>>,
    /// The chat it acts for.
    pub chat: Option<i64>,
    /// Model (`provider/id`) of its new sessions.
    pub model: Option<String>,
    /// What its tasks may spend per day, USD: accepted here, read and checked by the allowance
    /// feature from the raw section (`features::allowance::caller_caps`).
    #[allow(dead_code)]
    pub daily_usd: Option<f64>,
}

fn yes() -> bool {
    true
}

/// The variables the callers' tokens are read from, with their config keys (for
/// `crate::secrets`: denied to child processes, redacted).
pub fn token_variables(a2a: &toml::Table) -> Vec<(String, String)> {
    let Some(toml::Value::Array(callers)) = a2a.get("server").and_then(|s| s.get("callers")) else {
        return Vec::new();
    };
    callers
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let name = c.get("token_env")?.as_str()?;
            Some((format!("a2a.server.callers[{i}].token_env"), name.to_owned()))
        })
        .collect()
}

/// The server's config and the callers' policies from the section, for the host `config`;
/// `env` reads a variable. Errors name the key: no `[http] public_url` (or one with a query or
/// fragment), no callers, a bad or duplicate name, a missing, short, duplicate or reused token
/// (one of the bot's own secrets), an unknown model, a chat the bot does not serve.
pub fn server_config(
    section: &ServerSection,
    config: &Config,
    env: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<(ServerConfig, Vec<(String, CallerPolicy)>)> {
    let public_url = config.public_url.trim().trim_end_matches('/');
    if public_url.is_empty() {
        anyhow::bail!(
            "config key `a2a.server`: needs `[http] public_url`, the address callers reach the bot \
             at (the card names <public_url>/a2a)"
        );
    }
    let parsed = url::Url::parse(public_url).map_err(|e| anyhow::anyhow!("config key `http.public_url`: {e}"))?;
    if parsed.query().is_some() || parsed.fragment().is_some() {
        anyhow::bail!(
            "config key `http.public_url`: {public_url:?} has a query or fragment; give scheme, host and path only"
        );
    }
    if section.callers.is_empty() {
        anyhow::bail!(
            "config key `a2a.server.callers`: none listed, so every request would be refused; add a \
             [[a2a.server.callers]] block (name, token_env), or remove [a2a.server]"
        );
    }
    let models = crate::agent_setup::model_registry(config)?;
    let own_secrets = own_secrets(config, &models, &env);
    let defaults = CardInfo::default();
    let card = CardInfo {
        name: section.name.clone().unwrap_or(defaults.name),
        description: section.description.clone().unwrap_or(defaults.description),
        version: defaults.version,
        skills: section
            .skills
            .iter()
            .map(|s| Skill {
                id: s.id.clone(),
                name: s.name.clone(),
                description: s.description.clone(),
                tags: s.tags.clone(),
                examples: s.examples.clone(),
            })
            .collect(),
        public_url: Some(public_url.to_owned()),
        extended_description: section.extended_description.clone(),
        strict: false,
    };
    let limits = limits(section)?;
    let mut callers = Vec::new();
    let mut policies = Vec::new();
    for (i, c) in section.callers.iter().enumerate() {
        let key = format!("a2a.server.callers[{i}]");
        let checked = CallerCheck {
            key: &key,
            earlier: &section.callers[..i],
            callers: &callers,
            own_secrets: &own_secrets,
            models: &models,
            config,
        };
        let token = checked.token(c, &env)?;
        let tools = match &c.tools {
            None => ToolPolicy::AllBut(DENIED_BY_DEFAULT.iter().map(|s| (*s).to_owned()).collect()),
            Some(list) if list.iter().any(|t| t == "*") => ToolPolicy::AllBut(Vec::new()),
            Some(list) => ToolPolicy::Only(list.clone()),
        };
        callers.push(Caller {
            name: c.name.clone(),
            token,
        });
        policies.push((
            c.name.clone(),
            CallerPolicy {
                tools,
                acts_for: c.chat.map(|chat_id| Target { chat_id, thread: None }),
                model: c.model.clone(),
            },
        ));
    }
    Ok((
        ServerConfig {
            card,
            callers,
            limits,
            state_dir: None,
            allow_loopback_push: section.allow_loopback_push,
        },
        policies,
    ))
}

/// `[a2a.server]`'s limits, each at least 1 (its default when not given).
fn limits(section: &ServerSection) -> anyhow::Result<Limits> {
    let d = Limits::default();
    let limit = |key: &str, v: Option<usize>, default: usize| match v {
        Some(0) => Err(anyhow::anyhow!("config key `a2a.server.{key}`: must be at least 1")),
        Some(n) => Ok(n),
        None => Ok(default),
    };
    Ok(Limits {
        max_body_bytes: limit("max_body_bytes", section.max_body_bytes, d.max_body_bytes)?,
        max_parts: limit("max_parts", section.max_parts, d.max_parts)?,
        max_history: limit("max_history", section.max_history, d.max_history)?,
        max_concurrent_tasks: limit(
            "max_concurrent_tasks",
            section.max_concurrent_tasks,
            d.max_concurrent_tasks,
        )?,
        max_tasks_kept: limit("max_tasks_kept", section.max_tasks_kept, d.max_tasks_kept)?,
        max_push_configs: limit("max_push_configs", section.max_push_configs, d.max_push_configs)?,
        max_follow_ups: limit("max_follow_ups", section.max_follow_ups, d.max_follow_ups)?,
    })
}

/// What one `[[a2a.server.callers]]` entry is checked against.
struct CallerCheck<'a> {
    /// Its config key, `a2a.server.callers[i]`.
    key: &'a str,
    /// The entries before it.
    earlier: &'a [CallerSection],
    /// The callers accepted so far.
    callers: &'a [Caller],
    /// The bot's own secrets, which no caller token may reuse.
    own_secrets: &'a [String],
    models: &'a volcanic_core::models::ModelRegistry,
    config: &'a Config,
}

impl CallerCheck<'_> {
    /// Checks the entry `c` and returns its token (read with `env`). Errors name the key: a bad
    /// or duplicate name, a missing, empty, reused or short token, an unknown model, a chat the
    /// bot does not serve.
    fn token(&self, c: &CallerSection, env: &impl Fn(&str) -> Option<String>) -> anyhow::Result<String> {
        let key = self.key;
        if !valid_caller_name(&c.name) {
            anyhow::bail!(
                "config key `{key}.name`: {:?} must be 1-64 letters, digits, '_' or '-', not starting \
                 with '-' (it names folders)",
                c.name
            );
        }
        if self.earlier.iter().any(|o| o.name == c.name) {
            anyhow::bail!("config key `{key}.name`: caller {:?} is listed twice", c.name);
        }
        let token = match env(&c.token_env) {
            None => anyhow::bail!("config key `{key}.token_env`: the variable {} is not set", c.token_env),
            Some(t) if t.trim().is_empty() => {
                anyhow::bail!("config key `{key}.token_env`: the variable {} is empty", c.token_env)
            }
            Some(t) => t.trim().to_owned(),
        };
        if self.own_secrets.contains(&token) {
            anyhow::bail!(
                "config key `{key}.token_env`: {} holds one of the bot's own secrets (its Telegram token \
                 or a model key); give each caller a token of its own",
                c.token_env
            );
        }
        if self.callers.iter().any(|o: &Caller| o.token == token) {
            anyhow::bail!(
                "config key `{key}.token_env`: caller {:?} has the same token as another caller",
                c.name
            );
        }
        if let Some(m) = &c.model {
            crate::agent_setup::check_model(self.models, m, &format!("config key `{key}.model`"))?;
        }
        if let Some(chat) = c.chat
            && !self.config.telegram.allowed_users.contains(&chat)
            && !self.config.telegram.allowed_chats.contains(&chat)
        {
            anyhow::bail!(
                "config key `{key}.chat`: {chat} is neither in telegram.allowed_users nor in \
                 telegram.allowed_chats, so the bot serves no such chat"
            );
        }
        if token.chars().count() < 16 {
            anyhow::bail!(
                "config key `{key}.token_env`: the token in {} is shorter than 16 characters; use a long \
                 random one (e.g. `openssl rand -hex 24`)",
                c.token_env
            );
        }
        Ok(token)
    }
}

/// The values of the bot's own secrets a caller token must not reuse: the Telegram token and
/// every model provider's key.
fn own_secrets(
    config: &Config,
    models: &volcanic_core::models::ModelRegistry,
    env: &impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let mut out: Vec<String> = config
        .telegram
        .token
        .clone()
        .into_iter()
        .chain(env("TELEGRAM_BOT_TOKEN"))
        .collect();
    let mut providers: Vec<String> = models.models().into_iter().map(|m| m.provider).collect();
    providers.dedup();
    for p in providers {
        if let Ok(Some(key)) = models.api_key(&p) {
            out.push(key);
        }
    }
    out.retain(|v| !v.trim().is_empty());
    out.iter_mut().for_each(|v| *v = v.trim().to_owned());
    out
}

/// The feature: the server and its session pool.
pub struct A2aServerFeature {
    server: Arc<A2aServer>,
    pool: Arc<A2ASessionPool>,
}

/// The enabled `[a2a.server]` section with the server's config and the callers' policies
/// (tokens read from the process environment); `None` without the section or when disabled.
/// The bot's start and `doctor` both check a config with it. Errors name the key.
pub fn configured(services: &Services) -> anyhow::Result<Option<Configured>> {
    let section = services
        .section::<super::a2a_client::Section>("a2a")?
        .and_then(|s| s.server);
    let Some(section) = section.filter(|s| s.enabled) else {
        return Ok(None);
    };
    let (config, policies) = server_config(&section, &services.config, |n| std::env::var(n).ok())?;
    let idle = match section.idle_minutes {
        None => None,
        Some(m) if m.is_finite() && m > 0.0 && m <= 1e7 => Some(Duration::from_secs_f64(m * 60.0)),
        Some(_) => anyhow::bail!("config key `a2a.server.idle_minutes`: a number of minutes above 0"),
    };
    let max_contexts = match section.max_contexts_per_caller {
        Some(0) => anyhow::bail!("config key `a2a.server.max_contexts_per_caller`: must be at least 1"),
        Some(n) => n,
        None => DEFAULT_MAX_CONTEXTS,
    };
    Ok(Some(Configured {
        config,
        policies,
        idle,
        max_contexts,
    }))
}

/// An enabled `[a2a.server]`, checked ([`configured`]).
pub struct Configured {
    /// The server's config (no `state_dir` yet).
    pub config: ServerConfig,
    /// Each caller's policy, by name.
    pub policies: Vec<(String, CallerPolicy)>,
    /// How long a context's session may idle in memory (`None`: the host's).
    pub idle: Option<Duration>,
    /// Most contexts per caller in memory.
    pub max_contexts: usize,
}

/// Builds it in the Telegram host when `[a2a.server]` exists and is enabled.
pub fn build(services: &Services) -> anyhow::Result<Option<Arc<dyn HostFeature>>> {
    let Some(chats) = &services.chats else {
        return Ok(None);
    };
    let Some(Configured {
        mut config,
        policies,
        idle,
        max_contexts,
    }) = configured(services)?
    else {
        return Ok(None);
    };
    config.state_dir = Some(services.state_dir.clone());
    for c in &config.callers {
        services.redactor.add_secret(&c.token);
    }
    let idle = idle.unwrap_or(services.config.session_idle);
    let pool = A2ASessionPool::new(
        chats.clone(),
        policies.into_iter().collect(),
        services.workspaces_root.clone(),
        pool::Bounds { idle, max_contexts },
        services.shutdown.clone(),
    );
    let callers: Vec<String> = config.callers.iter().map(|c| c.name.clone()).collect();
    let server = A2aServer::new(config, pool.clone()).map_err(|e| anyhow::anyhow!("config key `a2a.server`: {e}"))?;
    tracing::info!(
        callers = %callers.join(", "),
        "A2A server: card at {}/.well-known/agent-card.json",
        services.config.public_url.trim_end_matches('/')
    );
    Ok(Some(Arc::new(A2aServerFeature { server, pool })))
}

#[async_trait]
impl HostFeature for A2aServerFeature {
    fn name(&self) -> &'static str {
        "a2a-server"
    }

    fn routes(&self) -> Option<axum::Router> {
        Some(self.server.router())
    }

    fn start(&self) {
        self.pool.start();
    }

    async fn stop(&self) {
        self.pool.stop().await;
    }
}

#[cfg(test)]
mod tests;
