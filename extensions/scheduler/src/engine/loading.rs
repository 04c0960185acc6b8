//! Loading workspaces' jobs: at start-up (every workspace) and on first use (a new chat).

use super::WorkspaceOwner;
use super::{CaughtUp, Entry, JobScheduler, Key, LoadReport, Workspace};
use crate::job::{Job, JobOrigin, RunRecord};
use crate::slots::{self, Due};
use crate::store::{self, Loaded, StoreError};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A workspace read from disk, not yet in the scheduler.
struct Read {
    ws: Arc<Path>,
    loaded: Result<Loaded, StoreError>,
}

impl JobScheduler {
    /// Loads every workspace under the configured root that has a jobs file (those already
    /// loaded are kept). Runs a crash or a shutdown cut off are started again once if no tool of
    /// them had started, else recorded `interrupted` ([`slots::on_load`]); overdue jobs are
    /// caught up at once (missed-run rules). What became of each is handed to the host's "while
    /// I was down" report once ([`JobDelivery::while_down`](super::JobDelivery::while_down)),
    /// or told note by note without one.
    pub async fn load_all(&self) -> LoadReport {
        let mut caught = Vec::new();
        let report = self.load_all_into(&mut caught).await;
        self.report_caught_up(caught).await;
        report
    }

    async fn load_all_into(&self, caught: &mut Vec<CaughtUp>) -> LoadReport {
        let _loading = self.inner.loading.lock().await;
        let root = self.inner.config.workspaces_root.clone();
        let read = tokio::task::spawn_blocking(move || {
            let mut out = Vec::new();
            let Ok(dirs) = std::fs::read_dir(&root) else { return out };
            for dir in dirs.flatten() {
                let path = dir.path();
                let file = store::jobs_path(&path);
                if !file.exists() {
                    continue;
                }
                let ws: Arc<Path> = canonical(&path).into();
                out.push(Read {
                    ws,
                    loaded: store::load(&file),
                });
            }
            out
        })
        .await
        .unwrap_or_default();
        let mut report = LoadReport::default();
        for r in read {
            report.workspaces += 1;
            match &r.loaded {
                Ok(Loaded::SetAside { aside, reason }) => report.set_aside.push((aside.clone(), reason.clone())),
                Err(e) => report.errors.push(e.to_string()),
                Ok(Loaded::Missing | Loaded::Ok(_)) => {}
            }
            report.jobs += self.insert(r, Some(&mut *caught)).await;
        }
        // Overdue jobs now, so their catch-up is in the report (the timer finds them done).
        self.fire_due(Some(caught));
        self.inner.wake.notify_one();
        report
    }

    /// The workspace's jobs, loaded on first use. Returns its index.
    pub(super) async fn ensure_loaded(&self, ws: &Path) -> Result<u32, StoreError> {
        let ws: Arc<Path> = canonical(ws).into();
        if let Some(id) = self.state().by_path.get(&ws) {
            return Ok(*id);
        }
        let _loading = self.inner.loading.lock().await;
        if let Some(id) = self.state().by_path.get(&ws) {
            return Ok(*id);
        }
        let key = ws.clone();
        let loaded = tokio::task::spawn_blocking(move || store::load(&store::jobs_path(&key)))
            .await
            .map_err(|e| StoreError::Io {
                path: store::jobs_path(&ws),
                source: std::io::Error::other(e),
            })?;
        if let Ok(Loaded::SetAside { aside, reason }) = &loaded {
            tracing::warn!(file = %aside.display(), "jobs.json was corrupt ({reason}) and was set aside");
        }
        let failed = loaded.as_ref().err().map(|e| e.to_string());
        self.insert(Read { ws: ws.clone(), loaded }, None).await;
        self.inner.wake.notify_one();
        let id = self.state().by_path.get(&ws).copied();
        match (failed, id) {
            (None, Some(id)) => Ok(id),
            // Not loaded: keep the file, refuse to act on it.
            (e, _) => Err(StoreError::Io {
                path: store::jobs_path(&ws),
                source: std::io::Error::other(e.unwrap_or_else(|| "not loaded".into())),
            }),
        }
    }

