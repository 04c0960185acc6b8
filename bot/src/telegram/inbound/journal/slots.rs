//! Deliveries of scheduled runs' answers. A scheduled run is no update, but its answer is sent in
//! chunks like a message's, and a crash with a chunk on the wire must not make the slot's re-run
//! show it again. So the journal records them the same way, keyed by the slot (the
//! [`prompt_digest`](super::prompt_digest) of the run's slot key, `[Scheduled job <id> · … ·
//! slot <time>`):
//!
//! ```text
//! {"t":"slot","k":"<slot digest>","n":0,"s":"sending"|"sent"|"refused","at":1764580000}
//! {"t":"slot","k":"<slot digest>","s":"done","at":1764580000}
//! ```
//!
//! A slot's records are kept across restarts for [`KEPT_FOR_SECS`] after the last one, `done`
//! included: the scheduler may run a slot again after its answer was delivered (a crash before
//! the job's file recorded the run), and then nothing must be sent again.

use super::{ChunkState, Chunks};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How long a slot delivery is remembered (s): 7 days.
pub const KEPT_FOR_SECS: i64 = 7 * 24 * 3600;

/// What a slot record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlotState {
    /// Chunk `n` is about to leave.
    Sending,
    /// Telegram took chunk `n`.
    Sent,
    /// Telegram refused chunk `n`.
    Refused,
    /// The slot's answer was delivered (or it has none).
    Done,
}

impl SlotState {
    /// The record of a chunk attempt.
    pub fn of(s: ChunkState) -> SlotState {
        match s {
            ChunkState::Sending => SlotState::Sending,
            ChunkState::Sent => SlotState::Sent,
            ChunkState::Refused => SlotState::Refused,
        }
    }
}

/// A slot delivery found at start-up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlotDelivery {
    /// How far its chunks got.
    pub chunks: Chunks,
    /// Unix time (s) of its last record.
    pub at: i64,
    /// Delivered whole (or it had nothing to deliver).
    pub done: bool,
}

/// The slot deliveries read from the journal, by slot digest.
#[derive(Debug, Default)]
pub struct Slots(pub BTreeMap<String, SlotDelivery>);

impl Slots {
    /// Follows one record.
    pub fn note(&mut self, key: &str, n: Option<u32>, s: SlotState, at: i64) {
        let d = self.0.entry(key.to_owned()).or_insert(SlotDelivery {
            at,
            ..SlotDelivery::default()
        });
        d.at = d.at.max(at);
        match (s, n) {
            (SlotState::Done, _) => d.done = true,
            (SlotState::Sending, Some(n)) => d.chunks.note(n, ChunkState::Sending),
            (SlotState::Sent, Some(n)) => d.chunks.note(n, ChunkState::Sent),
            (SlotState::Refused, Some(n)) => d.chunks.note(n, ChunkState::Refused),
            _ => {}
        }
    }

    /// Drops the stale (older than [`KEPT_FOR_SECS`] at `now`, unix s).
    pub fn kept(self, now: i64) -> BTreeMap<String, SlotDelivery> {
        self.0.into_iter().filter(|(_, d)| now - d.at < KEPT_FOR_SECS).collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_kept_until_stale_done_or_not() {
        let mut s = Slots::default();
        s.note("a", Some(0), SlotState::Sent, 100);
        s.note("a", Some(1), SlotState::Sending, 101);
        s.note("b", Some(0), SlotState::Sent, 100);
        s.note("b", None, SlotState::Done, 102);
        s.note("c", Some(0), SlotState::Sending, 100 - KEPT_FOR_SECS);
        let left = s.kept(200);
        assert_eq!(left.keys().collect::<Vec<_>>(), vec!["a", "b"]);
        assert_eq!(left["a"].chunks.resume_at(), 2);
        assert_eq!(left["a"].at, 101);
        assert!(left["b"].done && !left["a"].done);
    }
}
