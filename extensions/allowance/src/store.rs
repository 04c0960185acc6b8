//! [`SpendStore`]: the ledger on disk. See the crate docs for the files and the crash rule.

use crate::account::{Account, AccountKind, Period};
use crate::check::{Cap, Charge, Decision, first_crossed};
use crate::ledger::{Ledger, Open, Record, Total};
use crate::money::MicroUsd;
use chrono::NaiveDate;
use commit::Failure;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

mod commit;
mod fold;

/// Days of daily totals a snapshot keeps, counted back from the newest day (two months, so the
/// last 30 days and the whole current month are always there).
pub const KEEP_DAYS: u64 = 62;

/// Journal lines written before the journal is folded into a new snapshot.
pub const COMPACT_AFTER: usize = 4096;

/// How long the sync thread gathers written lines before it syncs them, unless the store closes
/// or [`SpendStore::flush`] waits: a request's hold and its settlement, and other chats' lines
/// meanwhile, share one sync (each sync of a grown file is an ext4 journal commit that the bot's
/// other file work queues behind). It bounds the window in which a power cut can lose a written
/// line (a `kill -9` cannot); nothing waits for it.
pub const SYNC_GATHER: std::time::Duration = std::time::Duration::from_millis(10);

const SNAPSHOT: &str = "snapshot.json";
const SNAPSHOT_VERSION: u32 = 1;

/// The store's errors.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file could not be read, written or synced (a full disk, a read-only folder).
    #[error("spend store: cannot {action} {path}: {source}")]
    Io {
        /// What was being done (`open`, `append to`, `sync`, ...).
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file holds something other than the store's records (a torn tail is not this: it is
    /// cut off, as the crash rule says).
    #[error(
        "spend store: {path} line {line} is damaged ({reason}); move the folder aside to start \
         the counts afresh"
    )]
    Damaged {
        /// The file.
        path: PathBuf,
        /// Its line (1-based; 0 for a snapshot).
        line: usize,
        /// What was wrong.
        reason: String,
    },
    /// The request id was reserved before (ids must be unique per model request).
    #[error("spend store: request `{0}` is reserved already")]
    Duplicate(String),
    /// An earlier journal sync failed, or a failed write could not be cut back off the journal,
    /// so nothing more is recorded (every later hold is refused; holds made before stay
    /// counted). A sync is not tried again after a failure: the system may have dropped the
    /// unsynced lines and a second sync could report success over them.
    #[error(
        "spend store: nothing more is recorded since a journal write or sync failed ({reason}); \
         free the disk or fix the folder, then restart the bot"
    )]
    Broken {
        /// The failure that broke the store (the file and the system's error).
        reason: String,
    },
    /// The store was opened to read only ([`SpendStore::open_read_only`]): nothing is written.
    #[error("spend store: opened to read only (beside the running bot), so nothing is recorded here")]
    ReadOnly,
}

/// Result alias of the store.
pub type Result<T> = std::result::Result<T, StoreError>;

/// How the store's files are made durable (the journal's written lines, a fold's snapshot):
/// [`File::sync_data`] unless [`SpendStore::open_with_sync`] says otherwise (a test counts,
/// blocks or fails syncs through it).
pub type SyncJournal = Arc<dyn Fn(&File) -> std::io::Result<()> + Send + Sync>;

/// The spend store: settled spend and open reservations per account and local day, in a folder
/// of its own. Thread-safe. A call that writes writes its line under the store's lock (a
/// `write(2)` into the page cache: microseconds, so async code calls it on its own thread); the
/// store's sync thread syncs the lines written so far, and folds the journal into a snapshot,
/// with the lock released (it holds it only to move writes to the next journal, while the
/// ledger is copied). [`reserve`](Self::reserve) and [`settle`](Self::settle) return once their
/// line is written; [`flush`](Self::flush) waits for the sync. Reads never touch the disk and
/// never wait for a sync. Dropping the store syncs what is written and stops its thread.
pub struct SpendStore {
    inner: Arc<Inner>,
    /// The sync thread (`None` when opened to read only).
    flusher: Option<JoinHandle<()>>,
}

