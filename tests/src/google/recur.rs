//! Event times and recurrence expansion, as far as the double needs them: strict RFC 3339 with
//! an offset, all-day dates, and `RRULE` with `FREQ=DAILY|WEEKLY`, `INTERVAL`, `COUNT`, `UNTIL`
//! and (weekly) `BYDAY`, expanded in the event's `timeZone` (RFC 5545 §3.3.10).

use chrono::{DateTime, Datelike, Duration, FixedOffset, NaiveDate, NaiveDateTime, TimeZone, Utc, Weekday};
use chrono_tz::Tz;
use serde_json::{Value, json};

/// Most instances one recurring event expands to.
const MAX_INSTANCES: usize = 730;

/// A strict RFC 3339 timestamp: an offset (`Z` or `±hh:mm`) is mandatory.
pub(crate) fn parse_ts(s: &str) -> Result<DateTime<FixedOffset>, String> {
    DateTime::parse_from_rfc3339(s)
        .map_err(|_| format!("Invalid value '{s}': an RFC 3339 timestamp with a time zone offset is required"))
}

/// One end of an event: a whole day or an instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum When {
    Day(NaiveDate),
    At(DateTime<FixedOffset>),
}

/// Reads `start`/`end` of an event: exactly one of `date` and `dateTime`.
pub(crate) fn when(v: &Value, what: &str) -> Result<When, String> {
    match (
        v.get("date").and_then(Value::as_str),
        v.get("dateTime").and_then(Value::as_str),
    ) {
        (Some(d), None) => NaiveDate::parse_from_str(d, "%Y-%m-%d")
            .map(When::Day)
            .map_err(|_| format!("Invalid {what} date '{d}'")),
        (None, Some(t)) => parse_ts(t).map(When::At),
        _ => Err(format!(
            "Invalid {what} time: exactly one of date and dateTime is required"
        )),
    }
}

/// The instant a `When` begins, all-day dates at midnight in `zone`.
pub(crate) fn instant(w: When, zone: Tz) -> DateTime<Utc> {
    match w {
        When::At(t) => t.with_timezone(&Utc),
        When::Day(d) => local_to_utc(d.and_hms_opt(0, 0, 0).unwrap_or_default(), zone),
    }
}

fn local_to_utc(local: NaiveDateTime, zone: Tz) -> DateTime<Utc> {
    zone.from_local_datetime(&local)
        .earliest()
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|| Utc.from_utc_datetime(&local))
}

/// A parsed `RRULE`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rule {
    weekly: bool,
    interval: u32,
    count: Option<usize>,
    until: Option<DateTime<Utc>>,
    by_day: Vec<Weekday>,
}

/// Parses the first `RRULE:` line of `recurrence`; other lines (`EXDATE`, `RDATE`) are ignored.
pub(crate) fn rule(recurrence: &[Value]) -> Result<Option<Rule>, String> {
    let Some(line) = recurrence
        .iter()
        .filter_map(Value::as_str)
        .find(|l| l.starts_with("RRULE:"))
    else {
        return Ok(None);
    };
    let mut r = Rule {
        weekly: false,
        interval: 1,
        count: None,
        until: None,
        by_day: Vec::new(),
    };
    let mut freq = None;
    for part in line.trim_start_matches("RRULE:").split(';') {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("Invalid recurrence rule '{line}'"))?;
        let bad = || format!("Invalid recurrence rule '{line}'");
        match k {
            "FREQ" => freq = Some(v.to_owned()),
            "INTERVAL" => r.interval = v.parse().map_err(|_| bad())?,
            "COUNT" => r.count = Some(v.parse().map_err(|_| bad())?),
            "UNTIL" => r.until = Some(parse_until(v).ok_or_else(bad)?),
            "BYDAY" => {
                for d in v.split(',') {
                    r.by_day.push(weekday(d).ok_or_else(bad)?);
                }
            }
            "WKST" => {}
            _ => return Err(format!("Unsupported recurrence part '{k}' in the double")),
        }
    }
    match freq.as_deref() {
        Some("DAILY") => {}
        Some("WEEKLY") => r.weekly = true,
        _ => return Err(format!("Invalid or unsupported FREQ in '{line}'")),
    }
    if r.interval == 0 {
        return Err(format!("Invalid recurrence rule '{line}'"));
    }
    Ok(Some(r))
}

