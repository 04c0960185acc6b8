//! What happens to a job when its time comes and when a run ends: pure functions on a job and
//! its compiled schedule, so every rule (missed slots, grace, overlap, retries, disabling) is
//! tested without a clock or a file.

use crate::job::{Job, RunRecord, RunStatus};
use crate::timing::Compiled;
use chrono::{DateTime, Duration, Utc};

/// Retry delays within a slot: 30 s → 1 m → 5 m → 15 m → 60 m (then every 60 m until the next
/// slot is due).
pub const BACKOFF_SECS: [i64; 5] = [30, 60, 300, 900, 3600];

/// Failed slots in a row after which a job is disabled.
pub const MAX_CONSECUTIVE_FAILURES: u32 = 10;

/// Attempts a one-shot gets (1 + the five backoff steps).
pub const ONE_SHOT_ATTEMPTS: u32 = 1 + BACKOFF_SECS.len() as u32;

/// Slots counted when catching up after a downtime (under the state lock); beyond it the
/// missed count is a lower bound. The newest missed slot is found directly.
const MAX_COUNTED_SLOTS: u64 = 1_000;

/// Errors quoted in a note to the chat, characters.
const NOTE_ERROR_CHARS: usize = 500;

/// A run lateness the chat is told about (a late run says how late it is).
const TELL_LATE_AFTER: Duration = Duration::seconds(60);

/// What to do now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Due {
    /// Nothing to start (the slot was skipped or nothing was due).
    Nothing,
    /// Start an attempt of `slot`; the record is already `running`.
    Start {
        /// The slot.
        slot: DateTime<Utc>,
        /// How late it starts, when the chat should hear of it.
        late: Option<Duration>,
    },
}

/// The outcome of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It worked; `delivery` says what reached the chat.
    Ok {
        /// `sent`, `nothing to send`, ...
        delivery: String,
    },
    /// It failed.
    Failed {
        /// Why (the provider's error, a watcher's stderr, ...).
        error: String,
        /// What happened to the output, if it got that far.
        delivery: Option<String>,
    },
}

