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
/// The error of a run the bot's shutdown cut off, until the next start resolves it.
pub const SHUTDOWN_CUT_OFF: &str = "cut off by the bot's shutdown; the next start runs it again or says why not";

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
        /// A tool of the run's prompt had started: not retried (a retry could run it twice), the
        /// chat is told instead.
        after_tool: bool,
    },
    /// A quiet check-in had nothing to say: finished like [`Outcome::Ok`], nothing sent.
    Quiet,
    /// Cut off by the host's shutdown: recorded `interrupted` (with `shutdown` set), and the
    /// next start resolves it as after a crash ([`on_load`]).
    CutOff,
    /// Stopped in the chat (`/stop`): recorded `interrupted`, not retried.
    Stopped {
        /// What happened, for the record.
        error: String,
    },
    /// Refused by the host before any model request (a spent allowance): recorded `skipped`
    /// with `why`, not retried, not a failure.
    Skipped {
        /// The host's sentence, for the record.
        why: String,
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

/// Slots a job missed (the bot was down, or the machine asleep) and what the catch-up rule did
/// with them ([`on_due`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missed {
    /// How many (a lower bound past 1,000).
    pub count: u64,
    /// The newest of them.
    pub newest: DateTime<Utc>,
    /// How late the newest is.
    pub late: Duration,
    /// `Some(grace window)`: past it, skipped; `None`: the newest runs now, the older ones
    /// coalesced into it.
    pub skipped: Option<Duration>,
    /// What the chat is told outside a start-up report (`None`: nothing, e.g. one slot run a
    /// moment late).
    pub note: Option<String>,
}

/// The job's time came at `now`. `active` says a run of it is still going. Messages for the chat
/// are pushed on `notes`; the slots found missed, and what became of them, are set in `missed`.
pub fn on_due(
    job: &mut Job,
    compiled: &Compiled,
    now: DateTime<Utc>,
    active: bool,
    notes: &mut Vec<String>,
    missed: &mut Option<Missed>,
) -> Due {
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
                finished: Some(now),
                error: Some("the previous run was still going".into()),
                ..RunRecord::new(newest, RunStatus::Skipped)
            });
            return Due::Nothing;
        }
        let late = now - newest;
        let grace = compiled.grace(newest);
        let skipped = count - 1;
        if late > grace {
            job.missed += count;
            job.push_run(RunRecord {
                finished: Some(now),
                error: Some(format!(
                    "missed while the bot was down; {} late, past the grace window of {}",
                    human(late),
                    human(grace)
                )),
                ..RunRecord::new(newest, RunStatus::Skipped)
            });
            let note = format!(
                "⏰ Job `{}` missed {} while the bot was down; the latest was {} ago, too late to run \
                 now (grace window {}). {}",
                job.id,
                runs(count),
                human(late),
                human(grace),
                next_note(job),
            );
            *missed = Some(Missed {
                count,
                newest,
                late,
                skipped: Some(grace),
                note: Some(note),
            });
            if !compiled.is_recurring() {
                job.enabled = false;
            }
            return Due::Nothing;
        }
        job.missed += skipped;
        *missed = Some(Missed {
            count,
            newest,
            late,
            skipped: None,
            note: (skipped > 0).then(|| {
                format!(
                    "⏰ Job `{}` missed {} while the bot was down; running the latest now ({} late).",
                    job.id,
                    runs(count),
                    human(late)
                )
            }),
        });
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
            restart(run, now);
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
        restart(run, now);
        return run.slot;
    }
    start(job, now, now);
    now
}

/// A new attempt of `run`'s slot starts at `now` (its tool mark is the new attempt's).
fn restart(run: &mut RunRecord, now: DateTime<Utc>) {
    run.status = RunStatus::Running;
    run.attempts += 1;
    run.started = Some(now);
    run.finished = None;
    run.tool_started = None;
}

