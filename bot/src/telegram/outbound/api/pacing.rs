//! Flood control without holding everyone: a global pace for messages, and a hold per chat.
//!
//! Telegram's limits (Bots FAQ, "My bot is hitting limits, how do I avoid this?",
//! <https://core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this>): inside
//! one chat, avoid more than one message per second (short bursts are allowed, then 429s come);
//! no more than 20 messages per minute to the same group; bulk messages to many users, no more
//! than about 30 per second. A 429 carries `retry_after` for the request that got it.
//!
//! - [`Pace`] keeps the bot under the global rate: every message takes a place of a GCRA
//!   (generic cell rate) limiter, [`RATE_PER_SECOND`] a second with bursts of [`BURST`], so no
//!   one-second window holds more than 30. Far under the rate a place is free at once: one atomic
//!   compare-and-swap and a clock read, no lock, no wait.
//! - [`Holds`] honours a 429 for the chat that got it only: other chats keep going. For live
//!   updates (drafts, previews) it also keeps each chat's own pace ([`Holds::try_live`]), so
//!   they never spend the burst a chat's answers need.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// Messages per second the bot sends at most, sustained (all chats together).
pub const RATE_PER_SECOND: u64 = 20;
/// Messages that may go at once before the pace applies: with [`RATE_PER_SECOND`], at most 30
/// in any one second, the FAQ's global figure.
pub const BURST: u64 = 10;

/// A GCRA limiter: `tat` is the theoretical arrival time of the next message (nanoseconds since
/// `start`); a message may go once `now >= tat - tolerance`, and moves `tat` one interval on.
#[derive(Debug)]
pub struct Pace {
    start: Instant,
    interval_ns: u64,
    tolerance_ns: u64,
    tat: AtomicU64,
}

