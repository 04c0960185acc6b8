//! The background indexing pass: one thread of its own at the lowest CPU priority, started well
//! after start-up, a few chats at a time, keeping no index open that was not open already, so
//! it does not compete with the message path or start-up (docs/benchmarks.md "Recall").

use crate::store::{ChatKey, Recall};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

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
}

impl Default for Pace {
    /// The bot's pace: first pass 30 s after start, then every 5 s; 8 chats, then 200 ms off.
    fn default() -> Pace {
        Pace {
            first_after: Duration::from_secs(30),
            every: Duration::from_secs(5),
            chats_per_tick: 8,
            pause: Duration::from_millis(200),
        }
    }
}

impl Recall {
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
        let due: Vec<ChatKey> = self.chats().into_iter().filter(|c| self.needs_catch_up(c)).collect();
        let mut rows = 0;
        for (i, group) in due.chunks(pace.chats_per_tick.max(1)).enumerate() {
            if i > 0 && !sleep(stop, pace.pause) {
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
        if rows > 0 {
            tracing::debug!(rows, chats = due.len(), "recall: indexed");
            release_memory();
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

/// Hands the heap a pass freed (parsed lines, the closed indexes' pages) back to the system, so
/// idle RSS does not keep a pass's peak (glibc keeps freed pages otherwise).
#[allow(unsafe_code)]
fn release_memory() {
    // SAFETY: malloc_trim only returns free heap pages; it touches no memory in use.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::malloc_trim(0);
    }
}
