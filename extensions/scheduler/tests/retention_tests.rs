//! Finished one-shots do not pile up (docs/scheduling.md, "Storage"; issue 25: memory and
//! `jobs.json` grew with every reminder ever made): the 20 newest stay listed for 7 days after
//! they finished, the others go, after each run and when a workspace loads, in the file too.

mod support;

use chrono::Duration;
use support::{CHAT, Harness, utc};
use volcanic_scheduler::job::{JobKind, RunStatus, ScheduleSpec};
use volcanic_scheduler::{JobOrigin, KEEP_FINISHED, KEEP_FINISHED_DAYS, ManualClock, NewJob};

const START: &str = "2026-12-01T09:00:00Z";

/// Ids of the jobs in the stored file.
fn stored_ids(v: &serde_json::Value) -> Vec<String> {
    v["jobs"]
        .as_array()
        .map(|a| a.iter().filter_map(|j| j["id"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// Adds the chat's prompt job `text` on `schedule`; returns its id.
async fn add(h: &Harness, text: &str, schedule: ScheduleSpec) -> String {
    let new = NewJob {
        target: CHAT,
        origin: JobOrigin::Chat,
        kind: JobKind::Prompt { text: text.into() },
        schedule,
        quiet: false,
    };
    let added = h.scheduler.add(&h.ws, new).await;
    added.unwrap_or_else(|e| panic!("{e}")).job.id
}

#[tokio::test]
async fn finished_one_shots_past_the_newest_twenty_go_after_each_run_and_all_after_seven_days() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let clock = ManualClock::new(utc(START) - Duration::minutes(1));
    let h = Harness::start(dir.path(), clock.clone()).await;
    let made = KEEP_FINISHED + 5;
    let mut ids = Vec::new();
    for i in 0..made {
        let at = ScheduleSpec::At {
            at: utc(START) + Duration::minutes(i as i64),
            time_zone: "UTC".into(),
        };
        ids.push(add(&h, &format!("reminder {i}"), at).await);
    }
    // A recurring job is never dropped, however its runs went.
    let cron = ScheduleSpec::Cron {
        expr: "30 8 * * *".into(),
        time_zone: "UTC".into(),
    };
    let daily = add(&h, "daily", cron).await;
    for i in 0..made {
        clock.set(utc(START) + Duration::minutes(i as i64));
        h.delivery.wait_runs(i + 1).await;
    }
    // After the last run: its own record and the 19 before it stay, with the recurring job.
    let mut want: Vec<String> = ids[made - KEEP_FINISHED..].to_vec();
    want.push(daily.clone());
    want.sort();
    let stored = h
        .wait_stored("the oldest finished one-shots dropped", |v| {
            let mut got = stored_ids(v);
            got.sort();
            got == want
        })
        .await;
    assert_eq!(stored_ids(&stored).len(), KEEP_FINISHED + 1);
    let listed = h.jobs().await;
    assert_eq!(listed.len(), KEEP_FINISHED + 1, "kept in memory past the bound");
    let last = listed
        .iter()
        .find(|j| j.id == ids[made - 1])
        .unwrap_or_else(|| panic!("the newest finished one-shot is not listed"));
    assert!(!last.enabled);
    assert_eq!(last.last_run.as_ref().map(|r| r.status), Some(RunStatus::Ok));
    h.stop();

    // Loaded 7 days after the last one finished (a restart): the finished one-shots go, in the
    // file too; the recurring job stays.
    let later = utc(START) + Duration::minutes(made as i64) + Duration::days(KEEP_FINISHED_DAYS);
    let clock = ManualClock::new(later);
    let h = Harness::start(dir.path(), clock).await;
    let listed: Vec<String> = h.jobs().await.into_iter().map(|j| j.id).collect();
    assert_eq!(listed, vec![daily.clone()]);
    h.wait_stored("dropped on load, durably", |v| stored_ids(v) == vec![daily.clone()])
        .await;
}
