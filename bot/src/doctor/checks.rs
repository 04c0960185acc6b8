//! The doctor's checks, one function each; each returns its checklist lines.

use super::Check;
use super::reach::{describe, get_me};
use crate::config::Config;
use crate::lock::Holder;
use futures::StreamExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use teloxide::Bot;
use volcanic_abstractions::messages::Message;
use volcanic_abstractions::provider::{AssistantMessageEvent, ProviderContext, StreamOptions};
use volcanic_core::models::ModelRegistry;
use volcanic_google_calendar::CALLBACK_PATH;

/// How long one network check may take.
const NETWORK_TIMEOUT: Duration = Duration::from_secs(20);
/// Below this much free space a folder fails (sessions and journals grow with every message).
const MIN_FREE_BYTES: u64 = 100 * 1024 * 1024;

/// The bot token, as the host resolves it: `[telegram] token`, else `TELEGRAM_BOT_TOKEN`.
fn token_of(config: &Config) -> Option<String> {
    config
        .telegram
        .token
        .clone()
        .or_else(|| std::env::var("TELEGRAM_BOT_TOKEN").ok())
        .filter(|t| !t.trim().is_empty())
}

/// `getMe` with the configured token and API URL.
pub(super) async fn token(config: &Config) -> Check {
    let Some(token) = token_of(config) else {
        return Check::fail(
            "token",
            "no bot token",
            "set TELEGRAM_BOT_TOKEN (the service's environment file) or [telegram] token; get one from @BotFather",
        );
    };
    let api_url = config.telegram.api_url.trim_end_matches('/').to_owned();
    let Ok(url) = url::Url::parse(&api_url) else {
        return Check::fail("token", format!("`{api_url}` is not a URL"), "fix `telegram.api_url`");
    };
    let bot = Bot::new(token).set_api_url(url);
    match tokio::time::timeout(NETWORK_TIMEOUT, get_me(&bot, &api_url)).await {
        Ok(Ok(me)) => Check::ok(
            "token",
            format!(
                "@{} (id {}) at {api_url}",
                me.username.clone().unwrap_or_default(),
                me.id.0
            ),
        ),
        Ok(Err(e)) => Check::fail("token", e.to_string(), e.fix()),
        Err(_) => Check::fail(
            "token",
            format!(
                "cannot reach Telegram at {api_url}: no answer within {} s",
                NETWORK_TIMEOUT.as_secs()
            ),
            "check this machine's network (DNS, firewall, proxy) and `telegram.api_url`",
        ),
    }
}

/// The default model is usable, and each provider with a key answers a one-token request
/// (the default model for its provider, the provider's first model for the others).
pub(super) async fn models(config: &Config) -> Vec<Check> {
    let registry = match crate::agent_setup::model_registry(config) {
        Ok(r) => r,
        Err(e) => {
            return vec![Check::fail(
                "model",
                format!("{e:#}"),
                "fix the [providers] section named",
            )];
        }
    };
    let mut out = Vec::new();
    let default = match crate::agent_setup::check_model(&registry, &config.model, "config key `model`") {
        Ok(m) => Some(m),
        Err(e) => {
            out.push(Check::fail(
                "model",
                format!("{e:#}"),
                "set `model` to a configured provider/id, and that provider's key in the environment",
            ));
            None
        }
    };
    out.extend(fallbacks(&registry, config));
    let mut providers: Vec<String> = Vec::new();
    for m in registry.models() {
        if !providers.contains(&m.provider) {
            providers.push(m.provider.clone());
        }
    }
    for provider in providers {
        let is_default = default.as_ref().is_some_and(|d| d.provider == provider);
        if let Err(e) = registry.api_key(&provider) {
            // The default's provider already failed above.
            if !config.model.starts_with(&format!("{provider}/")) {
                out.push(Check::note(format!("model {provider}"), format!("not checked: {e}")));
            }
            continue;
        }
        let model = match &default {
            Some(d) if is_default => Some(d.clone()),
            _ => registry.models().into_iter().find(|m| m.provider == provider),
        };
        let Some(model) = model else { continue };
        out.push(probe_model(&registry, &model).await);
    }
    out
}

