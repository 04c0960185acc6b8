//! The inbound journal (`<state_dir>/inbound.jsonl`): every accepted update is appended BEFORE
//! it is handed over and synced to disk before its offset is acknowledged to Telegram, then its
//! progress is recorded (`started`, `tool`, `done`), so after a crash nothing accepted is lost and
//! nothing is answered twice. Records (one JSON object per line):
//!
//! ```text
//! {"t":"update","id":17,"update":{…Bot API Update…}}
//! {"t":"state","id":17,"s":"started"|"tool"|"retried"|"done"}
//! ```
//!
//! What is written and synced when:
//!
//! - Every record is written (`write(2)`) at once, in order: a killed process (`kill -9`, a
//!   panic) loses nothing that was recorded, whatever was synced.
//! - Syncing (`fdatasync`) is grouped: a background thread syncs when asked, and one sync covers
//!   every record written before it. It is asked once updates are handed over (the poll waits
//!   for them, [`Journal::durable`]), by a `done` mark, and by anyone waiting for the disk; a
//!   `started` mark rides along with the next sync. Nothing on the way from an update to its
//!   model request waits for the disk, or wakes the thread (on two cores its wake-up and
//!   `fdatasync` compete with the run being started).
//! - An update is synced before its offset is acknowledged ([`Journal::durable`]: the next
//!   `getUpdates`, or a webhook's 200), and everything recorded is synced before anything else
//!   leaves the bot for Telegram ([`Journal::barrier`], in every message sent, edited or deleted):
//!   no answer is ever seen for an update, or for a run's start, that a power failure could take
//!   back. A `tool` or `retried` mark is synced before [`Journal::mark`] returns (a tool must not
//!   run twice, nor a retry happen twice).
//! - What a power failure (not a process crash) can still do: a `done` mark written just after
//!   the answer left but not yet synced (one sync, milliseconds) is lost, and the update runs
//!   again after the restart, as before; a session file line that reached the disk before the
//!   journal records of its update (nothing was sent yet) makes that prompt appear twice in the
//!   transcript, answered once.
//! - A failed sync stops the bot (exit status 3): after a failed `fdatasync` nothing written
//!   before it can be trusted to be on disk, and Linux reports the failure only once. Restarted,
//!   the bot recovers from the journal as after a crash, and Telegram resends what was not
//!   acknowledged.
//!
//! At start-up the journal is read, finished updates are dropped and the rest rewritten
//! atomically (it only ever holds unfinished work plus the highest update id seen).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use tokio::sync::watch;

/// The exit status after a failed sync of the journal.
const EXIT_SYNC_FAILED: i32 = 3;

/// How far an accepted update got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Progress {
    /// Persisted, not yet run.
    Accepted,
    /// A run with it started.
    Started,
    /// It was retried once after a crash.
    Retried,
    /// A tool ran for it (not safe to retry automatically).
    Tool,
    /// Answered (or nothing to answer).
    Done,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "lowercase")]
enum Record<'a> {
    /// Borrowed when written (an update is not copied to be journaled).
    Update {
        id: i64,
        update: Cow<'a, Value>,
    },
    State {
        id: i64,
        s: Progress,
    },
    Seen {
        id: i64,
    },
}

/// An update that was accepted but not finished when the bot last stopped.
#[derive(Debug, Clone)]
pub struct Unfinished {
    /// `update_id`.
    pub id: i64,
    /// The update as received.
    pub update: Value,
    /// How far it got.
    pub progress: Progress,
}

/// The journal file.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    /// The append handle; held while a record is written, never while syncing.
    file: Mutex<File>,
    last_id: Mutex<Option<i64>>,
    sync: Arc<GroupSync>,
    syncer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// Waiting for accepted updates to be on disk ([`Journal::durable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "acknowledge the updates only after Journal::durable"]
pub struct Durable(u64);

