//! The configuration file (TOML): raw structs that mirror what the user wrote, with unknown keys
//! refused, then a resolved, validated [`Config`]. Every error names the key.
//! `config/volcanic.example.toml` documents every key.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_core::models::CustomProviderConfig;

pub mod allowance;
mod http_limits;
mod live;
mod metrics;
mod otel;
mod providers;
mod sandbox;
mod voice;
pub use http_limits::HttpLimits;
pub use live::{LiveConfig, Streaming};
pub use metrics::MetricsConfig;
pub use otel::OtelConfig;
use providers::{RawProvider, resolve_claude_code, resolve_provider};
pub use sandbox::SandboxConfig;
pub use voice::{VoiceConfig, is_language};

/// A configuration error; the message names the key and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {error}")]
    Read {
        /// File.
        path: PathBuf,
        /// Cause (in the message, so not a `source` too: it would be printed twice).
        error: std::io::Error,
    },
    /// TOML syntax or an unknown key / wrong type (toml's message names the key and line).
    #[error("config file {path}: {message}")]
    Parse {
        /// File.
        path: PathBuf,
        /// toml's message.
        message: String,
    },
    /// A value is not valid.
    #[error("config key `{key}`: {message}")]
    Invalid {
        /// Dotted key.
        key: String,
        /// What is wrong and what to do.
        message: String,
    },
}

