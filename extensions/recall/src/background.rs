//! The background indexing pass: one thread of its own at the lowest CPU priority, started well
//! after start-up, a few chats at a time and only while no run is starting or ending, keeping
//! no index open that was not open already, so it does not compete with the message path or
//! start-up (docs/benchmarks.md "Recall").

use crate::store::Recall;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// When and how much the background pass indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    /// Wait before the first pass (start-up and the first messages go first).
    pub first_after: Duration,
    /// Between passes (a search catches its own chat up first, so this only keeps that short).
    pub every: Duration,
    /// Chats caught up in one go before [`Pace::pause`].
    pub chats_per_tick: usize,
    /// Between two groups of chats within a pass.
    pub pause: Duration,
    /// A group waits until no run started or ended ([`Recall::note_activity`]) for this long...
    pub quiet: Duration,
    /// ...but at most this long: a bot that is never quiet still gets indexed, one group per
    /// this much time.
    pub hold_at_most: Duration,
}

impl Default for Pace {
    /// The bot's pace: first pass 30 s after start, then every 5 s; 8 chats, then 200 ms off;
    /// each group after 2 s without a run starting or ending, or after 60 s held back.
    fn default() -> Pace {
        Pace {
            first_after: Duration::from_secs(30),
            every: Duration::from_secs(5),
            chats_per_tick: 8,
            pause: Duration::from_millis(200),
            quiet: Duration::from_secs(2),
            hold_at_most: Duration::from_secs(60),
        }
    }
}

/// When a run last started or ended, as milliseconds after `origin` (0: never).
#[derive(Debug)]
pub(crate) struct Activity {
    origin: Instant,
    last_ms: AtomicU64,
}

impl Default for Activity {
    fn default() -> Activity {
        Activity {
            origin: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }
}

impl Activity {
    fn now_ms(&self) -> u64 {
        // At least 1, so that a stamp is never read as "never".
        u64::try_from(self.origin.elapsed().as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// How long since the last stamp; `None`: none yet.
    fn since(&self) -> Option<Duration> {
        match self.last_ms.load(Ordering::Relaxed) {
            0 => None,
            at => Some(Duration::from_millis(self.now_ms().saturating_sub(at))),
        }
    }
}

impl Recall {
    /// Notes that a run started or ended in some session: the background pass holds back its
    /// next group until the bot has been quiet for [`Pace::quiet`]. One atomic store: cheap
    /// enough for the message path.
    pub fn note_activity(&self) {
        let a = &self.activity;
        a.last_ms.store(a.now_ms(), Ordering::Relaxed);
    }

    /// Waits until no activity for `pace.quiet` (at most `pace.hold_at_most`); false when told
    /// to stop.
    fn wait_for_quiet(&self, pace: &Pace, stop: &Receiver<()>) -> bool {
        let held = Instant::now();
        loop {
            let since = self.activity.since().unwrap_or(Duration::MAX);
            let held_for = held.elapsed();
            if since >= pace.quiet || held_for >= pace.hold_at_most {
                return true;
            }
            let wait = (pace.quiet - since).min(pace.hold_at_most - held_for);
            if !sleep(stop, wait) {
                return false;
            }
        }
    }

    /// Starts the background pass on a thread named `recall-index` at nice 19 (see the module
    /// docs); it ends when `stop` is dropped or sends (checked between chats; what a pass
    /// committed stays, the rest is indexed at the next start). Errors: the thread cannot start.
    pub fn spawn_indexer(
        self: Arc<Self>,
        pace: Pace,
        stop: Receiver<()>,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        std::thread::Builder::new().name("recall-index".into()).spawn(move || {
            lower_priority();
            let mut wait = pace.first_after;
            while sleep(&stop, wait) {
                if !self.pass(&pace, &stop) {
                    return;
                }
                wait = pace.every;
            }
        })
    }

    /// One pass over the chats whose files grew; false when told to stop.
    fn pass(&self, pace: &Pace, stop: &Receiver<()>) -> bool {
        let due = self.due_chats();
        let mut rows = 0;
        for (i, group) in due.chunks(pace.chats_per_tick.max(1)).enumerate() {
            if i > 0 && !sleep(stop, pace.pause) {
                return false;
            }
            if !self.wait_for_quiet(pace, stop) {
                return false;
            }
            for chat in group {
                match self.catch_up_quietly(chat) {
                    Ok(c) => rows += c.rows,
                    Err(e) => tracing::warn!(chat = %chat, error = %e, "recall: indexing failed"),
                }
                if stop_asked(stop) {
                    return false;
                }
            }
        }
        // Also the manifests of chats that searches caught up since the last pass.
        self.save_manifests();
        if rows > 0 {
            // No trim here: the host's allocator returns a pass's freed pages (the bot's jemalloc
            // after its decay time); glibc's `malloc_trim` would reach none of them.
            tracing::debug!(rows, chats = due.len(), "recall: indexed");
        }
        true
    }
}

/// Waits `d`; false when told to stop (a message or the sender gone).
fn sleep(stop: &Receiver<()>, d: Duration) -> bool {
    matches!(stop.recv_timeout(d), Err(RecvTimeoutError::Timeout))
}

fn stop_asked(stop: &Receiver<()>) -> bool {
    !matches!(stop.try_recv(), Err(std::sync::mpsc::TryRecvError::Empty))
}

/// Nice 19 for the calling thread only (Linux's `setpriority` on a thread id). Not `SCHED_IDLE`:
/// a thread that may get no CPU at all while the machine is busy would hold its chat's lock,
/// and that chat's search would wait on it. A failure is logged; the pass runs anyway.
#[allow(unsafe_code)]
fn lower_priority() {
    // SAFETY: gettid has no preconditions; setpriority only reads its integer arguments.
    let r = unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19)
    };
    if r != 0 {
        tracing::warn!(error = %std::io::Error::last_os_error(), "recall: indexing runs at normal priority");
    }
}