/// What the store's callers and its sync thread share.
struct Inner {
    dir: PathBuf,
    compact_after: usize,
    sync: SyncJournal,
    /// [`SYNC_GATHER`] unless opened with another.
    gather: std::time::Duration,
    state: Mutex<State>,
    /// Wakes the callers waiting for durability when a sync ends (or fails).
    synced: Condvar,
    /// Wakes the sync thread when a line is written (or the store closes).
    wake: Condvar,
}

impl std::fmt::Debug for SpendStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpendStore")
            .field("dir", &self.inner.dir)
            .field("compact_after", &self.inner.compact_after)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct State {
    ledger: Ledger,
    /// `None` when opened to read only. Shared so that a sync runs without the lock.
    journal: Option<Arc<File>>,
    generation: u64,
    /// Bytes in the journal (a failed append is cut back to this).
    len: u64,
    /// Lines in the journal.
    lines: usize,
    /// Lines written since the store opened (a line's number is the count after its write).
    written: u64,
    /// Lines made durable: every line numbered up to this one (by a journal sync, or a fold
    /// into a synced snapshot).
    synced: u64,
    /// Why nothing more is written (a failed sync, a failed write not cut back).
    failed: Option<Failure>,
    /// The store is being dropped: the sync thread syncs what is written and ends.
    closing: bool,
    /// Callers of [`SpendStore::flush`] waiting: the sync thread syncs without gathering.
    waiting: usize,
}

