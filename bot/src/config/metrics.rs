//! `[metrics]`: Prometheus metrics on a listener of their own (docs/operations.md). The section's
//! presence turns them on. A listener reachable from other machines needs a bearer token: the
//! token is never in the file; `token_env` names the variable it is read from, a secret like
//! every other key ([`Secrets::of`](crate::secrets::Secrets::of)). Every error names its key.

use super::{ConfigError, invalid};
use serde::Deserialize;
use std::net::SocketAddr;

/// Default `listen`: loopback, the port the Prometheus project's exporters list gives the
/// OpenTelemetry/Prometheus exporter (9464).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9464";

/// Shortest token accepted: a guessable token on a public listener is no protection.
const MIN_TOKEN_CHARS: usize = 16;

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMetrics {
    listen: Option<String>,
    token_env: Option<String>,
}

/// `[metrics]`, resolved. `Debug` hides the token.
#[derive(Clone, PartialEq)]
pub struct MetricsConfig {
    /// `listen` (`ip:port`, default [`DEFAULT_LISTEN`]): where `GET /metrics` is served.
    pub listen: SocketAddr,
    /// `token_env`: the variable holding the bearer token, if any.
    pub token_env: Option<String>,
    /// The token read from `token_env` at load; `None` without `token_env`. When set, every
    /// scrape must send `Authorization: Bearer <token>`.
    pub token: Option<String>,
}

impl std::fmt::Debug for MetricsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsConfig")
            .field("listen", &self.listen)
            .field("token_env", &self.token_env)
            .field("token", &self.token.as_ref().map(|_| "[hidden]"))
            .finish()
    }
}

/// Checks `[metrics]` (`None`: no section, metrics are off); `env` reads a variable (the process
/// environment in the binary). Errors: `listen` is not `ip:port`; `token_env` names an unset,
/// empty or short variable; a non-loopback `listen` without `token_env` (anyone who reaches the
/// port would read the bot's activity).
pub(super) fn resolve(
    raw: Option<RawMetrics>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<MetricsConfig>, ConfigError> {
    let Some(raw) = raw else { return Ok(None) };
    let text = raw.listen.unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
    let listen: SocketAddr = text.trim().parse().map_err(|_| {
        invalid(
            "metrics.listen",
            format!("`{text}` is not ip:port (e.g. \"{DEFAULT_LISTEN}\", or \"0.0.0.0:9464\" with token_env)"),
        )
    })?;
    let token = match &raw.token_env {
        None => None,
        Some(name) => Some(read_token(name, &env)?),
    };
    if !listen.ip().is_loopback() && token.is_none() {
        return Err(invalid(
            "metrics.token_env",
            format!(
                "required: `metrics.listen` ({listen}) is reachable from other machines; name the \
                 environment variable holding a bearer token of at least {MIN_TOKEN_CHARS} characters \
                 (e.g. token_env = \"VOLCANIC_METRICS_TOKEN\"), or listen on 127.0.0.1"
            ),
        ));
    }
    Ok(Some(MetricsConfig {
        listen,
        token_env: raw.token_env,
        token,
    }))
}

/// The token `token_env` names. Errors: unset, empty or shorter than [`MIN_TOKEN_CHARS`].
fn read_token(name: &str, env: &impl Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
    let value = env(name).map(|v| v.trim().to_owned()).unwrap_or_default();
    if value.is_empty() {
        return Err(invalid(
            "metrics.token_env",
            format!("the environment variable `{name}` is not set: put the scrape's bearer token in it"),
        ));
    }
    if value.chars().count() < MIN_TOKEN_CHARS {
        return Err(invalid(
            "metrics.token_env",
            format!("the token in `{name}` is shorter than {MIN_TOKEN_CHARS} characters: use a random one"),
        ));
    }
    Ok(value)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn raw(listen: Option<&str>, token_env: Option<&str>) -> Option<RawMetrics> {
        Some(RawMetrics {
            listen: listen.map(str::to_owned),
            token_env: token_env.map(str::to_owned),
        })
    }

    fn env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "0123456789abcdef0123".to_owned())
    }

    #[test]
    fn absent_is_off_and_empty_takes_the_loopback_default() {
        assert_eq!(resolve(None, env).unwrap(), None);
        let m = resolve(raw(None, None), env).unwrap().unwrap();
        assert_eq!(m.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(m.token, None);
    }

    #[test]
    fn a_public_listener_needs_a_token() {
        let e = resolve(raw(Some("0.0.0.0:9464"), None), env).unwrap_err().to_string();
        assert!(e.contains("metrics.token_env") && e.contains("required"), "{e}");
        let m = resolve(raw(Some("0.0.0.0:9464"), Some("TOKEN")), env).unwrap().unwrap();
        assert_eq!(m.token.as_deref(), Some("0123456789abcdef0123"));
        assert!(!format!("{m:?}").contains("0123456789"), "Debug hides the token");
    }

    #[test]
    fn bad_values_name_their_key() {
        let e = resolve(raw(Some("localhost"), None), env).unwrap_err().to_string();
        assert!(e.contains("metrics.listen"), "{e}");
        let e = resolve(raw(None, Some("UNSET")), env).unwrap_err().to_string();
        assert!(e.contains("`UNSET` is not set"), "{e}");
        let short = |_: &str| Some("short".to_owned());
        let e = resolve(raw(None, Some("TOKEN")), short).unwrap_err().to_string();
        assert!(e.contains("shorter than 16"), "{e}");
    }
}
