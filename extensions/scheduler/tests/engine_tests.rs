//! The scheduler on a manual clock: firing, downtime, overlap, retries, corrupt files, watchers
//! (crashes and shutdowns: `cut_off_tests.rs`). Nothing sleeps on the clock; waits are for tasks
//! to finish (bounded in real time).

mod support;

use chrono::Duration;
use support::{CHAT, Harness, utc};
use volcanic_scheduler::job::{JobKind, RunStatus, ScheduleSpec};
use volcanic_scheduler::{JobOrigin, ManualClock, NewJob};

fn prompt(text: &str) -> JobKind {
    JobKind::Prompt { text: text.into() }
}

fn cron(expr: &str) -> ScheduleSpec {
    ScheduleSpec::Cron {
        expr: expr.into(),
        time_zone: "UTC".into(),
    }
}

fn every(secs: u64, anchor: &str) -> ScheduleSpec {
    ScheduleSpec::Every {
        every_secs: secs,
        anchor: utc(anchor),
        time_zone: "UTC".into(),
    }
}

async fn add(h: &Harness, kind: JobKind, schedule: ScheduleSpec) -> String {
    add_job(h, kind, schedule, false).await
}

async fn add_job(h: &Harness, kind: JobKind, schedule: ScheduleSpec, quiet: bool) -> String {
    h.scheduler
        .add(
            &h.ws,
            NewJob {
                target: CHAT,
                origin: JobOrigin::Chat,
                kind,
                schedule,
                quiet,
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .job
        .id
}

#[tokio::test]
async fn a_quiet_job_is_told_it_may_say_nothing_and_its_silence_is_recorded_quiet() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T09:00:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    let id = add_job(&h, prompt("check the inbox"), every(3600, "2026-12-01T10:00:00Z"), true).await;
    assert_eq!(h.stored()["jobs"][0]["quiet"], true);
    h.delivery.quiet.store(true, std::sync::atomic::Ordering::SeqCst);
    clock.advance(Duration::hours(1));
    h.delivery.wait_runs(1).await;
    let run = h.delivery.nth_run(0);
    assert!(run.quiet);
    assert!(
        run.prompt.contains(volcanic_scheduler::envelope::QUIET_NOTE) && run.prompt.ends_with("check the inbox"),
        "{}",
        run.prompt
    );
    let job = h
        .wait_job("quiet", |j| {
            j.last_run.as_ref().is_some_and(|r| r.status == RunStatus::Quiet)
        })
        .await;
    assert_eq!(job.consecutive_failures, 0);
    assert!(h.delivery.notes().is_empty(), "{:?}", h.delivery.notes());
    // Not quiet any more: the next run's prompt has no such line, and `quiet` leaves the file.
    h.scheduler
        .set_quiet(&h.ws, CHAT, &id, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(h.stored()["jobs"][0].get("quiet").is_none(), "{}", h.stored());
    clock.advance(Duration::hours(1));
    h.delivery.wait_runs(2).await;
    assert!(!h.delivery.nth_run(1).prompt.contains("quiet check-in"));
    // A watcher cannot be made quiet.
    let w = JobKind::Watcher {
        script: "w.sh".into(),
        timeout_secs: 5,
        text: None,
    };
    let wid = add(&h, w, every(3600, "2026-12-01T20:00:00Z")).await;
    let refused = h.scheduler.set_quiet(&h.ws, CHAT, &wid, true).await;
    assert!(refused.is_err_and(|e| e.to_string().contains("only prompt jobs")));
}

#[tokio::test]
async fn a_one_shot_fires_at_its_slot_once_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T09:00:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    let at = utc("2026-12-01T09:00:03Z");
    add(
        &h,
        prompt("remind the user to stretch"),
        ScheduleSpec::At {
            at,
            time_zone: "Asia/Tokyo".into(),
        },
    )
    .await;
    assert_eq!(h.stored()["jobs"][0]["next_run"], "2026-12-01T09:00:03Z");
    clock.advance(Duration::seconds(2));
    clock.advance(Duration::seconds(1));
    h.delivery.wait_runs(1).await;
    let run = h.delivery.nth_run(0);
    assert_eq!(run.slot, at);
    assert!(run.prompt.contains("[Scheduled job"), "{}", run.prompt);
    assert!(
        run.prompt.contains("18:00:03 JST") || run.prompt.contains("18:00:03"),
        "{}",
        run.prompt
    );
    assert!(run.prompt.ends_with("remind the user to stretch"), "{}", run.prompt);
    let job = h
        .wait_job("ok", |j| j.last_run.as_ref().is_some_and(|r| r.status == RunStatus::Ok))
        .await;
    assert!(!job.enabled, "a finished one-shot is not enabled");
    assert_eq!(h.scheduler.pending_timers(), 0);
    clock.advance(Duration::days(2));
    assert_eq!(h.delivery.run_count(), 1);
    let stored = h
        .wait_stored("ok on disk", |v| v["jobs"][0]["last_run"]["status"] == "ok")
        .await;
    assert_eq!(stored["version"], 1);
    assert_eq!(stored["jobs"][0]["last_run"]["status"], "ok");
    assert_eq!(stored["jobs"][0]["last_run"]["delivery"], "sent");
}

#[tokio::test]
async fn a_three_day_downtime_gives_exactly_one_late_run() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T08:00:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    add(&h, prompt("daily report"), cron("0 9 * * *")).await;
    h.stop();
    // Down from Dec 1 08:00 to Dec 4 09:20: slots on the 1st, 2nd, 3rd and 4th were missed.
    clock.set(utc("2026-12-04T09:20:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    h.delivery.wait_runs(1).await;
    let job = h
        .wait_job("late run ok", |j| {
            j.last_run.as_ref().is_some_and(|r| r.status == RunStatus::Ok)
        })
        .await;
    assert_eq!(h.delivery.slots(), [utc("2026-12-04T09:00:00Z")]);
    assert!(
        h.delivery
            .runs
            .lock()
            .map(|r| r[0].prompt.contains("20 min late"))
            .unwrap_or(false)
    );
    assert_eq!(job.missed, 3);
    let note = h.delivery.wait_note("missed 4 runs").await;
    assert!(note.contains("running the latest now"), "{note}");
    assert_eq!(h.delivery.notes().len(), 1);
    // The next day runs normally, and only once.
    clock.set(utc("2026-12-05T09:00:00Z"));
    h.delivery.wait_runs(2).await;
    assert_eq!(
        h.delivery.slots(),
        [utc("2026-12-04T09:00:00Z"), utc("2026-12-05T09:00:00Z")]
    );
}

#[tokio::test]
async fn a_downtime_past_the_grace_window_skips_and_says_so() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T08:00:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    add(&h, prompt("daily report"), cron("0 9 * * *")).await;
    h.stop();
    clock.set(utc("2026-12-04T11:00:00Z")); // 2 h after the newest slot; grace is 1 h
    let h = Harness::start(dir.path(), clock.clone()).await;
    let job = h.wait_job("skipped", |j| j.missed == 4).await;
    assert_eq!(job.last_run.as_ref().map(|r| r.status), Some(RunStatus::Skipped));
    assert_eq!(job.next_run, Some(utc("2026-12-05T09:00:00Z")));
    assert_eq!(h.delivery.run_count(), 0);
    h.delivery.wait_note("too late to run").await;
    assert_eq!(h.delivery.notes().len(), 1);
    h.wait_stored("missed on disk", |v| v["jobs"][0]["missed"] == 4).await;
}

#[tokio::test]
async fn a_start_hands_its_catch_up_to_the_report_once_and_tells_nothing_itself() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T08:00:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    let late = add(&h, prompt("daily report"), cron("0 9 * * *")).await;
    let soon = add(&h, prompt("check the backups"), every(120, "2026-12-04T10:00:00Z")).await;
    h.stop();
    // Down until 10:04:10: the daily 09:00 slots are 1 h past their grace (skipped); the
    // backups' 10:00, 10:02 and 10:04 slots coalesce into the newest, run now.
    clock.set(utc("2026-12-04T10:04:10Z"));
    let h = Harness::start_with(dir.path(), clock.clone(), |d| d.reports = Some(Default::default())).await;
    let reports = h
        .delivery
        .reports
        .as_ref()
        .and_then(|r| r.lock().ok().map(|r| r.clone()));
    let reports = reports.unwrap_or_default();
    assert_eq!(reports.len(), 1, "handed over once per start: {reports:?}");
    let line = |id: &str| {
        reports[0]
            .iter()
            .find(|c| c.key.starts_with(&format!("j{id}@")))
            .map(|c| (c.key.clone(), c.line.clone()))
            .unwrap_or_else(|| panic!("no line for {id}: {reports:?}"))
    };
    let (key, text) = line(&late);
    assert!(key.ends_with(":skipped"), "{key}");
    assert!(
        text.contains("missed 4 runs") && text.contains("Fri 2026-12-04 09:00 UTC"),
        "{text}"
    );
    let (key, text) = line(&soon);
    assert!(key.ends_with(":ran") && key.contains("2026-12-04T10:04:00"), "{key}");
    assert!(text.contains("missed 3 runs") && text.contains("coalesced"), "{text}");
    h.delivery.wait_runs(1).await;
    assert!(
        h.delivery.notes().is_empty(),
        "the report told it: {:?}",
        h.delivery.notes()
    );
}

