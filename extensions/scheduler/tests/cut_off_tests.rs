//! Runs cut off by a crash or a shutdown follow the bot's message rule, on a manual clock: a run
//! no tool of which had started is started again once; a run cut off after a tool started (or a
//! second time) is recorded `interrupted` and the chat told, once; a run aborted after a tool
//! started is never `ok`, and a failed one is not retried. A "crash" stops the first scheduler's
//! timer with its run held forever and starts a second scheduler on the same folder.

mod support;

use support::{CHAT, Harness, utc};
use volcanic_scheduler::job::{JobKind, RunStatus, ScheduleSpec};
use volcanic_scheduler::{DeliveryError, JobOrigin, ManualClock, NewJob};

const SLOT: &str = "2026-12-01T09:00:00Z";

fn daily() -> ScheduleSpec {
    ScheduleSpec::Cron {
        expr: "0 9 * * *".into(),
        time_zone: "UTC".into(),
    }
}

async fn add(h: &Harness, kind: JobKind, schedule: ScheduleSpec) -> String {
    let new = NewJob {
        target: CHAT,
        origin: JobOrigin::Chat,
        kind,
        schedule,
        quiet: false,
    };
    h.scheduler
        .add(&h.ws, new)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .job
        .id
}

/// A daily 09:00 prompt whose first run is going (held) at 09:00; `tool`: it started a tool.
async fn running_daily(dir: &std::path::Path, clock: &ManualClock, tool: bool) -> Harness {
    clock.set(utc("2026-12-01T08:59:00Z"));
    let h = Harness::start(dir, clock.clone()).await;
    h.delivery.tool.store(tool, std::sync::atomic::Ordering::SeqCst);
    let _held = h.delivery.hold_runs();
    add(
        &h,
        JobKind::Prompt {
            text: "daily report".into(),
        },
        daily(),
    )
    .await;
    clock.set(utc(SLOT));
    h.delivery.wait_runs(1).await;
    h
}

/// Restarts on `dir` at `at` (the previous scheduler's timer stopped: a crash).
async fn restart(h: Harness, dir: &std::path::Path, clock: &ManualClock, at: &str) -> Harness {
    h.stop();
    clock.set(utc(at));
    Harness::start(dir, clock.clone()).await
}

#[tokio::test]
async fn a_crash_before_any_tool_reruns_once_and_a_second_crash_is_told() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc(SLOT));
    let h = running_daily(dir.path(), &clock, false).await;
    let stored = h.stored();
    assert_eq!(stored["jobs"][0]["last_run"]["status"], "running");
    assert!(
        stored["jobs"][0]["last_run"].get("tool_started").is_none(),
        "{stored:#}"
    );

    // First crash: the slot is started again, once, recorded as such before it runs.
    let h2 = restart(h, dir.path(), &clock, "2026-12-01T09:05:00Z").await;
    let _held = h2.delivery.hold_runs();
    h2.delivery.wait_runs(1).await;
    assert_eq!(h2.delivery.slots(), [utc(SLOT)]);
    let prompt = h2.delivery.runs.lock().map(|r| r[0].prompt.clone()).unwrap_or_default();
    assert!(prompt.contains("running 5 min late"), "{prompt}");
    let run = &h2.stored()["jobs"][0]["last_run"];
    assert_eq!(
        (run["status"].as_str(), run["rerun"].as_bool()),
        (Some("running"), Some(true))
    );
    assert_eq!(run["attempts"], 2);
    assert!(h2.delivery.notes().is_empty(), "a re-run is not a failure to tell");

    // Second crash: not a third start; interrupted, and the chat told once.
    let h3 = restart(h2, dir.path(), &clock, "2026-12-01T09:10:00Z").await;
    let note = h3.delivery.wait_note("cut off by a restart again").await;
    assert!(note.contains("not run again"), "{note}");
    let stored = h3
        .wait_stored("told, on disk", |v| {
            v["jobs"][0]["last_run"]["status"] == "interrupted" && v["jobs"][0]["last_run"].get("untold").is_none()
        })
        .await;
    assert_eq!(stored["jobs"][0]["next_run"], "2026-12-02T09:00:00Z");
    assert_eq!(h3.delivery.run_count(), 0);
    assert_eq!(h3.delivery.notes().len(), 1);

    // The next slot runs as usual.
    clock.set(utc("2026-12-02T09:00:00Z"));
    h3.delivery.wait_runs(1).await;
    assert_eq!(h3.delivery.slots(), [utc("2026-12-02T09:00:00Z")]);
    h3.wait_job("next slot ok", |j| {
        j.last_run
            .as_ref()
            .is_some_and(|r| r.status == RunStatus::Ok && !r.rerun)
    })
    .await;
}

