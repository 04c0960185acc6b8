//! Long polling with "persist before acknowledge": each batch from `getUpdates` is written to
//! the journal and synced before the next request moves `offset` past it (teloxide's stock
//! `Polling` acknowledges before handlers finish, so this is our own listener). Repeats of an
//! `update_id` are ignored.

use super::router::Host;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Long-poll timeout sent to Telegram (seconds).
pub const POLL_TIMEOUT_SECS: u64 = 30;

/// Polls until `shutdown` fires.
pub async fn run(host: Arc<Host>, client: reqwest::Client, base: String, shutdown: CancellationToken) {
    let mut offset: Option<i64> = host.journal.last_id().map(|i| i + 1);
    let mut backoff = Duration::from_millis(500);
    loop {
        let body = json!({
            "offset": offset,
            "timeout": POLL_TIMEOUT_SECS,
            "allowed_updates": ["message", "callback_query"],
        });
        let req = client
            .post(format!("{base}/getUpdates"))
            .json(&body)
            .timeout(Duration::from_secs(POLL_TIMEOUT_SECS + 15))
            .send();
        let resp = tokio::select! {
            () = shutdown.cancelled() => break,
            r = req => r,
        };
        let batch = match read_batch(resp).await {
            Ok(b) => {
                backoff = Duration::from_millis(500);
                b
            }
            Err(e) if e.starts_with("409") && e.contains("webhook") => {
                // Left over from webhook mode: polling needs it gone (updates stay queued).
                tracing::warn!("a webhook is set ({e}); deleting it to poll");
                let r = client
                    .post(format!("{base}/deleteWebhook"))
                    .json(&json!({"drop_pending_updates": false}))
                    .send()
                    .await;
                if let Err(e) = r {
                    tracing::warn!("deleteWebhook failed: {e}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                }
                continue;
            }
            Err(e) => {
                tracing::warn!("getUpdates failed: {e}; retrying in {} ms", backoff.as_millis());
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(30));
                continue;
            }
        };
        if let Some(max) = batch.iter().map(|(id, _)| *id).max() {
            offset = Some(offset.map_or(max + 1, |o| o.max(max + 1)));
        }
        let (fresh, durable) = match host.journal.accept(batch) {
            Ok(f) => f,
            Err(e) => {
                // Not persisted, so not acknowledged: Telegram will send these again.
                tracing::error!("cannot write the inbound journal: {e}");
                offset = host.journal.last_id().map(|i| i + 1);
                tokio::time::sleep(backoff).await;
                continue;
            }
        };
        // Handed over as soon as they are written (a killed process keeps them); the disk sync
        // runs meanwhile, and the next `getUpdates` acknowledges them only once it is done.
        for (id, update) in fresh {
            host.handle(id, update).await;
        }
        // The prompts' tasks go first, to their model requests; then the disk sync is asked for
        // (on two cores its wake-up would compete with them). Only the next poll waits for it.
        tokio::task::yield_now().await;
        host.journal.durable(durable).await;
    }
    tracing::info!("polling stopped");
}

async fn read_batch(resp: reqwest::Result<reqwest::Response>) -> Result<Vec<(i64, Value)>, String> {
    let resp = resp.map_err(|e| e.to_string())?;
    let status = resp.status();
    let mut v: Value = resp.json().await.map_err(|e| format!("{status}: {e}"))?;
    if v["ok"].as_bool() != Some(true) {
        return Err(format!(
            "{} {}",
            v["error_code"].as_i64().unwrap_or(i64::from(status.as_u16())),
            v["description"].as_str().unwrap_or("no description")
        ));
    }
    let updates = match v["result"].take() {
        Value::Array(a) => a,
        _ => Vec::new(),
    };
    Ok(updates
        .into_iter()
        .filter_map(|u| u["update_id"].as_i64().map(|id| (id, u)))
        .collect())
}
