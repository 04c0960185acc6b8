//! Settings of the A2A client and the credentials bound to origins.

use std::collections::HashMap;
use std::time::Duration;

use crate::error::{A2aError, Result};

/// Connect timeout of every call (issue 14, "Bad peers").
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound of one call (issue 14, "Bad peers").
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `send` waits for a final state by default.
pub const DEFAULT_SEND_WAIT: Duration = Duration::from_secs(60);
/// Default `max_hops`.
pub const DEFAULT_MAX_HOPS: u32 = 3;
/// A card is fetched again when older than this.
pub const CARD_MAX_AGE: Duration = Duration::from_secs(3600);

/// A secret sent to one origin: `Authorization: Bearer <token>`, or `<header>: <value>`.
#[derive(Clone)]
pub enum Credential {
    /// A bearer token.
    Bearer(String),
    /// An API key in a header of this name.
    Header {
        /// The header's name, e.g. `X-API-Key`.
        name: String,
        /// Its value.
        value: String,
    },
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::Bearer(_) => f.write_str("Bearer(…)"),
            Credential::Header { name, .. } => write!(f, "Header({name}: …)"),
        }
    }
}

impl Credential {
    /// The secret itself (for the host's redactor).
    pub fn secret(&self) -> &str {
        match self {
            Credential::Bearer(t) => t,
            Credential::Header { value, .. } => value,
        }
    }
}

/// The client's settings (the host reads them from `[a2a]`).
#[derive(Debug, Clone)]
pub struct A2aSettings {
    /// How long `send` waits for a final state before answering with the task id.
    pub send_wait: Duration,
    /// Beyond this many hops an outgoing message is refused.
    pub max_hops: u32,
    /// Connect timeout of every call.
    pub connect_timeout: Duration,
    /// Bound of one call (a stream's bound is `send_wait`).
    pub call_timeout: Duration,
    /// Credentials by exact origin (`scheme://host:port`, see [`origin_of`]).
    pub credentials: HashMap<String, Credential>,
    /// Cap of a remote answer shown to the model, in bytes of text.
    pub result_cap: usize,
}

impl Default for A2aSettings {
    fn default() -> Self {
        Self {
            send_wait: DEFAULT_SEND_WAIT,
            max_hops: DEFAULT_MAX_HOPS,
            connect_timeout: CONNECT_TIMEOUT,
            call_timeout: CALL_TIMEOUT,
            credentials: HashMap::new(),
            result_cap: 16 * 1024,
        }
    }
}

impl A2aSettings {
    /// Binds `credential` to the origin of `url` (its scheme, host and port; a path is refused
    /// so that nobody believes a credential is bound to one).
    ///
    /// # Errors
    /// [`A2aError::Invalid`] when `url` is not an `http(s)` origin.
    pub fn add_credential(&mut self, url: &str, credential: Credential) -> Result<()> {
        let parsed = url::Url::parse(url).map_err(|e| A2aError::Invalid(format!("`{url}` is not a URL: {e}")))?;
        if !parsed.path().trim_matches('/').is_empty() || parsed.query().is_some() {
            return Err(A2aError::Invalid(format!(
                "`{url}`: credentials are bound to an origin (scheme://host:port), without a path"
            )));
        }
        let origin =
            origin_of(&parsed).ok_or_else(|| A2aError::Invalid(format!("`{url}` is not an http(s) origin")))?;
        self.credentials.insert(origin, credential);
        Ok(())
    }

    /// The credential bound to exactly the origin of `url`.
    pub fn credential_for(&self, url: &url::Url) -> Option<&Credential> {
        origin_of(url).and_then(|o| self.credentials.get(&o))
    }
}

/// `scheme://host:port` of an `http(s)` URL, the port always written (RFC 6454 origin).
pub fn origin_of(url: &url::Url) -> Option<String> {
    match url.scheme() {
        "http" | "https" => Some(format!(
            "{}://{}:{}",
            url.scheme(),
            url.host_str()?.to_ascii_lowercase(),
            url.port_or_known_default()?
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_scheme_host_and_port() {
        let o = |s: &str| origin_of(&url::Url::parse(s).unwrap_or_else(|e| panic!("{e}")));
        assert_eq!(o("https://A.example/x"), Some("https://a.example:443".into()));
        assert_eq!(o("http://a.example:8080/"), Some("http://a.example:8080".into()));
        assert_ne!(o("http://a.example/"), o("https://a.example/"));
        assert_eq!(o("ftp://a.example/"), None);
    }

    #[test]
    fn a_credential_with_a_path_is_refused() {
        let mut s = A2aSettings::default();
        assert!(
            s.add_credential("https://a.example/agent", Credential::Bearer("t".into()))
                .is_err()
        );
        assert!(
            s.add_credential("https://a.example", Credential::Bearer("t".into()))
                .is_ok()
        );
        let u = url::Url::parse("https://a.example:443/rpc").unwrap_or_else(|e| panic!("{e}"));
        assert!(s.credential_for(&u).is_some());
        let other = url::Url::parse("https://a.example:8443/rpc").unwrap_or_else(|e| panic!("{e}"));
        assert!(s.credential_for(&other).is_none());
    }
}