/// Group commit: records are numbered as they are written; one `fdatasync` makes every record
/// written before it durable. One sync runs at a time, in the background thread or in a caller
/// that must not go on before its record is durable.
#[derive(Debug)]
struct GroupSync {
    /// A handle to sync through (a second descriptor of the journal).
    file: File,
    state: Mutex<SyncState>,
    changed: Condvar,
    /// The number of records known durable, for async waiters.
    synced: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct SyncState {
    /// Records written so far.
    written: u64,
    /// Records known durable.
    synced: u64,
    /// Records someone asked to be durable (the background thread syncs while this is ahead).
    requested: u64,
    /// A sync is running.
    syncing: bool,
    /// The journal is being dropped: the background thread syncs what is left and stops.
    stop: bool,
}

impl GroupSync {
    fn lock(&self) -> MutexGuard<'_, SyncState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one more written record (under the file lock, so numbers follow the file);
    /// returns its number. `sync_soon`: ask the background thread to sync it now.
    fn written(&self, sync_soon: bool) -> u64 {
        let mut st = self.lock();
        st.written += 1;
        if sync_soon {
            st.requested = st.written;
            self.changed.notify_all();
        }
        st.written
    }

    /// Asks the background thread to sync up to record `n` (if not yet durable).
    fn request(&self, n: u64) {
        let mut st = self.lock();
        if st.synced < n && st.requested < n {
            st.requested = n;
            self.changed.notify_all();
        }
    }

    /// Records written so far.
    fn written_so_far(&self) -> u64 {
        self.lock().written
    }