/// `fallback_models`, when the config has any, checked as start-up checks them
/// ([`check_fallbacks`](crate::agent_setup::check_fallbacks)): a model the config does not know,
/// or whose provider has no key, fails here as it stops the bot at start.
fn fallbacks(registry: &ModelRegistry, config: &Config) -> Option<Check> {
    if config.fallback_models.is_empty() {
        return None;
    }
    Some(match crate::agent_setup::check_fallbacks(registry, config) {
        Ok(()) => Check::ok("fallback_models", config.fallback_models.join(", ")),
        Err(e) => Check::fail(
            "fallback_models",
            format!("{e:#}"),
            "list only configured provider/ids in `fallback_models`, each with its provider's key in the \
             environment (or remove the entry): the bot refuses to start until then",
        ),
    })
}

async fn probe_model(registry: &ModelRegistry, model: &volcanic_abstractions::model::Model) -> Check {
    let what = format!("model {}", model.provider);
    let context = ProviderContext {
        system_prompt: "This is a health check.".to_owned(),
        messages: vec![Message::user_text(
            "Reply with the word ok.",
            volcanic_core::models::now_ms(),
        )],
        tools: Vec::new(),
    };
    let options = StreamOptions {
        max_tokens: Some(1),
        max_retries: 1,
        ..StreamOptions::default()
    };
    let mut stream = registry.stream(model, context, options);
    let outcome = tokio::time::timeout(NETWORK_TIMEOUT, async {
        while let Some(event) = stream.next().await {
            match event {
                AssistantMessageEvent::Done { .. } => return Ok(()),
                AssistantMessageEvent::Error { error, .. } => {
                    return Err(error.error_message.unwrap_or_else(|| "failed".to_owned()));
                }
                AssistantMessageEvent::Start { .. }
                | AssistantMessageEvent::TextStart { .. }
                | AssistantMessageEvent::TextDelta { .. }
                | AssistantMessageEvent::TextEnd { .. }
                | AssistantMessageEvent::ThinkingStart { .. }
                | AssistantMessageEvent::ThinkingDelta { .. }
                | AssistantMessageEvent::ThinkingEnd { .. }
                | AssistantMessageEvent::ToolCallStart { .. }
                | AssistantMessageEvent::ToolCallDelta { .. }
                | AssistantMessageEvent::ToolCallEnd { .. }
                | AssistantMessageEvent::ProviderToolCall { .. }
                | AssistantMessageEvent::ProviderToolResult { .. } => {}
            }
        }
        Err("the stream ended without an answer".to_owned())
    })
    .await;
    let key = model.key();
    let fix = model_fix(model);
    match outcome {
        Ok(Ok(())) => Check::ok(what, format!("{key} answered a one-token request")),
        Ok(Err(e)) => Check::fail(what, format!("{key}: {e}"), fix),
        Err(_) => Check::fail(
            what,
            format!("{key}: no answer within {} s", NETWORK_TIMEOUT.as_secs()),
            fix,
        ),
    }
}

/// What to do when `model`'s one-token request fails. Claude Code is a program on this machine
/// with its own login, not a key: its error names the part that is missing (the program, the
/// login, the sandbox's reach) and how to fix it. The other providers are reached over HTTP
/// with a key.
fn model_fix(model: &volcanic_abstractions::model::Model) -> String {
    if model.provider == volcanic_claude_code::PROVIDER {
        return "do what the message says: Claude Code runs here as the `claude` program with its own login, \
                not an API key (docs/providers.md, \"Claude Code\")"
            .to_owned();
    }
    format!(
        "check the provider's key (environment variable or api_key), its base_url ({}) and that `{}` exists there",
        if model.base_url.is_empty() {
            "the default"
        } else {
            model.base_url.as_str()
        },
        model.key()
    )
}

