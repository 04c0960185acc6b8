//! Start-up's catch-up, reported: what the missed-run rule and the cut-off rule did with each
//! job's slots while the bot was down ([`CaughtUp`]), handed once to the host's "while I was
//! down" report ([`JobDelivery::while_down`](super::JobDelivery::while_down)); without one, each
//! is told by its own note, as the timer tells slots missed while the machine slept.

use super::JobScheduler;
use crate::envelope::{local, what, zone};
use crate::job::{Job, JobTarget, RunRecord, RunStatus};
use crate::slots::{Missed, human, runs};
use chrono::{DateTime, Utc};

/// What start-up's catch-up did with one of a job's slots (the bot was down).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaughtUp {
    /// The job's chat (and topic).
    pub target: JobTarget,
    /// Names the slot and what happened to it (`j<job>@<slot>:<skipped|ran|rerun|cut>`): the
    /// report never tells one twice.
    pub key: String,
    /// The report's line, times in the job's zone (the chat's when it was made).
    pub line: String,
    /// What the chat is told without a report (`None`: nothing, as a slot run a moment late).
    pub note: Option<String>,
    /// A cut-off run recorded `interrupted` and not told yet: `(workspace, job id, slot)`,
    /// marked told once a report or its note took it.
    told: Option<(u32, String, DateTime<Utc>)>,
}

impl CaughtUp {
    /// Slots `m` the job missed: skipped, run now, or coalesced into the newest run now.
    pub(super) fn missed(job: &Job, m: &Missed) -> CaughtUp {
        let tz = zone(&job.schedule);
        let newest = local(m.newest, tz);
        let (kind, happened) = match (m.skipped, m.count) {
            (Some(grace), 1) => (
                "skipped",
                format!(
                    "its {newest} run was missed; skipped: {} late, past its grace window of {}.",
                    human(m.late),
                    human(grace)
                ),
            ),
            (Some(grace), n) => (
                "skipped",
                format!(
                    "missed {} (the latest {newest}); skipped: {} late, past its grace window of {}.",
                    runs(n),
                    human(m.late),
                    human(grace)
                ),
            ),
            (None, 1) => (
                "ran",
                format!("its {newest} run was missed; run now, {} late.", human(m.late)),
            ),
            (None, n) => (
                "ran",
                format!(
                    "missed {} (the latest {newest}); the latest was run now, the others coalesced into it.",
                    runs(n)
                ),
            ),
        };
        CaughtUp {
            target: job.target,
            key: key(job, m.newest, kind),
            line: format!("Job {} ({}): {happened}", job.id, what(&job.kind)),
            note: m.note.clone(),
            told: None,
        }
    }

    /// A run cut off by the crash or shutdown, started again (no tool of it had started).
    pub(super) fn rerun(job: &Job, slot: DateTime<Utc>) -> CaughtUp {
        let at = local(slot, zone(&job.schedule));
        CaughtUp {
            target: job.target,
            key: key(job, slot, "rerun"),
            line: format!(
                "Job {} ({}): its {at} run was cut off before any tool ran; run again now.",
                job.id,
                what(&job.kind)
            ),
            note: None,
            told: None,
        }
    }

    /// A run cut off by the crash or shutdown and recorded `interrupted` (not run again), in
    /// workspace `ws`.
    pub(super) fn cut(ws: u32, job: &Job, run: &RunRecord) -> CaughtUp {
        let at = local(run.started.unwrap_or(run.slot), zone(&job.schedule));
        let why = run.error.as_deref().unwrap_or("cut off by a restart");
        CaughtUp {
            target: job.target,
            key: key(job, run.slot, "cut"),
            line: format!(
                "Job {} ({}): its run that started {at} was {why}.",
                job.id,
                what(&job.kind)
            ),
            note: Some(crate::slots::cut_off_note(job, run)),
            told: Some((ws, job.id.clone(), run.slot)),
        }
    }
}

fn key(job: &Job, slot: DateTime<Utc>, kind: &str) -> String {
    format!("j{}@{}:{kind}", job.id, slot.to_rfc3339())
}

impl JobScheduler {
    /// Hands `caught` to the host's report (or tells each note when there is none), then
    /// records the cut-off runs it took as told.
    pub(super) async fn report_caught_up(&self, caught: Vec<CaughtUp>) {
        match self.inner.config.delivery.while_down(&caught).await {
            Ok(()) => self.mark_all_told(caught.into_iter().filter_map(|c| c.told)).await,
            Err(e) => {
                tracing::debug!("catch-up told note by note: {e}");
                self.tell_each(caught).await;
            }
        }
    }

    /// Tells each of `caught` that has a note by that note, then records the cut-off runs whose
    /// chat has it (or that had nothing to tell) as told; one not told is told again after the
    /// next restart.
    pub(super) async fn tell_each(&self, caught: Vec<CaughtUp>) {
        let mut told = Vec::new();
        for c in caught {
            if let Some(note) = c.note
                && let Err(e) = self.inner.config.delivery.notify(c.target, note).await
            {
                tracing::warn!(job = %c.key, "the chat could not be told of a missed or cut-off run (told again after the next restart if it was cut off): {e}");
                continue;
            }
            told.extend(c.told);
        }
        self.mark_all_told(told).await;
    }

    /// The runs of workspace `ws` recorded `interrupted` and not told yet.
    pub(super) fn untold_cut_offs(&self, ws: u32) -> Vec<CaughtUp> {
        let st = self.state();
        st.ws(ws)
            .into_iter()
            .flat_map(|w| w.entries())
            .flat_map(|e| {
                let records = e.job.last_run.as_deref().into_iter().chain(e.job.history.iter());
                records
                    .filter(|r| r.status == RunStatus::Interrupted && r.untold)
                    .map(|r| CaughtUp::cut(ws, &e.job, r))
            })
            .collect()
    }

    /// Records each `(workspace, job id, slot)` of `told` as told ([`mark_told`](Self::mark_told))
    /// and writes the workspaces that changed.
    async fn mark_all_told(&self, told: impl IntoIterator<Item = (u32, String, DateTime<Utc>)>) {
        let mut touched = Vec::new();
        for (ws, id, slot) in told {
            if self.mark_told(ws, &id, slot) && !touched.contains(&ws) {
                touched.push(ws);
            }
        }
        for ws in touched {
            self.persist_logged(ws).await;
        }
    }

    /// Records the `interrupted` run of `slot` of job `id` in workspace `ws` as told; returns
    /// whether the job is still there.
    fn mark_told(&self, ws: u32, id: &str, slot: DateTime<Utc>) -> bool {
        let mut st = self.state();
        let found = st
            .ws_mut(ws)
            .and_then(|w| w.jobs.iter_mut().flatten().find(|e| e.job.id == id))
            .map(|e| {
                for r in e
                    .job
                    .last_run
                    .as_deref_mut()
                    .into_iter()
                    .chain(e.job.history.iter_mut())
                {
                    if r.slot == slot && r.status == RunStatus::Interrupted {
                        r.untold = false;
                    }
                }
            })
            .is_some();
        if found {
            st.touch(ws);
        }
        found
    }
}