fn start(job: &mut Job, slot: DateTime<Utc>, now: DateTime<Utc>) {
    job.push_run(RunRecord {
        started: Some(now),
        attempts: 1,
        ..RunRecord::new(slot, RunStatus::Running)
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
        Outcome::Ok { delivery } => succeeded(job, compiled, slot, RunStatus::Ok, delivery),
        Outcome::Quiet => succeeded(job, compiled, slot, RunStatus::Quiet, QUIET_DELIVERY.into()),
        Outcome::CutOff => {
            run.status = RunStatus::Interrupted;
            run.error = Some(SHUTDOWN_CUT_OFF.to_owned());
            run.delivery = Some("not delivered".into());
            run.shutdown = true;
        }
        Outcome::Stopped { error } => {
            run.status = RunStatus::Interrupted;
            run.error = Some(error);
            run.delivery = Some("not delivered".into());
            ended_unretried(job, compiled, slot, newest);
        }
        Outcome::Skipped { why } => {
            run.status = RunStatus::Skipped;
            run.error = Some(why);
            run.delivery = Some(SKIPPED_DELIVERY.into());
            ended_unretried(job, compiled, slot, newest);
        }
        Outcome::Failed {
            error,
            delivery,
            after_tool,
        } => {
            run.status = RunStatus::Error;
            run.error = Some(error);
            run.delivery = delivery;
            if !newest {
                // An older attempt (its slot was left behind): recorded, not retried.
                return;
            }
            if after_tool {
                job.retry_at = None;
                let said = notes.len();
                slot_failed(job, notes);
                let why = "It is not retried by itself: a tool had already started, and a retry could run it \
                           twice. Ask me to run the job now if it should run again.";
                let added = notes.len() > said;
                match notes.last_mut() {
                    Some(n) if added => {
                        n.push(' ');
                        n.push_str(why);
                    }
                    _ => {
                        let error = job
                            .last_run
                            .as_ref()
                            .and_then(|r| r.error.as_deref())
                            .unwrap_or_default();
                        notes.push(format!(
                            "⚠️ Job `{}` failed after a tool had started: {}. {why}",
                            job.id,
                            crate::envelope::clip(error, NOTE_ERROR_CHARS)
                        ));
                    }
                }
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

/// What a skipped run's record says was delivered.
pub const SKIPPED_DELIVERY: &str = "not run: nothing sent to the model";

/// A run of `slot` that is never retried ended (stopped, or skipped): no retry of the newest
/// slot, and a one-shot whose own slot it was is done.
fn ended_unretried(job: &mut Job, compiled: &Compiled, slot: DateTime<Utc>, newest: bool) {
    if newest {
        job.retry_at = None;
    }
    if matches!(compiled, Compiled::At(at) if *at == slot) {
        job.enabled = false;
    }
}

/// What a quiet run's record says was delivered.
pub const QUIET_DELIVERY: &str = "nothing to say (quiet): nothing sent";

/// The run of `slot` ended well (`status` [`RunStatus::Ok`] or [`RunStatus::Quiet`]).
fn succeeded(job: &mut Job, compiled: &Compiled, slot: DateTime<Utc>, status: RunStatus, delivery: String) {
    if let Some(run) = job.running_record(slot) {
        run.status = status;
        run.error = None;
        run.delivery = Some(delivery);
    }
    job.consecutive_failures = 0;
    job.retry_at = None;
    // A one-shot is done when its own slot ran (not an extra `run_now`).
    if matches!(compiled, Compiled::At(at) if *at == slot) {
        job.enabled = false;
    }
}

/// What start-up does with the runs a crash or a shutdown left `running` (`docs/exactly-once.md`:
/// the message rule). The newest is started again, once, when no tool of it had started, it was
/// not re-run already, the job is enabled, no newer slot is due and its slot is still within the
/// grace window; the record is then `running` again (`rerun` set) and its slot returned. Every
/// other is recorded `interrupted` and `untold` (the chat is told, [`cut_off_note`]). `compiled`
/// is `None` for a schedule this build cannot read (never re-run). Returns whether the job
/// changed.
pub fn on_load(job: &mut Job, compiled: Option<&Compiled>, now: DateTime<Utc>) -> (Due, bool) {
    // A run the shutdown recorded `interrupted` is resolved as one a crash left `running`.
    for run in job.last_run.as_deref_mut().into_iter().chain(job.history.iter_mut()) {
        if run.shutdown {
            run.shutdown = false;
            run.status = RunStatus::Running;
            run.finished = None;
            run.error = None;
            run.delivery = None;
        }
    }
    let mut due = Due::Nothing;
    let mut cut: Vec<DateTime<Utc>> = Vec::new();
    let newer_due = job.next_run.is_some_and(|n| n <= now);
    let enabled = job.enabled;
    if let Some(run) = job.last_run.as_deref_mut().filter(|r| r.status == RunStatus::Running) {
        let late = now - run.slot;
        let grace = compiled.map(|c| c.grace(run.slot));
        let why = if run.tool_started.is_some() {
            Some(
                "cut off by a restart after a tool had started; it is not run again by itself (the tool \
                 could run twice): ask me to run the job now if it should"
                    .to_owned(),
            )
        } else if run.rerun {
            Some("cut off by a restart again, after it had been run once more; it is not run again".to_owned())
        } else if !enabled {
            Some("cut off by a restart; the job is paused, so it is not run again".to_owned())
        } else if newer_due {
            Some("cut off by a restart; not run again, as a newer slot is due".to_owned())
        } else {
            match grace {
                Some(g) if late <= g => None,
                Some(g) => Some(format!(
                    "cut off by a restart; too late to run again ({} after its slot, past the grace window of {})",
                    human(late),
                    human(g)
                )),
                None => Some("cut off by a restart; its schedule cannot be read, so it is not run again".to_owned()),
            }
        };
        match why {
            None => {
                run.rerun = true;
                restart(run, now);
                due = Due::Start {
                    slot: run.slot,
                    late: (late > TELL_LATE_AFTER).then_some(late),
                };
            }
            Some(why) => {
                interrupt(run, now, why);
                cut.push(run.slot);
            }
        }
    }
    let mut changed = due != Due::Nothing || !cut.is_empty();
    for run in job.history.iter_mut().filter(|r| r.status == RunStatus::Running) {
        interrupt(run, now, "cut off by a restart; it is not run again".to_owned());
        cut.push(run.slot);
        changed = true;
    }
    // A one-shot whose own slot was cut off for good is done.
    if matches!(job.schedule, crate::job::ScheduleSpec::At { at, .. } if cut.contains(&at)) {
        job.enabled = false;
    }
    (due, changed)
}

fn interrupt(run: &mut RunRecord, now: DateTime<Utc>, why: String) {
    run.status = RunStatus::Interrupted;
    run.finished = Some(now);
    run.error = Some(why);
    run.untold = true;
}

/// What the chat is told about `run`, cut off by a restart ([`on_load`]).
pub fn cut_off_note(job: &Job, run: &RunRecord) -> String {
    let zone = crate::envelope::zone(&job.schedule);
    format!(
        "⏰ The run of job `{}` that started at {} was {}.",
        job.id,
        crate::envelope::local(run.started.unwrap_or(run.slot), zone),
        run.error.as_deref().unwrap_or("cut off by a restart")
    )
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

/// `1 run`, `3 runs`.
pub fn runs(n: u64) -> String {
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
