//! Injected failures (queued per method, or a rate-limit window) and the early-retry check:
//! every 429 the double answers sets a deadline, and a call for the same method (and chat)
//! arriving before it is recorded as an [`EarlyRetry`].

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

use super::limits::Limits;
use super::{ApiError, EarlyRetry};

/// A moment before which a client was told not to call again.
#[derive(Debug, Clone)]
struct Deadline {
    method: String,
    /// `None`: every chat (a rate-limit window, or a call without `chat_id`).
    chat_id: Option<i64>,
    until: Instant,
}

/// Fault injection and the early-retry record.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    /// Errors queued per lowercased method and chat (`None`: any chat), answered in order.
    queued: BTreeMap<(String, Option<i64>), VecDeque<ApiError>>,
    /// Rate-limit windows: method → end of the window.
    windows: BTreeMap<String, Instant>,
    deadlines: Vec<Deadline>,
    /// Calls that came before their deadline.
    pub(crate) early: Vec<EarlyRetry>,
    /// Telegram's flood limits, when a test turned them on.
    pub(crate) limits: Option<Limits>,
}

impl Faults {
    /// Queues an error for the next call to `method` (in `chat_id` only, when given).
    pub(crate) fn fail_next(&mut self, method: &str, chat_id: Option<i64>, error: ApiError) {
        self.queued
            .entry((method.to_ascii_lowercase(), chat_id))
            .or_default()
            .push_back(error);
    }

    /// Every call to `method` until `now + seconds` gets 429 with the seconds left.
    pub(crate) fn rate_limit(&mut self, method: &str, seconds: u64, now: Instant) {
        let method = method.to_ascii_lowercase();
        if seconds == 0 {
            self.windows.remove(&method);
        } else {
            self.windows.insert(method, now + Duration::from_secs(seconds));
        }
    }

    /// Runs before a call is served: records it if it is early, and answers the fault due,
    /// if any (the call is then not served).
    pub(crate) fn gate(&mut self, method: &str, chat_id: Option<i64>, now: Instant) -> Option<ApiError> {
        self.deadlines.retain(|deadline| deadline.until > now);
        let allowed_at = self
            .deadlines
            .iter()
            .filter(|deadline| deadline.method == method && (deadline.chat_id.is_none() || deadline.chat_id == chat_id))
            .map(|deadline| deadline.until)
            .max();
        if let Some(allowed_at) = allowed_at {
            self.early.push(EarlyRetry {
                method: method.to_owned(),
                chat_id,
                at: now,
                allowed_at,
            });
        }
        if let Some(end) = self.windows.get(method).copied() {
            if end > now {
                let left = end.duration_since(now);
                let seconds = left.as_secs() + u64::from(left.subsec_nanos() > 0);
                self.deadlines.push(Deadline {
                    method: method.to_owned(),
                    chat_id: None,
                    until: now + Duration::from_secs(seconds),
                });
                return Some(ApiError::too_many_requests(seconds));
            }
            self.windows.remove(method);
        }
        // An error queued for this chat first, then one for any chat.
        let mut queue = |chat| {
            self.queued
                .get_mut(&(method.to_owned(), chat))
                .and_then(VecDeque::pop_front)
        };
        let error = match chat_id.and_then(|chat| queue(Some(chat))).or_else(|| queue(None)) {
            Some(error) => error,
            None => self.limits.as_mut()?.admit(method, chat_id, now).err()?,
        };
        if let Some(seconds) = error.retry_after {
            self.deadlines.push(Deadline {
                method: method.to_owned(),
                chat_id,
                until: now + Duration::from_secs(seconds),
            });
        }
        Some(error)
    }
}
