//! Writing a workspace's `jobs.json`: coalesced writes from async code, and the synchronous
//! write of a run's tool mark ([`ToolStarted`]), which must be on disk before the tool runs and is
//! called from the session's event listener (synchronous, on the agent loop).

use super::{JobScheduler, Key};
use crate::job::{JobsFile, RunStatus, SCHEMA_VERSION};
use crate::store::{self, StoreError};
use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Serialises the writes of one workspace's file.
#[derive(Debug, Default)]
pub(super) struct Writes {
    /// Async writers queue here (no thread held while waiting).
    queue: tokio::sync::Mutex<()>,
    /// Held while the file is written; the generation written last.
    file: std::sync::Mutex<u64>,
}

impl Writes {
    fn written(&self) -> std::sync::MutexGuard<'_, u64> {
        self.file.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn unknown_workspace() -> StoreError {
    StoreError::Io {
        path: PathBuf::new(),
        source: std::io::Error::other("unknown workspace"),
    }
}

impl JobScheduler {
    pub(super) async fn persist_logged(&self, ws: u32) {
        if let Err(e) = self.persist(ws).await {
            tracing::error!("cannot save the scheduler's jobs: {e}");
        }
    }

    /// Writes the workspace's jobs if they changed since the last write (coalesced: one write
    /// covers every change made before it started). Returns the workspace's folder.
    pub(super) async fn persist(&self, ws: u32) -> Result<Arc<Path>, StoreError> {
        let Some((path, want, writes)) = self
            .state()
            .ws(ws)
            .map(|w| (w.path.clone(), w.generation, w.writes.clone()))
        else {
            return Err(unknown_workspace());
        };
        let _turn = writes.queue.lock().await;
        if *writes.written() >= want {
            return Ok(path);
        }
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.write_now(ws))
            .await
            .map_err(|e| StoreError::Io {
                path: store::jobs_path(&path),
                source: std::io::Error::other(e),
            })?
    }

    /// Writes the workspace's jobs now, on this thread, unless what is on disk is as new.
    fn write_now(&self, ws: u32) -> Result<Arc<Path>, StoreError> {
        let Some((path, writes)) = self.state().ws(ws).map(|w| (w.path.clone(), w.writes.clone())) else {
            return Err(unknown_workspace());
        };
        let mut written = writes.written();
        let Some((file, generation)) = self.state().ws(ws).map(|w| {
            (
                JobsFile {
                    version: SCHEMA_VERSION,
                    jobs: w.entries().map(|e| e.job.clone()).collect(),
                },
                w.generation,
            )
        }) else {
            return Ok(path);
        };
        if *written >= generation {
            return Ok(path);
        }
        store::save(&store::jobs_path(&path), &file)?;
        *written = generation;
        Ok(path)
    }

    /// Notes in memory that a tool of `key`'s run of `slot` started now; `false` when that run
    /// is gone or already had its mark.
    fn mark_tool(&self, key: Key, job_id: &str, slot: DateTime<Utc>) -> bool {
        let now = self.now();
        let mut st = self.state();
        let Some(run) = st
            .entry_mut(key)
            .filter(|e| e.job.id == job_id)
            .and_then(|e| e.job.running_record(slot))
            .filter(|r| r.status == RunStatus::Running && r.tool_started.is_none())
        else {
            return false;
        };
        run.tool_started = Some(now);
        st.touch(key.ws);
        true
    }
}

/// Records, durably, that a tool of one scheduled run started (see [`ToolStarted::record`]).
#[derive(Clone)]
pub struct ToolStarted {
    scheduler: JobScheduler,
    key: Key,
    job_id: Arc<str>,
    slot: DateTime<Utc>,
    /// The run's prompt started a tool (not counting a watcher's script).
    recorded: Arc<AtomicBool>,
}

impl std::fmt::Debug for ToolStarted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolStarted")
            .field("job_id", &self.job_id)
            .field("slot", &self.slot)
            .field("recorded", &self.was_recorded())
            .finish_non_exhaustive()
    }
}

impl ToolStarted {
    pub(super) fn new(scheduler: JobScheduler, key: Key, job_id: &str, slot: DateTime<Utc>) -> Self {
        ToolStarted {
            scheduler,
            key,
            job_id: job_id.into(),
            slot,
            recorded: Arc::default(),
        }
    }

    /// Records that the first tool of the run's prompt is starting: the run record's
    /// `tool_started` is written to `jobs.json` (temporary file, fsync, rename) and this returns
    /// once it is on disk, so a crash from then on never starts the run again by itself. Blocks
    /// the calling thread for the write (made for a synchronous event listener; on a
    /// multi-threaded tokio runtime the worker's other tasks move elsewhere meanwhile). Calls
    /// after the first return at once. Errors: the file could not be written (the tool then runs
    /// unmarked; the caller logs it).
    pub fn record(&self) -> Result<(), StoreError> {
        if self.recorded.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        if !self.scheduler.mark_tool(self.key, &self.job_id, self.slot) {
            return Ok(());
        }
        let write = || self.scheduler.write_now(self.key.ws).map(|_| ());
        match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(write)
            }
            _ => write(),
        }
    }

    /// Whether [`record`](Self::record) was called for this run.
    pub fn was_recorded(&self) -> bool {
        self.recorded.load(Ordering::SeqCst)
    }

    /// Records that a watcher's script is starting (async; on disk when it returns).
    pub(super) async fn record_script(&self) -> Result<(), StoreError> {
        self.scheduler.mark_tool(self.key, &self.job_id, self.slot);
        self.scheduler.persist(self.key.ws).await.map(|_| ())
    }
}
