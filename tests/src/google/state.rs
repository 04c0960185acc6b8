//! The double's state: the one test account, OAuth grants, codes and tokens, calendars and
//! events, recorded requests and queued faults.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard};

use rand::Rng;
use serde_json::Value;

/// Every scope the double knows; an authorization request with another is `invalid_scope`.
pub const KNOWN_SCOPES: &[&str] = &[
    "openid",
    "email",
    "profile",
    "https://www.googleapis.com/auth/userinfo.email",
    "https://www.googleapis.com/auth/calendar",
    "https://www.googleapis.com/auth/calendar.readonly",
    "https://www.googleapis.com/auth/calendar.events",
    "https://www.googleapis.com/auth/calendar.events.readonly",
    "https://www.googleapis.com/auth/calendar.calendarlist.readonly",
    "https://www.googleapis.com/auth/calendar.freebusy",
];

/// A request the double saw.
#[derive(Debug, Clone, PartialEq)]
pub struct GoogleRequest {
    /// HTTP method, upper case.
    pub method: String,
    /// Path, e.g. `/calendar/v3/calendars/primary/events` (percent-decoding not applied).
    pub path: String,
    /// The raw query string (empty when none).
    pub query: String,
    /// The body as text (form or JSON).
    pub body: String,
    /// The `Authorization` header, when sent.
    pub authorization: Option<String>,
}

/// A queued API fault ([`GoogleServer::fail_next`](super::GoogleServer::fail_next)).
#[derive(Debug, Clone)]
pub(crate) struct Fault {
    pub(crate) status: u16,
    pub(crate) reason: String,
}

/// An authorization code: single use, bound to the authorization request.
#[derive(Debug, Clone)]
pub(crate) struct Code {
    pub(crate) client_id: String,
    pub(crate) redirect_uri: String,
    pub(crate) challenge: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) offline: bool,
}

/// What an access or refresh token grants.
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    pub(crate) scopes: Vec<String>,
}

/// An issued access token.
#[derive(Debug, Clone)]
pub(crate) struct Access {
    pub(crate) grant: u64,
    /// Unix seconds after which the token is refused.
    pub(crate) expires_at: i64,
}

/// Mutable state of the double.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) client_id: String,
    pub(crate) client_secret: String,
    /// Redirect URIs registered for the web client (exact match); loopback ones
    /// (`http://127.0.0.1:<any port>/…`, `http://localhost:<any port>/…`) are always allowed,
    /// as for a Desktop client.
    pub(crate) redirect_uris: HashSet<String>,
    pub(crate) email: String,
    pub(crate) time_zone: String,
    /// Scopes the "user" unticks on the consent screen.
    pub(crate) declined: HashSet<String>,
    pub(crate) codes: HashMap<String, Code>,
    pub(crate) used_codes: HashSet<String>,
    pub(crate) grants: HashMap<u64, Grant>,
    /// Refresh token → grant id.
    pub(crate) refresh_tokens: HashMap<String, u64>,
    pub(crate) access_tokens: HashMap<String, Access>,
    pub(crate) next_grant: u64,
    /// Access token lifetime in seconds.
    pub(crate) token_lifetime: i64,
    /// Whether a refresh answer carries a new refresh token (Google's usually does not).
    pub(crate) rotate_refresh: bool,
    /// Calendar id → event id → event resource.
    pub(crate) events: BTreeMap<String, BTreeMap<String, Value>>,
    /// Cancelled instance ids of recurring events.
    pub(crate) cancelled_instances: HashSet<String>,
    pub(crate) requests: Vec<GoogleRequest>,
    pub(crate) faults: VecDeque<Fault>,
    pub(crate) revocations: Vec<String>,
    /// How long `POST /token` waits before answering.
    pub(crate) token_delay: std::time::Duration,
    /// How long Calendar API calls wait before answering.
    pub(crate) api_delay: std::time::Duration,
    /// The most events a list page holds (Google: `maxResults`, at most 2500).
    pub(crate) page_size: usize,
}

impl State {
    pub(crate) fn new(client_id: String, client_secret: String) -> Self {
        Self {
            client_id,
            client_secret,
            redirect_uris: HashSet::new(),
            email: "user@example.com".into(),
            time_zone: "UTC".into(),
            declined: HashSet::new(),
            codes: HashMap::new(),
            used_codes: HashSet::new(),
            grants: HashMap::new(),
            refresh_tokens: HashMap::new(),
            access_tokens: HashMap::new(),
            next_grant: 1,
            token_lifetime: 3599,
            rotate_refresh: false,
            events: BTreeMap::new(),
            cancelled_instances: HashSet::new(),
            requests: Vec::new(),
            faults: VecDeque::new(),
            revocations: Vec::new(),
            token_delay: std::time::Duration::ZERO,
            api_delay: std::time::Duration::ZERO,
            page_size: 2500,
        }
    }

    /// Issues an access token for `grant`.
    pub(crate) fn issue_access(&mut self, grant: u64, now: i64) -> String {
        let token = format!("ya29.{}", random_token(32));
        self.access_tokens.insert(
            token.clone(),
            Access {
                grant,
                expires_at: now + self.token_lifetime,
            },
        );
        token
    }

    /// Revokes a grant with all its tokens.
    pub(crate) fn revoke_grant(&mut self, grant: u64) {
        self.grants.remove(&grant);
        self.refresh_tokens.retain(|_, g| *g != grant);
        self.access_tokens.retain(|_, a| a.grant != grant);
    }
}

/// The state behind a mutex.
#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<State>,
}

impl Shared {
    pub(crate) fn new(state: State) -> Self {
        Self {
            state: Mutex::new(state),
        }
    }

    /// Locks the state; a panic in another holder does not make it unusable.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A random token of `n` URL-safe characters.
pub(crate) fn random_token(n: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut rng = rand::rng();
    (0..n)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

/// Now, in Unix seconds.
pub(crate) fn now_unix() -> i64 {
    chrono::Utc::now().timestamp()
}
