//! How long finished one-shots stay (docs/scheduling.md, "Storage"): a one-shot that ran (or
//! failed for good, or was skipped) stays listed, disabled, with its run record, so `/jobs` and
//! the `list` action show what became of it; then it is dropped. Without this every reminder
//! ever made stayed in memory and in `jobs.json`, growing with the jobs made (issue 25, the
//! soak). Applied when a workspace is loaded and after each run, and written to the file then.

use super::{Entry, Key, State};
use crate::job::{Job, ScheduleSpec};
use chrono::{DateTime, Utc};

/// Finished one-shots stay this long after they finished, days.
pub const KEEP_FINISHED_DAYS: i64 = 7;

/// At most this many finished one-shots stay per workspace (a chat's, or a caller's): the newest.
pub const KEEP_FINISHED: usize = 20;

/// When `job` finished, if it is a finished one-shot at `now`: disabled, no retry due, no run
/// going or left for the next start to resolve, and its instant passed (a paused one-shot still
/// to come is not finished; one whose instant passed while paused can never run again, so it
/// is). The instant is its newest run's
/// end, or its own instant when later (or no run ended).
fn finished_at(job: &Job, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let ScheduleSpec::At { at, .. } = job.schedule else {
        return None;
    };
    let unresolved = job.last_run.as_ref().is_some_and(|r| r.left_unfinished());
    if job.enabled || job.retry_at.is_some() || job.is_running() || unresolved || at > now {
        return None;
    }
    Some(job.last_run.as_ref().and_then(|r| r.finished).map_or(at, |f| f.max(at)))
}

/// Which of `jobs` (index, job) to drop at `now`: finished one-shots that finished more than
/// [`KEEP_FINISHED_DAYS`] ago, or are past the [`KEEP_FINISHED`] newest. Ascending indices.
pub(super) fn to_drop<'a>(jobs: impl Iterator<Item = (usize, &'a Job)>, now: DateTime<Utc>) -> Vec<usize> {
    let mut finished: Vec<(DateTime<Utc>, usize)> =
        jobs.filter_map(|(i, job)| Some((finished_at(job, now)?, i))).collect();
    // Newest first; the index breaks ties so the order does not depend on the sort.
    finished.sort_unstable_by(|a, b| b.cmp(a));
    let keep_since = now - chrono::Duration::days(KEEP_FINISHED_DAYS);
    let mut out: Vec<usize> = finished
        .into_iter()
        .enumerate()
        .filter(|(rank, (at, _))| *rank >= KEEP_FINISHED || *at < keep_since)
        .map(|(_, (_, i))| i)
        .collect();
    out.sort_unstable();
    out
}

/// `jobs` without the finished one-shots [`to_drop`] names (a workspace being loaded).
pub(super) fn kept(mut jobs: Vec<Job>, now: DateTime<Utc>) -> Vec<Job> {
    let gone = to_drop(jobs.iter().enumerate(), now);
    let mut index = 0;
    // One pass: `gone` is ascending, so a binary search tells each index.
    jobs.retain(|_| {
        let keep = gone.binary_search(&index).is_err();
        index += 1;
        keep
    });
    jobs
}

impl State {
    /// Drops workspace `ws`'s finished one-shots [`to_drop`] names (their table places freed for
    /// reuse), marking it changed when any went; returns how many.
    pub(super) fn drop_finished(&mut self, ws: u32, now: DateTime<Utc>) -> usize {
        let Some(w) = self.ws_mut(ws) else { return 0 };
        let gone = to_drop(
            w.jobs
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.as_ref().filter(|e| !e.active).map(|e| (i, &e.job))),
            now,
        );
        let mut timers = Vec::new();
        for &i in &gone {
            if let Some(Entry { due: Some(t), .. }) = w.jobs[i].take() {
                timers.push((t, i));
            }
        }
        for (t, i) in timers {
            let index = u32::try_from(i).unwrap_or(u32::MAX);
            self.timers.remove(&(t, Key { ws, index }));
        }
        if !gone.is_empty() {
            self.touch(ws);
        }
        gone.len()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::job::{JobKind, JobTarget, RunRecord, RunStatus};

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    /// A one-shot at `at`; ran and finished at `finished` (then disabled) when given.
    fn one_shot(id: &str, at: &str, finished: Option<&str>) -> Job {
        let mut job = Job {
            id: id.into(),
            target: JobTarget {
                chat_id: 42,
                topic: None,
            },
            origin: Default::default(),
            kind: JobKind::Prompt { text: id.into() },
            schedule: ScheduleSpec::At {
                at: utc(at),
                time_zone: "UTC".into(),
            },
            enabled: finished.is_none(),
            quiet: false,
            created: utc("2026-01-01T00:00:00Z"),
            next_run: None,
            last_run: None,
            retry_at: None,
            consecutive_failures: 0,
            missed: 0,
            history: Vec::new(),
        };
        if let Some(f) = finished {
            let mut run = RunRecord::new(utc(at), RunStatus::Ok);
            run.finished = Some(utc(f));
            job.push_run(run);
        }
        job
    }

    const NOW: &str = "2026-12-10T12:00:00Z";

    #[test]
    fn finished_one_shots_go_after_seven_days_from_their_end() {
        let jobs = [
            // Finished 7 days and 1 s ago: dropped.
            one_shot("old", "2026-12-03T11:59:00Z", Some("2026-12-03T11:59:59Z")),
            // Due long ago but its (late) run ended 6 days ago: kept.
            one_shot("late", "2026-11-01T09:00:00Z", Some("2026-12-04T12:00:00Z")),
            // Not run yet: kept, however old its instant (it is still to run, late).
            one_shot("pending", "2026-11-01T09:00:00Z", None),
        ];
        assert_eq!(to_drop(jobs.iter().enumerate(), utc(NOW)), vec![0]);
    }

    #[test]
    fn at_most_the_twenty_newest_finished_stay() {
        let mut jobs: Vec<Job> = (0..25)
            .map(|i| {
                let end = format!("2026-12-10T10:{i:02}:00Z");
                one_shot(&format!("j{i}"), "2026-12-10T09:00:00Z", Some(&end))
            })
            .collect();
        // A paused one-shot still to come and a recurring job are never counted or dropped.
        let mut paused = one_shot("paused", "2026-12-24T09:00:00Z", None);
        paused.enabled = false;
        jobs.push(paused);
        let kept: Vec<String> = kept(jobs, utc(NOW)).into_iter().map(|j| j.id).collect();
        let mut want: Vec<String> = (5..25).map(|i| format!("j{i}")).collect();
        want.push("paused".into());
        assert_eq!(kept, want);
    }

    #[test]
    fn a_one_shot_paused_past_its_instant_is_finished() {
        let mut job = one_shot("p", "2026-12-01T09:00:00Z", None);
        job.enabled = false;
        assert_eq!(finished_at(&job, utc(NOW)), Some(utc("2026-12-01T09:00:00Z")));
        job.retry_at = Some(utc(NOW));
        assert_eq!(finished_at(&job, utc(NOW)), None, "a retry is still due");
    }
}
