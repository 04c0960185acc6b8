//! The scheduler's clock: real time, or a manual one for tests (no sleeping in tests).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// Wall-clock time and a way to wait for an instant.
#[async_trait]
pub trait Clock: Send + Sync {
    /// Now (UTC).
    fn now(&self) -> DateTime<Utc>;
    /// Returns at `deadline` or later. Cancel by dropping the future.
    async fn sleep_until(&self, deadline: DateTime<Utc>);
}

/// The system clock, waiting with one tokio timer.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

#[async_trait]
impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    async fn sleep_until(&self, deadline: DateTime<Utc>) {
        // tokio's timer runs on the monotonic clock, which stands still while the machine is
        // suspended and ignores wall-clock changes: sleep in steps of at most a minute and
        // re-check the wall clock (one wake-up a minute when idle).
        const STEP: std::time::Duration = std::time::Duration::from_secs(60);
        loop {
            let left = deadline - Utc::now();
            let Ok(left) = left.to_std() else { return };
            if left.is_zero() {
                return;
            }
            tokio::time::sleep(left.min(STEP)).await;
        }
    }
}

/// A clock that moves only when told ([`ManualClock::set`], [`ManualClock::advance`]); sleepers
/// wake when it passes their deadline.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<tokio::sync::watch::Sender<DateTime<Utc>>>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        ManualClock {
            now: Arc::new(tokio::sync::watch::Sender::new(start)),
        }
    }

    /// Moves the clock to `t` (forwards or backwards).
    pub fn set(&self, t: DateTime<Utc>) {
        self.now.send_replace(t);
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: chrono::Duration) {
        self.now.send_modify(|t| *t += d);
    }
}

#[async_trait]
impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.borrow()
    }

    async fn sleep_until(&self, deadline: DateTime<Utc>) {
        let mut rx = self.now.subscribe();
        let _ = rx.wait_for(|t| *t >= deadline).await;
    }
}