#[tokio::test]
async fn a_job_never_overlaps_itself() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T09:00:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    let held = h.delivery.hold_runs();
    add(&h, prompt("slow"), every(60, "2026-12-01T09:01:00Z")).await;
    clock.set(utc("2026-12-01T09:01:00Z"));
    h.delivery.wait_runs(1).await;
    clock.set(utc("2026-12-01T09:02:00Z"));
    let job = h
        .wait_job("second slot skipped", |j| {
            j.history
                .iter()
                .chain(j.last_run.as_deref())
                .any(|r| r.status == RunStatus::Skipped)
        })
        .await;
    let skipped = job
        .history
        .iter()
        .chain(job.last_run.as_deref())
        .find(|r| r.status == RunStatus::Skipped);
    assert_eq!(skipped.map(|r| r.slot), Some(utc("2026-12-01T09:02:00Z")));
    if let Ok(mut h) = h.delivery.hold.lock() {
        *h = None;
    }
    held.cancel();
    // The held run's outcome lands on its own record; the skip stays a skip.
    let job = h
        .wait_job("first run ok", |j| {
            j.last_run
                .as_ref()
                .is_some_and(|r| r.slot == utc("2026-12-01T09:01:00Z") && r.status == RunStatus::Ok)
        })
        .await;
    let skipped: Vec<_> = job.history.iter().filter(|r| r.status == RunStatus::Skipped).collect();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].slot, utc("2026-12-01T09:02:00Z"));
    assert!(job.history.iter().all(|r| r.status != RunStatus::Running));
    clock.set(utc("2026-12-01T09:03:00Z"));
    h.delivery.wait_runs(2).await;
    assert_eq!(
        h.delivery.slots(),
        [utc("2026-12-01T09:01:00Z"), utc("2026-12-01T09:03:00Z")]
    );
}

