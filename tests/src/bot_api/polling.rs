//! `getUpdates`: confirming by `offset`, holding the request up to `timeout` seconds until an
//! update is pushed, `allowed_updates` (kept until changed; opt-in kinds such as
//! `stopped_message_generation` are dropped unless listed), and 409 for a poll overtaken by a
//! newer one (two bot instances).

use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;

use super::params::Params;
use super::state::{Shared, State};
use super::{ApiError, GetUpdatesCall};

/// What a poll waits for, once admitted.
#[derive(Debug, Clone, Copy)]
struct Poll {
    generation: u64,
    limit: usize,
    deadline: Instant,
}

/// Serves one `getUpdates` call and keeps its [`GetUpdatesCall`] record.
pub(crate) async fn get_updates(shared: &Shared, params: &Params, arrived: Instant) -> Result<Value, ApiError> {
    let mut changed = shared.changed.subscribe();
    let (index, admitted) = {
        let mut state = shared.lock();
        let index = state.polls.len();
        state.polls.push(GetUpdatesCall {
            at: arrived,
            offset: params.int("offset").ok().flatten(),
            limit: params.int("limit").ok().flatten(),
            timeout: params.int("timeout").ok().flatten(),
            answered_at: None,
            outcome: None,
        });
        (index, admit(&mut state, params, arrived))
    };
    // A newer poll makes held ones stale: wake them.
    shared.notify();
    let outcome = match admitted {
        Ok(poll) => hold(shared, poll, &mut changed).await,
        Err(error) => Err(error),
    };
    let mut state = shared.lock();
    if let Some(record) = state.polls.get_mut(index) {
        record.answered_at = Some(Instant::now());
        record.outcome = Some(outcome.as_ref().map_err(Clone::clone).map(|updates| {
            updates
                .iter()
                .filter_map(|update| update["update_id"].as_i64())
                .collect()
        }));
    }
    drop(state);
    outcome.map(Value::Array)
}

/// Checks the call, applies its faults and offset, and makes it the current poll.
fn admit(state: &mut State, params: &Params, arrived: Instant) -> Result<Poll, ApiError> {
    let offset = params.int("offset")?.unwrap_or(0);
    let limit = params.int("limit")?.unwrap_or(100).clamp(1, 100);
    let timeout = params.int("timeout")?.unwrap_or(0).max(0);
    if let Some(error) = state.faults.gate("getupdates", None, arrived) {
        return Err(error);
    }
    if !state.webhook_url.is_empty() {
        return Err(ApiError::new(
            409,
            "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to \
             delete the webhook first",
        ));
    }
    if offset > 0 {
        state
            .pending
            .retain(|update| update["update_id"].as_i64().unwrap_or(0) >= offset);
    } else if offset < 0 {
        let keep = usize::try_from(offset.unsigned_abs()).unwrap_or(usize::MAX);
        let drop = state.pending.len().saturating_sub(keep);
        state.pending.drain(..drop);
    }
    if let Some(Value::Array(kinds)) = params.json("allowed_updates")? {
        state.allowed_updates = Some(kinds.iter().filter_map(Value::as_str).map(str::to_owned).collect());
    }
    state.poll_generation += 1;
    Ok(Poll {
        generation: state.poll_generation,
        limit: usize::try_from(limit).unwrap_or(100),
        deadline: arrived + Duration::from_secs(timeout.unsigned_abs()),
    })
}

/// Update kinds Telegram sends only when `allowed_updates` lists them.
const OPT_IN: &[&str] = &[
    "chat_member",
    "message_reaction",
    "message_reaction_count",
    "stopped_message_generation",
];

/// Drops the pending updates the bot did not ask for, as Telegram never delivers them: an
/// opt-in kind ([`OPT_IN`]) not listed, or with a non-empty `allowed_updates` any kind not
/// listed. Raw updates ([`push_raw_update`](super::BotApiServer::push_raw_update)) always go.
fn drop_unasked(state: &mut State) {
    let allowed = state.allowed_updates.clone().unwrap_or_default();
    state.pending.retain(|update| {
        let Some(kind) = update
            .as_object()
            .and_then(|o| o.keys().find(|k| k.as_str() != "update_id"))
        else {
            return true;
        };
        // A raw update's kind is whatever its text says: sent as it is.
        if kind == super::raw::RAW_KEY {
            return true;
        }
        let listed = allowed.iter().any(|a| a == kind);
        listed || (allowed.is_empty() && !OPT_IN.contains(&kind.as_str()))
    });
}

/// Waits until an update is pending, the timeout passes, or a newer poll takes over.
async fn hold(shared: &Shared, poll: Poll, changed: &mut watch::Receiver<u64>) -> Result<Vec<Value>, ApiError> {
    loop {
        changed.borrow_and_update();
        {
            let mut state = shared.lock();
            drop_unasked(&mut state);
            if state.poll_generation != poll.generation {
                return Err(ApiError::new(
                    409,
                    "Conflict: terminated by other getUpdates request; make sure that only one \
                     bot instance is running",
                ));
            }
            if !state.pending.is_empty() {
                return Ok(state.pending.iter().take(poll.limit).cloned().collect());
            }
        }
        if Instant::now() >= poll.deadline {
            return Ok(Vec::new());
        }
        tokio::select! {
            result = changed.changed() => {
                if result.is_err() {
                    return Ok(Vec::new());
                }
            }
            () = tokio::time::sleep_until(poll.deadline) => {}
        }
    }
}
