//! A double of Google's OAuth 2.0 endpoints and the Calendar API v3 on `127.0.0.1`, as strict
//! as Google where a client could get it wrong.
//!
//! [`GoogleServer::start`] binds a free port and serves, for one client (id and secret given)
//! and one account ([`set_email`](GoogleServer::set_email), calendar zone
//! [`set_time_zone`](GoogleServer::set_time_zone)):
//!
//! - `GET /o/oauth2/v2/auth` ([`auth_url`](GoogleServer::auth_url)): checks `client_id`,
//!   `redirect_uri` (registered exactly with [`register_redirect_uri`](GoogleServer::register_redirect_uri),
//!   or loopback on any port, as for a Desktop client), `response_type=code`, a 43-character
//!   `code_challenge` with `code_challenge_method=S256`, known scopes; then "consents" at once:
//!   302 to `redirect_uri?state=…&code=…&scope=…` with the requested scopes minus those
//!   [`decline_scope`](GoogleServer::decline_scope) unticked. Errors are a 400 page
//!   (`Error 400: redirect_uri_mismatch`).
//! - `POST /token` ([`token_url`](GoogleServer::token_url)): `authorization_code` (single-use
//!   code, the same `redirect_uri`, `code_verifier` whose SHA-256 matches the challenge; answers
//!   `access_token`, `expires_in`, `scope`, `refresh_token` when `access_type=offline`, an
//!   `id_token` carrying `email` when `openid` and `email` were granted) and `refresh_token`
//!   (no new refresh token unless [`rotate_refresh_tokens`](GoogleServer::rotate_refresh_tokens));
//!   a revoked or unknown refresh token is `invalid_grant`.
//! - `POST /revoke` ([`revoke_url`](GoogleServer::revoke_url)): revokes the token's grant.
//! - `/calendar/v3/` ([`api_base_url`](GoogleServer::api_base_url)): `users/me/calendarList`,
//!   `calendars/{id}/events` list/insert, `…/events/{id}` get/patch (nested objects merged, as Google does)/update/delete,
//!   `…/events/{id}/instances`, `freeBusy`; see `calendar.rs` for the rules. Each endpoint
//!   refuses a token without one of its scopes (403 `insufficientPermissions`); an expired or
//!   revoked token is 401 `authError`.
//!
//! Every request is recorded ([`requests`](GoogleServer::requests)); [`fail_next`](GoogleServer::fail_next)
//! queues API errors (e.g. 429 `rateLimitExceeded`), [`revoke_all`](GoogleServer::revoke_all)
//! revokes every grant (as Google does after 7 days for an app in "Testing" status).

mod calendar;
mod oauth;
mod recur;
mod state;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State as AxumState;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use serde_json::Value;

use crate::serve::{self, ServeTask};

pub use calendar::valid_event_id;
pub use state::{GoogleRequest, KNOWN_SCOPES};

use state::{Fault, Shared, State};

/// Handle to a running Google double; cheap to clone, all clones share one server.
#[derive(Debug, Clone)]
pub struct GoogleServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    _task: Arc<ServeTask>,
}

