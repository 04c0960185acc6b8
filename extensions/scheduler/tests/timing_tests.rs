//! Cron, DST and time parsing, without a clock: slots computed from fixed instants.

use chrono::{DateTime, Duration, TimeZone, Utc};
use chrono_tz::Tz;
use volcanic_scheduler::job::ScheduleSpec;
use volcanic_scheduler::timing::{self, Compiled, TimingError};

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .map(|d| d.with_timezone(&Utc))
        .unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn cron(expr: &str, zone: &str) -> Compiled {
    Compiled::compile(&ScheduleSpec::Cron {
        expr: expr.into(),
        time_zone: zone.into(),
    })
    .unwrap_or_else(|e| panic!("{expr}: {e}"))
}

/// Slots in [from, to).
fn slots(c: &Compiled, from: &str, to: &str) -> Vec<String> {
    let (from, to) = (utc(from), utc(to));
    let mut out = Vec::new();
    let mut at = from - Duration::seconds(1);
    while let Some(n) = c.next_after(at) {
        if n >= to {
            break;
        }
        out.push(n.to_rfc3339());
        at = n;
    }
    out
}

// Europe/Berlin 2026: 29 March 02:00 CET → 03:00 CEST; 25 October 03:00 CEST → 02:00 CET.

#[test]
fn berlin_spring_forward_fixed_time_fires_once_right_after_the_jump() {
    let c = cron("30 2 * * *", "Europe/Berlin");
    assert_eq!(
        slots(&c, "2026-03-28T00:00:00Z", "2026-03-31T00:00:00Z"),
        [
            "2026-03-28T01:30:00+00:00", // 02:30 CET
            "2026-03-29T01:00:00+00:00", // 02:30 does not exist: 03:00 CEST, right after the jump
            "2026-03-30T00:30:00+00:00", // 02:30 CEST
        ]
    );
}

#[test]
fn berlin_fall_back_fixed_time_fires_once_in_the_repeated_hour() {
    let c = cron("30 2 * * *", "Europe/Berlin");
    assert_eq!(
        slots(&c, "2026-10-24T00:00:00Z", "2026-10-27T00:00:00Z"),
        [
            "2026-10-24T00:30:00+00:00",
            "2026-10-25T00:30:00+00:00", // the first 02:30 (CEST); not again at 02:30 CET
            "2026-10-26T01:30:00+00:00",
        ]
    );
}

#[test]
fn berlin_hourly_follows_real_time_across_both_changes() {
    let c = cron("0 * * * *", "Europe/Berlin");
    // Spring: 01:00 CET, then 03:00 CEST: nothing for the 02:00 that does not exist.
    assert_eq!(
        slots(&c, "2026-03-28T23:30:00Z", "2026-03-29T02:30:00Z"),
        [
            "2026-03-29T00:00:00+00:00",
            "2026-03-29T01:00:00+00:00",
            "2026-03-29T02:00:00+00:00"
        ]
    );
    // Autumn: 02:00 twice (CEST, then CET), once per real hour.
    assert_eq!(
        slots(&c, "2026-10-24T23:30:00Z", "2026-10-25T02:30:00Z"),
        [
            "2026-10-25T00:00:00+00:00",
            "2026-10-25T01:00:00+00:00",
            "2026-10-25T02:00:00+00:00"
        ]
    );
    let berlin: Tz = "Europe/Berlin".parse().unwrap_or(Tz::UTC);
    let local: Vec<String> = slots(&c, "2026-10-24T23:30:00Z", "2026-10-25T02:30:00Z")
        .iter()
        .map(|s| utc(s).with_timezone(&berlin).format("%H:%M %Z").to_string())
        .collect();
    assert_eq!(local, ["02:00 CEST", "02:00 CET", "03:00 CET"]);
}

#[test]
fn every_ten_minutes_skips_the_gap_and_repeats_the_overlap() {
    let c = cron("*/10 * * * *", "Europe/Berlin");
    let spring = slots(&c, "2026-03-29T00:55:00Z", "2026-03-29T01:15:00Z");
    // 01:00 UTC is 03:00 CEST: no 02:xx slots exist at all.
    assert_eq!(spring, ["2026-03-29T01:00:00+00:00", "2026-03-29T01:10:00+00:00"]);
    // Over the repeated hour, a slot every 10 real minutes for two real hours.
    assert_eq!(slots(&c, "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z").len(), 12);
}

// America/New_York 2026: 8 March 02:00 EST → 03:00 EDT; 1 November 02:00 EDT → 01:00 EST.

#[test]
fn new_york_spring_forward_fixed_time() {
    let c = cron("30 2 * * *", "America/New_York");
    assert_eq!(
        slots(&c, "2026-03-07T00:00:00Z", "2026-03-09T12:00:00Z"),
        [
            "2026-03-07T07:30:00+00:00", // 02:30 EST
            "2026-03-08T07:00:00+00:00", // 03:00 EDT, right after the jump
            "2026-03-09T06:30:00+00:00", // 02:30 EDT
        ]
    );
}

#[test]
fn new_york_fall_back_fixed_time_in_and_after_the_repeated_hour() {
    // 02:30 exists once on the day the clocks go back (the repeated hour is 01:00-01:59).
    let c = cron("30 2 * * *", "America/New_York");
    assert_eq!(
        slots(&c, "2026-10-31T00:00:00Z", "2026-11-02T12:00:00Z"),
        [
            "2026-10-31T06:30:00+00:00",
            "2026-11-01T07:30:00+00:00",
            "2026-11-02T07:30:00+00:00"
        ]
    );
    // 01:30 lies in the repeated hour: once, at its first occurrence (EDT).
    let c = cron("30 1 * * *", "America/New_York");
    assert_eq!(
        slots(&c, "2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z"),
        ["2026-11-01T05:30:00+00:00"]
    );
}