/// When the job next needs the timer: the earlier of its next slot and its retry.
pub fn due_at(job: &Job) -> Option<DateTime<Utc>> {
    if !job.enabled {
        return None;
    }
    match (job.next_run, job.retry_at) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The job's time came at `now`. `active` says a run of it is still going. Messages for the chat
/// are pushed on `notes`.
pub fn on_due(job: &mut Job, compiled: &Compiled, now: DateTime<Utc>, active: bool, notes: &mut Vec<String>) -> Due {
    if !job.enabled {
        return Due::Nothing;
    }
    if let Some(first) = job.next_run.filter(|n| *n <= now) {
        // A new slot came while the previous one still waited for a retry: that slot failed.
        if job.retry_at.take().is_some() {
            slot_failed(job, notes);
            if !job.enabled {
                return Due::Nothing;
            }
        }
        let (count, newest) = count_slots(compiled, first, now);
        // Never two slots within the minimum period, whatever the file says (it can be edited).
        let floor = newest + Duration::seconds(crate::timing::MIN_PERIOD_SECS) - Duration::milliseconds(1);
        job.next_run = compiled.next_after(now.max(floor));
        if active {
            job.record_aside(RunRecord {
                slot: newest,
                started: None,
                finished: Some(now),
                status: RunStatus::Skipped,
                attempts: 0,
                error: Some("the previous run was still going".into()),
                delivery: None,
            });
            return Due::Nothing;
        }
        let late = now - newest;
        let grace = compiled.grace(newest);
        let skipped = count - 1;
        if late > grace {
            job.missed += count;
            job.push_run(RunRecord {
                slot: newest,
                started: None,
                finished: Some(now),
                status: RunStatus::Skipped,
                attempts: 0,
                error: Some(format!(
                    "missed while the bot was down; {} late, past the grace window of {}",
                    human(late),
                    human(grace)
                )),
                delivery: None,
            });
            notes.push(format!(
                "⏰ Job `{}` missed {} while the bot was down; the latest was {} ago, too late to run \
                 now (grace window {}). {}",
                job.id,
                runs(count),
                human(late),
                human(grace),
                next_note(job),
            ));
            if !compiled.is_recurring() {
                job.enabled = false;
            }
            return Due::Nothing;
        }
        job.missed += skipped;
        if skipped > 0 {
            notes.push(format!(
                "⏰ Job `{}` missed {} while the bot was down; running the latest now ({} late).",
                job.id,
                runs(count),
                human(late)
            ));
        }
        start(job, newest, now);
        return Due::Start {
            slot: newest,
            late: (late > TELL_LATE_AFTER).then_some(late),
        };
    }
    if job.retry_at.is_some_and(|r| r <= now) {
        job.retry_at = None;
        if active {
            return Due::Nothing;
        }
        if let Some(run) = job.last_run.as_mut() {
            run.status = RunStatus::Running;
            run.attempts += 1;
            run.started = Some(now);
            run.finished = None;
            let slot = run.slot;
            return Due::Start { slot, late: None };
        }
    }
    Due::Nothing
}

/// `run_now`: an extra run outside the schedule (slot = now; the schedule does not move), or,
/// while a failed slot waits for its retry, that retry now. Returns the slot.
pub fn run_now(job: &mut Job, now: DateTime<Utc>) -> DateTime<Utc> {
    if job.retry_at.take().is_some()
        && let Some(run) = job.last_run.as_mut()
    {
        run.status = RunStatus::Running;
        run.attempts += 1;
        run.started = Some(now);
        run.finished = None;
        return run.slot;
    }
    start(job, now, now);
    now
}

fn start(job: &mut Job, slot: DateTime<Utc>, now: DateTime<Utc>) {
    job.push_run(RunRecord {
        slot,
        started: Some(now),
        finished: None,
        status: RunStatus::Running,
        attempts: 1,
        error: None,
        delivery: None,
    });
}

/// The run of `slot` ended at `now` with `outcome`.
pub fn finish(
    job: &mut Job,
    compiled: &Compiled,
    slot: DateTime<Utc>,
    outcome: Outcome,
    now: DateTime<Utc>,
    notes: &mut Vec<String>,
) {
    let newest = job.last_run.as_ref().is_some_and(|r| r.slot == slot);
    let Some(run) = job.running_record(slot) else { return };
    run.finished = Some(now);
    match outcome {
        Outcome::Ok { delivery } => {
            run.status = RunStatus::Ok;
            run.error = None;
            run.delivery = Some(delivery);
            job.consecutive_failures = 0;
            job.retry_at = None;
            // A one-shot is done when its own slot ran (not an extra `run_now`).
            if matches!(compiled, Compiled::At(at) if *at == slot) {
                job.enabled = false;
            }
        }
        Outcome::Failed { error, delivery } => {
            run.status = RunStatus::Error;
            run.error = Some(error);
            run.delivery = delivery;
            if !newest {
                // An older attempt (its slot was left behind): recorded, not retried.
                return;
            }
            let attempts = run.attempts.max(1);
            let step = usize::try_from(attempts - 1)
                .unwrap_or(usize::MAX)
                .min(BACKOFF_SECS.len() - 1);
            let retry = now + Duration::seconds(BACKOFF_SECS[step]);
            let may_retry = if compiled.is_recurring() {
                job.enabled && job.next_run.is_none_or(|n| retry < n)
            } else {
                job.enabled && attempts < ONE_SHOT_ATTEMPTS
            };
            if may_retry {
                job.retry_at = Some(retry);
            } else {
                job.retry_at = None;
                slot_failed(job, notes);
            }
        }
    }
}

/// A slot failed for good (its retries ran out or the next slot came).
fn slot_failed(job: &mut Job, notes: &mut Vec<String>) {
    job.consecutive_failures += 1;
    let error = job.last_run.as_ref().and_then(|r| r.error.as_deref()).map_or_else(
        || "unknown error".into(),
        |e| crate::envelope::clip(e, NOTE_ERROR_CHARS),
    );
    let attempts = job.last_run.as_ref().map_or(1, |r| r.attempts);
    let one_shot = job.next_run.is_none() && matches!(job.schedule, crate::job::ScheduleSpec::At { .. });
    if one_shot {
        job.enabled = false;
        notes.push(format!(
            "⚠️ Job `{}` failed after {attempts} attempt(s) and will not run again. Last error: {error}",
            job.id
        ));
    } else if job.consecutive_failures >= MAX_CONSECUTIVE_FAILURES {
        job.enabled = false;
        notes.push(format!(
            "⚠️ Job `{}` failed {} times in a row and was disabled. Last error: {error}. Fix the cause, \
             then ask me to resume it.",
            job.id, job.consecutive_failures
        ));
    }
}

/// The slots in `[first, now]`: how many (counted up to [`MAX_COUNTED_SLOTS`]) and the newest.
fn count_slots(compiled: &Compiled, first: DateTime<Utc>, now: DateTime<Utc>) -> (u64, DateTime<Utc>) {
    let newest = compiled
        .newest_at_or_before(now)
        .filter(|n| *n > first)
        .unwrap_or(first);
    if let Compiled::Every { period, .. } = compiled {
        let ms = period.num_milliseconds().max(1);
        let n = u64::try_from((newest - first).num_milliseconds() / ms).unwrap_or(0);
        return (1 + n, newest);
    }
    let mut count = 1;
    let mut at = first;
    while count < MAX_COUNTED_SLOTS && at < newest {
        match compiled.next_after(at) {
            Some(n) if n <= newest => {
                at = n;
                count += 1;
            }
            _ => break,
        }
    }
    (count, newest)
}

fn runs(n: u64) -> String {
    if n == 1 { "1 run".into() } else { format!("{n} runs") }
}

fn next_note(job: &Job) -> String {
    match (job.enabled, job.next_run) {
        (true, Some(n)) => format!("Next run: {} UTC.", n.format("%Y-%m-%d %H:%M")),
        _ => "It will not run again.".into(),
    }
}

/// A duration for people: `45 s`, `12 min`, `3 h 5 min`, `2 d 4 h`.
pub fn human(d: Duration) -> String {
    let s = d.num_seconds().max(0);
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..86400 if s % 3600 / 60 == 0 => format!("{} h", s / 3600),
        3600..86400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ if s % 86400 / 3600 == 0 => format!("{} d", s / 86400),
        _ => format!("{} d {} h", s / 86400, s % 86400 / 3600),
    }
}