impl GoogleServer {
    /// Binds `127.0.0.1:0` and serves for the OAuth client `client_id`/`client_secret` on the
    /// current tokio runtime until the last handle drops.
    pub async fn start(client_id: &str, client_secret: &str) -> std::io::Result<Self> {
        let (listener, addr) = serve::bind_loopback().await?;
        let shared = Arc::new(Shared::new(State::new(client_id.into(), client_secret.into())));
        let app = Router::new().fallback(serve).with_state(shared.clone());
        Ok(Self {
            shared,
            addr,
            _task: serve::spawn("Google double", listener, app),
        })
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The authorization endpoint.
    pub fn auth_url(&self) -> String {
        format!("{}/o/oauth2/v2/auth", self.url())
    }

    /// The token endpoint.
    pub fn token_url(&self) -> String {
        format!("{}/token", self.url())
    }

    /// The revocation endpoint.
    pub fn revoke_url(&self) -> String {
        format!("{}/revoke", self.url())
    }

    /// The Calendar API base (`…/calendar/v3/`, with the trailing slash google-calendar3 wants).
    pub fn api_base_url(&self) -> String {
        format!("{}/calendar/v3/", self.url())
    }

    /// The account's email (default `user@example.com`); also its primary calendar's id.
    pub fn set_email(&self, email: &str) {
        self.shared.lock().email = email.into();
    }

    /// The primary calendar's IANA zone (default `UTC`).
    pub fn set_time_zone(&self, zone: &str) {
        self.shared.lock().time_zone = zone.into();
    }

    /// Registers a redirect URI of the web client (matched exactly).
    pub fn register_redirect_uri(&self, uri: &str) {
        self.shared.lock().redirect_uris.insert(uri.into());
    }

    /// The user unticks `scope` on the consent screen from now on.
    pub fn decline_scope(&self, scope: &str) {
        self.shared.lock().declined.insert(scope.into());
    }

    /// Access token lifetime in seconds for tokens issued from now on (default 3599).
    pub fn set_token_lifetime(&self, seconds: i64) {
        self.shared.lock().token_lifetime = seconds;
    }

    /// Whether refresh answers carry a new refresh token (default false, as Google usually does).
    pub fn rotate_refresh_tokens(&self, rotate: bool) {
        self.shared.lock().rotate_refresh = rotate;
    }

    /// Makes `POST /token` wait `delay` before answering (a slow or hanging token endpoint).
    pub fn delay_token(&self, delay: std::time::Duration) {
        self.shared.lock().token_delay = delay;
    }

    /// The most events one list page holds (default 2500, as Google's cap of `maxResults`); a
    /// longer list gets a `nextPageToken`.
    pub fn set_page_size(&self, events: usize) {
        self.shared.lock().page_size = events;
    }

    /// Makes every Calendar API call wait `delay` before answering.
    pub fn delay_api(&self, delay: std::time::Duration) {
        self.shared.lock().api_delay = delay;
    }

    /// Revokes every grant: refreshes get `invalid_grant`, API calls 401.
    pub fn revoke_all(&self) {
        let mut s = self.shared.lock();
        let grants: Vec<u64> = s.grants.keys().copied().collect();
        for g in grants {
            s.revoke_grant(g);
        }
    }

    /// Queues an error for the next Calendar API call (after the token check): `status` with
    /// Google's error body carrying `reason` (e.g. 429 `rateLimitExceeded`, 403
    /// `userRateLimitExceeded`).
    pub fn fail_next(&self, status: u16, reason: &str) {
        self.shared.lock().faults.push_back(Fault {
            status,
            reason: reason.into(),
        });
    }

    /// Every request seen, in order.
    pub fn requests(&self) -> Vec<GoogleRequest> {
        self.shared.lock().requests.clone()
    }

    /// Tokens revoked through `/revoke`, in order.
    pub fn revocations(&self) -> Vec<String> {
        self.shared.lock().revocations.clone()
    }

    /// The events of the primary calendar (recurring ones as their series), cancelled included.
    pub fn events(&self) -> Vec<Value> {
        let s = self.shared.lock();
        s.events
            .get(&s.email)
            .map(|c| c.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Number of grants (connections) still valid.
    pub fn live_grants(&self) -> usize {
        self.shared.lock().grants.len()
    }

    /// Plays the browser: opens `authorization_url` and returns where Google redirects it
    /// (the `Location` of the 302), or the error page's status and text.
    pub async fn consent(&self, authorization_url: &str) -> Result<String, (u16, String)> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| (0, e.to_string()))?;
        let response = client
            .get(authorization_url)
            .send()
            .await
            .map_err(|e| (0, e.to_string()))?;
        let status = response.status().as_u16();
        match response.headers().get("location").and_then(|l| l.to_str().ok()) {
            Some(location) if status == 302 => Ok(location.to_owned()),
            _ => Err((status, response.text().await.unwrap_or_default())),
        }
    }
}

fn pairs(text: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(text.as_bytes()).into_owned().collect()
}

async fn serve(
    AxumState(shared): AxumState<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let query_text = uri.query().unwrap_or_default().to_owned();
    let body_text = String::from_utf8_lossy(&body).into_owned();
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let delay = if path == "/token" {
        shared.lock().token_delay
    } else if path.starts_with("/calendar/v3/") {
        shared.lock().api_delay
    } else {
        std::time::Duration::ZERO
    };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let mut state = shared.lock();
    state.requests.push(GoogleRequest {
        method: method.as_str().to_owned(),
        path: path.clone(),
        query: query_text.clone(),
        body: body_text.clone(),
        authorization: authorization.clone(),
    });
    let query = pairs(&query_text);
    match (method.as_str(), path.as_str()) {
        ("GET", "/o/oauth2/v2/auth") => oauth::authorize(&mut state, &query),
        ("POST", "/token") => oauth::token(&mut state, &pairs(&body_text)),
        ("POST", "/revoke") => {
            let form = pairs(&body_text);
            let token = form
                .get("token")
                .or_else(|| query.get("token"))
                .cloned()
                .unwrap_or_default();
            oauth::revoke(&mut state, &token)
        }
        (m, p) if p.starts_with("/calendar/v3/") => {
            let segments: Vec<String> = p["/calendar/v3/".len()..].split('/').map(percent_decode).collect();
            calendar::handle(&mut state, m, &segments, &query, &body_text, authorization.as_deref())
        }
        _ => calendar::api_error(404, "notFound", "Not Found"),
    }
}

/// Percent-decodes a path segment (`%40` → `@`); `+` stays `+`.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = bytes.get(i + 1..i + 3)
            && let Some(b) = std::str::from_utf8(hex)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