#[tokio::test]
async fn a_failed_run_is_retried_with_backoff_within_its_slot() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let start = utc("2026-12-01T09:00:00Z");
    let clock = ManualClock::new(start);
    let h = Harness::start(dir.path(), clock.clone()).await;
    h.delivery.fail.store(true, std::sync::atomic::Ordering::SeqCst);
    add(&h, prompt("hourly"), every(3600, "2026-12-01T10:00:00Z")).await;
    let slot = utc("2026-12-01T10:00:00Z");
    // Attempts at +0, +30 s, +1 m 30 s, +6 m 30 s, +21 m 30 s; the next (+81 m 30 s) would pass
    // the next slot, so the slot fails there.
    let offsets = [0, 30, 90, 390, 1290];
    for (i, off) in offsets.iter().enumerate() {
        clock.set(slot + Duration::seconds(*off));
        h.delivery.wait_runs(i + 1).await;
        let attempts = u32::try_from(i + 1).unwrap_or(0);
        let job = h
            .wait_job("attempt recorded", |j| {
                j.last_run
                    .as_ref()
                    .is_some_and(|r| r.attempts == attempts && r.status == RunStatus::Error)
            })
            .await;
        if i + 1 < offsets.len() {
            let next_off = offsets[i + 1];
            assert_eq!(
                job.retry_at,
                Some(slot + Duration::seconds(next_off)),
                "after attempt {attempts}"
            );
            // Nothing before the retry is due.
            clock.set(slot + Duration::seconds(next_off - 1));
            assert_eq!(h.delivery.run_count(), i + 1);
        } else {
            assert_eq!(job.retry_at, None);
            assert_eq!(job.consecutive_failures, 1);
            assert_eq!(
                job.next_run,
                Some(utc("2026-12-01T11:00:00Z")),
                "the schedule did not move"
            );
        }
    }
    assert!(
        h.delivery.slots().iter().all(|s| *s == slot),
        "every attempt belongs to the slot"
    );
    h.delivery.fail.store(false, std::sync::atomic::Ordering::SeqCst);
    clock.set(utc("2026-12-01T11:00:00Z"));
    h.delivery.wait_runs(6).await;
    let job = h
        .wait_job("ok", |j| j.last_run.as_ref().is_some_and(|r| r.status == RunStatus::Ok))
        .await;
    assert_eq!(job.consecutive_failures, 0);
}

