//! Folding the spend store's journal into a new snapshot (see the crate docs' crash rule), with
//! the store's lock held only while writes move to the next journal: no hold or settlement
//! waits for the fold's file work.

use super::{Inner, KEEP_DAYS, Result, SNAPSHOT, SNAPSHOT_VERSION, Snapshot, StoreError};
use super::{io, journal_path, journals, open_journal, sync_dir};
use crate::ledger::{Open, Total};
use std::fs::File;
use std::io::Write;
use std::sync::Arc;

/// What the fold took from the store when writes moved to the next journal.
struct Moved {
    /// The ledger's settled totals and open reservations at the move.
    totals: Vec<Total>,
    open: Vec<(String, Open)>,
    /// The journal written up to the move, and its generation.
    old: Option<Arc<File>>,
    old_generation: u64,
    /// Lines written up to the move ([`State::written`](super::State::written)).
    written: u64,
}

impl Inner {
    /// Folds the journal into a new snapshot. Runs on the sync thread (or at open, before it
    /// starts), so no journal sync runs beside it:
    /// 1. the next journal is created empty and the folder synced, without the lock;
    /// 2. under the lock, writes move to it and the ledger's parts are copied (lines written to
    ///    the old journal and not yet synced are in them);
    /// 3. without the lock, the snapshot of those parts, naming the next journal, is written
    ///    aside, synced, renamed and the folder synced: every line up to the move is durable then,
    ///    and the journals before the next one are removed.
    ///
    /// A crash at any step leaves the old snapshot and every journal since (replayed in order), or
    /// the new snapshot and the journals from the next one. When step 1 fails nothing moved; when
    /// step 3 fails the old journal is synced instead (a failure of that breaks the store, as any
    /// failed sync does). Either is logged and the fold tried again after as many lines.
    pub(super) fn fold(&self) {
        let next = self.lock().generation + 1;
        let journal = match open_journal(&self.dir, next) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!("spend store: could not fold the journal (tried again later): {e}");
                self.lock().lines = 0;
                return;
            }
        };
        let moved = self.move_to(next, journal);
        match self.write_snapshot(moved.totals, moved.open, next) {
            Ok(()) => {
                self.durable_up_to(moved.written);
                for g in journals(&self.dir)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|g| *g < next)
                {
                    let _ = std::fs::remove_file(journal_path(&self.dir, g));
                }
            }
            Err(e) => {
                tracing::warn!("spend store: could not fold the journal (tried again later): {e}");
                self.sync_journal(moved.old.as_deref(), moved.old_generation, moved.written);
            }
        }
    }

    /// Step 2 of [`fold`](Self::fold): writes go to `journal` (generation `next`) from now on.
    fn move_to(&self, next: u64, journal: File) -> Moved {
        let mut st = self.lock();
        if let Some(newest) = st.ledger.newest() {
            st.ledger.forget_before(newest - chrono::Days::new(KEEP_DAYS));
        }
        let (totals, open) = st.ledger.parts();
        // The snapshot holds them now; their lines are in no journal replayed after it.
        st.ledger.forget_done();
        let old = st.journal.replace(Arc::new(journal));
        let old_generation = std::mem::replace(&mut st.generation, next);
        st.len = 0;
        st.lines = 0;
        Moved {
            totals,
            open,
            old,
            old_generation,
            written: st.written,
        }
    }

    /// Writes the snapshot of `totals` and `open` naming journal `next`: aside, synced (through
    /// the store's sync, so a test can hold it), renamed over the old one, the folder synced.
    fn write_snapshot(&self, mut totals: Vec<Total>, mut open: Vec<(String, Open)>, next: u64) -> Result<()> {
        totals.sort_by(|x, y| (x.period, &x.account).cmp(&(y.period, &y.account)));
        open.sort_by(|x, y| x.0.cmp(&y.0));
        let snapshot = Snapshot {
            version: SNAPSHOT_VERSION,
            generation: next,
            totals,
            open,
        };
        let path = self.dir.join(SNAPSHOT);
        let tmp = self.dir.join(format!("{SNAPSHOT}.tmp"));
        let bytes = serde_json::to_vec(&snapshot).map_err(|e| StoreError::Io {
            action: "encode",
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        let mut f = File::create(&tmp).map_err(io("create", &tmp))?;
        f.write_all(&bytes)
            .and_then(|()| (self.sync)(&f))
            .map_err(io("write", &tmp))?;
        std::fs::rename(&tmp, &path).map_err(io("rename", &tmp))?;
        sync_dir(&self.dir)
    }
}