/// Google's token endpoint is asked to exchange a code that does not exist: `invalid_grant`
/// means it accepted the client id and secret, `invalid_client` that it did not.
pub(super) async fn google(config: &Config) -> Vec<Check> {
    let Some(g) = &config.google else {
        return vec![Check::note(
            "google",
            "not configured (optional: /calendar needs [google] client_id and client_secret)",
        )];
    };
    let redirect = g.redirect_uri();
    let body = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("grant_type", "authorization_code")
        .append_pair("code", "volcanic-doctor-probe")
        .append_pair("client_id", &g.client_id)
        .append_pair("client_secret", &g.client_secret)
        .append_pair("redirect_uri", &redirect)
        .append_pair("code_verifier", &"v".repeat(43))
        .finish();
    let sent = reqwest::Client::new()
        .post(&g.token_url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .timeout(NETWORK_TIMEOUT)
        .send()
        .await;
    let answer = match sent {
        Ok(r) => {
            let status = r.status().as_u16();
            let json: serde_json::Value = r.json().await.unwrap_or_default();
            (status, json["error"].as_str().unwrap_or_default().to_owned())
        }
        Err(e) => {
            return vec![Check::fail(
                "google",
                format!("cannot reach the token endpoint {}: {}", g.token_url, describe(e)),
                "check the network, or google.token_url",
            )];
        }
    };
    let mut out = vec![match answer {
        (_, e) if e == "invalid_grant" => {
            Check::ok("google", format!("the token endpoint accepts client {}", g.client_id))
        }
        (_, e) if e == "invalid_client" || e == "unauthorized_client" => Check::fail(
            "google",
            format!("the token endpoint refused client {} ({e})", g.client_id),
            "copy the client id and secret again from Google Cloud Console → APIs & Services → Credentials",
        ),
        (status, e) => Check::fail(
            "google",
            format!("the token endpoint answered HTTP {status} `{e}` to a probe"),
            "check google.token_url (Google's by default)",
        ),
    }];
    out.push(Check::note(
        "google redirect",
        match &g.public_url {
            Some(_) => format!("sign-ins return to {redirect}: it must be an authorized redirect URI of the client"),
            None => "no [http] public_url: sign-ins use the paste-back of the loopback address".to_owned(),
        },
    ));
    out
}

/// The nearest existing folder at or above `dir`.
fn existing_ancestor(dir: &Path) -> Option<&Path> {
    dir.ancestors().find(|p| p.exists())
}

/// A folder the bot writes: exists or can be created, writable, enough free space.
pub(super) fn folder(key: &str, dir: &Path) -> Check {
    let shown: PathBuf = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    let fix_rights = format!(
        "make {} writable by the bot's user (`chown -R volcanic: {}`); under systemd it must be in ReadWritePaths=",
        shown.display(),
        shown.display()
    );
    let base = match existing_ancestor(&shown) {
        Some(p) if p.is_dir() => p.to_owned(),
        Some(p) => {
            return Check::fail(
                key,
                format!("{}: cannot be created, {} is a file", shown.display(), p.display()),
                format!("set `{key}` to a folder path"),
            );
        }
        None => return Check::fail(key, format!("{}: no existing parent", shown.display()), fix_rights),
    };
    let exists = base == shown;
    if let Err(e) = tempfile::NamedTempFile::new_in(&base) {
        return Check::fail(
            key,
            format!("{}: cannot write in {}: {e}", shown.display(), base.display()),
            fix_rights,
        );
    }
    let free = match nix::sys::statvfs::statvfs(&base) {
        Ok(s) => s.blocks_available().saturating_mul(s.fragment_size()),
        Err(e) => {
            return Check::fail(
                key,
                format!("{}: cannot read free space: {e}", shown.display()),
                fix_rights,
            );
        }
    };
    let state = if exists {
        "writable"
    } else {
        "will be created (its parent is writable)"
    };
    let gib = free as f64 / (1024.0 * 1024.0 * 1024.0);
    if free < MIN_FREE_BYTES {
        return Check::fail(
            key,
            format!("{}: {state}, only {} MiB free", shown.display(), free / (1024 * 1024)),
            "free some space on that filesystem (sessions and journals grow with every message)",
        );
    }
    Check::ok(key, format!("{}: {state}, {gib:.1} GiB free", shown.display()))
}

/// Whether a bot runs on this state directory.
pub(super) fn lock(state_dir: &Path, holder: &std::io::Result<Holder>) -> Check {
    match holder {
        Ok(Holder::Free) => Check::ok("lock", "free: no bot runs on this state_dir"),
        Ok(Holder::Held(pid)) => Check::note(
            "lock",
            format!(
                "held by {}: a bot is running on this state_dir (a second one would refuse to start)",
                pid.map_or_else(|| "a process still starting".to_owned(), |p| format!("PID {p}"))
            ),
        ),
        Err(e) => Check::fail(
            "lock",
            format!("{}: {e}", state_dir.join(crate::lock::LOCK_FILE).display()),
            "make the state_dir writable by the bot's user",
        ),
    }
}

/// The HTTP listener and the public URL: a probe on the OAuth callback route, sent to
/// `<public_url>`, must reach this listener. When a running bot holds the state directory and
/// the address, the probe goes to that bot's callback route instead (it answers 400 to a
/// request without a sign-in).
pub(super) async fn listener(config: &Config, holder: Option<Holder>) -> Vec<Check> {
    let webhook = config.telegram.mode == "webhook";
    if !webhook && config.public_url.is_empty() {
        return vec![Check::note(
            "listener",
            "not used: polling and no [http] public_url, so the bot opens no port",
        )];
    }
    let listen = &config.http_listen;
    let public = config.public_url.trim_end_matches('/');
    let probe_url = format!("{public}{CALLBACK_PATH}");
    let proxy_fix = format!(
        "make {public} reach {listen} (the reverse proxy's upstream, e.g. nginx `proxy_pass http://{listen};`), \
         or fix [http] public_url"
    );
    let listener = match tokio::net::TcpListener::bind(listen.as_str()).await {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            if let Some(Holder::Held(pid)) = holder {
                let who = pid.map_or_else(
                    || "the running bot".to_owned(),
                    |p| format!("the running bot (PID {p})"),
                );
                return vec![
                    Check::note("listener", format!("{listen} is in use by {who}")),
                    running_bot_answers(&probe_url, &proxy_fix).await,
                ];
            }
            return vec![Check::fail(
                "listener",
                format!("cannot listen on {listen}: the address is in use"),
                "stop what listens there (`ss -ltnp` shows it) or set [http] listen to a free address",
            )];
        }
        Err(e) => {
            return vec![Check::fail(
                "listener",
                format!("cannot listen on {listen}: {e}"),
                "set [http] listen to an address of this machine, e.g. 127.0.0.1:8080",
            )];
        }
    };
    let nonce = format!("volcanic-doctor-{}", rand::random::<u64>());
    let answer = nonce.clone();
    let app = axum::Router::new().route(
        CALLBACK_PATH,
        axum::routing::get(move || {
            let answer = answer.clone();
            async move { answer }
        }),
    );
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let mut out = vec![Check::ok("listener", format!("can listen on {listen}"))];
    let got = reqwest::Client::new()
        .get(format!("{probe_url}?volcanic_doctor=1"))
        .timeout(NETWORK_TIMEOUT)
        .send()
        .await;
    out.push(match got {
        Ok(r) => {
            let status = r.status().as_u16();
            let body = r.text().await.unwrap_or_default();
            if body == nonce {
                Check::ok("public URL", format!("{probe_url} reaches this listener"))
            } else {
                Check::fail(
                    "public URL",
                    format!("{probe_url} answered HTTP {status}, but not from this listener"),
                    proxy_fix,
                )
            }
        }
        Err(e) => Check::fail(
            "public URL",
            format!("cannot reach {probe_url}: {}", describe(e)),
            proxy_fix,
        ),
    });
    server.abort();
    out
}

async fn running_bot_answers(probe_url: &str, proxy_fix: &str) -> Check {
    let got = reqwest::Client::new()
        .get(probe_url)
        .timeout(NETWORK_TIMEOUT)
        .send()
        .await;
    match got {
        Ok(r) if r.status().as_u16() == 400 => Check::ok(
            "public URL",
            format!("{probe_url} answers as the bot's callback route (HTTP 400 without a sign-in)"),
        ),
        Ok(r) => Check::fail(
            "public URL",
            format!(
                "{probe_url} answered HTTP {}: not the bot's callback route (it answers 400 without a sign-in)",
                r.status().as_u16()
            ),
            proxy_fix.to_owned(),
        ),
        Err(e) => Check::fail(
            "public URL",
            format!("cannot reach {probe_url}: {}", describe(e)),
            proxy_fix.to_owned(),
        ),
    }
}