#[tokio::test]
async fn ten_failed_slots_in_a_row_disable_the_job_and_tell_the_chat() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let start = utc("2026-12-01T09:00:00Z");
    let clock = ManualClock::new(start);
    let h = Harness::start(dir.path(), clock.clone()).await;
    h.delivery.fail.store(true, std::sync::atomic::Ordering::SeqCst);
    add(&h, prompt("each minute"), every(60, "2026-12-01T09:01:00Z")).await;
    // Each slot: an attempt at :00 and a retry at :30 (the next at :90 would pass the next slot).
    for minute in 1..=10 {
        let slot = start + Duration::minutes(minute);
        clock.set(slot);
        h.delivery.wait_runs(usize::try_from(minute * 2 - 1).unwrap_or(0)).await;
        h.wait_job("retry set", |j| j.retry_at == Some(slot + Duration::seconds(30)))
            .await;
        clock.set(slot + Duration::seconds(30));
        h.delivery.wait_runs(usize::try_from(minute * 2).unwrap_or(0)).await;
        h.wait_job("slot done", |j| {
            j.last_run
                .as_ref()
                .is_some_and(|r| r.attempts == 2 && r.status == RunStatus::Error && r.slot == slot)
        })
        .await;
    }
    let job = h.wait_job("disabled", |j| !j.enabled).await;
    assert_eq!(job.consecutive_failures, 10);
    let note = h.delivery.wait_note("failed 10 times in a row").await;
    assert!(note.contains("529 overloaded"), "{note}");
    clock.set(start + Duration::hours(1));
    assert_eq!(h.scheduler.pending_timers(), 0);
    assert_eq!(h.delivery.run_count(), 20);
}

#[tokio::test]
async fn a_corrupt_jobs_file_is_set_aside_reported_and_never_overwritten() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let ws = dir.path().join("42");
    let file = volcanic_scheduler::store::jobs_path(&ws);
    std::fs::create_dir_all(file.parent().unwrap_or(&ws)).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&file, b"{\"version\": 1, \"jobs\": [{\"id\": ").unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T09:00:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    assert_eq!(h.report.set_aside.len(), 1, "{:?}", h.report);
    let (aside, reason) = &h.report.set_aside[0];
    assert!(reason.contains("not valid jobs JSON"), "{reason}");
    assert_eq!(
        std::fs::read(aside).unwrap_or_default(),
        b"{\"version\": 1, \"jobs\": [{\"id\": ".to_vec(),
        "the bad file is kept as it was"
    );
    assert!(
        h.scheduler.set_aside(&h.ws).await.is_some(),
        "the chat's list can say so"
    );
    add(&h, prompt("new"), cron("0 9 * * *")).await;
    assert_eq!(h.stored()["jobs"].as_array().map(Vec::len), Some(1));
    assert!(aside.exists());
    // A file from a newer build (unknown schema) is set aside too, not rewritten.
    std::fs::write(&file, br#"{"version": 99, "jobs": []}"#).unwrap_or_else(|e| panic!("{e}"));
    h.stop();
    let h2 = Harness::start(dir.path(), clock).await;
    assert!(
        h2.report.set_aside.iter().any(|(_, r)| r.contains("schema version 99")),
        "{:?}",
        h2.report
    );
}

