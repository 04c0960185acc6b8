//! Group commit for the spend store's journal: a call queues its line under the store's lock,
//! and whoever finds no sync running writes every queued line and syncs them once, with the
//! lock released; the others wait for that sync's outcome. The inbound journal of the bot
//! batches its syncs the same way (one sync for every line written before it).

use super::{Result, SpendStore, State, StoreError, journal_path};
use crate::ledger::Record;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, MutexGuard, OnceLock};

/// How a batch ended, shared by every call that queued a line in it.
pub(super) type Ticket = Arc<OnceLock<std::result::Result<(), Failure>>>;

/// Lines waiting for one sync.
#[derive(Debug, Default)]
pub(super) struct Batch {
    /// The encoded lines, each ending in a newline.
    bytes: Vec<u8>,
    lines: usize,
    /// Records applied once the batch is durable (settles: a hold is replaced only by a
    /// settlement on disk, so a failed sync leaves the hold counted, never less).
    pub(super) after: Vec<Record>,
    outcome: Ticket,
}

/// Why a batch failed (cloned to each of its callers).
#[derive(Debug, Clone)]
pub(super) enum Failure {
    /// The write or the sync failed.
    Io {
        path: PathBuf,
        kind: std::io::ErrorKind,
        message: String,
    },
    /// An earlier failed write could not be cut back off the journal.
    Broken,
}

impl SpendStore {
    /// Encodes `record` into the next batch; returns the batch's ticket.
    pub(super) fn queue(&self, st: &mut State, record: &Record) -> Result<Ticket> {
        if st.broken {
            return Err(StoreError::Broken);
        }
        if st.journal.is_none() {
            return Err(StoreError::ReadOnly);
        }
        let line = serde_json::to_vec(record).map_err(|e| StoreError::Io {
            action: "encode a line for",
            path: journal_path(&self.dir, st.generation),
            source: std::io::Error::other(e),
        })?;
        st.pending.bytes.extend_from_slice(&line);
        st.pending.bytes.push(b'\n');
        st.pending.lines += 1;
        Ok(st.pending.outcome.clone())
    }

    /// Returns once the batch of `ticket` is durable (or failed), writing and syncing it when
    /// no other call is syncing.
    pub(super) fn commit<'a>(&'a self, mut st: MutexGuard<'a, State>, ticket: &Ticket) -> Result<()> {
        loop {
            if let Some(outcome) = ticket.get() {
                return outcome.clone().map_err(|f| match f {
                    Failure::Io { path, kind, message } => StoreError::Io {
                        action: "append to",
                        path,
                        source: std::io::Error::new(kind, message),
                    },
                    Failure::Broken => StoreError::Broken,
                });
            }
            st = if st.syncing {
                self.synced.wait(st).unwrap_or_else(|e| e.into_inner())
            } else {
                self.flush(st)
            };
        }
    }

    /// Writes and syncs the pending batch with the lock released (no other flush runs: the
    /// `syncing` flag); a failed write is cut back off the journal so the next batch starts
    /// clean. Folds the journal when it is long enough. Returns the lock.
    fn flush<'a>(&'a self, mut st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        let batch = std::mem::take(&mut st.pending);
        let file = match (&st.journal, st.broken) {
            (Some(file), false) => file.clone(),
            // `queue` refuses both; a batch queued before the store broke fails with it.
            _ => {
                let _ = batch.outcome.set(Err(Failure::Broken));
                self.synced.notify_all();
                return st;
            }
        };
        let (len, path) = (st.len, journal_path(&self.dir, st.generation));
        st.syncing = true;
        drop(st);
        let written = (&*file).write_all(&batch.bytes).and_then(|()| (self.sync)(&file));
        let cut_back = written.is_ok() || file.set_len(len).and_then(|()| file.sync_data()).is_ok();
        let mut st = self.lock();
        st.syncing = false;
        let outcome = match written {
            Ok(()) => {
                st.len += batch.bytes.len() as u64;
                st.lines += batch.lines;
                for record in &batch.after {
                    st.ledger.apply(record);
                }
                if st.lines >= self.compact_after {
                    self.compact(&mut st);
                }
                Ok(())
            }
            Err(e) => {
                st.broken = !cut_back;
                Err(Failure::Io {
                    path,
                    kind: e.kind(),
                    message: e.to_string(),
                })
            }
        };
        let _ = batch.outcome.set(outcome);
        self.synced.notify_all();
        st
    }
}
