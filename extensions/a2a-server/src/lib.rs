//! The A2A server of Volcanic: other agents call the assistant over A2A, each caller an isolated
//! tenant.
//!
//! - [`A2aServer::router`]: axum routes for the bot's HTTP listener: the card at
//!   `/.well-known/agent-card.json` (and 0.3's `/.well-known/agent.json`), the JSON-RPC endpoint
//!   `POST /a2a` answering A2A 1.0 (`A2A-Version: 1.0`, `SendMessage`, …) and 0.3 (`message/send`,
//!   …) in the dialect asked (translated by `volcanic-a2a-dialect`), with SSE for the streaming
//!   methods.
//! - Tenancy: callers present bearer tokens from config, compared in constant time; a missing or
//!   wrong token is a 401 with `WWW-Authenticate`. [`A2AServerCache`] keeps one [`Tenant`] per
//!   caller with its own task store, so a caller never sees another's tasks (`TaskNotFound`).
//! - Work is done by an [`Executor`] (the seam): the test kit's is scripted (the A2A TCK's
//!   behaviours); the bot's, `A2ASessionPool` in its A2A server feature, runs an agent session
//!   per (caller, contextId).
//! - Tasks persist under `<state_dir>/a2a/<caller>/tasks/` (atomic writes); a task found
//!   `working` at start becomes `failed` with a message saying so.
//! - Push notifications go out in order with retries; private targets are refused ([`push`]).

mod card;
mod config;
mod error;
mod executor;
pub mod push;
mod rpc;
mod runtime;
mod store;

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{get, post};
use sha2::{Digest, Sha256};
use volcanic_a2a_dialect::{CARD_PATH, LEGACY_CARD_PATH};

pub use card::{CARD_MAX_AGE, RPC_PATH, card_json};
pub use config::{Caller, CardInfo, Limits, ServerConfig, Skill, valid_caller_name};
pub use error::ServerError;
pub use executor::{ExecRequest, Executor, TaskEvents};
pub use runtime::{INTERRUPTED, QUESTION_LOST, Started, Tenant};

/// One [`Tenant`] per configured caller, made at start (the spec's `A2AServerCache`).
pub struct A2AServerCache {
    tenants: HashMap<String, Arc<Tenant>>,
}

impl A2AServerCache {
    /// The tenant of caller `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Tenant>> {
        self.tenants.get(name)
    }
}

/// The server: config, tenants, the token table.
pub struct A2aServer {
    config: ServerConfig,
    cache: A2AServerCache,
    /// SHA-256 of each caller's token, with its name.
    tokens: Vec<([u8; 32], String)>,
    last_modified: String,
    anonymous: Option<String>,
}

impl A2aServer {
    /// Builds the server and loads each caller's stored tasks.
    ///
    /// Errors: a caller name that cannot name a folder, duplicate names or tokens, a token
    /// under 16 characters, an unreadable state folder.
    pub fn new(config: ServerConfig, executor: Arc<dyn Executor>) -> Result<Arc<A2aServer>, ServerError> {
        Self::with_anonymous(config, executor, None)
    }

    /// Like [`A2aServer::new`], and requests without `Authorization` act as caller `anonymous`
    /// (a test harness such as the A2A TCK sends no credentials; a wrong token is still a 401).
    pub fn with_anonymous(
        config: ServerConfig,
        executor: Arc<dyn Executor>,
        anonymous: Option<String>,
    ) -> Result<Arc<A2aServer>, ServerError> {
        let pusher = Arc::new(push::Pusher::new(config.allow_loopback_push));
        let mut tenants = HashMap::new();
        let mut tokens = Vec::new();
        let mut names: Vec<&str> = config.callers.iter().map(|c| c.name.as_str()).collect();
        names.extend(anonymous.as_deref());
        for name in names {
            if !valid_caller_name(name) {
                return Err(ServerError::CallerName(name.to_owned()));
            }
            if tenants.contains_key(name) {
                return Err(ServerError::Duplicate(format!("caller {name:?} is listed twice")));
            }
            let dir = match &config.state_dir {
                Some(d) => Some(store::TaskDir::open(d, name)?),
                None => None,
            };
            let tenant = Tenant::new(
                name.to_owned(),
                dir,
                config.limits.clone(),
                executor.clone(),
                pusher.clone(),
            )?;
            tenants.insert(name.to_owned(), tenant);
        }
        for c in &config.callers {
            if c.token.chars().count() < 16 {
                return Err(ServerError::WeakToken(c.name.clone()));
            }
            let digest: [u8; 32] = Sha256::digest(c.token.as_bytes()).into();
            if tokens.iter().any(|(d, _)| *d == digest) {
                return Err(ServerError::Duplicate(format!("caller {:?} shares a token", c.name)));
            }
            tokens.push((digest, c.name.clone()));
        }
        let last_modified = chrono::Utc::now().format("%a, %d %b %Y %H:%M:%S GMT").to_string();
        Ok(Arc::new(A2aServer {
            config,
            cache: A2AServerCache { tenants },
            tokens,
            last_modified,
            anonymous,
        }))
    }

    /// The per-caller tenants.
    pub fn cache(&self) -> &A2AServerCache {
        &self.cache
    }

    /// The routes: the card (both paths) and `POST /a2a` (also `/a2a/`).
    pub fn router(self: &Arc<Self>) -> Router {
        Router::new()
            .route(CARD_PATH, get(card_handler))
            .route(LEGACY_CARD_PATH, get(legacy_card_handler))
            .route(RPC_PATH, post(rpc::handle))
            .route(&format!("{RPC_PATH}/"), post(rpc::handle))
            // The endpoint bounds its body itself, answering a JSON-RPC error.
            .layer(DefaultBodyLimit::disable())
            .with_state(self.clone())
    }

    /// The caller a request's `Authorization` header names: `Ok(None)` without the header,
    /// `Err(())` for a wrong token. Every token is compared, in constant time.
    fn caller_of(&self, headers: &HeaderMap) -> Result<Option<&Arc<Tenant>>, ()> {
        let Some(value) = headers.get(axum::http::header::AUTHORIZATION) else {
            return Ok(self.anonymous.as_deref().and_then(|a| self.cache.get(a)));
        };
        let presented = value.to_str().ok().and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
        let digest: [u8; 32] = Sha256::digest(presented.unwrap_or("").as_bytes()).into();
        let mut found: Option<&str> = None;
        for (d, name) in &self.tokens {
            let diff = d.iter().zip(digest.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b));
            if diff == 0 {
                found = Some(name);
            }
        }
        match found {
            Some(name) if presented.is_some() => Ok(self.cache.get(name)),
            _ => Err(()),
        }
    }
}

async fn card_handler(State(server): State<Arc<A2aServer>>, headers: HeaderMap) -> Response {
    let base = card::base_url(&server.config.card, &headers);
    let card = card::card_json(&server.config.card, &base, false, !server.config.card.strict);
    card::card_response(&card, &headers, &server.last_modified)
}

async fn legacy_card_handler(State(server): State<Arc<A2aServer>>, headers: HeaderMap) -> Response {
    let base = card::base_url(&server.config.card, &headers);
    let card = card::card_json(&server.config.card, &base, false, true);
    card::card_response(&card, &headers, &server.last_modified)
}

#[cfg(test)]
mod tests;
