//! Group commit for the journal: records are numbered as they are written; one `fdatasync`
//! makes every record written before it durable.

use std::fs::File;
use std::sync::{Condvar, Mutex, MutexGuard};
use tokio::sync::watch;

/// The exit status after a failed sync of the journal.
const EXIT_SYNC_FAILED: i32 = 3;

/// Group commit: records are numbered as they are written; one `fdatasync` makes every record
/// written before it durable. One sync runs at a time, in the background thread or in a caller
/// that must not go on before its record is durable.
#[derive(Debug)]
pub(super) struct GroupSync {
    /// A handle to sync through (a second descriptor of the journal).
    pub(super) file: File,
    pub(super) state: Mutex<SyncState>,
    pub(super) changed: Condvar,
    /// The number of records known durable, for async waiters.
    pub(super) synced: watch::Sender<u64>,
}

#[derive(Debug, Default)]
pub(super) struct SyncState {
    /// Records written so far.
    pub(super) written: u64,
    /// Records known durable.
    pub(super) synced: u64,
    /// Records someone asked to be durable (the background thread syncs while this is ahead).
    pub(super) requested: u64,
    /// A sync is running.
    pub(super) syncing: bool,
    /// The journal is being dropped: the background thread syncs what is left and stops.
    pub(super) stop: bool,
}

impl GroupSync {
    pub(super) fn lock(&self) -> MutexGuard<'_, SyncState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one more written record (under the file lock, so numbers follow the file);
    /// returns its number. `sync_soon`: ask the background thread to sync it now.
    pub(super) fn written(&self, sync_soon: bool) -> u64 {
        let mut st = self.lock();
        st.written += 1;
        if sync_soon {
            st.requested = st.written;
            self.changed.notify_all();
        }
        st.written
    }

    /// Asks the background thread to sync up to record `n` (if not yet durable).
    pub(super) fn request(&self, n: u64) {
        let mut st = self.lock();
        if st.synced < n && st.requested < n {
            st.requested = n;
            self.changed.notify_all();
        }
    }

    /// Records written so far.
    pub(super) fn written_so_far(&self) -> u64 {
        self.lock().written
    }

    /// Returns once record `n` is durable, syncing if no sync is running.
    pub(super) fn wait(&self, n: u64) {
        let mut st = self.lock();
        while st.synced < n {
            if st.syncing {
                st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            st.syncing = true;
            let target = st.written;
            drop(st);
            if let Err(e) = crate::ops::metrics::time_journal_sync(|| self.file.sync_data()) {
                // Nothing written since the last good sync can be trusted to be on disk.
                tracing::error!("cannot sync the inbound journal: {e}; stopping (a restart recovers)");
                std::process::exit(EXIT_SYNC_FAILED);
            }
            st = self.lock();
            st.syncing = false;
            st.synced = st.synced.max(target);
            self.synced.send_replace(st.synced);
            self.changed.notify_all();
        }
    }

    /// Waits (async) until record `n` is durable; the background thread does the syncing.
    pub(super) async fn wait_async(&self, n: u64) {
        if *self.synced.borrow() >= n {
            return;
        }
        self.request(n);
        let mut rx = self.synced.subscribe();
        // The sender lives as long as `self`.
        let _ = rx.wait_for(|&synced| synced >= n).await;
    }

    /// The background thread: when asked, syncs whatever was written and not yet synced; when
    /// stopped, syncs what is left.
    pub(super) fn run(&self) {
        loop {
            let target = {
                let mut st = self.lock();
                while st.requested <= st.synced && !st.stop {
                    st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
                }
                if st.written <= st.synced {
                    return;
                }
                st.written
            };
            self.wait(target);
        }
    }
}