#[tokio::test]
async fn a_crash_after_a_tool_started_is_told_once_and_never_rerun() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc(SLOT));
    let h = running_daily(dir.path(), &clock, true).await;
    // The mark was on disk before the delivery went on (the tool ran after it).
    assert_eq!(h.stored()["jobs"][0]["last_run"]["tool_started"], SLOT);

    // The notice is not delivered the first time: the restart after tells it again.
    h.stop();
    clock.set(utc("2026-12-01T09:01:00Z"));
    let h2 = Harness::start_with(dir.path(), clock.clone(), |d| {
        d.notify_fails.store(true, std::sync::atomic::Ordering::SeqCst);
    })
    .await;
    let stored = h2
        .wait_stored("interrupted, untold", |v| {
            v["jobs"][0]["last_run"]["status"] == "interrupted" && v["jobs"][0]["last_run"]["untold"] == true
        })
        .await;
    let error = stored["jobs"][0]["last_run"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("after a tool had started"), "{error}");

    let h3 = restart(h2, dir.path(), &clock, "2026-12-01T09:02:00Z").await;
    let note = h3.delivery.wait_note("after a tool had started").await;
    assert!(note.contains("ask me to run the job now"), "{note}");
    h3.wait_stored("told", |v| v["jobs"][0]["last_run"].get("untold").is_none())
        .await;
    assert_eq!(h3.delivery.run_count(), 0, "the run is not started again");

    // Told: a further restart says nothing more, and the next slot runs as usual.
    let h4 = restart(h3, dir.path(), &clock, "2026-12-01T09:03:00Z").await;
    assert_eq!(h4.stored()["jobs"][0]["last_run"]["status"], "interrupted");
    clock.set(utc("2026-12-02T09:00:00Z"));
    h4.delivery.wait_runs(1).await;
    assert_eq!(h4.delivery.slots(), [utc("2026-12-02T09:00:00Z")]);
    assert!(h4.delivery.notes().is_empty(), "{:?}", h4.delivery.notes());
}

#[tokio::test]
async fn a_run_aborted_after_its_tool_is_never_ok_and_a_failed_one_is_not_retried() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T08:59:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    h.delivery.tool.store(true, std::sync::atomic::Ordering::SeqCst);
    if let Ok(mut end) = h.delivery.end.lock() {
        *end = Some(DeliveryError::Stopped(
            "stopped in the chat (/stop) after a tool had started".into(),
        ));
    }
    add(&h, JobKind::Prompt { text: "daily".into() }, daily()).await;
    clock.set(utc(SLOT));
    let job = h
        .wait_job("stopped", |j| {
            j.last_run.as_ref().is_some_and(|r| r.status != RunStatus::Running)
        })
        .await;
    let run = job.last_run.as_deref().cloned().unwrap_or_else(|| panic!("no run"));
    assert_eq!(run.status, RunStatus::Interrupted, "{run:?}");
    assert!(run.tool_started.is_some());
    assert_eq!((job.retry_at, job.consecutive_failures), (None, 0));

    // A provider failure after a tool: an error, not retried, and the chat is told why.
    if let Ok(mut end) = h.delivery.end.lock() {
        *end = Some(DeliveryError::Failed("provider failed: 529 overloaded".into()));
    }
    clock.set(utc("2026-12-02T09:00:00Z"));
    let job = h
        .wait_job("failed", |j| {
            j.last_run
                .as_ref()
                .is_some_and(|r| r.slot == utc("2026-12-02T09:00:00Z") && r.status == RunStatus::Error)
        })
        .await;
    assert_eq!((job.retry_at, job.consecutive_failures), (None, 1));
    let note = h.delivery.wait_note("not retried by itself").await;
    assert!(note.contains("529 overloaded"), "{note}");
    assert_eq!(h.delivery.run_count(), 2);
}