/// Start-up's load and a chat's first `/jobs` can meet on the same corrupt file: it is set aside
/// once, both see it set aside, and neither reports the file gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_file_met_by_start_up_and_first_use_at_once_is_set_aside_once() {
    for _ in 0..25 {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ws = dir.path().join("42");
        let file = volcanic_scheduler::store::jobs_path(&ws);
        std::fs::create_dir_all(file.parent().unwrap_or(&ws)).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&file, b"{\"jobs\": [").unwrap_or_else(|e| panic!("{e}"));
        let clock = ManualClock::new(utc("2026-12-01T09:00:00Z"));
        let (scheduler, _delivery) = support::Harness::unloaded(dir.path(), &clock);
        let (report, seen) = tokio::join!(scheduler.load_all(), scheduler.set_aside(&ws));
        assert!(report.errors.is_empty(), "{:?}", report);
        assert!(seen.is_some(), "first use sees the set-aside file");
        let asides = std::fs::read_dir(file.parent().unwrap_or(&ws))
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().contains("corrupt"))
                    .count()
            })
            .unwrap_or(0);
        assert_eq!(asides, 1);
    }
}

#[tokio::test]
async fn a_watcher_wakes_the_agent_only_when_its_script_prints() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T09:00:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    std::fs::write(
        h.ws.join("check.sh"),
        "if [ -f flag ] && [ ! -f seen ]; then touch seen; echo \"flag is here ($TZ)\"; fi\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let schedule = ScheduleSpec::Every {
        every_secs: 30,
        anchor: utc("2026-12-01T09:00:30Z"),
        time_zone: "Europe/Berlin".into(),
    };
    let kind = JobKind::Watcher {
        script: "check.sh".into(),
        timeout_secs: 10,
        text: Some("Tell the user the flag appeared.".into()),
    };
    add(&h, kind, schedule).await;
    clock.set(utc("2026-12-01T09:00:30Z"));
    h.wait_job("quiet run", |j| {
        j.last_run.as_ref().is_some_and(|r| r.status == RunStatus::Ok)
    })
    .await;
    assert_eq!(h.delivery.run_count(), 0, "no output, no prompt");
    std::fs::write(h.ws.join("flag"), "x").unwrap_or_else(|e| panic!("{e}"));
    clock.set(utc("2026-12-01T09:01:00Z"));
    h.delivery.wait_runs(1).await;
    let prompt = h.delivery.runs.lock().map(|r| r[0].prompt.clone()).unwrap_or_default();
    assert!(prompt.contains("flag is here (Europe/Berlin)"), "{prompt}");
    assert!(prompt.contains("Tell the user the flag appeared."), "{prompt}");
    clock.set(utc("2026-12-01T09:01:30Z"));
    h.wait_job("third run", |j| {
        j.last_run
            .as_ref()
            .is_some_and(|r| r.slot == utc("2026-12-01T09:01:30Z") && r.status == RunStatus::Ok)
    })
    .await;
    assert_eq!(h.delivery.run_count(), 1, "exactly one agent prompt");
}

#[tokio::test]
async fn a_failing_watcher_keeps_its_stderr() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T09:00:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    std::fs::write(h.ws.join("bad.sh"), "echo 'disk not mounted' >&2; exit 3\n").unwrap_or_else(|e| panic!("{e}"));
    let kind = JobKind::Watcher {
        script: "bad.sh".into(),
        timeout_secs: 10,
        text: None,
    };
    add(&h, kind, every(600, "2026-12-01T09:10:00Z")).await;
    clock.set(utc("2026-12-01T09:10:00Z"));
    let job = h
        .wait_job("error", |j| {
            j.last_run.as_ref().is_some_and(|r| r.status == RunStatus::Error)
        })
        .await;
    let error = job.last_run.and_then(|r| r.error).unwrap_or_default();
    assert!(
        error.contains("code 3") && error.contains("disk not mounted"),
        "{error}"
    );
    assert_eq!(job.retry_at, Some(utc("2026-12-01T09:10:30Z")));
    assert_eq!(h.delivery.run_count(), 0);
}