    /// Puts a read workspace in the state (unless loaded meanwhile); returns its job count. Its
    /// cut-off runs go to `caught` (start-up's report) when given, else their chats are told.
    async fn insert(&self, r: Read, caught: Option<&mut Vec<CaughtUp>>) -> usize {
        let (jobs, set_aside) = match r.loaded {
            Ok(Loaded::Ok(file)) => (file.jobs, None),
            Ok(Loaded::Missing) => (Vec::new(), None),
            Ok(Loaded::SetAside { aside, reason }) => (Vec::new(), Some((aside, reason))),
            Err(e) => {
                tracing::error!(workspace = %r.ws.display(), "cannot read the scheduler's jobs: {e}");
                return 0;
            }
        };
        let now = self.now();
        let mut reruns = Vec::new();
        let mut untold = false;
        let mut entries = Vec::with_capacity(jobs.len());
        let mut changed = false;
        let owner = self.owner(&r.ws);
        let before = jobs.len();
        let jobs = super::retention::kept(jobs, now);
        changed |= jobs.len() != before;
        for mut job in jobs {
            let (bound, runnable) = bind_to_owner(&mut job, owner.as_ref());
            if bound {
                tracing::warn!(
                    workspace = %r.ws.display(),
                    job = %job.id,
                    "a job's chat or origin did not match its workspace's owner: bound to {:?}",
                    owner
                );
                changed = true;
            }
            // Runs a crash or a shutdown left `running`: re-run once, or told (the message rule).
            let records = || job.last_run.as_deref().into_iter().chain(job.history.iter());
            let mut due = Due::Nothing;
            if runnable && records().any(RunRecord::left_unfinished) {
                // Compiled only here: a cron's year table is large and most jobs have no such run.
                let compiled = crate::timing::Compiled::compile(&job.schedule).ok();
                let cut;
                (due, cut) = slots::on_load(&mut job, compiled.as_ref(), now);
                changed |= cut;
            }
            let records = || job.last_run.as_deref().into_iter().chain(job.history.iter());
            untold |= records().any(|r| r.untold);
            let active = if let Due::Start { slot, late } = due {
                reruns.push((entries.len(), job.clone(), slot, late));
                true
            } else {
                false
            };
            if !runnable {
                tracing::warn!(
                    workspace = %r.ws.display(),
                    job = %job.id,
                    "the job's A2A caller acts for no chat (or is no longer configured): kept, not run"
                );
            }
            entries.push(Some(Entry {
                job,
                broken: !runnable,
                due: None,
                active,
            }));
        }
        let count = entries.len();
        let id = {
            let mut st = self.state();
            if st.by_path.contains_key(&r.ws) {
                return 0;
            }
            let Ok(id) = u32::try_from(st.workspaces.len()) else {
                return 0;
            };
            st.workspaces.push(Workspace {
                path: r.ws.clone(),
                jobs: entries,
                set_aside,
                generation: u64::from(changed),
                writes: Arc::default(),
            });
            st.by_path.insert(r.ws.clone(), id);
            for index in 0..u32::try_from(count).unwrap_or(0) {
                st.retime(Key { ws: id, index });
            }
            id
        };
        if changed {
            self.persist_logged(id).await;
        }
        let rerun_lines: Vec<CaughtUp> = reruns
            .iter()
            .map(|(_, job, slot, _)| CaughtUp::rerun(job, *slot))
            .collect();
        for (index, job, slot, late) in reruns {
            let key = Key {
                ws: id,
                index: u32::try_from(index).unwrap_or(u32::MAX),
            };
            tracing::info!(job = %job.id, %slot, "a scheduled run cut off before any tool is run again");
            let me = self.clone();
            tokio::spawn(async move { me.run(key, job, slot, late).await });
        }
        match caught {
            Some(caught) => {
                caught.extend(rerun_lines);
                caught.extend(self.untold_cut_offs(id));
            }
            None if untold => {
                let me = self.clone();
                tokio::spawn(async move { me.tell_each(me.untold_cut_offs(id)).await });
            }
            None => {}
        }
        count
    }
}

/// Binds `job` to its workspace's `owner`: aimed at the owner's chat, and in a caller's
/// workspace the caller's job whatever the file says. Returns `(changed, runnable)`: a caller's
/// job is not runnable when the caller acts for no chat.
fn bind_to_owner(job: &mut Job, owner: Option<&WorkspaceOwner>) -> (bool, bool) {
    let (chat, origin) = match owner {
        None => return (false, true),
        Some(WorkspaceOwner::Chat(chat)) => (Some(*chat), None),
        Some(WorkspaceOwner::Caller { name, chat, .. }) => (*chat, Some(JobOrigin::Caller { name: name.clone() })),
    };
    let mut changed = false;
    if let Some(origin) = origin
        && job.origin != origin
    {
        job.origin = origin;
        changed = true;
    }
    match chat {
        Some(chat) if job.target.chat_id != chat => {
            job.target.chat_id = chat;
            (true, true)
        }
        Some(_) => (changed, true),
        None => (changed, false),
    }
}

/// The canonical form of a workspace path (the same folder reached two ways is one workspace).
pub(crate) fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}