impl Pace {
    /// `per_second` messages a second sustained, `burst` (at least 1) at once.
    pub fn new(per_second: u64, burst: u64) -> Pace {
        let interval_ns = 1_000_000_000 / per_second.max(1);
        Pace {
            start: Instant::now(),
            interval_ns,
            tolerance_ns: interval_ns * (burst.max(1) - 1),
            tat: AtomicU64::new(0),
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Takes the next place; returns how long to wait before sending (zero under the rate).
    /// A caller that gives up after reserving leaves its place unused, never someone else's.
    pub fn reserve(&self) -> Duration {
        let now = self.now_ns();
        let mut tat = self.tat.load(Ordering::Relaxed);
        loop {
            let next = tat.max(now) + self.interval_ns;
            match self
                .tat
                .compare_exchange_weak(tat, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return Duration::from_nanos(tat.saturating_sub(self.tolerance_ns).saturating_sub(now)),
                Err(seen) => tat = seen,
            }
        }
    }
}

impl Pace {
    /// Takes the next place only if it is free now (under the rate, or within the burst);
    /// returns whether it did. For requests that give way (drafts) rather than wait.
    pub fn try_reserve(&self) -> bool {
        let now = self.now_ns();
        let mut tat = self.tat.load(Ordering::Relaxed);
        loop {
            if tat.saturating_sub(self.tolerance_ns) > now {
                return false;
            }
            let next = tat.max(now) + self.interval_ns;
            match self
                .tat
                .compare_exchange_weak(tat, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(seen) => tat = seen,
            }
        }
    }
}

/// Live updates a chat may get at once: the "Thinking…" placeholder and the first text.
pub const LIVE_BURST: u32 = 2;
/// The gap between live updates to a private chat, sustained: the FAQ's one message a second.
pub const LIVE_GAP_PRIVATE: Duration = Duration::from_secs(1);
/// The same for a group: 15 a minute of the FAQ's 20, the rest left for answers and notices.
pub const LIVE_GAP_GROUP: Duration = Duration::from_secs(4);

/// Per-chat holds from 429 answers: no request to that chat before the hold ends. Expired holds
/// are dropped whenever a new one is noted, so the map holds only chats limited right now.
#[derive(Debug, Default)]
pub struct Holds {
    until: Mutex<HashMap<i64, Instant>>,
    /// Per chat, the theoretical arrival time of its next live update (GCRA, as [`Pace`]).
    live: Mutex<HashMap<i64, Instant>>,
}

impl Holds {
    /// When `chat`'s hold ends, if it has one still running at `now`.
    pub fn until(&self, chat: i64, now: Instant) -> Option<Instant> {
        let map = self.until.lock().unwrap_or_else(|e| e.into_inner());
        if map.is_empty() {
            return None;
        }
        map.get(&chat).copied().filter(|u| *u > now)
    }

    /// `chat` was told to wait `secs` (at least 1) from `now`; returns the end of its hold.
    pub fn note(&self, chat: i64, secs: u32, now: Instant) -> Instant {
        let until = now + Duration::from_secs(u64::from(secs.max(1)));
        let mut map = self.until.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, u| *u > now);
        let held = map.entry(chat).or_insert(until);
        *held = (*held).max(until);
        *held
    }

    /// Takes a place for a live update to `chat` at `now` if the chat's own pace has one free:
    /// [`LIVE_BURST`] at once, then one each [`LIVE_GAP_PRIVATE`] ([`LIVE_GAP_GROUP`] in a
    /// group: a negative id). Below Telegram's per-chat limits with room to spare, so a final
    /// answer right after a draft still has its place. Returns whether it took one.
    pub fn try_live(&self, chat: i64, now: Instant) -> bool {
        let gap = if chat < 0 { LIVE_GAP_GROUP } else { LIVE_GAP_PRIVATE };
        let mut map = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let tat = map.get(&chat).copied().unwrap_or(now).max(now);
        if tat > now + gap * (LIVE_BURST - 1) {
            return false;
        }
        // Chats whose pace is back to idle need no entry; dropped now and then, not each call.
        if map.len() >= 256 {
            map.retain(|_, t| *t > now);
        }
        map.insert(chat, tat + gap);
        true
    }

    /// How many chats are held now.
    #[cfg(test)]
    pub fn len(&self, now: Instant) -> usize {
        let map = self.until.lock().unwrap_or_else(|e| e.into_inner());
        map.values().filter(|u| **u > now).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn live_updates_keep_each_chats_own_pace() {
        let holds = Holds::default();
        let t0 = Instant::now();
        for _ in 0..LIVE_BURST {
            assert!(holds.try_live(5, t0), "the placeholder and the first text go at once");
        }
        assert!(!holds.try_live(5, t0), "then the chat's pace applies");
        assert!(holds.try_live(6, t0), "another chat has its own");
        assert!(!holds.try_live(5, t0 + LIVE_GAP_PRIVATE / 2));
        assert!(holds.try_live(5, t0 + LIVE_GAP_PRIVATE));
        for _ in 0..LIVE_BURST {
            assert!(holds.try_live(-7, t0));
        }
        assert!(!holds.try_live(-7, t0 + LIVE_GAP_PRIVATE), "a group's pace is slower");
        assert!(holds.try_live(-7, t0 + LIVE_GAP_GROUP));
    }

    #[tokio::test(start_paused = true)]
    async fn under_the_rate_nothing_waits() {
        let pace = Pace::new(RATE_PER_SECOND, BURST);
        // A burst of BURST goes at once; so does one message a second after it.
        for _ in 0..BURST {
            assert_eq!(pace.reserve(), Duration::ZERO);
        }
        tokio::time::advance(Duration::from_secs(1)).await;
        for _ in 0..BURST {
            assert_eq!(pace.reserve(), Duration::ZERO, "the bucket refilled");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn over_the_rate_messages_are_spaced_and_no_second_holds_more_than_thirty() {
        let pace = Pace::new(RATE_PER_SECOND, BURST);
        let interval = Duration::from_millis(1000 / RATE_PER_SECOND);
        let waits: Vec<Duration> = (0..100).map(|_| pace.reserve()).collect();
        assert_eq!(waits[..BURST as usize], [Duration::ZERO; BURST as usize]);
        assert_eq!(waits[BURST as usize], interval);
        assert_eq!(waits[BURST as usize + 1], interval * 2);
        // Send times: the most in any one-second window is the FAQ's 30.
        let mut most = 0;
        for (i, start) in waits.iter().enumerate() {
            let within = waits[i..]
                .iter()
                .take_while(|w| **w < *start + Duration::from_secs(1))
                .count();
            most = most.max(within);
        }
        assert!(most as u64 <= BURST + RATE_PER_SECOND, "{most} in one second");
        assert!(
            most as u64 >= RATE_PER_SECOND,
            "the pace is not slower than its rate: {most}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_that_gives_way_takes_only_a_free_place() {
        let pace = Pace::new(RATE_PER_SECOND, BURST);
        for _ in 0..BURST {
            assert!(pace.try_reserve(), "within the burst a place is free");
        }
        assert!(!pace.try_reserve(), "the burst is spent: the draft gives way");
        // A message still gets the next place, not one taken by a skipped draft.
        assert_eq!(pace.reserve(), Duration::from_millis(1000 / RATE_PER_SECOND));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(pace.try_reserve(), "the bucket refilled");
    }

    #[tokio::test(start_paused = true)]
    async fn a_hold_is_for_its_chat_only_and_expires() {
        let holds = Holds::default();
        let t0 = Instant::now();
        assert_eq!(holds.until(1, t0), None);
        let end = holds.note(1, 5, t0);
        assert_eq!(end, t0 + Duration::from_secs(5));
        assert_eq!(holds.until(1, t0), Some(end));
        assert_eq!(holds.until(2, t0), None, "another chat is not held");
        // A shorter retry_after never shortens a running hold; 0 counts as 1 s.
        assert_eq!(holds.note(1, 0, t0), end);
        assert_eq!(holds.note(2, 0, t0), t0 + Duration::from_secs(1));
        let later = t0 + Duration::from_secs(6);
        assert_eq!(holds.until(1, later), None);
        holds.note(3, 1, later);
        assert_eq!(holds.len(later), 1, "expired holds are dropped");
        assert_eq!(holds.until.lock().unwrap_or_else(|e| e.into_inner()).len(), 1);
    }
}
