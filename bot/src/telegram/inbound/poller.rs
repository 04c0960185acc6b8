//! Long polling with "persist before acknowledge": each batch from `getUpdates` is written to
//! the journal and synced before the next request moves `offset` past it (teloxide's stock
//! `Polling` acknowledges before handlers finish, so this is our own listener). Repeats of an
//! `update_id` are ignored. Each update of a batch is decoded on its own: one that cannot be read
//! is set aside ([`unreadable`]) and the rest handled, so no update stops polling. No log line
//! carries the request URL (it holds the token): errors go through [`describe`].
//!
//! Telegram answers `409 Conflict: terminated by other getUpdates request` when another process
//! polls the same token, and each update then reaches only one of the two: the log says so
//! plainly, once, with what to do ([`CONFLICT`]); polling goes on with backoff.

pub use crate::doctor::describe;

use crate::telegram::TelegramHost;
use crate::telegram::inbound::unreadable::{self, BatchError, Decoded};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Long-poll timeout sent to Telegram (seconds).
pub const POLL_TIMEOUT_SECS: u64 = 30;

/// Logged (at error level, once per process) when another process polls the same token.
pub const CONFLICT: &str = "another process is polling this bot token: Telegram answers 409 Conflict \
     and gives each update to only one of them. Stop the other one (another volcanic-bot on this \
     or another machine, or any program using the token), or give this bot its own token from \
     @BotFather (/newbot). Polling continues meanwhile";

/// Polls until `shutdown` fires.
pub async fn run(host: Arc<TelegramHost>, client: reqwest::Client, base: String, shutdown: CancellationToken) {
    let mut poller = Poller {
        offset: host.journal.last_id().map(|i| i + 1),
        host,
        client,
        base,
        shutdown,
        backoff: Duration::from_millis(500),
        conflict_told: false,
    };
    loop {
        let decoded = match poller.fetch().await {
            Fetched::Batch(decoded) => decoded,
            Fetched::Again => continue,
            Fetched::Stop => break,
        };
        if !poller.take(decoded).await {
            break;
        }
    }
    tracing::info!("polling stopped");
}

/// The polling loop's state.
struct Poller {
    host: Arc<TelegramHost>,
    client: reqwest::Client,
    /// `<api_url>/bot<token>`.
    base: String,
    shutdown: CancellationToken,
    /// The next `getUpdates` offset: acknowledges everything before it.
    offset: Option<i64>,
    backoff: Duration,
    /// The 409 of another poller was logged (once per process).
    conflict_told: bool,
}

/// What one `getUpdates` brought.
enum Fetched {
    /// A batch, each update decoded on its own.
    Batch(Vec<Decoded>),
    /// Nothing to take: ask again (after any pause already taken).
    Again,
    /// Shutdown came first.
    Stop,
}

impl Poller {
    /// One `getUpdates` (acknowledging everything before the offset), its failures handled:
    /// a leftover webhook deleted, another poller's 409 told once, backoff between failures.
    async fn fetch(&mut self) -> Fetched {
        let body = json!({
            "offset": self.offset,
            "timeout": POLL_TIMEOUT_SECS,
            "allowed_updates": super::ALLOWED_UPDATES,
        });
        let req = self
            .client
            .post(format!("{}/getUpdates", self.base))
            .json(&body)
            .timeout(Duration::from_secs(POLL_TIMEOUT_SECS + 15))
            .send();
        let resp = tokio::select! {
            () = self.shutdown.cancelled() => return Fetched::Stop,
            r = req => r,
        };
        match read_batch(resp).await {
            Ok(b) => {
                self.backoff = Duration::from_millis(500);
                Fetched::Batch(b)
            }
            Err(BatchError::Api { code: 409, description }) if description.contains("webhook") => {
                // Left over from webhook mode: polling needs it gone (updates stay queued).
                tracing::warn!("a webhook is set (409 {description}); deleting it to poll");
                let r = self
                    .client
                    .post(format!("{}/deleteWebhook", self.base))
                    .json(&json!({"drop_pending_updates": false}))
                    .send()
                    .await;
                if let Err(e) = r {
                    tracing::warn!("deleteWebhook failed: {}", describe(e));
                    tokio::time::sleep(self.backoff).await;
                    self.backoff = (self.backoff * 2).min(Duration::from_secs(30));
                }
                Fetched::Again
            }
            Err(BatchError::Api { code: 409, description }) => {
                if self.conflict_told {
                    tracing::debug!("getUpdates: 409 {description}");
                } else {
                    self.conflict_told = true;
                    tracing::error!("{CONFLICT} (Telegram said: {description})");
                }
                self.pause_or_stop().await
            }
            Err(e) => {
                tracing::warn!("getUpdates failed: {e}; retrying in {} ms", self.backoff.as_millis());
                self.pause_or_stop().await
            }
        }
    }

