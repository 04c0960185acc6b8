//! Each update from its arrival to its answer: the journal reports when updates arrive, when
//! chunks of an answer go to the chat and when the answer was finished; this module keeps each
//! update's arrival in between (only while metrics or traces are on) and observes
//! `volcanic_answer_first_text_seconds` and `volcanic_answer_seconds`, and holds the update's
//! `update` span (and its `delivery` span) open until then ([`super::traces`]).
//!
//! Updates recovered after a restart have no arrival here and are not timed. An update whose
//! answer never finishes is forgotten after [`FORGET_AFTER`] (checked when the map grows past
//! [`PRUNE_AT`]), so the map stays small whatever happens.

use super::{metrics, traces};
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

/// An update still waiting for its answer after this long is no longer timed.
const FORGET_AFTER: Duration = Duration::from_secs(6 * 3600);
/// Entries kept before old ones are looked for.
const PRUNE_AT: usize = 4096;

/// When an update arrived, when the first text of its answer reached the chat, its spans.
#[derive(Debug)]
struct Arrival {
    at: Instant,
    first_text: Option<Duration>,
    span: Option<tracing::Span>,
    delivery: Option<tracing::Span>,
}

static ARRIVALS: LazyLock<Mutex<HashMap<i64, Arrival>>> = LazyLock::new(Mutex::default);

fn arrivals() -> std::sync::MutexGuard<'static, HashMap<i64, Arrival>> {
    ARRIVALS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Updates newly taken from Telegram (`update_id`, JSON): counted by kind, their arrival kept.
pub fn arrived(batch: &[(i64, serde_json::Value)]) {
    if !super::observing() {
        return;
    }
    let now = Instant::now();
    let mut map = arrivals();
    if map.len() >= PRUNE_AT {
        map.retain(|_, a| now.duration_since(a.at) < FORGET_AFTER);
    }
    for (id, update) in batch {
        let kind = metrics::update_kind(update);
        metrics::update(kind);
        if map.len() < 4 * PRUNE_AT {
            let span = traces::enabled().then(|| traces::update(kind));
            let arrival = Arrival {
                at: now,
                first_text: None,
                span,
                delivery: None,
            };
            map.insert(*id, arrival);
        }
    }
}

/// The update whose prompt agent session `session` (its id) takes next: its run is traced
/// under that update ([`update_span_for`]).
pub fn bind(session: String, update_id: i64) {
    if traces::enabled() {
        sessions().insert(session, update_id);
    }
}

/// The `update` span of the update last [`bind`]ed to `session` (taken: one run per binding),
/// if it is still open.
pub fn update_span_for(session: &str) -> Option<tracing::Span> {
    let id = sessions().remove(session)?;
    arrivals().get(&id).and_then(|a| a.span.clone())
}

/// Sessions bound to the update of their next run; at most one entry per loaded session.
static SESSIONS: LazyLock<Mutex<HashMap<String, i64>>> = LazyLock::new(Mutex::default);

fn sessions() -> std::sync::MutexGuard<'static, HashMap<String, i64>> {
    SESSIONS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Chunk `n` (0-based) of the answer to `ids` is about to leave (`sent` false) or reached the
/// chat (`sent`): the first leaving opens the `delivery` span, the first arriving times the first
/// text.
pub fn chunk(ids: &[i64], n: u32, sent: bool) {
    if n != 0 || ids.is_empty() || !super::observing() {
        return;
    }
    let mut map = arrivals();
    for id in ids {
        let Some(a) = map.get_mut(id) else { continue };
        if sent && a.first_text.is_none() {
            a.first_text = Some(a.at.elapsed());
        }
        if !sent && a.delivery.is_none() {
            a.delivery = a.span.as_ref().map(traces::delivery);
        }
    }
}

/// The answer to `ids` (one prompt's updates) is finished: times it from the earliest arrival, as
/// one answered message when some of it reached the chat (an error or `/stop` with nothing sent
/// is not an answer), and closes its spans.
pub fn finished(ids: &[i64]) {
    if ids.is_empty() || !super::observing() {
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
    for a in &taken {
        if let Some(span) = &a.span {
            span.record("outcome", if first_text.is_some() { "answered" } else { "no_answer" });
        }
    }
}
