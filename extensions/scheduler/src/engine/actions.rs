//! What the `schedule` tool and `/jobs` ask of the scheduler, for one chat's workspace.

use super::{Entry, JobScheduler, Key, NewJob, SchedulerError};
use crate::job::{Job, JobTarget};
use crate::slots;
use crate::timing::Compiled;
use chrono::{DateTime, Utc};
use rand::Rng;
use std::path::{Path, PathBuf};

/// A job and its next slots, as the tool shows it.
#[derive(Debug, Clone)]
pub struct JobView {
    /// The stored job.
    pub job: Job,
    /// Up to three next slots.
    pub upcoming: Vec<DateTime<Utc>>,
}

/// Jobs one workspace may hold (model output is untrusted: a loop must not fill the disk).
pub const MAX_JOBS_PER_WORKSPACE: usize = 1000;

/// Longest prompt or watcher instructions, characters.
pub const MAX_TEXT_CHARS: usize = 8000;

impl JobScheduler {
    /// Adds a job to the workspace `ws`, durably, and returns it with its next three slots.
    /// Errors: a schedule that never fires, more than `MAX_JOBS_PER_WORKSPACE` jobs, a text
    /// over `MAX_TEXT_CHARS`, the file cannot be written.
    pub async fn add(&self, ws: &Path, new: NewJob) -> Result<JobView, SchedulerError> {
        let text_len = match &new.kind {
            crate::job::JobKind::Prompt { text } => text.chars().count(),
            crate::job::JobKind::Watcher { text, .. } => text.as_deref().map_or(0, |t| t.chars().count()),
        };
        if text_len > MAX_TEXT_CHARS {
            return Err(SchedulerError::Invalid(format!(
                "the job's text has {text_len} characters; at most {MAX_TEXT_CHARS}: put long instructions in a file in the workspace and refer to it"
            )));
        }
        let ws = self.ensure_loaded(ws).await?;
        let compiled = Compiled::compile(&new.schedule)?;
        let now = self.now();
        let next_run = compiled.next_from(now);
        if next_run.is_none() {
            return Err(SchedulerError::Invalid("this schedule never fires".into()));
        }
        let view = {
            let mut st = self.state();
            let Some(w) = st.ws_mut(ws) else {
                return Err(SchedulerError::Invalid("the workspace was unloaded; try again".into()));
            };
            if w.entries().filter(|e| e.job.enabled).count() >= MAX_JOBS_PER_WORKSPACE {
                return Err(SchedulerError::Invalid(format!(
                    "this chat already has {MAX_JOBS_PER_WORKSPACE} jobs; remove some first"
                )));
            }
            let id = loop {
                let id = new_id();
                if w.find(&id).is_none() {
                    break id;
                }
            };
            let job = Job {
                id: id.clone(),
                target: new.target,
                origin: new.origin,
                kind: new.kind,
                schedule: new.schedule,
                enabled: true,
                quiet: new.quiet,
                created: now,
                next_run,
                last_run: None,
                retry_at: None,
                consecutive_failures: 0,
                missed: 0,
                history: Vec::new(),
            };
            let upcoming = next_run
                .into_iter()
                .chain(compiled.upcoming(next_run.unwrap_or(now), 2))
                .collect();
            let index = w.insert(Entry {
                job: job.clone(),
                broken: false,
                due: None,
                active: false,
            });
            st.touch(ws);
            st.retime(Key { ws, index });
            (JobView { job, upcoming }, Key { ws, index })
        };
        let (view, key) = view;
        if let Err(e) = self.persist(ws).await {
            // Not saved: not scheduled either (the model is told and may try again).
            let mut st = self.state();
            if let Some(entry) = st.entry_mut(key).filter(|e| e.job.id == view.job.id) {
                entry.job.enabled = false;
                st.retime(key);
                if let Some(w) = st.ws_mut(ws) {
                    w.jobs[key.index as usize] = None;
                }
            }
            return Err(e.into());
        }
        self.inner.wake.notify_one();
        Ok(view)
    }

    /// The chat's jobs in `ws`, oldest first, with their next slots.
    pub async fn list(&self, ws: &Path, target: JobTarget) -> Result<Vec<JobView>, SchedulerError> {
        let ws = self.ensure_loaded(ws).await?;
        let st = self.state();
        let Some(w) = st.ws(ws) else {
            return Ok(Vec::new());
        };
        let mut out: Vec<JobView> = w
            .entries()
            .filter(|e| e.job.target.chat_id == target.chat_id)
            .map(|e| JobView {
                job: e.job.clone(),
                upcoming: match (Compiled::compile(&e.job.schedule), e.job.enabled, e.job.next_run) {
                    (Ok(c), true, Some(n)) => std::iter::once(n).chain(c.upcoming(n, 2)).collect(),
                    _ => Vec::new(),
                },
            })
            .collect();
        out.sort_by_key(|v| v.job.created);
        Ok(out)
    }

    /// Jobs waiting for the timer (enabled, with a slot or retry ahead), over all workspaces.
    pub fn pending_timers(&self) -> usize {
        self.state().timers.len()
    }