/// The file's top level. Unknown keys are not refused here: every other table is a host
/// feature's section (`[a2a]`, `[example]`, ...; checked by the features, one no feature reads
/// is an error), every other value an error naming its key ([`resolve`]).
#[derive(Debug, Deserialize, Default)]
struct RawConfig {
    state_dir: Option<PathBuf>,
    workspaces_dir: Option<PathBuf>,
    default_time_zone: Option<String>,
    model: Option<String>,
    fallback_models: Option<Vec<String>>,
    thinking: Option<String>,
    queue_mode: Option<String>,
    session_idle_minutes: Option<f64>,
    skill_hooks: Option<bool>,
    harden_process: Option<bool>,
    compaction: Option<RawCompaction>,
    telegram: Option<RawTelegram>,
    #[serde(default)]
    providers: BTreeMap<String, RawProvider>,
    http: Option<RawHttp>,
    google: Option<RawGoogle>,
    sandbox: Option<sandbox::RawSandbox>,
    voice: Option<voice::RawVoice>,
    metrics: Option<metrics::RawMetrics>,
    otel: Option<otel::RawOtel>,
    /// Everything else: the features' sections (`features::Services::section`).
    #[serde(flatten)]
    rest: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCompaction {
    reserve_tokens: Option<u64>,
    keep_recent_tokens: Option<u64>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTelegram {
    token: Option<String>,
    api_url: Option<String>,
    mode: Option<String>,
    #[serde(default)]
    allowed_users: Vec<i64>,
    #[serde(default)]
    allowed_chats: Vec<i64>,
    #[serde(default)]
    owners: Vec<i64>,
    streaming: Option<String>,
    stream_interval_ms: Option<u64>,
    reactions: Option<bool>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    listen: Option<String>,
    public_url: Option<String>,
    limits: Option<http_limits::RawHttpLimits>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawGoogle {
    client_id: Option<String>,
    client_secret: Option<String>,
    auth_url: Option<String>,
    token_url: Option<String>,
    revoke_url: Option<String>,
    api_base_url: Option<String>,
}

/// How a message during a run is queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueMode {
    /// After the run.
    FollowUp,
    /// Between tool batches.
    Steer,
}

/// `[telegram]`. `Debug` hides the token.
#[derive(Clone, PartialEq)]
pub struct TelegramConfig {
    /// Bot token (or env TELEGRAM_BOT_TOKEN).
    pub token: Option<String>,
    /// Bot API base URL.
    pub api_url: String,
    /// `polling` or `webhook`.
    pub mode: String,
    /// Numeric user ids allowed to talk to the bot.
    pub allowed_users: Vec<i64>,
    /// Group chat ids the bot works in.
    pub allowed_chats: Vec<i64>,
    /// Users who may `/allow` and `/deny`.
    pub owners: Vec<i64>,
    /// `streaming`, `stream_interval_ms`, `reactions`: live answers.
    pub live: LiveConfig,
}

/// The resolved configuration. `Debug` leaves out the secrets (keys, token, client secret).
// The Telegram host (next issue) reads the fields the console does not.
#[allow(dead_code)]
#[derive(Clone)]
pub struct Config {
    /// Sessions, settings, tokens (not a workspace).
    pub state_dir: PathBuf,
    /// Root of the per-chat workspaces.
    pub workspaces_dir: PathBuf,
    /// IANA zone for chats without their own.
    pub default_time_zone: chrono_tz::Tz,
    /// `provider/id` for new sessions.
    pub model: String,
    /// `fallback_models`: `provider/id`s a failed model call goes on with, in order (checked
    /// against the registry by [`agent_setup::factory`](crate::agent_setup::factory)).
    pub fallback_models: Vec<String>,
    /// Thinking level for new sessions.
    pub thinking: ThinkingLevel,
    /// Queueing during a run.
    pub queue_mode: QueueMode,
    /// Idle time before a chat's session leaves memory (`session_idle_minutes`, fractions
    /// allowed).
    pub session_idle: std::time::Duration,
    /// Whether skill hooks run.
    pub skill_hooks: bool,
    /// `PR_SET_DUMPABLE=0` at start.
    pub harden_process: bool,
    /// Compaction reserve (tokens).
    pub reserve_tokens: u64,
    /// Tokens kept verbatim by compaction.
    pub keep_recent_tokens: u64,
    /// `[telegram]`.
    pub telegram: TelegramConfig,
    /// `[providers.*]`.
    pub providers: Vec<CustomProviderConfig>,
    /// `[providers.claude-code]`: how `claude` is started; `None` without the section, which
    /// leaves the provider out (it runs a local executable on the owner's Claude login, so it is
    /// opt-in; an empty section takes the defaults).
    pub claude_code: Option<volcanic_claude_code::ClaudeCodeConfig>,
    /// `[http] listen`.
    pub http_listen: String,
    /// `[http] public_url`.
    pub public_url: String,
    /// `[http.limits]`.
    pub http_limits: HttpLimits,
    /// `[google]`, resolved: the OAuth client (from the file, else `GOOGLE_CLIENT_ID` /
    /// `GOOGLE_CLIENT_SECRET`), the endpoints (Google's unless set, e.g. to a test double) and
    /// `[http] public_url` for the callback flow. `None` without a client id and secret (the bot
    /// runs; `/calendar connect` says what to configure).
    pub google: Option<volcanic_google_calendar::GoogleConfig>,
    /// The host features' sections (`[<feature name>]`) as written; each feature reads and checks
    /// its own, and one no feature reads is an error (`features::Features::build`).
    pub features: BTreeMap<String, toml::Table>,
    /// `[sandbox]`: how agent processes are confined.
    pub sandbox: SandboxConfig,
    /// `[voice]`: transcription and speech; `None` without the section (voice is off).
    pub voice: Option<VoiceConfig>,
    /// `[metrics]`: the Prometheus listener; `None` without the section (metrics are off).
    pub metrics: Option<MetricsConfig>,
    /// `[otel]`: the OTLP/HTTP trace exporter; `None` without the section (traces are off).
    pub otel: Option<OtelConfig>,
}

impl std::fmt::Debug for TelegramConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramConfig")
            .field("token", &self.token.as_ref().map(|_| "[hidden]"))
            .field("api_url", &self.api_url)
            .field("mode", &self.mode)
            .field("allowed_users", &self.allowed_users)
            .field("allowed_chats", &self.allowed_chats)
            .field("owners", &self.owners)
            .field("live", &self.live)
            .finish()
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let providers: Vec<&str> = self.providers.iter().map(|p| p.name.as_str()).collect();
        f.debug_struct("Config")
            .field("state_dir", &self.state_dir)
            .field("workspaces_dir", &self.workspaces_dir)
            .field("default_time_zone", &self.default_time_zone)
            .field("model", &self.model)
            .field("fallback_models", &self.fallback_models)
            .field("thinking", &self.thinking)
            .field("queue_mode", &self.queue_mode)
            .field("session_idle", &self.session_idle)
            .field("telegram", &self.telegram)
            .field("providers", &providers)
            .field("http_listen", &self.http_listen)
            .field("public_url", &self.public_url)
            .field("google", &self.google)
            .field("features", &self.features.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The default model.
pub const DEFAULT_MODEL: &str = "anthropic/claude-sonnet-4-5";

impl Config {
    /// Reads `path`. A missing file is an error only when `required` (given explicitly);
    /// otherwise the defaults apply.
    pub fn load(path: &Path, required: bool) -> Result<Config, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => String::new(),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_owned(),
                    error: source,
                });
            }
        };
        Config::parse(&text, path)
    }

    /// Parses TOML text (`path` only names the file in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string().trim().to_owned(),
        })?;
        let mut config = resolve(raw)?;
        config.sandbox.protect_config(path);
        Ok(config)
    }
}