#[tokio::test]
async fn pause_resume_remove_and_run_now() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T08:00:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    let id = add(&h, prompt("daily"), cron("0 9 * * *")).await;
    let v = h
        .scheduler
        .set_enabled(&h.ws, CHAT, &id, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!v.job.enabled);
    assert_eq!(h.scheduler.pending_timers(), 0);
    clock.set(utc("2026-12-03T08:00:00Z"));
    let v = h
        .scheduler
        .set_enabled(&h.ws, CHAT, &id, true)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        v.job.next_run,
        Some(utc("2026-12-03T09:00:00Z")),
        "no missed runs for a pause"
    );
    assert_eq!(v.upcoming.len(), 3);
    h.scheduler
        .run_now(&h.ws, CHAT, &id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    h.delivery.wait_runs(1).await;
    assert_eq!(h.delivery.slots(), [utc("2026-12-03T08:00:00Z")]);
    let other = volcanic_scheduler::JobTarget {
        chat_id: 7,
        topic: None,
    };
    assert!(
        h.scheduler.remove(&h.ws, other, &id).await.is_err(),
        "another chat cannot touch it"
    );
    h.scheduler
        .remove(&h.ws, CHAT, &id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(h.jobs().await.is_empty());
    assert_eq!(h.stored()["jobs"].as_array().map(Vec::len), Some(0));
}

#[tokio::test]
async fn a_berlin_0230_job_fires_right_after_the_spring_jump_and_once_in_autumn() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-03-28T12:00:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    let spec = ScheduleSpec::Cron {
        expr: "30 2 * * *".into(),
        time_zone: "Europe/Berlin".into(),
    };
    add(&h, prompt("night job"), spec).await;
    // 29 March: 02:30 does not exist; the run comes at 03:00 CEST (01:00 UTC).
    clock.set(utc("2026-03-29T00:59:59Z"));
    clock.set(utc("2026-03-29T01:00:00Z"));
    h.delivery.wait_runs(1).await;
    assert_eq!(h.delivery.slots(), [utc("2026-03-29T01:00:00Z")]);
    let job = h
        .wait_job("ok", |j| j.last_run.as_ref().is_some_and(|r| r.status == RunStatus::Ok))
        .await;
    assert_eq!(job.next_run, Some(utc("2026-03-30T00:30:00Z")));
    // 25 October: 02:30 happens twice; the job runs at the first (CEST) only.
    h.stop();
    clock.set(utc("2026-10-24T12:00:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    // Restarted long after the last slot: past the grace window, skipped; then normal again.
    h.wait_job("caught up", |j| j.next_run == Some(utc("2026-10-25T00:30:00Z")))
        .await;
    clock.set(utc("2026-10-25T00:30:00Z"));
    h.delivery.wait_runs(1).await;
    clock.set(utc("2026-10-25T01:30:00Z")); // 02:30 CET, the repeated one
    let job = h
        .wait_job("next is the 26th", |j| j.next_run == Some(utc("2026-10-26T01:30:00Z")))
        .await;
    assert_eq!(job.last_run.map(|r| r.slot), Some(utc("2026-10-25T00:30:00Z")));
    assert_eq!(h.delivery.run_count(), 1);
}

#[tokio::test]
async fn a_job_removed_while_running_leaves_the_next_job_alone() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T09:00:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    let held = h.delivery.hold_runs();
    let a = add(&h, prompt("a"), every(60, "2026-12-01T09:01:00Z")).await;
    clock.set(utc("2026-12-01T09:01:00Z"));
    h.delivery.wait_runs(1).await;
    h.scheduler
        .remove(&h.ws, CHAT, &a)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    if let Ok(mut h) = h.delivery.hold.lock() {
        *h = None;
    }
    let b = add(&h, prompt("b"), every(60, "2026-12-01T09:02:00Z")).await;
    held.cancel();
    // A's outcome must not land on B (which may sit in A's old place in the job table).
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    let jobs = h.jobs().await;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].id, b);
    assert!(jobs[0].last_run.is_none(), "{:?}", jobs[0].last_run);
    clock.set(utc("2026-12-01T09:02:00Z"));
    h.delivery.wait_runs(2).await;
    h.wait_job("b ran", |j| {
        j.last_run.as_ref().is_some_and(|r| r.status == RunStatus::Ok)
    })
    .await;
}