impl State {
    fn new(ledger: Ledger, journal: Option<Arc<File>>, generation: u64, len: u64, lines: usize) -> State {
        State {
            ledger,
            journal,
            generation,
            len,
            lines,
            written: 0,
            synced: 0,
            failed: None,
            closing: false,
            waiting: 0,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Snapshot {
    version: u32,
    /// Journals numbered below this are folded in.
    generation: u64,
    totals: Vec<Total>,
    open: Vec<(String, Open)>,
}

impl SpendStore {
    /// Opens (or creates) the store in `dir`: the snapshot, then every newer journal (a torn
    /// last line is cut off), then reservations no one settled counted at their estimate; starts
    /// the store's sync thread.
    ///
    /// # Errors
    /// [`StoreError::Io`] when the folder cannot be read or written (or the thread cannot
    /// start); [`StoreError::Damaged`] when a file holds something else than the store's
    /// records.
    pub fn open(dir: &Path) -> Result<SpendStore> {
        SpendStore::open_with(dir, COMPACT_AFTER)
    }

    /// [`SpendStore::open`], folding the journal after `compact_after` lines (tests use few).
    pub fn open_with(dir: &Path, compact_after: usize) -> Result<SpendStore> {
        SpendStore::open_with_sync(dir, compact_after, Arc::new(File::sync_data), SYNC_GATHER)
    }

    /// [`SpendStore::open_with`], making the journal's lines durable with `sync` (called by the
    /// store's sync thread without the store's lock, once for every line written since the last
    /// call, `gather` after the first of them; an error breaks the store:
    /// [`StoreError::Broken`]).
    ///
    /// # Errors
    /// As [`SpendStore::open`].
    pub fn open_with_sync(
        dir: &Path,
        compact_after: usize,
        sync: SyncJournal,
        gather: std::time::Duration,
    ) -> Result<SpendStore> {
        std::fs::create_dir_all(dir).map_err(io("create", dir))?;
        let (mut ledger, first) = read_snapshot(dir)?;
        let mut journals = journals(dir)?;
        journals.sort_unstable();
        let mut generation = first;
        let mut len = 0;
        let mut lines = 0;
        for g in journals {
            let path = journal_path(dir, g);
            if g < first {
                // Folded into the snapshot; left by a compaction cut short.
                let _ = std::fs::remove_file(&path);
                continue;
            }
            (len, lines) = replay(&path, &mut ledger, Torn::Cut)?;
            generation = g;
        }
        ledger.settle_orphans();
        let journal = Some(Arc::new(open_journal(dir, generation)?));
        let inner = Arc::new(Inner {
            dir: dir.to_owned(),
            compact_after: compact_after.max(1),
            sync,
            gather,
            state: Mutex::new(State::new(ledger, journal, generation, len, lines)),
            synced: Condvar::new(),
            wake: Condvar::new(),
        });
        if lines >= inner.compact_after {
            inner.fold();
        }
        let flusher = inner.start_flusher()?;
        Ok(SpendStore {
            inner,
            flusher: Some(flusher),
        })
    }

    /// Opens the store in `dir` to read only, beside a bot that may be writing it (the console's
    /// `/usage`): nothing is created, cut or folded, a torn last line (one being written right
    /// now) is skipped, open reservations stay open (in [`counted`](Self::counted), not in
    /// [`settled`](Self::settled), as the running bot has them), and every call that writes
    /// fails with [`StoreError::ReadOnly`]. A folder that does not exist reads as no spend. When
    /// the bot folds the journal during the read (the snapshot changed), it is read again.
    ///
    /// # Errors
    /// As [`SpendStore::open`]; [`StoreError::Io`] also when the journal was folded under every
    /// one of a few reads in a row.
    pub fn open_read_only(dir: &Path) -> Result<SpendStore> {
        const TRIES: usize = 5;
        let mut tries = 0;
        let (ledger, generation) = loop {
            tries += 1;
            match read_folder(dir) {
                Ok(read) => break read,
                Err(e) if tries < TRIES => tracing::debug!("spend store: read again ({e})"),
                Err(e) => return Err(e),
            }
        };
        let inner = Arc::new(Inner {
            dir: dir.to_owned(),
            compact_after: COMPACT_AFTER,
            sync: Arc::new(File::sync_data),
            gather: SYNC_GATHER,
            state: Mutex::new(State::new(ledger, None, generation, 0, 0)),
            synced: Condvar::new(),
            wake: Condvar::new(),
        });
        Ok(SpendStore { inner, flusher: None })
    }

    /// Checks `charge` against `caps` and, when it fits, holds its estimate: one line written
    /// to the journal (into the system's page cache, so a `kill -9` of the process cannot lose
    /// it) before `Admitted` is returned; the store's sync thread makes it durable against
    /// power loss shortly after (within [`SYNC_GATHER`] and a sync, while the request is being
    /// made). Check, hold and write are one step under the store's lock, so two concurrent
    /// requests cannot both pass for the last cent; no caller waits for a sync.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] for a request id reserved before; [`StoreError::Io`] when the
    /// line could not be written (it is cut back off; the request must not be made);
    /// [`StoreError::Broken`] after a failed sync (or a failed write that could not be cut
    /// back): the request must not be made, holds made before stay counted.
    pub fn reserve(&self, charge: &Charge, caps: &[Cap]) -> Result<Decision> {
        let mut st = self.inner.lock();
        st.writable()?;
        if st.ledger.is_known(&charge.request) {
            return Err(StoreError::Duplicate(charge.request.clone()));
        }
        if let Some(refusal) = first_crossed(charge, caps, |a, p| st.ledger.counted(a, p)) {
            return Ok(Decision::Refused(refusal));
        }
        let record = Record::Reserve {
            id: charge.request.clone(),
            day: charge.day,
            accounts: charge.accounts.clone(),
            micros: charge.estimate,
        };
        self.inner.write(&mut st, &record)?;
        // Held once written, so the next check counts it; a failed sync leaves it held.
        st.ledger.apply(&record);
        Ok(Decision::Admitted)
    }

    /// Whether `charge` would be admitted now (no hold, no write): the check alone.
    pub fn would_admit(&self, charge: &Charge, caps: &[Cap]) -> Decision {
        let st = self.inner.lock();
        match first_crossed(charge, caps, |a, p| st.ledger.counted(a, p)) {
            Some(r) => Decision::Refused(r),
            None => Decision::Admitted,
        }
    }

    /// Records what request `request` cost, replacing its reservation at once: one line
    /// written (into the page cache, so a `kill -9` cannot lose it), as a hold is, and made
    /// durable against power loss by the store's sync thread right after; no caller waits for
    /// the disk. A request that is not open (settled already, or never reserved) is left
    /// alone: settling twice counts once.
    ///
    /// # Errors
    /// [`StoreError::Io`] when the line could not be written (the reservation stays held, and
    /// is counted at its estimate after a restart); [`StoreError::Broken`] after an earlier
    /// failed sync.
    pub fn settle(&self, request: &str, cost: MicroUsd) -> Result<()> {
        let mut st = self.inner.lock();
        if !st.ledger.is_open(request) {
            return Ok(());
        }
        st.writable()?;
        let record = Record::Settle {
            id: request.to_owned(),
            micros: cost,
        };
        self.inner.write(&mut st, &record)?;
        st.ledger.apply(&record);
        Ok(())
    }

    /// Returns once every line written so far is durable (synced, or folded into a synced
    /// snapshot): for a host stopping, and for tests.
    ///
    /// # Errors
    /// The failure that broke the store before they were ([`StoreError::Io`] of the sync),
    /// or [`StoreError::ReadOnly`].
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// What counts against `account`'s caps in `period`: settled spend plus open reservations.
    pub fn counted(&self, account: &Account, period: Period) -> MicroUsd {
        self.inner.lock().ledger.counted(account, period)
    }

    /// Settled spend of `account` in `period`.
    pub fn settled(&self, account: &Account, period: Period) -> MicroUsd {
        self.inner.lock().ledger.settled(account, period)
    }

    /// Settled spend of `account` on each local day from `from` to `to` (inclusive), oldest
    /// first, days without spend as zero. Days older than [`KEEP_DAYS`] before the newest day
    /// may be gone (zero).
    pub fn daily(&self, account: &Account, from: NaiveDate, to: NaiveDate) -> Vec<(NaiveDate, MicroUsd)> {
        let st = self.inner.lock();
        from.iter_days()
            .take_while(|d| *d <= to)
            .map(|d| (d, st.ledger.settled(account, Period::Day(d))))
            .collect()
    }

    /// The `n` accounts of `kind` with the most settled spend in `period`, largest first (ties
    /// by account); accounts without spend are left out.
    pub fn top(&self, kind: AccountKind, period: Period, n: usize) -> Vec<(Account, MicroUsd)> {
        self.inner.lock().ledger.top(kind, period, n)
    }
}

impl Drop for SpendStore {
    /// Syncs what is written (unless the store is broken) and stops the sync thread.
    fn drop(&mut self) {
        let Some(flusher) = self.flusher.take() else { return };
        self.inner.lock().closing = true;
        self.inner.wake.notify_all();
        if flusher.join().is_err() {
            tracing::error!("spend store: the sync thread panicked");
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    /// Whether lines may be written: not opened to read only, not broken.
    fn writable(&self) -> Result<()> {
        if self.journal.is_none() {
            return Err(StoreError::ReadOnly);
        }
        match &self.failed {
            Some(f) => Err(StoreError::Broken { reason: f.to_string() }),
            None => Ok(()),
        }
    }
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StoreError {
    let path = path.to_owned();
    move |source| StoreError::Io { action, path, source }
}

fn journal_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("journal-{generation}.jsonl"))
}

/// The generations of the journals in `dir`.
fn journals(dir: &Path) -> Result<Vec<u64>> {
    let entries = std::fs::read_dir(dir).map_err(io("read", dir))?;
    let mut out = Vec::new();
    for e in entries {
        let e = e.map_err(io("read", dir))?;
        let name = e.file_name();
        let gen_of = |n: &str| n.strip_prefix("journal-")?.strip_suffix(".jsonl")?.parse().ok();
        if let Some(g) = name.to_str().and_then(gen_of) {
            out.push(g);
        }
    }
    Ok(out)
}

/// The snapshot's ledger and the first journal generation after it (an empty ledger and 0
/// without one).
fn read_snapshot(dir: &Path) -> Result<(Ledger, u64)> {
    let path = dir.join(SNAPSHOT);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Ledger::default(), 0)),
        Err(e) => return Err(io("read", &path)(e)),
    };
    let damaged = |reason: String| StoreError::Damaged {
        path: path.clone(),
        line: 0,
        reason,
    };
    let s: Snapshot = serde_json::from_slice(&bytes).map_err(|e| damaged(e.to_string()))?;
    if s.version != SNAPSHOT_VERSION {
        return Err(damaged(format!("version {} is not {SNAPSHOT_VERSION}", s.version)));
    }
    Ok((Ledger::from_parts(s.totals, s.open), s.generation))
}

/// The ledger of the snapshot and the journals after it, read without writing (for
/// [`SpendStore::open_read_only`]); an empty one when `dir` does not exist. Errors when a file
/// cannot be read or is damaged, or when the snapshot changed during the read (the journal was
/// folded meanwhile: read again).
fn read_folder(dir: &Path) -> Result<(Ledger, u64)> {
    if !dir.exists() {
        return Ok((Ledger::default(), 0));
    }
    let (mut ledger, first) = read_snapshot(dir)?;
    let mut journals = journals(dir)?;
    journals.sort_unstable();
    let mut generation = first;
    for g in journals.into_iter().filter(|g| *g >= first) {
        replay(&journal_path(dir, g), &mut ledger, Torn::Skip)?;
        generation = g;
    }
    let (_, now) = read_snapshot(dir)?;
    if now != first {
        return Err(StoreError::Io {
            action: "read",
            path: dir.join(SNAPSHOT),
            source: std::io::Error::other("the journal was folded during the read"),
        });
    }
    Ok((ledger, generation))
}

/// What [`replay`] does with a torn tail.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Torn {
    /// Cut it off the file (the store's owner, opening).
    Cut,
    /// Leave it (a reader beside the owner: it may be a line being written).
    Skip,
}