fn invalid(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        message: message.into(),
    }
}

fn resolve(raw: RawConfig) -> Result<Config, ConfigError> {
    let features = feature_sections(raw.rest)?;
    let zone_name = raw.default_time_zone.unwrap_or_else(|| "UTC".into());
    let default_time_zone: chrono_tz::Tz = zone_name.parse().map_err(|_| {
        invalid(
            "default_time_zone",
            format!("`{zone_name}` is not an IANA time zone (e.g. Europe/Berlin, America/New_York, UTC)"),
        )
    })?;
    let model = raw.model.unwrap_or_else(|| DEFAULT_MODEL.into());
    if !model.contains('/') {
        return Err(invalid(
            "model",
            format!("`{model}` must be provider/id, e.g. {DEFAULT_MODEL}"),
        ));
    }
    let fallback_models = raw.fallback_models.unwrap_or_default();
    if let Some(bad) = fallback_models.iter().find(|m| !m.contains('/')) {
        return Err(invalid(
            "fallback_models",
            format!("`{bad}` must be provider/id, e.g. openai/gpt-4.1"),
        ));
    }
    let thinking = match raw.thinking {
        Some(t) => t
            .parse()
            .map_err(|e: volcanic_abstractions::model::UnknownThinkingLevel| invalid("thinking", e.to_string()))?,
        None => ThinkingLevel::Off,
    };
    let queue_mode = match raw.queue_mode.as_deref() {
        None | Some("follow-up") => QueueMode::FollowUp,
        Some("steer") => QueueMode::Steer,
        Some(other) => {
            return Err(invalid(
                "queue_mode",
                format!("`{other}`: use \"follow-up\" or \"steer\""),
            ));
        }
    };
    let idle_minutes = raw.session_idle_minutes.unwrap_or(30.0);
    if !(idle_minutes.is_finite() && idle_minutes > 0.0 && idle_minutes <= 525_600.0) {
        return Err(invalid(
            "session_idle_minutes",
            format!("`{idle_minutes}`: use a number of minutes above 0 (e.g. 30, or 0.5 for 30 s)"),
        ));
    }
    let session_idle = std::time::Duration::from_secs_f64(idle_minutes * 60.0);
    let compaction = raw.compaction.unwrap_or_default();
    let telegram = resolve_telegram(raw.telegram.unwrap_or_default(), raw.http.as_ref())?;
    let mut providers = Vec::new();
    let mut claude_code = None;
    for (name, p) in raw.providers {
        if name == volcanic_claude_code::PROVIDER {
            claude_code = Some(resolve_claude_code(p)?);
        } else {
            providers.push(resolve_provider(&name, p)?);
        }
    }
    let http = raw.http.unwrap_or_default();
    if let Some(u) = http.public_url.as_deref().filter(|u| !u.is_empty())
        && url::Url::parse(u).map_or(true, |p| !matches!(p.scheme(), "http" | "https"))
    {
        return Err(invalid("http.public_url", format!("`{u}` is not an http(s) URL")));
    }
    let public_url = http.public_url.unwrap_or_default();
    let google = resolve_google(raw.google.unwrap_or_default(), &public_url)?;
    let sandbox = sandbox::resolve(raw.sandbox)?;
    let voice = voice::resolve(raw.voice)?;
    let metrics = metrics::resolve(raw.metrics, |k| std::env::var(k).ok())?;
    let otel = otel::resolve(raw.otel)?;
    Ok(Config {
        state_dir: raw.state_dir.unwrap_or_else(|| "data".into()),
        workspaces_dir: raw.workspaces_dir.unwrap_or_else(|| "workspaces".into()),
        default_time_zone,
        model,
        fallback_models,
        thinking,
        queue_mode,
        session_idle,
        skill_hooks: raw.skill_hooks.unwrap_or(true),
        harden_process: raw.harden_process.unwrap_or(true),
        reserve_tokens: compaction.reserve_tokens.unwrap_or(16_384),
        keep_recent_tokens: compaction.keep_recent_tokens.unwrap_or(20_000),
        telegram,
        providers,
        claude_code,
        http_listen: http.listen.unwrap_or_else(|| "127.0.0.1:8080".into()),
        http_limits: http_limits::resolve_http_limits(http.limits)?,
        public_url,
        google,
        features,
        sandbox,
        voice,
        metrics,
        otel,
    })
}

