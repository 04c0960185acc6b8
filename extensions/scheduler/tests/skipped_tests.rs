//! A run the host refuses before any model request (a spent allowance, `docs/costs.md`) is
//! recorded `skipped` with the host's sentence, is not a failure and is not retried; the next
//! slot runs as usual.

mod support;

use support::{CHAT, Harness, utc};
use volcanic_scheduler::job::{JobKind, RunStatus, ScheduleSpec};
use volcanic_scheduler::{DeliveryError, JobOrigin, ManualClock, NewJob};

#[tokio::test]
async fn a_run_the_host_refused_is_skipped_and_not_retried() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc("2026-12-01T08:59:00Z"));
    let h = Harness::start(dir.path(), clock.clone()).await;
    let spent = "This chat's daily allowance of $0.25 is reached, so this was not sent to the model.";
    if let Ok(mut end) = h.delivery.end.lock() {
        *end = Some(DeliveryError::Skipped(spent.into()));
    }
    let new = NewJob {
        target: CHAT,
        origin: JobOrigin::Chat,
        kind: JobKind::Prompt { text: "daily".into() },
        schedule: ScheduleSpec::Cron {
            expr: "0 9 * * *".into(),
            time_zone: "UTC".into(),
        },
        quiet: false,
    };
    h.scheduler.add(&h.ws, new).await.unwrap_or_else(|e| panic!("{e}"));
    clock.set(utc("2026-12-01T09:00:00Z"));
    let job = h
        .wait_job("skipped", |j| {
            j.last_run.as_ref().is_some_and(|r| r.status == RunStatus::Skipped)
        })
        .await;
    let run = job.last_run.as_deref().cloned().unwrap_or_else(|| panic!("no run"));
    assert_eq!(run.error.as_deref(), Some(spent));
    assert_eq!((job.retry_at, job.consecutive_failures), (None, 0));
    assert!(job.enabled);

    // Past every backoff of the slot: no retry was made; the next day's slot runs.
    if let Ok(mut end) = h.delivery.end.lock() {
        *end = None;
    }
    clock.set(utc("2026-12-01T12:00:00Z"));
    // Room for a retry that must not come (a wrong one shows as a third run below).
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(h.delivery.run_count(), 1, "the skipped slot was retried");
    clock.set(utc("2026-12-02T09:00:00Z"));
    h.wait_job("next day ok", |j| {
        j.last_run
            .as_ref()
            .is_some_and(|r| r.slot == utc("2026-12-02T09:00:00Z") && r.status == RunStatus::Ok)
    })
    .await;
    assert_eq!(h.delivery.run_count(), 2, "the skipped slot was not retried");
}
