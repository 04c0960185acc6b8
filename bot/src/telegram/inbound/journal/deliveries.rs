//! Line deliveries: the answers of prompts features hand into a chat's line (a scheduled job's
//! slot, an A2A result; `crate::features::port::LinePrompt`). Such a prompt is no update, but
//! its answer is sent in chunks like a message's, and a crash with a chunk on the wire must not
//! make its re-run show it again. So the journal records them the same way, keyed by the
//! [`prompt_digest`](super::prompt_digest) of the prompt's key (for a job, `[Scheduled job <id> ·
//! … · slot <time>`):
//!
//! ```text
//! {"t":"slot","k":"<key digest>","n":0,"s":"sending"|"sent"|"refused","at":1764580000}
//! {"t":"slot","k":"<key digest>","s":"done","at":1764580000}
//! ```
//!
//! A delivery's records are kept across restarts for [`KEPT_FOR_SECS`] after the last one, `done`
//! included: the scheduler may run a slot again after its answer was delivered (a crash before
//! the job's file recorded the run), and then nothing must be sent again.

use super::{ChunkState, Chunks};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How long a line delivery is remembered (s): 7 days.
pub const KEPT_FOR_SECS: i64 = 7 * 24 * 3600;

/// What a delivery record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryState {
    /// Chunk `n` is about to leave.
    Sending,
    /// Telegram took chunk `n`.
    Sent,
    /// Telegram refused chunk `n`.
    Refused,
    /// The answer was delivered (or it has none).
    Done,
}

impl DeliveryState {
    /// The record of a chunk attempt.
    pub fn of(s: ChunkState) -> DeliveryState {
        match s {
            ChunkState::Sending => DeliveryState::Sending,
            ChunkState::Sent => DeliveryState::Sent,
            ChunkState::Refused => DeliveryState::Refused,
        }
    }
}

/// A line delivery found at start-up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineDelivery {
    /// How far its chunks got.
    pub chunks: Chunks,
    /// Unix time (s) of its last record.
    pub at: i64,
    /// Delivered whole (or it had nothing to deliver).
    pub done: bool,
}

/// The line deliveries read from the journal, by key digest.
#[derive(Debug, Default)]
pub struct LineDeliveries(pub BTreeMap<String, LineDelivery>);

impl LineDeliveries {
    /// Follows one record.
    pub fn note(&mut self, key: &str, n: Option<u32>, s: DeliveryState, at: i64) {
        let d = self.0.entry(key.to_owned()).or_insert(LineDelivery {
            at,
            ..LineDelivery::default()
        });
        d.at = d.at.max(at);
        match (s, n) {
            (DeliveryState::Done, _) => d.done = true,
            (DeliveryState::Sending, Some(n)) => d.chunks.note(n, ChunkState::Sending),
            (DeliveryState::Sent, Some(n)) => d.chunks.note(n, ChunkState::Sent),
            (DeliveryState::Refused, Some(n)) => d.chunks.note(n, ChunkState::Refused),
            // A chunk's record without its number: nothing to note.
            (DeliveryState::Sending | DeliveryState::Sent | DeliveryState::Refused, None) => {}
        }
    }

    /// Drops the stale (older than [`KEPT_FOR_SECS`] at `now`, unix s).
    pub fn kept(self, now: i64) -> BTreeMap<String, LineDelivery> {
        self.0.into_iter().filter(|(_, d)| now - d.at < KEPT_FOR_SECS).collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_is_kept_until_stale_done_or_not() {
        let mut s = LineDeliveries::default();
        s.note("a", Some(0), DeliveryState::Sent, 100);
        s.note("a", Some(1), DeliveryState::Sending, 101);
        s.note("b", Some(0), DeliveryState::Sent, 100);
        s.note("b", None, DeliveryState::Done, 102);
        s.note("c", Some(0), DeliveryState::Sending, 100 - KEPT_FOR_SECS);
        let left = s.kept(200);
        assert_eq!(left.keys().collect::<Vec<_>>(), vec!["a", "b"]);
        assert_eq!(left["a"].chunks.resume_at(), 2);
        assert_eq!(left["a"].at, 101);
        assert!(left["b"].done && !left["a"].done);
    }
}
