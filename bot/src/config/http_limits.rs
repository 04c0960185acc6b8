//! `[http.limits]`: how much of the bot one client of the HTTP listener (`[http] listen`) may
//! hold, and for how long. The listener is public (the A2A card, the webhook), so every limit is
//! on by default; the keys only tune it. Every error names its key.

use super::{ConfigError, invalid};
use serde::Deserialize;
use std::time::Duration;

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHttpLimits {
    max_connections: Option<usize>,
    max_connections_per_peer: Option<usize>,
    header_timeout_secs: Option<f64>,
    idle_timeout_secs: Option<f64>,
    body_timeout_secs: Option<f64>,
}

/// `[http.limits]`, resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HttpLimits {
    /// `max_connections`: open connections at most, in total. `None` (the default): 512, but at
    /// most half the process's soft `RLIMIT_NOFILE` (worked out when the listener starts), so
    /// the listener can never take the descriptors the bot needs for its own files and sockets.
    /// Past it the listener stops accepting until a connection closes (the rest wait in the
    /// kernel's backlog).
    pub max_connections: Option<usize>,
    /// `max_connections_per_peer` (default 64): open connections at most from one address
    /// (an IPv6 peer counts by its /64). A connection past it is closed at once. Behind a reverse
    /// proxy every connection comes from the proxy: raise it to `max_connections` there.
    pub max_connections_per_peer: usize,
    /// `header_timeout_secs` (default 10): a request head (request line and headers) must arrive
    /// whole within this, counted from when the connection waits for it (a new connection, or a
    /// kept-alive one after its last response). Then the connection is closed.
    pub header_timeout: Duration,
    /// `idle_timeout_secs` (default 60): a connection on which no byte moved either way for this
    /// long, while no handler works on one of its requests, is closed (a client that stopped
    /// reading its response).
    pub idle_timeout: Duration,
    /// `body_timeout_secs` (default 30): a request body must arrive whole within this, counted
    /// from its head; a body still arriving after it fails (the route answers 408 or 400).
    pub body_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_connections: None,
            max_connections_per_peer: 64,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(30),
        }
    }
}

/// Checks `[http.limits]`: counts at least 1, times above 0 (seconds, fractions allowed).
pub(super) fn resolve_http_limits(raw: Option<RawHttpLimits>) -> Result<HttpLimits, ConfigError> {
    let raw = raw.unwrap_or_default();
    let default = HttpLimits::default();
    let count = |key: &str, v: Option<usize>| match v {
        Some(0) => Err(invalid(
            format!("http.limits.{key}"),
            "`0` would refuse every connection: use 1 or more",
        )),
        v => Ok(v),
    };
    let secs = |key: &str, v: Option<f64>, default: Duration| match v {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(invalid(
            format!("http.limits.{key}"),
            format!("`{s}`: use a number of seconds above 0 and at most 86400 (e.g. 10, or 0.5)"),
        )),
    };
    Ok(HttpLimits {
        max_connections: count("max_connections", raw.max_connections)?,
        max_connections_per_peer: count("max_connections_per_peer", raw.max_connections_per_peer)?
            .unwrap_or(default.max_connections_per_peer),
        header_timeout: secs("header_timeout_secs", raw.header_timeout_secs, default.header_timeout)?,
        idle_timeout: secs("idle_timeout_secs", raw.idle_timeout_secs, default.idle_timeout)?,
        body_timeout: secs("body_timeout_secs", raw.body_timeout_secs, default.body_timeout)?,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<HttpLimits, ConfigError> {
        resolve_http_limits(Some(toml::from_str(text).unwrap()))
    }

    #[test]
    fn defaults_apply_and_keys_tune_them() {
        assert_eq!(resolve_http_limits(None).unwrap(), HttpLimits::default());
        let l = parse("max_connections = 100\nmax_connections_per_peer = 100\nheader_timeout_secs = 2.5").unwrap();
        assert_eq!(l.max_connections, Some(100));
        assert_eq!(l.max_connections_per_peer, 100);
        assert_eq!(l.header_timeout, Duration::from_millis(2500));
        assert_eq!(l.idle_timeout, Duration::from_secs(60));
    }

    #[test]
    fn bad_values_name_their_key() {
        for (text, key) in [
            ("max_connections = 0", "http.limits.max_connections"),
            ("max_connections_per_peer = 0", "http.limits.max_connections_per_peer"),
            ("idle_timeout_secs = 0", "http.limits.idle_timeout_secs"),
            ("body_timeout_secs = -1", "http.limits.body_timeout_secs"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(key), "{text}: {e}");
        }
    }
}
