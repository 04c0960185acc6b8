//! Writing and syncing the spend store's journal. A call writes its line under the store's lock
//! (into the system's page cache: microseconds, and a `kill -9` of the process cannot lose it);
//! the store's sync thread syncs every line written so far with the lock released, so writes go
//! on while a sync runs and one sync covers every line written before it began (group commit),
//! after gathering lines for [`SYNC_GATHER`](super::SYNC_GATHER). No hold or settlement waits for a sync; [`SpendStore::flush`](super::SpendStore::flush) waits
//! for one begun after the last write. The inbound journal of the bot batches its syncs the same
//! way (one sync for every line written before it).

use super::{Inner, Result, State, StoreError, io, journal_path};
use crate::ledger::Record;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, MutexGuard};
use std::thread::JoinHandle;

/// Why the store stopped writing: kept, and named in every later refusal.
#[derive(Debug, Clone)]
pub(super) struct Failure {
    /// What failed (`sync`, `cut back`).
    action: &'static str,
    path: PathBuf,
    kind: std::io::ErrorKind,
    message: String,
}

impl Failure {
    fn new(action: &'static str, path: &Path, e: &std::io::Error) -> Failure {
        Failure {
            action,
            path: path.to_owned(),
            kind: e.kind(),
            message: e.to_string(),
        }
    }

    /// The failure as the error of a call that waited for it.
    fn to_error(&self) -> StoreError {
        StoreError::Io {
            action: self.action,
            path: self.path.clone(),
            source: std::io::Error::new(self.kind, self.message.clone()),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot {} {}: {}", self.action, self.path.display(), self.message)
    }
}

impl Inner {
    /// Writes `record` as one line at the journal's end and wakes the sync thread; returns the
    /// line's number ([`State::written`]). A failed write is cut back off the journal (the next
    /// line starts clean); when that fails too, the store is broken.
    pub(super) fn write(&self, st: &mut State, record: &Record) -> Result<u64> {
        let Some(file) = st.journal.clone() else {
            return Err(StoreError::ReadOnly);
        };
        // Named only in an error: not built on the request's path.
        let generation = st.generation;
        let path = || journal_path(&self.dir, generation);
        let mut line = serde_json::to_vec(record).map_err(|e| StoreError::Io {
            action: "encode a line for",
            path: path(),
            source: std::io::Error::other(e),
        })?;
        line.push(b'\n');
        if let Err(e) = (&*file).write_all(&line) {
            if let Err(cut) = file.set_len(st.len).and_then(|()| file.sync_data()) {
                tracing::error!("spend store: cannot cut a failed line off {}: {cut}", path().display());
                st.failed = Some(Failure::new("cut back", &path(), &cut));
                self.synced.notify_all();
            }
            return Err(io("append to", &path())(e));
        }
        st.len += line.len() as u64;
        st.lines += 1;
        st.written += 1;
        // Only the first line after the last sync wakes the sync thread (then waiting for one): a
        // thread gathering or syncing takes later lines in anyway, and waking it per line would
        // cost a context switch per line.
        if st.written == st.synced + 1 {
            self.wake.notify_one();
        }
        Ok(st.written)
    }

    /// [`SpendStore::flush`](super::SpendStore::flush): waits until every line written so far is
    /// durable, or returns the error that stopped the store before; the sync thread does not
    /// gather lines meanwhile.
    pub(super) fn flush(&self) -> Result<()> {
        let mut st = self.lock();
        if st.journal.is_none() {
            return Err(StoreError::ReadOnly);
        }
        let line = st.written;
        st.waiting += 1;
        self.wake.notify_one();
        let done = loop {
            if st.synced >= line {
                break Ok(());
            }
            if let Some(f) = &st.failed {
                break Err(f.to_error());
            }
            st = self.synced.wait(st).unwrap_or_else(|e| e.into_inner());
        };
        st.waiting -= 1;
        done
    }

    /// Starts the sync thread: it syncs whenever lines are written and not yet synced (after
    /// gathering more for [`Inner::gather`], asleep: writes do not wake it then), until the
    /// store closes (then it syncs what is left) or breaks.
    pub(super) fn start_flusher(self: &Arc<Self>) -> Result<JoinHandle<()>> {
        let inner = self.clone();
        std::thread::Builder::new()
            .name("spend-sync".into())
            .spawn(move || inner.flush_loop())
            .map_err(io("start the sync thread for", &self.dir))
    }

    fn flush_loop(&self) {
        let mut st = self.lock();
        loop {
            if st.written > st.synced && st.failed.is_none() {
                let (gathered, _) = self
                    .wake
                    .wait_timeout_while(st, self.gather, |s| !s.closing && s.waiting == 0)
                    .unwrap_or_else(|e| e.into_inner());
                st = self.sync_written(gathered);
                if st.lines >= self.compact_after && st.failed.is_none() {
                    drop(st);
                    self.fold();
                    st = self.lock();
                }
            } else if st.closing {
                return;
            } else {
                st = self.wake.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
    }

    /// Syncs every line written so far with the lock released (lines written meanwhile wait for
    /// the next sync). Returns the lock.
    fn sync_written<'a>(&'a self, st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        let (target, generation, journal) = (st.written, st.generation, st.journal.clone());
        drop(st);
        self.sync_journal(journal.as_deref(), generation, target);
        self.lock()
    }

    /// Syncs `journal` (of `generation`) without the lock and marks every line up to `target`
    /// durable. A failed sync breaks the store: the system may have dropped the unsynced lines,
    /// and a second sync could report success over them.
    pub(super) fn sync_journal(&self, journal: Option<&File>, generation: u64, target: u64) {
        let result = match journal {
            Some(file) => (self.sync)(file),
            None => Err(std::io::Error::other("the store was opened to read only")),
        };
        match result {
            Ok(()) => self.durable_up_to(target),
            Err(e) => self.break_on(Failure::new("sync", &journal_path(&self.dir, generation), &e)),
        }
    }

    /// Marks every line up to `line` durable and wakes those waiting for it.
    pub(super) fn durable_up_to(&self, line: u64) {
        let mut st = self.lock();
        st.synced = st.synced.max(line);
        drop(st);
        self.synced.notify_all();
    }

    /// Stops the store writing for `failure` (kept, and named in every later refusal) and wakes
    /// those waiting for durability with it.
    fn break_on(&self, failure: Failure) {
        tracing::error!("spend store: {failure}; nothing more is recorded");
        self.lock().failed = Some(failure);
        self.synced.notify_all();
    }
}
