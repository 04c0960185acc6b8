//! Resolved `[google]` settings.

use std::time::Duration;

/// Google's authorization endpoint (Google Identity, "OAuth 2.0 for Web Server Applications").
pub const GOOGLE_AUTH_URL: &str = "https://accounts.google.com/o/oauth2/v2/auth";
/// Google's token endpoint.
pub const GOOGLE_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
/// Google's revocation endpoint.
pub const GOOGLE_REVOKE_URL: &str = "https://oauth2.googleapis.com/revoke";
/// The Calendar API v3 base, with its trailing slash (as google-calendar3 wants it).
pub const GOOGLE_API_BASE_URL: &str = "https://www.googleapis.com/calendar/v3/";
/// The path of the callback on the bot's HTTP listener.
pub const CALLBACK_PATH: &str = "/oauth/google/callback";
/// The loopback redirect of the paste-back flow (Desktop client). Nothing listens there: the
/// browser shows an error page whose address the user pastes into the chat. Google allows any
/// port on a loopback address for Desktop clients.
pub const LOOPBACK_REDIRECT: &str = "http://127.0.0.1:53682/volcanic/oauth";

/// The OAuth client and endpoints.
#[derive(Clone)]
pub struct GoogleConfig {
    /// OAuth client id.
    pub client_id: String,
    /// OAuth client secret (a secret: never logged or shown).
    pub client_secret: String,
    /// Authorization endpoint.
    pub auth_url: String,
    /// Token endpoint.
    pub token_url: String,
    /// Revocation endpoint.
    pub revoke_url: String,
    /// Calendar API base URL, ending in `/`.
    pub api_base_url: String,
    /// `[http] public_url` without a trailing slash: the callback flow redirects to
    /// `<public_url>/oauth/google/callback`; `None` uses the paste-back flow.
    pub public_url: Option<String>,
    /// First delay of the backoff on rate-limit and quota errors (doubled per attempt, 3 retries).
    pub backoff: Duration,
    /// How long one call to Google (a token refresh, an API call) may take before it fails
    /// with an error saying so (default 30 s).
    pub timeout: Duration,
}

impl std::fmt::Debug for GoogleConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleConfig")
            .field("client_id", &self.client_id)
            .field("auth_url", &self.auth_url)
            .field("token_url", &self.token_url)
            .field("revoke_url", &self.revoke_url)
            .field("api_base_url", &self.api_base_url)
            .field("public_url", &self.public_url)
            .finish_non_exhaustive()
    }
}

impl GoogleConfig {
    /// Google's endpoints for this client, paste-back flow, 1 s backoff.
    pub fn new(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            auth_url: GOOGLE_AUTH_URL.into(),
            token_url: GOOGLE_TOKEN_URL.into(),
            revoke_url: GOOGLE_REVOKE_URL.into(),
            api_base_url: GOOGLE_API_BASE_URL.into(),
            public_url: None,
            backoff: Duration::from_secs(1),
            timeout: Duration::from_secs(30),
        }
    }

    /// The backoff and the per-call timeout of API calls.
    pub(crate) fn timing(&self) -> crate::api::Timing {
        crate::api::Timing {
            backoff: self.backoff,
            timeout: self.timeout,
        }
    }

    /// The redirect URI of new sign-ins: the callback on the public URL, else the loopback one.
    pub fn redirect_uri(&self) -> String {
        match &self.public_url {
            Some(base) => format!("{}{CALLBACK_PATH}", base.trim_end_matches('/')),
            None => LOOPBACK_REDIRECT.to_owned(),
        }
    }
}
