//! Webhook delivery as Telegram does it: while a webhook is set (`setWebhook`), queued updates
//! are POSTed one at a time, in `update_id` order, to the webhook URL with the
//! `X-Telegram-Bot-Api-Secret-Token` header; a 2xx answer confirms an update, anything else (or
//! no answer) is retried after 200 ms. The registered URL must be https, as Telegram requires,
//! so the posts go to a local address standing in for the TLS proxy in front of the bot.

use super::state::Shared;
use std::sync::Arc;
use std::time::Duration;

/// Delivers until the task is aborted. `via`: `http://127.0.0.1:<port>`; the registered URL's
/// path is appended.
pub(crate) async fn deliver(shared: Arc<Shared>, via: String) {
    // reqwest is built without a default TLS provider in this workspace.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let mut changed = shared.changed.subscribe();
    loop {
        let next = {
            let state = shared.lock();
            if state.webhook_url.is_empty() {
                None
            } else {
                state
                    .pending
                    .front()
                    .cloned()
                    .map(|u| (u, path_of(&state.webhook_url), state.webhook_secret.clone()))
            }
        };
        let Some((update, path, secret)) = next else {
            // Wait for a push or a setWebhook.
            let _ = tokio::time::timeout(Duration::from_millis(200), changed.changed()).await;
            continue;
        };
        let id = update["update_id"].as_i64().unwrap_or(0);
        let mut request = client
            .post(format!("{via}{path}"))
            .header("content-type", "application/json")
            .body(super::raw::update_text(&update));
        if !secret.is_empty() {
            request = request.header("X-Telegram-Bot-Api-Secret-Token", secret);
        }
        let status = match request.timeout(Duration::from_secs(10)).send().await {
            Ok(r) => r.status().as_u16(),
            Err(_) => 0,
        };
        {
            let mut state = shared.lock();
            state.webhook_attempts.push((id, status));
            if (200..300).contains(&status) {
                state.pending.retain(|u| u["update_id"].as_i64() != Some(id));
            }
        }
        shared.notify();
        if !(200..300).contains(&status) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// The path (with query) of `https://host[:port]/path`.
fn path_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.find('/').map_or_else(|| "/".to_owned(), |i| rest[i..].to_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn path_of_drops_scheme_and_host() {
        assert_eq!(
            super::path_of("https://bot.example.org/telegram/webhook"),
            "/telegram/webhook"
        );
        assert_eq!(super::path_of("https://bot.example.org:8443"), "/");
    }
}
