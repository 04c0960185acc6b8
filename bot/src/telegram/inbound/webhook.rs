//! Webhook mode (`[telegram] mode = "webhook"`): Telegram POSTs each update to
//! `<http.public_url>/telegram/webhook` (Bot API, "setWebhook"), and the bot's HTTP listener
//! (`http.listen`, usually behind a TLS-terminating reverse proxy) receives it.
//!
//! The same rule as polling holds: an update is answered `200 OK` (Telegram's acknowledgement)
//! only after the journal has persisted it; a failure answers 500 and Telegram sends it again.
//! Requests without Telegram's `X-Telegram-Bot-Api-Secret-Token` header carrying this start's
//! random secret are refused with 401 before a byte of their body is read (so unauthenticated
//! posts cost no memory), and never reach the journal. A body is read up to [`MAX_BODY_BYTES`]
//! (413 past it) within `http.limits.body_timeout_secs` (408 past it). A body that cannot be read is
//! set aside ([`unreadable`]) and answered 200, so it never comes back in a retry storm.

use crate::telegram::TelegramHost;
use crate::telegram::inbound::poller::describe;
use crate::telegram::inbound::unreadable::{self, Decoded};
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use rand::Rng;
use serde_json::{Value, json};
use std::sync::Arc;

/// Where Telegram posts updates, under `http.public_url`.
pub const PATH: &str = "/telegram/webhook";

/// The largest update body read (bytes): axum's default body limit, far above any update.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// Header Telegram sends the `secret_token` of `setWebhook` in.
const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

/// A fresh secret for `setWebhook`'s `secret_token`: 48 characters of `[A-Za-z0-9]` (the API
/// allows 1-256 of `A-Z a-z 0-9 _ -`).
pub fn new_secret() -> String {
    rand::rng()
        .sample_iter(rand::distr::Alphanumeric)
        .take(48)
        .map(char::from)
        .collect()
}

/// Registers `<public_url>/telegram/webhook` with Telegram (`setWebhook`, keeping pending
/// updates). `base`: `<api_url>/bot<token>`. Errors name the config key to check.
pub async fn register(client: &reqwest::Client, base: &str, public_url: &str, secret: &str) -> anyhow::Result<()> {
    let url = format!("{}{PATH}", public_url.trim_end_matches('/'));
    let body = json!({
        "url": url,
        "secret_token": secret,
        "allowed_updates": super::ALLOWED_UPDATES,
    });
    // reqwest's errors carry the URL, which holds the token: `describe` leaves it out.
    let resp = client
        .post(format!("{base}/setWebhook"))
        .json(&body)
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("setWebhook failed: {}", describe(e)))?;
    let v: Value = resp
        .json()
        .await
        .map_err(|e| anyhow::anyhow!("setWebhook failed: {}", describe(e)))?;
    if v["ok"].as_bool() != Some(true) {
        anyhow::bail!(
            "setWebhook for {url} failed: {} (check `http.public_url`: Telegram needs a public https URL)",
            v["description"].as_str().unwrap_or("no description")
        );
    }
    tracing::info!(%url, "webhook registered");
    Ok(())
}

#[derive(Clone)]
struct Hook {
    host: Arc<TelegramHost>,
    secret: Arc<str>,
}

/// The route receiving updates (merged into the bot's one HTTP router).
pub fn routes(host: Arc<TelegramHost>, secret: String) -> Router {
    Router::new().route(PATH, post(receive)).with_state(Hook {
        host,
        secret: secret.into(),
    })
}

/// The body comes as a stream: nothing of it is read before the secret was checked.
async fn receive(State(hook): State<Hook>, headers: HeaderMap, body: Body) -> StatusCode {
    let given = headers.get(SECRET_HEADER).map(|v| v.as_bytes()).unwrap_or_default();
    if !same(given, hook.secret.as_bytes()) {
        tracing::warn!("webhook request without the right secret token refused");
        return StatusCode::UNAUTHORIZED;
    }
    let body = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(e) => {
            let timed_out = crate::http::timed_out(&e);
            tracing::warn!("webhook body not read: {e}");
            return if timed_out {
                StatusCode::REQUEST_TIMEOUT
            } else {
                StatusCode::PAYLOAD_TOO_LARGE
            };
        }
    };
    match unreadable::decode_update(&body) {
        Decoded::Update(id, update) => match deliver(&hook.host, vec![(id, update)]).await {
            Some(_) => StatusCode::OK,
            None => StatusCode::INTERNAL_SERVER_ERROR,
        },
        Decoded::Unreadable(u) => {
            // Kept, journaled by its id, answered 200: never a retry storm. Not kept: 500, and
            // Telegram sends it again.
            let (aside, not_kept) = unreadable::keep_all(&hook.host.config.state_dir, vec![u]);
            if not_kept.is_some() {
                return StatusCode::INTERNAL_SERVER_ERROR;
            }
            for a in &aside {
                let fresh = match a.update.id {
                    Some(id) => match deliver(&hook.host, vec![unreadable::placeholder(id)]).await {
                        Some(fresh) => !fresh.is_empty(),
                        None => return StatusCode::INTERNAL_SERVER_ERROR,
                    },
                    None => false,
                };
                if fresh || a.new {
                    unreadable::report(&hook.host, a);
                }
            }
            StatusCode::OK
        }
    }
}

/// Journals `batch`, hands the fresh updates over and waits until they are on disk (the 200
/// acknowledges them). Returns the ids that were fresh; `None` when the journal cannot be
/// written (logged): nothing may be acknowledged.
async fn deliver(host: &Arc<TelegramHost>, batch: Vec<(i64, Value)>) -> Option<Vec<i64>> {
    match host.journal.accept(batch) {
        Ok((fresh, durable)) => {
            let ids = fresh.iter().map(|(id, _)| *id).collect();
            for (id, update) in fresh {
                host.handle(id, update).await;
            }
            host.journal.durable(durable).await;
            Some(ids)
        }
        Err(e) => {
            // Not persisted, so not acknowledged: Telegram sends it again.
            tracing::error!("cannot write the inbound journal: {e}");
            None
        }
    }
}

/// Compares without stopping at the first differing byte (the secret is a credential).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_fresh_and_in_telegrams_alphabet() {
        let (a, b) = (new_secret(), new_secret());
        assert_ne!(a, b);
        assert_eq!(a.len(), 48);
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric()));
        assert!(same(a.as_bytes(), a.as_bytes()));
        assert!(!same(a.as_bytes(), b.as_bytes()));
        assert!(!same(b"", a.as_bytes()));
    }
}
