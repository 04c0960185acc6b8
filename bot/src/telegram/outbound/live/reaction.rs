//! Reactions on the messages the bot works on (`[telegram] reactions`, docs/telegram.md, "Live
//! answers"): an accepted message is marked [`ACCEPTED`], then [`ANSWERED`] once its answer was
//! delivered or [`FAILED`] when it could not be. As state: which message each accepted update
//! is, and the reaction it should show; [`api`](crate::telegram::outbound::api) does the sending.
//!
//! Best effort: one call per change (a refusal drops the message's reactions, a 429 or a busy
//! pace skips that change), one sender per message at a time so the reactions land in order,
//! and nothing waits for them. Kept in memory: after a restart, a prompt recovered from the
//! journal is noted again ([`Reactions::recovered`], from its journaled update), so its answer
//! still gets its outcome.

use std::collections::HashMap;
use std::sync::Mutex;

/// Marks a message the bot accepted and is working on (Bot API `ReactionTypeEmoji` list).
pub const ACCEPTED: &str = "👀";
/// Replaces [`ACCEPTED`] once the answer was delivered.
pub const ANSWERED: &str = "👍";
/// Replaces [`ACCEPTED`] when the answer failed (a model error, an undeliverable chunk).
pub const FAILED: &str = "😢";

/// How many marked messages are remembered: a prompt never answered (its run cut off) leaves
/// its entry, and the oldest idle ones go past this.
const KEPT: usize = 1024;

/// How the work on a message ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The answer was delivered (or the run ended with nothing to say).
    Answered,
    /// The model failed, or a chunk of the answer could not be delivered.
    Failed,
}

impl Outcome {
    /// The reaction that shows it.
    pub fn emoji(self) -> &'static str {
        match self {
            Outcome::Answered => ANSWERED,
            Outcome::Failed => FAILED,
        }
    }
}

/// A message marked (or to be marked) with a reaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marked {
    /// Its chat.
    pub chat: i64,
    /// Its message id.
    pub message_id: i32,
    /// The reaction it should show.
    want: &'static str,
    /// A sender is at work on it (a second one would race it).
    sending: bool,
    /// `want` is the last reaction (the outcome): forgotten once it was sent.
    last: bool,
    /// When it was accepted, for [`KEPT`].
    seq: u64,
}

/// The messages with reactions in flight, by `update_id`.
#[derive(Debug, Default)]
pub struct Reactions {
    state: Mutex<(HashMap<i64, Marked>, u64)>,
}

impl Reactions {
    fn lock(&self) -> std::sync::MutexGuard<'_, (HashMap<i64, Marked>, u64)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes that update `update_id` (message `message_id` in `chat`) was accepted. Returns
    /// the message to mark [`ACCEPTED`] now (the caller is its sender), `None` when it is known
    /// already (an update handled again).
    pub fn accept(&self, update_id: i64, chat: i64, message_id: i32) -> Option<Marked> {
        let mut guard = self.lock();
        let (marks, seq) = &mut *guard;
        if marks.contains_key(&update_id) {
            return None;
        }
        if marks.len() >= KEPT {
            let oldest = marks.iter().filter(|(_, m)| !m.sending).min_by_key(|(_, m)| m.seq);
            if let Some(id) = oldest.map(|(id, _)| *id) {
                marks.remove(&id);
            }
        }
        *seq += 1;
        let m = Marked {
            chat,
            message_id,
            want: ACCEPTED,
            sending: true,
            last: false,
            seq: *seq,
        };
        marks.insert(update_id, m);
        Some(m)
    }

    /// Notes that update `update_id` (message `message_id` in `chat`) was accepted before a
    /// restart (its journal says so) and shows [`ACCEPTED`] already: nothing to send now, its
    /// outcome is ([`finish`](Self::finish)).
    pub fn recovered(&self, update_id: i64, chat: i64, message_id: i32) {
        if self.accept(update_id, chat, message_id).is_some()
            && let Some(marked) = self.lock().0.get_mut(&update_id)
        {
            marked.sending = false;
        }
    }

    /// Notes how the work on `update_id` ended. Returns the message and reaction to send when
    /// the caller is to be its sender; `None` when a sender is at work (it sends this next) or
    /// the update was never marked (reactions off, refused, or from before a restart).
    pub fn finish(&self, update_id: i64, outcome: Outcome) -> Option<(Marked, &'static str)> {
        let mut guard = self.lock();
        let m = guard.0.get_mut(&update_id)?;
        m.want = outcome.emoji();
        m.last = true;
        if m.sending {
            return None;
        }
        m.sending = true;
        Some((*m, m.want))
    }

    /// After a sender set `sent` on `update_id`: the reaction to send next if it changed
    /// meanwhile; otherwise the sender is done (and a last reaction is forgotten).
    pub fn next(&self, update_id: i64, sent: &'static str) -> Option<&'static str> {
        let mut guard = self.lock();
        let m = guard.0.get_mut(&update_id)?;
        if m.want != sent {
            return Some(m.want);
        }
        m.sending = false;
        if m.last {
            guard.0.remove(&update_id);
        }
        None
    }

    /// Forgets `update_id`: Telegram refused a reaction on its message (too old, reactions off
    /// in the chat), so the next change is not tried either.
    pub fn drop_refused(&self, update_id: i64) {
        self.lock().0.remove(&update_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sender_per_message_and_the_outcome_follows_the_mark() {
        let r = Reactions::default();
        assert!(r.accept(1, 42, 7).is_some());
        assert!(r.accept(1, 42, 7).is_none(), "handled again: not marked twice");
        // The outcome arrives while the accepted mark is on its way: the sender sends it next.
        assert_eq!(r.finish(1, Outcome::Answered), None);
        assert_eq!(r.next(1, ACCEPTED), Some(ANSWERED));
        assert_eq!(r.next(1, ANSWERED), None);
        assert_eq!(
            r.finish(1, Outcome::Failed),
            None,
            "forgotten once its outcome was sent"
        );

        assert!(r.accept(2, 42, 8).is_some());
        assert_eq!(r.next(2, ACCEPTED), None);
        let (m, emoji) = r
            .finish(2, Outcome::Failed)
            .unwrap_or_else(|| panic!("idle: the caller sends"));
        assert_eq!((m.chat, m.message_id, emoji), (42, 8, FAILED));

        assert!(r.accept(3, 42, 9).is_some());
        r.drop_refused(3);
        assert_eq!(
            r.finish(3, Outcome::Answered),
            None,
            "a refused message is not tried again"
        );
    }

    #[test]
    fn a_recovered_mark_sends_nothing_until_its_outcome() {
        let r = Reactions::default();
        r.recovered(4, 42, 10);
        assert!(r.accept(4, 42, 10).is_none(), "known: not marked again");
        let (m, emoji) = r
            .finish(4, Outcome::Answered)
            .unwrap_or_else(|| panic!("idle: the caller sends the outcome"));
        assert_eq!((m.chat, m.message_id, emoji), (42, 10, ANSWERED));
    }

    #[test]
    fn the_oldest_idle_marks_go_first() {
        let r = Reactions::default();
        for id in 0..i64::try_from(KEPT).unwrap_or(0) {
            r.accept(id, 1, 1);
            r.next(id, ACCEPTED);
        }
        r.accept(-1, 1, 1);
        assert_eq!(r.finish(0, Outcome::Answered), None, "the oldest was forgotten");
        assert!(r.finish(1, Outcome::Answered).is_some());
    }
}
