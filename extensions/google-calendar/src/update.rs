//! The start and end of an updated event, from the changed arguments and the event as stored.
//!
//! An event keeps its kind (timed or all-day) unless `all_day` says otherwise; a missing end
//! keeps the event's length (or comes from `duration`); `time_zone` alone relabels the zone.

use chrono::{DateTime, Duration, NaiveDate, Utc};
use chrono_tz::Tz;
use google_calendar3::api::{Event, EventDateTime};

use crate::error::CalendarError;
use crate::times::{self, all_day, timed};
use crate::tool::CalendarArgs;

fn invalid(m: &str) -> CalendarError {
    CalendarError::Invalid(m.to_owned())
}

/// Whether the arguments change the event's times.
pub(crate) fn changes_times(args: &CalendarArgs) -> bool {
    args.start.is_some()
        || args.end.is_some()
        || args.duration.is_some()
        || args.all_day.is_some()
        || args.time_zone.is_some()
}

/// `t + d`, or an error naming what to give.
pub(crate) fn later(t: DateTime<Utc>, d: Duration) -> Result<DateTime<Utc>, CalendarError> {
    t.checked_add_signed(d)
        .ok_or_else(|| invalid("the end is out of range: give an earlier `end` or a shorter `duration`"))
}

fn day_after(d: NaiveDate) -> Result<NaiveDate, CalendarError> {
    d.succ_opt()
        .ok_or_else(|| invalid("the last day is out of range: give an earlier date"))
}

/// The new start and end of `old` (`None` when the arguments change no time).
pub(crate) fn new_times(
    args: &CalendarArgs,
    old: &Event,
    chat_tz: Tz,
) -> Result<Option<(EventDateTime, EventDateTime)>, CalendarError> {
    if !changes_times(args) {
        return Ok(None);
    }
    let os = old.start.clone().unwrap_or_default();
    let oe = old.end.clone().unwrap_or_default();
    let tz = match &args.time_zone {
        Some(z) => times::zone(z)?,
        None => os
            .time_zone
            .as_deref()
            .and_then(|z| times::zone(z).ok())
            .unwrap_or(chat_tz),
    };
    if args.all_day.unwrap_or(os.date.is_some()) {
        let first = match (&args.start, os.date, os.date_time) {
            (Some(s), _, _) => times::date(s)?,
            (None, Some(d), _) => d,
            (None, None, Some(t)) => t.with_timezone(&tz).date_naive(),
            (None, None, None) => return Err(invalid("give `start` (a date)")),
        };
        let last = if let Some(e) = &args.end {
            times::date(e)?
        } else if let Some(d) = &args.duration {
            let days = times::duration(d)?.num_seconds().div_euclid(86_400).max(1);
            first
                .checked_add_signed(Duration::days(days - 1))
                .ok_or_else(|| invalid("the last day is out of range: give a shorter `duration`"))?
        } else if let (Some(s), Some(e)) = (os.date, oe.date) {
            // Keep the number of days (the stored end is exclusive).
            first
                .checked_add_signed((e - s - Duration::days(1)).max(Duration::zero()))
                .ok_or_else(|| invalid("the last day is out of range: give `end`"))?
        } else {
            first
        };
        if last < first {
            return Err(invalid("`end` (the last day) is before `start`"));
        }
        return Ok(Some((all_day(first), all_day(day_after(last)?))));
    }
    let start = match (&args.start, os.date_time) {
        (Some(s), _) => times::instant(s, tz)?,
        (None, Some(t)) => t,
        (None, None) => {
            return Err(invalid(
                "to turn an all-day event into a timed one, give `start` (a time)",
            ));
        }
    };
    let end = if let Some(e) = &args.end {
        times::instant(e, tz)?
    } else if let Some(d) = &args.duration {
        later(start, times::duration(d)?)?
    } else if let (Some(s), Some(e)) = (os.date_time, oe.date_time) {
        later(start, e - s)?
    } else {
        later(start, Duration::hours(1))?
    };
    if end <= start {
        return Err(invalid("the event must end after it starts"));
    }
    Ok(Some((timed(start, tz), timed(end, tz))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: serde_json::Value) -> CalendarArgs {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    fn event(v: serde_json::Value) -> Event {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    fn shown(t: Option<(EventDateTime, EventDateTime)>) -> serde_json::Value {
        serde_json::to_value(t).unwrap_or_default()
    }

    #[test]
    fn kinds_are_kept_and_lengths_derived() -> Result<(), CalendarError> {
        let timed_event = event(json!({
            "start": {"dateTime": "2030-05-02T11:00:00Z", "timeZone": "Europe/Berlin"},
            "end": {"dateTime": "2030-05-02T12:30:00Z", "timeZone": "Europe/Berlin"}}));
        let trip = event(json!({"start": {"date": "2030-03-10"}, "end": {"date": "2030-03-13"}}));
        let a = |v| args(v);
        // Only the duration changes: the end follows.
        let t = new_times(
            &a(json!({"action": "update_event", "duration": "2h"})),
            &timed_event,
            Tz::UTC,
        )?;
        assert_eq!(shown(t)[1]["dateTime"], json!("2030-05-02T13:00:00Z"));
        // Only the zone: the event is relabelled.
        let t = new_times(
            &a(json!({"action": "update_event", "time_zone": "Asia/Tokyo"})),
            &timed_event,
            Tz::UTC,
        )?;
        assert_eq!(shown(t)[0]["timeZone"], json!("Asia/Tokyo"));
        // An all-day event moved without `all_day` stays all-day, three days long.
        let t = new_times(
            &a(json!({"action": "update_event", "start": "2030-04-01"})),
            &trip,
            Tz::UTC,
        )?;
        assert_eq!(
            shown(t),
            json!([{"date": "2030-04-01", "dateTime": null, "timeZone": null},
                   {"date": "2030-04-04", "dateTime": null, "timeZone": null}])
        );
        // Timed → all-day and back.
        let t = new_times(
            &a(json!({"action": "update_event", "all_day": true})),
            &timed_event,
            Tz::UTC,
        )?;
        assert_eq!(shown(t)[1]["date"], json!("2030-05-03"));
        let t = new_times(
            &a(json!({"action": "update_event", "all_day": false, "start": "2030-03-10 09:00"})),
            &trip,
            Tz::UTC,
        )?;
        assert_eq!(shown(t)[1]["dateTime"], json!("2030-03-10T10:00:00Z"));
        assert!(new_times(&a(json!({"action": "update_event", "all_day": false})), &trip, Tz::UTC).is_err());
        assert!(new_times(&a(json!({"action": "update_event", "summary": "x"})), &trip, Tz::UTC)?.is_none());
        Ok(())
    }
}