#[test]
fn new_york_hourly_across_both_changes() {
    let c = cron("0 * * * *", "America/New_York");
    assert_eq!(
        slots(&c, "2026-03-08T06:30:00Z", "2026-03-08T08:30:00Z"),
        ["2026-03-08T07:00:00+00:00", "2026-03-08T08:00:00+00:00"] // 03:00 EDT, 04:00 EDT
    );
    assert_eq!(
        slots(&c, "2026-11-01T04:30:00Z", "2026-11-01T07:30:00Z"),
        // 01:00 EDT, 01:00 EST, 02:00 EST
        [
            "2026-11-01T05:00:00+00:00",
            "2026-11-01T06:00:00+00:00",
            "2026-11-01T07:00:00+00:00"
        ]
    );
}

#[test]
fn six_field_expressions_have_seconds_first() {
    let c = cron("15 30 9 * * *", "UTC");
    assert_eq!(
        slots(&c, "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z"),
        ["2026-12-01T09:30:15+00:00"]
    );
    let five = cron("30 9 * * *", "UTC");
    assert_eq!(
        slots(&five, "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z"),
        ["2026-12-01T09:30:00+00:00"]
    );
}

#[test]
fn day_of_month_and_day_of_week_follow_the_or_rule() {
    // The 13th, and every Friday: December 2026 has Fridays on 4, 11, 18, 25; the 13th is a Sunday.
    let c = cron("0 9 13 * 5", "UTC");
    let days: Vec<String> = slots(&c, "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z")
        .iter()
        .map(|s| s[8..10].to_owned())
        .collect();
    assert_eq!(days, ["04", "11", "13", "18", "25"]);
}

#[test]
fn wrong_field_counts_and_too_frequent_crons_are_refused() {
    let now = utc("2026-12-01T00:00:00Z");
    assert!(matches!(timing::parse_cron("0 9 * *"), Err(TimingError::Cron { .. })));
    assert!(matches!(
        timing::parse_cron("0 0 9 * * * 2026 1"),
        Err(TimingError::Cron { .. })
    ));
    assert!(matches!(
        timing::check_new_cron("*/10 * * * * *", Tz::UTC, now),
        Err(TimingError::TooFrequent { gap_secs: 10, .. })
    ));
    assert!(matches!(
        timing::check_new_cron("0,20 * * * * *", Tz::UTC, now),
        Err(TimingError::TooFrequent { gap_secs: 20, .. })
    ));
    assert!(timing::check_new_cron("0,30 * * * * *", Tz::UTC, now).is_ok());
    assert!(timing::check_new_cron("* * * * *", Tz::UTC, now).is_ok());
    let e = timing::parse_cron("61 * * * *")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("61 * * * *") && e.contains("5 fields"), "{e}");
}

#[test]
fn local_times_are_read_in_the_zone_and_gaps_move_past_the_jump() {
    let berlin: Tz = "Europe/Berlin".parse().unwrap_or(Tz::UTC);
    let now = utc("2026-03-28T12:00:00Z");
    assert_eq!(
        timing::parse_at("2026-03-29 02:30", berlin, now).ok(),
        Some(utc("2026-03-29T01:00:00Z"))
    );
    assert_eq!(
        timing::parse_at("2026-12-01T09:00:00+09:00", berlin, now).ok(),
        Some(utc("2026-12-01T00:00:00Z"))
    );
    // `09:00` is the next one: today 09:00 in Berlin has passed at 13:00 local.
    assert_eq!(
        timing::parse_at("09:00", berlin, now).ok(),
        Some(utc("2026-03-29T07:00:00Z"))
    );
    assert!(matches!(
        timing::parse_at("2026-03-01 09:00", berlin, now),
        Err(TimingError::Past(_))
    ));
    assert!(matches!(
        timing::parse_at("tomorrow-ish", berlin, now),
        Err(TimingError::At(_))
    ));
}

#[test]
fn durations_and_every() {
    assert_eq!(timing::parse_duration("90s").ok(), Some(Duration::seconds(90)));
    assert_eq!(timing::parse_duration("1h30m").ok(), Some(Duration::minutes(90)));
    assert_eq!(timing::parse_duration("2 minutes").ok(), Some(Duration::minutes(2)));
    assert!(matches!(
        timing::parse_every("10s"),
        Err(TimingError::EveryTooShort(10))
    ));
    assert!(matches!(timing::parse_duration("soon"), Err(TimingError::Duration(_))));
    let c = Compiled::compile(&ScheduleSpec::Every {
        every_secs: 600,
        anchor: utc("2026-12-01T00:00:00Z"),
        time_zone: "UTC".into(),
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        c.next_after(utc("2026-12-01T00:25:00Z")),
        Some(utc("2026-12-01T00:30:00Z"))
    );
    assert_eq!(
        c.next_after(utc("2026-12-01T00:30:00Z")),
        Some(utc("2026-12-01T00:40:00Z"))
    );
}

#[test]
fn grace_is_half_the_period_capped_at_an_hour_and_a_day_for_one_shots() {
    let every10 = cron("*/10 * * * *", "UTC");
    let t = Utc.with_ymd_and_hms(2026, 12, 1, 9, 0, 0).single().unwrap_or_default();
    assert_eq!(every10.grace(t), Duration::minutes(5));
    assert_eq!(cron("0 9 * * *", "UTC").grace(t), Duration::hours(1));
    // Irregular: the period is the gap from the slot to the one after it.
    let irregular = cron("0 9,10 * * *", "UTC");
    assert_eq!(irregular.grace(t), Duration::minutes(30));
    assert_eq!(Compiled::At(t).grace(t), Duration::hours(24));
}