#[tokio::test]
async fn a_hand_edited_jobs_file_cannot_break_the_rules() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let ws = dir.path().join("42");
    let file = volcanic_scheduler::store::jobs_path(&ws);
    std::fs::create_dir_all(file.parent().unwrap_or(&ws)).unwrap_or_else(|e| panic!("{e}"));
    let job = |id: &str, chat: i64, schedule: serde_json::Value| {
        serde_json::json!({"id": id, "target": {"chat_id": chat}, "kind": {"type": "prompt", "text": id},
            "schedule": schedule, "enabled": true, "created": "2026-12-01T08:00:00Z",
            "next_run": "2026-12-01T09:00:00Z"})
    };
    let jobs = serde_json::json!({"version": 1, "jobs": [
        job("zero", 42, serde_json::json!({"type": "every", "every_secs": 0, "anchor": "2026-12-01T09:00:00Z"})),
        job("huge", 42, serde_json::json!({"type": "every", "every_secs": 100_000_000_000_000_000_u64, "anchor": "2026-12-01T09:00:00Z"})),
        job("secs", 42, serde_json::json!({"type": "cron", "expr": "* * * * * *", "time_zone": "UTC"})),
        job("other", 999, serde_json::json!({"type": "cron", "expr": "0 10 * * *", "time_zone": "UTC"})),
    ]});
    std::fs::write(&file, jobs.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T08:59:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    // A job aimed at another chat is bound to the workspace's own chat.
    let listed: Vec<String> = h.jobs().await.into_iter().map(|j| j.id).collect();
    assert!(listed.contains(&"other".to_owned()), "{listed:?}");
    // The every-second cron fires at most every 30 s; the bad periods never fire.
    clock.set(utc("2026-12-01T09:00:00Z"));
    h.delivery.wait_runs(1).await;
    for s in 1..=60 {
        clock.set(utc("2026-12-01T09:00:00Z") + Duration::seconds(s));
        // Lets the timer and run tasks catch up (what is checked is by the clock, not timing).
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    h.delivery.wait_runs(3).await;
    let runs = h.delivery.runs.lock().map(|r| r.clone()).unwrap_or_default();
    let secs: Vec<_> = runs.iter().filter(|r| r.job_id == "secs").map(|r| r.slot).collect();
    assert!(!secs.is_empty() && secs.len() <= 3, "{secs:?}");
    assert!(secs.windows(2).all(|w| (w[1] - w[0]).num_seconds() >= 30), "{secs:?}");
    assert!(
        runs.iter().all(|r| r.job_id != "zero" && r.job_id != "huge"),
        "{runs:?}"
    );
    let stored = h
        .wait_stored("rebound", |v| {
            v["jobs"]
                .as_array()
                .is_some_and(|a| a.iter().all(|j| j["target"]["chat_id"] == 42))
        })
        .await;
    assert_eq!(stored["jobs"].as_array().map(Vec::len), Some(4), "nothing dropped");
}

#[tokio::test]
async fn run_now_on_a_pending_reminder_keeps_the_reminder() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T09:00:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    let at = utc("2026-12-01T12:00:00Z");
    let id = add(
        &h,
        prompt("lunch"),
        ScheduleSpec::At {
            at,
            time_zone: "UTC".into(),
        },
    )
    .await;
    h.scheduler
        .run_now(&h.ws, CHAT, &id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    h.delivery.wait_runs(1).await;
    let job = h
        .wait_job("extra run ok", |j| {
            j.last_run.as_ref().is_some_and(|r| r.status == RunStatus::Ok)
        })
        .await;
    assert!(job.enabled, "the reminder itself is still to come");
    clock.set(at);
    h.delivery.wait_runs(2).await;
    assert_eq!(h.delivery.slots(), [utc("2026-12-01T09:00:00Z"), at]);
    h.wait_job("done", |j| !j.enabled).await;
}

#[tokio::test]
async fn a_watcher_leaving_a_background_child_ends_with_its_script() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T09:00:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    std::fs::write(h.ws.join("bg.sh"), "sleep 30 &\necho started something\n").unwrap_or_else(|e| panic!("{e}"));
    let kind = JobKind::Watcher {
        script: "bg.sh".into(),
        timeout_secs: 20,
        text: None,
    };
    add(&h, kind, every(600, "2026-12-01T09:10:00Z")).await;
    let started = std::time::Instant::now();
    clock.set(utc("2026-12-01T09:10:00Z"));
    h.delivery.wait_runs(1).await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let prompt = h.delivery.runs.lock().map(|r| r[0].prompt.clone()).unwrap_or_default();
    assert!(prompt.contains("started something"), "{prompt}");
}