fn parse_until(v: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = NaiveDateTime::parse_from_str(v, "%Y%m%dT%H%M%SZ") {
        return Some(Utc.from_utc_datetime(&t));
    }
    NaiveDate::parse_from_str(v, "%Y%m%d")
        .ok()
        .and_then(|d| d.and_hms_opt(23, 59, 59))
        .map(|t| Utc.from_utc_datetime(&t))
}

fn weekday(s: &str) -> Option<Weekday> {
    Some(match s {
        "MO" => Weekday::Mon,
        "TU" => Weekday::Tue,
        "WE" => Weekday::Wed,
        "TH" => Weekday::Thu,
        "FR" => Weekday::Fri,
        "SA" => Weekday::Sat,
        "SU" => Weekday::Sun,
        _ => return None,
    })
}

/// The occurrences of `event` starting before `until` (the event itself when not recurring).
/// Instances get Google's ids (`<id>_<yyyymmddThhmmssZ>`, all-day `<id>_<yyyymmdd>`),
/// `recurringEventId` and `originalStartTime`.
pub(crate) fn expand(event: &Value, calendar_zone: Tz, until: DateTime<Utc>) -> Result<Vec<Value>, String> {
    let recurrence = event
        .get("recurrence")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(rule) = rule(&recurrence)? else {
        return Ok(vec![event.clone()]);
    };
    let start = when(&event["start"], "start")?;
    let end = when(&event["end"], "end")?;
    let zone: Tz = event["start"]["timeZone"]
        .as_str()
        .and_then(|z| z.parse().ok())
        .unwrap_or(calendar_zone);
    let id = event["id"].as_str().unwrap_or_default();
    let (first_local, length, all_day) = match (start, end) {
        (When::Day(s), When::Day(e)) => (s.and_hms_opt(0, 0, 0).unwrap_or_default(), e - s, true),
        (When::At(s), When::At(e)) => (s.with_timezone(&zone).naive_local(), e - s, false),
        _ => return Err("start and end must both be dates or both be dateTimes".into()),
    };
    let mut out = Vec::new();
    let mut period_start = first_local;
    let days: Vec<Weekday> = if rule.weekly && !rule.by_day.is_empty() {
        rule.by_day.clone()
    } else {
        vec![first_local.weekday()]
    };
    'periods: for _ in 0..MAX_INSTANCES {
        let candidates: Vec<NaiveDateTime> = if rule.weekly {
            let monday = period_start - Duration::days(i64::from(period_start.weekday().num_days_from_monday()));
            let mut c: Vec<NaiveDateTime> = days
                .iter()
                .map(|d| monday + Duration::days(i64::from(d.num_days_from_monday())))
                .filter(|t| *t >= first_local)
                .collect();
            c.sort();
            c
        } else {
            vec![period_start]
        };
        for local in candidates {
            let at = local_to_utc(local, zone);
            if rule.count.is_some_and(|c| out.len() >= c) || rule.until.is_some_and(|u| at > u) || at >= until {
                break 'periods;
            }
            out.push(instance(event, id, local, length, all_day, zone));
        }
        let step = if rule.weekly { 7 * rule.interval } else { rule.interval };
        period_start += Duration::days(i64::from(step));
    }
    Ok(out)
}

fn instance(master: &Value, id: &str, local: NaiveDateTime, length: Duration, all_day: bool, zone: Tz) -> Value {
    let mut v = master.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("recurrence");
    }
    if all_day {
        let day = local.date();
        v["id"] = json!(format!("{id}_{}", day.format("%Y%m%d")));
        v["start"] = json!({"date": day.to_string()});
        v["end"] = json!({"date": (day + length).to_string()});
        v["originalStartTime"] = json!({"date": day.to_string()});
    } else {
        let start = zone
            .from_local_datetime(&local)
            .earliest()
            .map(|t| t.fixed_offset())
            .unwrap_or_else(|| Utc.from_utc_datetime(&local).fixed_offset());
        let end = start + length;
        let z = zone.name();
        v["id"] = json!(format!("{id}_{}", start.with_timezone(&Utc).format("%Y%m%dT%H%M%SZ")));
        v["start"] = json!({"dateTime": start.to_rfc3339(), "timeZone": z});
        v["end"] = json!({"dateTime": end.to_rfc3339(), "timeZone": z});
        v["originalStartTime"] = json!({"dateTime": start.to_rfc3339(), "timeZone": z});
    }
    v["recurringEventId"] = json!(id);
    v
}
