//! Folding the spend store's journal into a new snapshot (see the crate docs' crash rule).

use super::{Inner, KEEP_DAYS, Result, SNAPSHOT, SNAPSHOT_VERSION, Snapshot, State, StoreError};
use super::{io, journal_path, open_journal, sync_dir};
use crate::ledger::Ledger;
use std::fs::File;
use std::io::Write;
use std::sync::Arc;

impl Inner {
    /// Folds the journal into a new snapshot: a new empty journal first, then the snapshot
    /// naming it (written aside, synced, renamed), then the old journal removed. A crash at any
    /// step leaves either the old snapshot and every journal since, or the new one. Lines
    /// written and not yet synced fold in too (the ledger holds them): once the snapshot is in
    /// place every written line is durable. A failure is logged and tried again after as many
    /// lines. Runs under the store's lock (every [`COMPACT_AFTER`](super::COMPACT_AFTER) lines).
    pub(super) fn compact(&self, st: &mut State) {
        let next = st.generation + 1;
        if let Some(newest) = st.ledger.newest() {
            st.ledger.forget_before(newest - chrono::Days::new(KEEP_DAYS));
        }
        match self.write_snapshot(&st.ledger, next) {
            Ok(journal) => {
                st.synced = st.written;
                st.ledger.forget_done();
                let old = journal_path(&self.dir, st.generation);
                st.journal = Some(Arc::new(journal));
                st.generation = next;
                st.len = 0;
                st.lines = 0;
                let _ = std::fs::remove_file(old);
                self.synced.notify_all();
            }
            Err(e) => {
                tracing::warn!("spend store: could not fold the journal (tried again later): {e}");
                st.lines = 0;
            }
        }
    }

    fn write_snapshot(&self, ledger: &Ledger, next: u64) -> Result<File> {
        let journal = open_journal(&self.dir, next)?;
        let (totals, open) = ledger.parts();
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
            .and_then(|()| f.sync_all())
            .map_err(io("write", &tmp))?;
        std::fs::rename(&tmp, &path).map_err(io("rename", &tmp))?;
        sync_dir(&self.dir)?;
        Ok(journal)
    }
}
