//! Telegram's flood limits, imitated when a test turns them on
//! ([`BotApiServer::telegram_limits`](super::BotApiServer::telegram_limits)); off by default, so other tests are unchanged.
//!
//! As documented (Bots FAQ, "My bot is hitting limits, how do I avoid this?",
//! <https://core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this>): in one
//! chat about one message per second, short bursts allowed (here: a bucket of
//! [`CHAT_BURST`] refilled one a second); at most [`GROUP_PER_MINUTE`] messages a minute to a
//! group; about [`GLOBAL_PER_SECOND`] a second in all. Counted are the calls that put or change
//! a message on screen ([`COUNTED`]: sends, drafts, text edits), once served. A call over a limit
//! gets 429 with `parameters.retry_after`, the whole seconds until it would have been allowed.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

use super::{ApiError, BotApiServer};

/// Messages a chat may get at once before its one-a-second pace applies.
pub(crate) const CHAT_BURST: u32 = 3;
/// Messages a group may get in any 60 seconds.
pub(crate) const GROUP_PER_MINUTE: usize = 20;
/// Messages the bot may send in any one second, all chats together.
pub(crate) const GLOBAL_PER_SECOND: usize = 30;

/// The methods counted against the limits (lowercased).
const COUNTED: &[&str] = &[
    "sendmessage",
    "sendmessagedraft",
    "editmessagetext",
    "sendphoto",
    "senddocument",
    "sendmediagroup",
    "copymessage",
    "forwardmessage",
];

/// What was sent, for the limits.
#[derive(Debug, Default)]
pub(crate) struct Limits {
    /// Per chat: when its bucket was last full-equivalent (GCRA: the theoretical arrival time of
    /// the next message).
    chat_tat: HashMap<i64, Instant>,
    /// Per group: when its messages of the last minute went.
    group_sent: HashMap<i64, VecDeque<Instant>>,
    /// When the messages of the last second went, all chats.
    all_sent: VecDeque<Instant>,
}

impl Limits {
    /// Admits a call (and counts it) or answers 429 with the seconds to wait.
    pub(crate) fn admit(&mut self, method: &str, chat_id: Option<i64>, now: Instant) -> Result<(), ApiError> {
        if !COUNTED.contains(&method) {
            return Ok(());
        }
        let minute = Duration::from_secs(60);
        let second = Duration::from_secs(1);
        prune(&mut self.all_sent, now, second);
        let mut wait = Duration::ZERO;
        if self.all_sent.len() >= GLOBAL_PER_SECOND
            && let Some(first) = self.all_sent.front()
        {
            wait = wait.max(*first + second - now);
        }
        let interval = second;
        let tolerance = interval * (CHAT_BURST - 1);
        if let Some(chat) = chat_id {
            let tat = self.chat_tat.get(&chat).copied().unwrap_or(now).max(now);
            if tat > now + tolerance {
                wait = wait.max(tat - tolerance - now);
            }
            if chat < 0 {
                let sent = self.group_sent.entry(chat).or_default();
                prune(sent, now, minute);
                if sent.len() >= GROUP_PER_MINUTE
                    && let Some(first) = sent.front()
                {
                    wait = wait.max(*first + minute - now);
                }
            }
        }
        if !wait.is_zero() {
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            return Err(ApiError::too_many_requests(seconds));
        }
        self.all_sent.push_back(now);
        if let Some(chat) = chat_id {
            let tat = self.chat_tat.get(&chat).copied().unwrap_or(now).max(now);
            self.chat_tat.insert(chat, tat + interval);
            if chat < 0 {
                self.group_sent.entry(chat).or_default().push_back(now);
            }
        }
        Ok(())
    }
}

/// Drops the times older than `window`.
fn prune(times: &mut VecDeque<Instant>, now: Instant, window: Duration) {
    while times.front().is_some_and(|t| *t + window <= now) {
        times.pop_front();
    }
}

impl BotApiServer {
    /// Turns Telegram's flood limits on (`true`) or off (the default), as the module docs say.
    /// A 429 they answer sets a deadline like any other (a call before it is an
    /// [`EarlyRetry`](super::EarlyRetry)); the 429s are in [`calls`](Self::calls) like every
    /// answer (`error().error_code == 429`).
    pub fn telegram_limits(&self, on: bool) {
        self.shared.lock().faults.limits = on.then(Limits::default);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_chat_gets_a_burst_then_one_a_second() {
        let mut limits = Limits::default();
        let t0 = Instant::now();
        for _ in 0..CHAT_BURST {
            assert!(limits.admit("sendmessage", Some(5), t0).is_ok());
        }
        let refused = limits.admit("sendmessagedraft", Some(5), t0).unwrap_err();
        assert_eq!((refused.error_code, refused.retry_after), (429, Some(1)));
        // Other chats and uncounted methods go on.
        assert!(limits.admit("sendmessage", Some(6), t0).is_ok());
        assert!(limits.admit("sendchataction", Some(5), t0).is_ok());
        assert!(limits.admit("sendmessage", Some(5), t0 + ms(1_000)).is_ok());
        assert!(limits.admit("sendmessage", Some(5), t0 + ms(1_500)).is_err());
        assert!(limits.admit("sendmessage", Some(5), t0 + ms(2_000)).is_ok());
    }

    #[test]
    fn a_group_gets_twenty_a_minute_and_all_chats_thirty_a_second() {
        let mut limits = Limits::default();
        let t0 = Instant::now();
        for i in 0..GROUP_PER_MINUTE as u64 {
            assert!(limits.admit("sendmessage", Some(-7), t0 + ms(1_000 * i)).is_ok());
        }
        let refused = limits.admit("editmessagetext", Some(-7), t0 + ms(30_000)).unwrap_err();
        assert_eq!(refused.retry_after, Some(30));
        assert!(limits.admit("sendmessage", Some(-7), t0 + ms(60_000)).is_ok());

        let mut limits = Limits::default();
        for chat in 0..GLOBAL_PER_SECOND as i64 {
            assert!(limits.admit("sendmessage", Some(100 + chat), t0).is_ok());
        }
        assert_eq!(
            limits
                .admit("sendmessage", Some(1), t0 + ms(400))
                .unwrap_err()
                .retry_after,
            Some(1)
        );
        assert!(limits.admit("sendmessage", Some(1), t0 + ms(1_000)).is_ok());
    }
}
