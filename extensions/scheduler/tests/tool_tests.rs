//! The `schedule` tool's `add` arguments as a model sends them: what is accepted and what error
//! the model reads back.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::json;
use volcanic_scheduler::job::{JobKind, ScheduleSpec};
use volcanic_scheduler::tool::build_job;
use volcanic_scheduler::{JobTarget, NewJob, ScheduleArgs};

const CHAT: JobTarget = JobTarget {
    chat_id: 7,
    topic: Some(3),
};

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-12-01T08:00:00Z")
        .map(|d| d.with_timezone(&Utc))
        .unwrap_or_default()
}

fn build(args: serde_json::Value, ws: &std::path::Path) -> Result<NewJob, String> {
    let args: ScheduleArgs = serde_json::from_value(args).map_err(|e| format!("parse: {e}"))?;
    let tokyo: Tz = "Asia/Tokyo".parse().unwrap_or(Tz::UTC);
    build_job(&args, ws, tokyo, now(), CHAT).map_err(|e| e.to_string())
}

#[test]
fn in_is_counted_from_now_whatever_the_zone() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let job = build(json!({"action": "add", "in": "2 minutes", "text": "ping"}), dir.path())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(job.target, CHAT, "bound to the chat and its topic");
    match job.schedule {
        ScheduleSpec::At { at, time_zone } => {
            assert_eq!((at - now()).num_seconds(), 120);
            assert_eq!(time_zone, "Asia/Tokyo", "the chat's zone by default");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn cron_takes_the_chats_zone_unless_one_is_given() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let job = build(
        json!({"action": "add", "cron": "0 9 * * 1-5", "text": "standup"}),
        dir.path(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(job.schedule, ScheduleSpec::Cron { ref time_zone, .. } if time_zone == "Asia/Tokyo"));
    let job = build(
        json!({"action": "add", "cron": "0 9 * * 1-5", "time_zone": "America/New_York", "text": "standup"}),
        dir.path(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(job.schedule, ScheduleSpec::Cron { ref time_zone, .. } if time_zone == "America/New_York"));
}

#[test]
fn bad_arguments_get_errors_that_say_what_to_give() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let ws = dir.path();
    let cases = [
        (
            json!({"action": "add", "text": "x"}),
            "exactly one of `cron`, `at`, `in`, `every` (got none)",
        ),
        (
            json!({"action": "add", "text": "x", "in": "5m", "every": "1h"}),
            "(got in, every)",
        ),
        (json!({"action": "add", "in": "5m"}), "a prompt job needs `text`"),
        (
            json!({"action": "add", "text": "x", "cron": "*/5 * * * * *"}),
            "at most every 30 s",
        ),
        (json!({"action": "add", "text": "x", "every": "10s"}), "at least 30 s"),
        (
            json!({"action": "add", "text": "x", "in": "soonish"}),
            "write it like `90s`",
        ),
        (
            json!({"action": "add", "text": "x", "at": "2026-11-30 09:00"}),
            "is in the past",
        ),
        (
            json!({"action": "add", "text": "x", "cron": "0 9 * * *", "time_zone": "Mars/Olympus"}),
            "IANA name",
        ),
        (
            json!({"action": "add", "kind": "watcher", "every": "1m"}),
            "needs `script`",
        ),
        (
            json!({"action": "add", "kind": "watcher", "every": "1m", "script": "../etc/passwd"}),
            "must not contain `..`",
        ),
        (
            json!({"action": "add", "kind": "watcher", "every": "1m", "script": "/etc/passwd"}),
            "outside the workspace",
        ),
        (
            json!({"action": "add", "kind": "watcher", "every": "1m", "script": "nope.sh"}),
            "does not exist",
        ),
        (
            json!({"action": "add", "text": "x", "in": "5m", "when": "later"}),
            "unknown field `when`",
        ),
        (json!({"action": "explode"}), "unknown variant `explode`"),
        (json!({"action": "add", "text": "x", "in": "300000y"}), "too far ahead"),
        (
            json!({"action": "add", "text": "x", "every": "100000y"}),
            "too far ahead",
        ),
        (
            json!({"action": "add", "text": "x", "every": "400d"}),
            "at most 366 days",
        ),
        (
            json!({"action": "add", "text": "x", "at": "9999-12-31 23:59"}),
            "too far ahead",
        ),
    ];
    for (args, expected) in cases {
        let got = build(args.clone(), ws).err().unwrap_or_default();
        assert!(
            got.contains(expected),
            "{args} gave {got:?}, expected it to mention {expected:?}"
        );
    }
}

#[test]
fn a_watcher_gets_its_script_timeout_and_instructions() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.path().join("check.sh"), "true\n").unwrap_or_else(|e| panic!("{e}"));
    let job = build(
        json!({"action": "add", "kind": "watcher", "script": "check.sh", "every": "10m",
               "timeout": "2m", "text": "say what changed"}),
        dir.path(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        job.kind,
        JobKind::Watcher {
            script: "check.sh".into(),
            timeout_secs: 120,
            text: Some("say what changed".into())
        }
    );
    let too_long = build(
        json!({"action": "add", "kind": "watcher", "script": "check.sh", "every": "10m", "timeout": "1h"}),
        dir.path(),
    );
    assert!(too_long.err().unwrap_or_default().contains("between 1s and 600s"));
}