    /// [`pause`], as what to do next.
    async fn pause_or_stop(&mut self) -> Fetched {
        if pause(&self.shutdown, &mut self.backoff).await {
            Fetched::Again
        } else {
            Fetched::Stop
        }
    }

    /// Takes a batch: unreadable updates set aside (on disk before anything is acknowledged),
    /// the rest journaled and handed over, the offset moved past what is durable. `false` when
    /// shutdown came during a pause.
    async fn take(&mut self, decoded: Vec<Decoded>) -> bool {
        let host = self.host.clone();
        let received = decoded.len();
        let mut batch = Vec::with_capacity(received);
        let mut bad = Vec::new();
        for d in decoded {
            match d {
                Decoded::Update(id, update) => batch.push((id, update)),
                Decoded::Unreadable(u) => bad.push(u),
            }
        }
        // Their bytes are on disk before anything is acknowledged; placeholders take their ids.
        let (aside, not_kept) = unreadable::keep_all(&host.config.state_dir, bad);
        batch.extend(aside.iter().filter_map(|a| a.update.id).map(unreadable::placeholder));
        batch.sort_by_key(|(id, _)| *id);
        let before = self.offset;
        if let Some(max) = batch.iter().map(|(id, _)| *id).max() {
            self.offset = Some(self.offset.map_or(max + 1, |o| o.max(max + 1)));
        }
        if let Some(id) = not_kept {
            // Fetched again (with what follows it, which the journal then ignores as repeats).
            self.offset = Some(self.offset.map_or(id, |o| o.min(id)));
        }
        let (fresh, durable) = match host.journal.accept(batch) {
            Ok(f) => f,
            Err(e) => {
                // Not persisted, so not acknowledged: Telegram will send these again.
                tracing::error!("cannot write the inbound journal: {e}");
                self.offset = host.journal.last_id().map(|i| i + 1);
                tokio::time::sleep(self.backoff).await;
                return true;
            }
        };
        let fresh_ids: HashSet<i64> = fresh.iter().map(|(id, _)| *id).collect();
        // Handed over as soon as they are written (a killed process keeps them); the disk sync
        // runs meanwhile, and the next `getUpdates` acknowledges them only once it is done.
        for (id, update) in fresh {
            host.handle(id, update).await;
        }
        for a in &aside {
            if a.new || a.update.id.is_some_and(|id| fresh_ids.contains(&id)) {
                unreadable::report(&host, a);
            }
        }
        // The prompts' tasks go first, to their model requests; then the disk sync is asked for
        // (on two cores its wake-up would compete with them). Only the next poll waits for it.
        tokio::task::yield_now().await;
        host.journal.durable(durable).await;
        // Updates that could not move the offset (no readable id, or not kept) come back at
        // once: not in a tight loop.
        let stuck = (received > 0 && self.offset == before) || not_kept.is_some();
        !stuck || pause(&self.shutdown, &mut self.backoff).await
    }
}

/// Sleeps `backoff` (then doubles it, up to 30 s); `false` when shutdown came first.
async fn pause(shutdown: &CancellationToken, backoff: &mut Duration) -> bool {
    tokio::select! {
        () = shutdown.cancelled() => return false,
        () = tokio::time::sleep(*backoff) => {}
    }
    *backoff = (*backoff * 2).min(Duration::from_secs(30));
    true
}

async fn read_batch(resp: reqwest::Result<reqwest::Response>) -> Result<Vec<Decoded>, BatchError> {
    let resp = resp.map_err(|e| BatchError::Transport(describe(e)))?;
    let status = resp.status().as_u16();
    if !resp.status().is_success() {
        crate::ops::metrics::telegram_status("getUpdates", status);
    }
    let body = resp
        .bytes()
        .await
        .map_err(|e| BatchError::Transport(format!("reading the answer (HTTP {status}): {}", describe(e))))?;
    unreadable::decode_batch(status, &body)
}
