//! How far the delivery of an answer got, chunk by chunk ([`Chunks`]), as the journal's `chunk`
//! records (and a line delivery's) tell it.

use serde::{Deserialize, Serialize};

/// What became of one attempt to hand a chunk of an answer to Telegram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkState {
    /// The attempt is about to leave.
    Sending,
    /// Telegram took it.
    Sent,
    /// Telegram answered with an error (flood control, a refusal): not shown.
    Refused,
}

/// How far the delivery of an answer got (chunks are sent in order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Chunks {
    /// The last chunk Telegram took.
    pub delivered: Option<u32>,
    /// A chunk whose attempt left with no answer recorded (the process died meanwhile): Telegram
    /// may or may not show it.
    pub in_flight: Option<u32>,
    /// How the chunks from some index on were cut, when not from the whole answer.
    pub rest: Option<Rest>,
}

/// The answer's chunks from `first` on were cut from its Markdown after byte `at`, rendered on
/// their own: the chunks before were sent early, while the answer was written, and cutting the
/// whole answer again would place the boundaries elsewhere (see
/// [`Final::Rest`](crate::telegram::outbound::live::draft::Final)). Recovery cuts the rest the
/// same way, so no text is sent twice or skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rest {
    /// The index of the rest's first chunk.
    pub first: u32,
    /// The byte offset in the answer's Markdown where the rest begins.
    pub at: usize,
}

impl Chunks {
    /// The chunks recorded so far were of text that turned out not to be the answer (written
    /// before a tool call, sent early): forgotten, the answer is delivered from its first chunk.
    pub(super) fn drop_early(&mut self) {
        *self = Chunks::default();
    }

    /// What is left to send of `answer` (Markdown) and the index of its first chunk: the rest
    /// after the chunks sent early ([`Rest`]), or the whole answer from chunk 0.
    pub fn layout<'a>(&self, answer: &'a str) -> (&'a str, usize) {
        match self.rest.and_then(|r| Some((answer.get(r.at..)?, r.first as usize))) {
            Some(rest) => rest,
            None => (answer, 0),
        }
    }

    pub(super) fn note(&mut self, n: u32, s: ChunkState) {
        match s {
            ChunkState::Sending => self.in_flight = Some(n),
            ChunkState::Sent => {
                self.delivered = self.delivered.max(Some(n));
                if self.in_flight.is_some_and(|f| f <= n) {
                    self.in_flight = None;
                }
            }
            ChunkState::Refused => {
                if self.in_flight == Some(n) {
                    self.in_flight = None;
                }
            }
        }
    }

    /// The first chunk to send when delivering the answer again: after the last one Telegram
    /// took, and after one whose request was on the wire when the process died (its `sending`
    /// mark was on disk before the request left, and Telegram applies a request it received
    /// whether or not the bot reads the reply; the Bot API has no idempotency key to ask). A
    /// chunk Telegram answered with an error is sent again.
    pub fn resume_at(&self) -> usize {
        let next = |n: Option<u32>| n.map_or(0, |n| n as usize + 1);
        next(self.delivered).max(next(self.in_flight))
    }
}