#[tokio::test]
async fn a_shutdown_leaves_the_slot_to_the_restart_which_follows_the_message_rule() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T08:59:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    let cut = || Some(DeliveryError::CutOff("cut off by the bot's shutdown".into()));
    if let Ok(mut end) = h.delivery.end.lock() {
        *end = cut();
    }
    add(&h, JobKind::Prompt { text: "quiet".into() }, daily()).await;
    clock.set(utc(SLOT));
    h.delivery.wait_runs(1).await;
    h.wait_job("cut off", |j| {
        j.last_run.as_ref().is_some_and(|r| r.status == RunStatus::Interrupted)
    })
    .await;
    h.scheduler.wait_runs_recorded(std::time::Duration::from_secs(5)).await;
    // On disk while the bot is down: interrupted, and marked for the restart to resolve.
    let run = &h.stored()["jobs"][0]["last_run"];
    assert_eq!(run["status"], "interrupted", "{run}");
    assert_eq!(run["shutdown"], true, "{run}");
    assert!(run["finished"].is_string(), "{run}");
    assert!(
        run["error"]
            .as_str()
            .unwrap_or_default()
            .starts_with("cut off by the bot's shutdown"),
        "{run}"
    );

    // The restart runs it again (no tool had started); this time a tool starts and the
    // shutdown cuts it again: the next restart tells the chat and does not run it.
    let h2 = restart(h, dir.path(), &clock, "2026-12-01T09:00:20Z").await;
    // Set before the re-run's task gets to run (the test's runtime has one thread).
    h2.delivery.tool.store(true, std::sync::atomic::Ordering::SeqCst);
    if let Ok(mut end) = h2.delivery.end.lock() {
        *end = cut();
    }
    h2.delivery.wait_runs(1).await;
    h2.wait_stored("cut after its tool", |v| {
        v["jobs"][0]["last_run"]["tool_started"].is_string() && v["jobs"][0]["last_run"]["status"] == "interrupted"
    })
    .await;
    h2.scheduler.wait_runs_recorded(std::time::Duration::from_secs(5)).await;
    let h3 = restart(h2, dir.path(), &clock, "2026-12-01T09:00:40Z").await;
    h3.delivery.wait_note("after a tool had started").await;
    assert_eq!(h3.delivery.run_count(), 0);
    let last = h3.jobs().await[0].last_run.clone();
    assert_eq!(
        last.as_ref().map(|r| (r.status, r.shutdown)),
        Some((RunStatus::Interrupted, false))
    );
}

#[tokio::test]
async fn a_watchers_script_counts_as_its_tool() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T08:59:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    std::fs::write(
        h.ws.join("w.sh"),
        "echo \"$(date) new mail\" >> ran.log; echo new mail\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let _held = h.delivery.hold_runs();
    let kind = JobKind::Watcher {
        script: "w.sh".into(),
        timeout_secs: 10,
        text: None,
    };
    add(&h, kind, daily()).await;
    clock.set(utc(SLOT));
    h.delivery.wait_runs(1).await;
    assert_eq!(h.stored()["jobs"][0]["last_run"]["tool_started"], SLOT);

    let h2 = restart(h, dir.path(), &clock, "2026-12-01T09:00:10Z").await;
    h2.delivery.wait_note("after a tool had started").await;
    assert_eq!(h2.delivery.run_count(), 0);
    // Well within the grace window of a daily job, yet not re-run: the script had started.
    let ran = std::fs::read_to_string(h2.ws.join("ran.log")).unwrap_or_default();
    assert_eq!(ran.lines().count(), 1, "the script ran once: {ran}");
}
