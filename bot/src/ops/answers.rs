//! Answer timings from an update's arrival: the journal reports when updates arrive, when the
//! first chunk of an answer reached the chat and when the answer was finished; this module keeps
//! each update's arrival time in between (only while metrics are on) and observes
//! `volcanic_answer_first_text_seconds` and `volcanic_answer_seconds`.
//!
//! Updates recovered after a restart have no arrival time here and are not timed. An update whose
//! answer never finishes is forgotten after [`FORGET_AFTER`] (checked when the map grows past
//! [`PRUNE_AT`]), so the map stays small whatever happens.

use super::metrics;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

/// An update still waiting for its answer after this long is no longer timed.
const FORGET_AFTER: Duration = Duration::from_secs(6 * 3600);
/// Entries kept before old ones are looked for.
const PRUNE_AT: usize = 4096;

/// When an update arrived, and when the first text of its answer reached the chat.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    at: Instant,
    first_text: Option<Duration>,
}

static ARRIVALS: LazyLock<Mutex<HashMap<i64, Arrival>>> = LazyLock::new(Mutex::default);

fn arrivals() -> std::sync::MutexGuard<'static, HashMap<i64, Arrival>> {
    ARRIVALS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Updates newly taken from Telegram (`update_id`, JSON): counted by kind, their arrival kept.
pub fn arrived(batch: &[(i64, serde_json::Value)]) {
    if !metrics::enabled() {
        return;
    }
    let now = Instant::now();
    let mut map = arrivals();
    if map.len() >= PRUNE_AT {
        map.retain(|_, a| now.duration_since(a.at) < FORGET_AFTER);
    }
    for (id, update) in batch {
        metrics::update(update);
        if map.len() < 4 * PRUNE_AT {
            map.insert(
                *id,
                Arrival {
                    at: now,
                    first_text: None,
                },
            );
        }
    }
}

/// Chunk `n` (0-based) of the answer to `ids` reached the chat: the first one times the first text.
pub fn chunk_sent(ids: &[i64], n: u32) {
    if n != 0 || ids.is_empty() || !metrics::enabled() {
        return;
    }
    let mut map = arrivals();
    for id in ids {
        if let Some(a) = map.get_mut(id)
            && a.first_text.is_none()
        {
            a.first_text = Some(a.at.elapsed());
        }
    }
}

/// The answer to `ids` (one prompt's updates) is finished: times it from the earliest arrival, as
/// one answered message when some of it reached the chat (an error or `/stop` with nothing sent
/// is not an answer).
pub fn finished(ids: &[i64]) {
    if ids.is_empty() || !metrics::enabled() {
        return;
    }
    let taken: Vec<Arrival> = {
        let mut map = arrivals();
        ids.iter().filter_map(|id| map.remove(id)).collect()
    };
    let Some(first) = taken.iter().min_by_key(|a| a.at) else {
        return;
    };
    let first_text = taken.iter().filter_map(|a| a.first_text).min();
    metrics::answer_timing(first_text, first_text.map(|_| first.at.elapsed()));
}