    /// Waits until no run is in flight (each has recorded its outcome), at most `limit`; for
    /// shutdown, after the sessions' runs ended or were aborted.
    pub async fn wait_runs_recorded(&self, limit: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < deadline {
            let active = self.state().workspaces.iter().any(|w| w.entries().any(|e| e.active));
            if !active && self.inner.recording.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        tracing::warn!("some scheduled runs had not recorded their outcome at shutdown");
    }

    /// Jobs in memory, over all workspaces.
    pub fn job_count(&self) -> usize {
        self.state().workspaces.iter().map(|w| w.entries().count()).sum()
    }

    /// A corrupt jobs file of `ws` that was set aside at load, with what was wrong.
    pub async fn set_aside(&self, ws: &Path) -> Option<(PathBuf, String)> {
        let ws = self.ensure_loaded(ws).await.ok()?;
        self.state().ws(ws).and_then(|w| w.set_aside.clone())
    }

    /// Removes a job of the chat.
    pub async fn remove(&self, ws: &Path, target: JobTarget, id: &str) -> Result<Job, SchedulerError> {
        let ws = self.ensure_loaded(ws).await?;
        let job = {
            let mut st = self.state();
            let Some(key) = st.key_in_chat(ws, id, target.chat_id) else {
                return Err(SchedulerError::NotFound(id.into()));
            };
            let Some(entry) = st
                .ws_mut(ws)
                .and_then(|w| w.jobs.get_mut(key.index as usize))
                .and_then(Option::take)
            else {
                return Err(SchedulerError::NotFound(id.into()));
            };
            if let Some(t) = entry.due {
                st.timers.remove(&(t, key));
            }
            st.touch(ws);
            entry.job
        };
        self.persist(ws).await?;
        Ok(job)
    }

    /// Pauses (`enabled = false`) or resumes a job. Resuming starts from the next slot after now
    /// (slots during the pause are not missed runs) and clears the failure count.
    pub async fn set_enabled(
        &self,
        ws: &Path,
        target: JobTarget,
        id: &str,
        enabled: bool,
    ) -> Result<JobView, SchedulerError> {
        self.change(ws, target, id, |job, compiled, now| {
            if enabled && !job.enabled {
                job.consecutive_failures = 0;
                job.retry_at = None;
                job.next_run = compiled.next_from(now);
                if job.next_run.is_none() {
                    return Err(SchedulerError::Invalid(format!(
                        "job `{}` has no slot left to run; add a new one",
                        job.id
                    )));
                }
            }
            job.enabled = enabled;
            Ok(())
        })
        .await
    }

    /// Makes a prompt job quiet (its model may answer `NOTHING`, and nothing is sent) or not.
    /// Errors: no such job in the chat, a watcher (quiet already when its script prints
    /// nothing), the file cannot be written.
    pub async fn set_quiet(
        &self,
        ws: &Path,
        target: JobTarget,
        id: &str,
        quiet: bool,
    ) -> Result<JobView, SchedulerError> {
        self.change(ws, target, id, |job, _, _| {
            if quiet && !matches!(job.kind, crate::job::JobKind::Prompt { .. }) {
                return Err(SchedulerError::Invalid(crate::tool::QUIET_WATCHER.into()));
            }
            job.quiet = quiet;
            Ok(())
        })
        .await
    }

    /// Runs a job now, outside its schedule (which does not move).
    pub async fn run_now(&self, ws: &Path, target: JobTarget, id: &str) -> Result<JobView, SchedulerError> {
        let view = self
            .change(ws, target, id, |job, _, _| {
                if job.is_running() {
                    return Err(SchedulerError::Busy(job.id.clone()));
                }
                Ok(())
            })
            .await?;
        let ws = self.ensure_loaded(ws).await?;
        let now = self.now();
        let job = {
            let mut st = self.state();
            let Some(key) = st.key_in_chat(ws, id, target.chat_id) else {
                return Err(SchedulerError::NotFound(id.into()));
            };
            let Some(entry) = st.entry_mut(key) else {
                return Err(SchedulerError::NotFound(id.into()));
            };
            if entry.active {
                return Err(SchedulerError::Busy(id.into()));
            }
            entry.active = true;
            let slot = slots::run_now(&mut entry.job, now);
            let job = entry.job.clone();
            st.touch(ws);
            st.retime(key);
            (key, job, slot)
        };
        let (key, job, slot) = job;
        let me = self.clone();
        tokio::spawn(async move { me.run(key, job, slot, None).await });
        Ok(view)
    }

    async fn change(
        &self,
        ws: &Path,
        target: JobTarget,
        id: &str,
        f: impl FnOnce(&mut Job, &Compiled, DateTime<Utc>) -> Result<(), SchedulerError>,
    ) -> Result<JobView, SchedulerError> {
        let ws = self.ensure_loaded(ws).await?;
        let now = self.now();
        let view = {
            let mut st = self.state();
            let Some(key) = st.key_in_chat(ws, id, target.chat_id) else {
                return Err(SchedulerError::NotFound(id.into()));
            };
            let Some(entry) = st.entry_mut(key) else {
                return Err(SchedulerError::NotFound(id.into()));
            };
            let Some(compiled) = super::compile(entry) else {
                return Err(SchedulerError::Invalid(format!(
                    "job `{id}` has a schedule this build cannot read; remove it and add it again"
                )));
            };
            f(&mut entry.job, &compiled, now)?;
            let job = entry.job.clone();
            st.touch(ws);
            st.retime(key);
            let upcoming = match (job.enabled, job.next_run) {
                (true, Some(n)) => std::iter::once(n).chain(compiled.upcoming(n, 2)).collect(),
                _ => Vec::new(),
            };
            JobView { job, upcoming }
        };
        self.persist(ws).await?;
        self.inner.wake.notify_one();
        Ok(view)
    }
}

/// A fresh job id: six characters of `[a-z0-9]`.
fn new_id() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..6)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}