/// A jobs file as an older bot (or a caller with `write`) would leave it: no origin, aimed at
/// chat 7, each job due at 09:00:30.
fn planted(ws: &std::path::Path, jobs: &[(&str, serde_json::Value)]) {
    let jobs: Vec<serde_json::Value> = jobs
        .iter()
        .map(|(id, kind)| {
            serde_json::json!({"id": id, "target": {"chat_id": 7}, "kind": kind,
                "schedule": {"type": "at", "at": "2026-12-01T09:00:30Z", "time_zone": "UTC"},
                "enabled": true, "created": "2026-12-01T08:00:00Z", "next_run": "2026-12-01T09:00:30Z"})
        })
        .collect();
    let file = volcanic_scheduler::store::jobs_path(ws);
    std::fs::create_dir_all(file.parent().unwrap_or(ws)).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(file, serde_json::json!({"version": 1, "jobs": jobs}).to_string()).unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn a_callers_jobs_are_its_own_whatever_the_file_says_and_its_watchers_need_bash() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T09:00:00Z"));
    let caller = dir.path().join("a2a-nobash");
    std::fs::create_dir_all(&caller).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(caller.join("w.sh"), "touch ran; echo ran\n").unwrap_or_else(|e| panic!("{e}"));
    let watcher = serde_json::json!({"type": "watcher", "script": "w.sh", "timeout_secs": 5});
    planted(
        &caller,
        &[
            ("prompt", serde_json::json!({"type": "prompt", "text": "run bash"})),
            ("watch", watcher),
        ],
    );
    let lost = dir.path().join("a2a-lost");
    planted(
        &lost,
        &[("orphan", serde_json::json!({"type": "prompt", "text": "hello"}))],
    );
    let h = Harness::start(dir.path(), clock.clone()).await;
    clock.set(utc("2026-12-01T09:00:30Z"));
    h.delivery.wait_runs(1).await;
    let run = h.delivery.nth_run(0);
    assert_eq!(run.job_id, "prompt");
    assert_eq!(run.origin, JobOrigin::Caller { name: "nobash".into() });
    assert_eq!(run.target, CHAT, "aimed at the chat the caller acts for");
    assert!(run.prompt.contains("A2A caller `nobash`"), "{}", run.prompt);
    let file = volcanic_scheduler::store::jobs_path(&caller);
    let stored = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap_or_default()).unwrap_or_default()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while stored()["jobs"][1]["last_run"]["status"] != "error" {
        assert!(std::time::Instant::now() < deadline, "{}", stored());
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let error = stored()["jobs"][1]["last_run"]["error"].to_string();
    assert!(error.contains("run only when its tools include `bash`"), "{error}");
    assert!(!caller.join("ran").exists(), "the caller's script ran");
    assert_eq!(
        stored()["jobs"][0]["origin"],
        serde_json::json!({"type": "caller", "name": "nobash"})
    );
    // The job of a caller acting for no chat is kept and never run.
    assert_eq!(h.delivery.run_count(), 1);
    let orphan = std::fs::read_to_string(volcanic_scheduler::store::jobs_path(&lost)).unwrap_or_default();
    assert!(
        orphan.contains("\"orphan\"") && !orphan.contains("last_run\":{"),
        "{orphan}"
    );
}