/// `[telegram]`, checked: the mode (webhook mode needs an https `[http] public_url`), the API
/// URL, owners among the allowed users.
fn resolve_telegram(tg: RawTelegram, http: Option<&RawHttp>) -> Result<TelegramConfig, ConfigError> {
    let mode = tg.mode.unwrap_or_else(|| "polling".into());
    if mode != "polling" && mode != "webhook" {
        return Err(invalid(
            "telegram.mode",
            format!("`{mode}`: use \"polling\" or \"webhook\""),
        ));
    }
    if mode == "webhook"
        && !http
            .and_then(|h| h.public_url.as_deref())
            .is_some_and(|u| u.starts_with("https://"))
    {
        return Err(invalid(
            "http.public_url",
            "webhook mode needs the bot's public https URL here (Telegram posts updates to <public_url>/telegram/webhook)",
        ));
    }
    let api_url = tg.api_url.unwrap_or_else(|| "https://api.telegram.org".into());
    if !(api_url.starts_with("http://") || api_url.starts_with("https://")) {
        return Err(invalid(
            "telegram.api_url",
            format!("`{api_url}` must be an http(s) URL"),
        ));
    }
    for o in &tg.owners {
        if !tg.allowed_users.contains(o) {
            return Err(invalid(
                "telegram.owners",
                format!("owner {o} must also be in telegram.allowed_users"),
            ));
        }
    }
    Ok(TelegramConfig {
        token: tg.token,
        api_url,
        mode,
        allowed_users: tg.allowed_users,
        allowed_chats: tg.allowed_chats,
        owners: tg.owners,
        live: live::resolve_live(tg.streaming, tg.stream_interval_ms, tg.reactions)?,
    })
}

/// The top-level tables no setting names: the host features' sections (`[a2a]`, `[mcp]`, …),
/// checked by the features. Anything else unknown is an error naming its key.
fn feature_sections(rest: BTreeMap<String, toml::Value>) -> Result<BTreeMap<String, toml::Table>, ConfigError> {
    let mut features = BTreeMap::new();
    for (key, value) in rest {
        match value {
            toml::Value::Table(t) => {
                features.insert(key, t);
            }
            _ => {
                return Err(invalid(
                    key,
                    "unknown setting (see config/volcanic.example.toml for the keys)",
                ));
            }
        }
    }
    Ok(features)
}

fn resolve_google(
    g: RawGoogle,
    public_url: &str,
) -> Result<Option<volcanic_google_calendar::GoogleConfig>, ConfigError> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let id = g
        .client_id
        .filter(|v| !v.is_empty())
        .or_else(|| env("GOOGLE_CLIENT_ID"));
    let secret = g
        .client_secret
        .filter(|v| !v.is_empty())
        .or_else(|| env("GOOGLE_CLIENT_SECRET"));
    let url = |key: &str, v: Option<String>, default: &str| -> Result<String, ConfigError> {
        let v = v.unwrap_or_else(|| default.to_owned());
        match url::Url::parse(&v) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(v),
            _ => Err(invalid(format!("google.{key}"), format!("`{v}` is not an http(s) URL"))),
        }
    };
    let auth_url = url("auth_url", g.auth_url, volcanic_google_calendar::GOOGLE_AUTH_URL)?;
    let token_url = url("token_url", g.token_url, volcanic_google_calendar::GOOGLE_TOKEN_URL)?;
    let revoke_url = url("revoke_url", g.revoke_url, volcanic_google_calendar::GOOGLE_REVOKE_URL)?;
    let api_base_url = url(
        "api_base_url",
        g.api_base_url,
        volcanic_google_calendar::GOOGLE_API_BASE_URL,
    )?;
    match (id, secret) {
        (Some(client_id), Some(client_secret)) => {
            let mut c = volcanic_google_calendar::GoogleConfig::new(client_id, client_secret);
            c.auth_url = auth_url;
            c.token_url = token_url;
            c.revoke_url = revoke_url;
            c.api_base_url = api_base_url;
            c.public_url = (!public_url.is_empty()).then(|| public_url.trim_end_matches('/').to_owned());
            Ok(Some(c))
        }
        (None, None) => Ok(None),
        (Some(_), None) => Err(invalid(
            "google.client_secret",
            "missing: set it with client_id (or the environment variable GOOGLE_CLIENT_SECRET)",
        )),
        (None, Some(_)) => Err(invalid(
            "google.client_id",
            "missing: set it with client_secret (or the environment variable GOOGLE_CLIENT_ID)",
        )),
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