/// Applies a journal's whole lines to `ledger`; a torn tail is cut off the file or skipped
/// (`torn`). Returns the length and lines of the whole part. The tail is torn from a last line
/// without its newline (the write was cut off, or is under way), or from the first line holding
/// a zero byte: a power cut during a sync can leave a page of lines written meanwhile unwritten
/// (zeros) under later ones, and none of those lines was covered by a sync that ended (one that
/// ended would have written the zeroed page), so nothing promised is cut. JSON never holds a
/// zero byte; any other damage is [`StoreError::Damaged`].
fn replay(path: &Path, ledger: &mut Ledger, torn: Torn) -> Result<(u64, usize)> {
    let bytes = std::fs::read(path).map_err(io("read", path))?;
    let mut whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let mut lines = 0;
    let mut at = 0;
    for (i, line) in bytes[..whole].split(|b| *b == b'\n').enumerate() {
        let start = at;
        at += line.len() + 1;
        if line.is_empty() {
            continue;
        }
        let record: Record = match serde_json::from_slice(line) {
            Ok(r) => r,
            Err(_) if line.contains(&0) => {
                whole = start;
                break;
            }
            Err(e) => {
                return Err(StoreError::Damaged {
                    path: path.to_owned(),
                    line: i + 1,
                    reason: e.to_string(),
                });
            }
        };
        ledger.apply(&record);
        lines += 1;
    }
    if whole < bytes.len() && torn == Torn::Cut {
        let cut = bytes.len() - whole;
        tracing::warn!(path = %path.display(), "spend store: cutting off a torn tail ({cut} bytes)");
        let f = OpenOptions::new().write(true).open(path).map_err(io("open", path))?;
        f.set_len(whole as u64)
            .and_then(|()| f.sync_all())
            .map_err(io("cut", path))?;
    }
    Ok((whole as u64, lines))
}

/// Opens the journal of `generation` for appending, creating it (and syncing the folder).
fn open_journal(dir: &Path, generation: u64) -> Result<File> {
    let path = journal_path(dir, generation);
    let existed = path.exists();
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(io("open", &path))?;
    if !existed {
        sync_dir(dir)?;
    }
    Ok(f)
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io("sync", dir))
}