    /// Returns once record `n` is durable, syncing if no sync is running.
    fn wait(&self, n: u64) {
        let mut st = self.lock();
        while st.synced < n {
            if st.syncing {
                st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            st.syncing = true;
            let target = st.written;
            drop(st);
            if let Err(e) = self.file.sync_data() {
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
    async fn wait_async(&self, n: u64) {
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
    fn run(&self) {
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

impl Journal {
    /// Opens (or creates) the journal; returns it, the unfinished updates in id order, and the
    /// highest update id ever accepted.
    pub fn open(state_dir: &Path) -> std::io::Result<(Journal, Vec<Unfinished>)> {
        std::fs::create_dir_all(state_dir)?;
        let path = state_dir.join("inbound.jsonl");
        let mut updates: BTreeMap<i64, (Value, Progress)> = BTreeMap::new();
        let mut last_id: Option<i64> = None;
        if let Ok(f) = File::open(&path) {
            for (n, line) in std::io::BufReader::new(f).lines().enumerate() {
                let line = line?;
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<Record>(&line) {
                    Ok(Record::Update { id, update }) => {
                        last_id = last_id.max(Some(id));
                        updates.insert(id, (update.into_owned(), Progress::Accepted));
                    }
                    Ok(Record::State { id, s }) => {
                        if let Some(u) = updates.get_mut(&id) {
                            u.1 = u.1.max(s);
                        }
                    }
                    Ok(Record::Seen { id }) => last_id = last_id.max(Some(id)),
                    // A torn last line from a crash mid-append: that update was never acknowledged,
                    // so Telegram sends it again.
                    Err(e) => {
                        tracing::warn!(file = %path.display(), line = n + 1, "skipping unreadable journal line: {e}")
                    }
                }
            }
        }
        let unfinished: Vec<Unfinished> = updates
            .into_iter()
            .filter(|(_, (_, p))| *p != Progress::Done)
            .map(|(id, (update, progress))| Unfinished { id, update, progress })
            .collect();
        // Rewrite with only what is still needed.
        let mut text = String::new();
        if let Some(id) = last_id {
            text.push_str(&line(&Record::Seen { id }));
        }
        for u in &unfinished {
            text.push_str(&line(&Record::Update {
                id: u.id,
                update: Cow::Borrowed(&u.update),
            }));
            if u.progress != Progress::Accepted {
                text.push_str(&line(&Record::State {
                    id: u.id,
                    s: u.progress,
                }));
            }
        }
        super::store_file::write_atomic(&path, text.as_bytes())?;
        let file = OpenOptions::new().append(true).open(&path)?;
        let sync = Arc::new(GroupSync {
            file: file.try_clone()?,
            state: Mutex::new(SyncState::default()),
            changed: Condvar::new(),
            synced: watch::Sender::new(0),
        });
        let syncer = {
            let sync = sync.clone();
            std::thread::Builder::new()
                .name("journal-sync".into())
                .spawn(move || sync.run())?
        };
        Ok((
            Journal {
                path,
                file: Mutex::new(file),
                last_id: Mutex::new(last_id),
                sync,
                syncer: Mutex::new(Some(syncer)),
            },
            unfinished,
        ))
    }

    /// Writes `text` (whole records) at the end; returns the number to wait for.
    /// `sync_soon`: have the background thread sync it at once.
    fn write(&self, text: &str, sync_soon: bool) -> std::io::Result<u64> {
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        f.write_all(text.as_bytes())?;
        Ok(self.sync.written(sync_soon))
    }

    /// Waits until the updates of an [`accept`](Self::accept) are on disk: acknowledge them to
    /// Telegram only after this.
    pub async fn durable(&self, d: Durable) {
        self.sync.wait_async(d.0).await;
    }

    /// Waits until everything recorded so far is on disk. Anything sent to Telegram waits for
    /// this first, so no one ever sees an answer that a power failure could make the bot forget
    /// it gave (or even received the message for).
    pub async fn barrier(&self) {
        let n = self.sync.written_so_far();
        self.sync.wait_async(n).await;
    }

    /// The highest update id accepted so far.
    pub fn last_id(&self) -> Option<i64> {
        *self.last_id.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends a batch of updates; returns those not seen before (repeats of an `update_id` are
    /// ignored), to hand over at once, and what to wait for before the offset may move past them
    /// ([`durable`](Self::durable)). An error means nothing was accepted (not written).
    pub fn accept(&self, batch: Vec<(i64, Value)>) -> std::io::Result<(Vec<(i64, Value)>, Durable)> {
        let mut last = self.last_id.lock().unwrap_or_else(|e| e.into_inner());
        // A repeat inside one batch counts as a repeat too.
        let mut in_batch = std::collections::HashSet::new();
        let fresh: Vec<(i64, Value)> = batch
            .into_iter()
            .filter(|(id, _)| last.is_none_or(|l| *id > l) && in_batch.insert(*id))
            .collect();
        if fresh.is_empty() {
            // Repeats: their first delivery's records must be on disk before this one is
            // acknowledged too (a sync is asked for only once that delivery was handed over).
            return Ok((fresh, Durable(self.sync.written_so_far())));
        }
        let mut text = String::new();
        for (id, update) in &fresh {
            text.push_str(&line(&Record::Update {
                id: *id,
                update: Cow::Borrowed(update),
            }));
        }
        // Synced once they are handed over: `durable` asks for it.
        let n = self.write(&text, false)?;
        *last = fresh.iter().map(|(id, _)| *id).max().max(*last);
        Ok((fresh, Durable(n)))
    }

    /// Records progress of an update (best effort: a failure is logged). `tool` and `retried`
    /// are durable when this returns; `started` and `done` are synced in the background (see the
    /// module docs).
    pub fn mark(&self, id: i64, progress: Progress) {
        // `done` is synced soon (a power failure then cannot make the update run again);
        // `started` waits for the next sync (the barrier before anything reaches Telegram).
        let sync_soon = progress == Progress::Done;
        match self.write(&line(&Record::State { id, s: progress }), sync_soon) {
            Ok(n) if matches!(progress, Progress::Tool | Progress::Retried) => {
                volcanic_core::blocking::run(|| self.sync.wait(n));
            }
            Ok(_) => {}
            Err(e) => tracing::error!(file = %self.path.display(), "cannot record update progress: {e}"),
        }
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.sync.lock().stop = true;
        self.sync.changed.notify_all();
        let syncer = self.syncer.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = syncer {
            let _ = t.join();
        }
    }
}

fn line(r: &Record<'_>) -> String {
    let mut s = serde_json::to_string(r).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepted_updates_survive_and_repeats_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let (j, unfinished) = Journal::open(dir.path()).unwrap();
        assert!(unfinished.is_empty() && j.last_id().is_none());
        let (fresh, _) = j
            .accept(vec![(1, json!({"update_id": 1})), (2, json!({"update_id": 2}))])
            .unwrap();
        assert_eq!(fresh.len(), 2);
        assert!(j.accept(vec![(2, json!({"update_id": 2}))]).unwrap().0.is_empty());
        j.mark(1, Progress::Started);
        j.mark(1, Progress::Done);
        j.mark(2, Progress::Started);
        j.mark(2, Progress::Tool);
        drop(j);
        // A torn line at the end is skipped.
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join("inbound.jsonl"))
            .unwrap();
        f.write_all(b"{\"t\":\"update\",\"id\":3,\"upd").unwrap();
        drop(f);
        let (j, unfinished) = Journal::open(dir.path()).unwrap();
        assert_eq!(j.last_id(), Some(2));
        assert_eq!(unfinished.len(), 1);
        assert_eq!((unfinished[0].id, unfinished[0].progress), (2, Progress::Tool));
        // The rewrite kept the highest id even after everything is done.
        j.mark(2, Progress::Done);
        drop(j);
        let (j, unfinished) = Journal::open(dir.path()).unwrap();
        assert!(unfinished.is_empty());
        assert_eq!(j.last_id(), Some(2));
    }

    #[test]
    fn a_repeat_inside_one_batch_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let (j, _) = Journal::open(dir.path()).unwrap();
        let (fresh, _) = j
            .accept(vec![(4, json!({"update_id": 4})), (4, json!({"update_id": 4}))])
            .unwrap();
        assert_eq!(fresh.len(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn records_are_written_at_once_and_synced_in_the_background() {
        let dir = tempfile::tempdir().unwrap();
        let (j, _) = Journal::open(dir.path()).unwrap();
        let (fresh, durable) = j.accept(vec![(7, json!({"update_id": 7}))]).unwrap();
        assert_eq!(fresh.len(), 1);
        // In the file before any sync was waited for: a killed process keeps it.
        let text = std::fs::read_to_string(dir.path().join("inbound.jsonl")).unwrap();
        assert!(text.contains("\"id\":7"), "{text}");
        j.durable(durable).await;
        assert!(j.sync.lock().synced >= 1);
        for n in 0..50 {
            j.mark(7, if n % 2 == 0 { Progress::Started } else { Progress::Done });
        }
        j.barrier().await;
        let (synced, written) = {
            let st = j.sync.lock();
            (st.synced, st.written)
        };
        assert_eq!((synced, written), (51, 51));
        // A tool mark is durable when `mark` returns.
        j.mark(7, Progress::Tool);
        assert_eq!(j.sync.lock().synced, 52);
        // Nothing to wait for: repeats only.
        let (fresh, durable) = j.accept(vec![(7, json!({"update_id": 7}))]).unwrap();
        assert!(fresh.is_empty());
        j.durable(durable).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn only_what_must_be_durable_soon_wakes_the_sync_thread() {
        let dir = tempfile::tempdir().unwrap();
        let (j, _) = Journal::open(dir.path()).unwrap();
        let (_, durable) = j.accept(vec![(8, json!({"update_id": 8}))]).unwrap();
        j.mark(8, Progress::Started);
        // Neither the accepted update (until it is handed over and waited for) nor a `started`
        // mark asks for a sync; give a woken thread time to show.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let (synced, requested) = {
            let st = j.sync.lock();
            (st.synced, st.requested)
        };
        assert_eq!((synced, requested), (0, 0));
        j.durable(durable).await;
        assert!(j.sync.lock().synced >= 1);
        // `done` is synced without anyone waiting.
        j.mark(8, Progress::Done);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while j.sync.lock().synced < 3 {
            assert!(std::time::Instant::now() < deadline, "the done mark was never synced");
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
}
