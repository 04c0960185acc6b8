//! Reading the model's times and showing Google's in the chat's zone.
//!
//! Accepted: RFC 3339 with an offset (`2030-01-07T09:00:00+09:00`, `…Z`), or a local time
//! (`2030-01-07T09:00`, `2030-01-07 09:00[:ss]`) read in the given zone; all-day values are dates
//! (`2030-01-07`). Everything sent to Google carries an offset (google-calendar3 sends UTC `Z`).

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use google_calendar3::api::EventDateTime;

use crate::error::CalendarError;

fn invalid(m: String) -> CalendarError {
    CalendarError::Invalid(m)
}

/// Parses an IANA zone name.
pub(crate) fn zone(name: &str) -> Result<Tz, CalendarError> {
    name.parse::<Tz>().map_err(|_| {
        invalid(format!(
            "unknown time zone `{name}` (use an IANA name such as Europe/Berlin)"
        ))
    })
}

/// An instant from RFC 3339 or a local time in `tz`.
pub(crate) fn instant(text: &str, tz: Tz) -> Result<DateTime<Utc>, CalendarError> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(local) = NaiveDateTime::parse_from_str(text, format) {
            return tz
                .from_local_datetime(&local)
                .earliest()
                .map(|t| t.with_timezone(&Utc))
                .ok_or_else(|| invalid(format!("`{text}` does not exist in {tz} (a clock change skips it)")));
        }
    }
    if let Ok(day) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return instant(&format!("{day} 00:00"), tz);
    }
    Err(invalid(format!(
        "cannot read the time `{text}`: use RFC 3339 (2030-01-07T09:00:00+09:00) or a local time (2030-01-07 09:00)"
    )))
}

/// A date (`YYYY-MM-DD`; a timestamp's date part is accepted too).
pub(crate) fn date(text: &str) -> Result<NaiveDate, CalendarError> {
    let text = text.trim();
    NaiveDate::parse_from_str(text.get(..10).unwrap_or(text), "%Y-%m-%d")
        .map_err(|_| invalid(format!("cannot read the date `{text}`: use YYYY-MM-DD")))
}

/// The longest duration accepted.
pub(crate) const MAX_DURATION_DAYS: i64 = 366;

/// A duration such as `90m`, `1h30m`, `2h`, `1d`, `45s`: positive, at most 366 days.
pub(crate) fn duration(text: &str) -> Result<Duration, CalendarError> {
    let bad = || {
        invalid(format!(
            "cannot read the duration `{text}`: use e.g. 30m, 1h30m, 2h, 1d (at most {MAX_DURATION_DAYS}d)"
        ))
    };
    let max = Duration::days(MAX_DURATION_DAYS);
    let mut total = Duration::zero();
    let mut number = String::new();
    for c in text.trim().chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let n: i64 = number.parse().map_err(|_| bad())?;
        number.clear();
        let part = match c {
            'd' => Duration::try_days(n),
            'h' => Duration::try_hours(n),
            'm' => Duration::try_minutes(n),
            's' => Duration::try_seconds(n),
            _ => return Err(bad()),
        };
        total = part
            .and_then(|p| total.checked_add(&p))
            .filter(|t| *t <= max)
            .ok_or_else(bad)?;
    }
    if !number.is_empty() || total <= Duration::zero() {
        return Err(bad());
    }
    Ok(total)
}

/// A timed event end for google-calendar3, with the zone it is meant in.
pub(crate) fn timed(t: DateTime<Utc>, tz: Tz) -> EventDateTime {
    EventDateTime {
        date: None,
        date_time: Some(t),
        time_zone: Some(tz.name().to_owned()),
    }
}

/// An all-day event end.
pub(crate) fn all_day(d: NaiveDate) -> EventDateTime {
    EventDateTime {
        date: Some(d),
        date_time: None,
        time_zone: None,
    }
}

/// `2030-01-07 09:00` in `tz` (with the zone's abbreviation-free offset omitted: the chat's zone
/// is said once per answer).
pub(crate) fn show(t: DateTime<Utc>, tz: Tz) -> String {
    t.with_timezone(&tz).format("%Y-%m-%d %H:%M").to_string()
}

/// An event's start–end in `tz`; all-day ends are exclusive, so the last day shown is end − 1.
pub(crate) fn show_span(start: Option<&EventDateTime>, end: Option<&EventDateTime>, tz: Tz) -> String {
    let (Some(start), Some(end)) = (start, end) else {
        return "(no time)".into();
    };
    match (start.date, end.date, start.date_time, end.date_time) {
        (Some(s), Some(e), _, _) => {
            let last = e - Duration::days(1);
            if last <= s {
                format!("{s} (all day)")
            } else {
                format!("{s} – {last} (all day)")
            }
        }
        (_, _, Some(s), Some(e)) => {
            let (ls, le) = (s.with_timezone(&tz), e.with_timezone(&tz));
            if ls.date_naive() == le.date_naive() {
                format!("{} – {}", show(s, tz), le.format("%H:%M"))
            } else {
                format!("{} – {}", show(s, tz), show(e, tz))
            }
        }
        _ => "(no time)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_times_are_read_in_the_zone_and_offsets_are_kept() -> Result<(), CalendarError> {
        let tokyo = zone("Asia/Tokyo")?;
        assert_eq!(
            instant("2030-01-07 09:00", tokyo)?.to_rfc3339(),
            "2030-01-07T00:00:00+00:00"
        );
        assert_eq!(
            instant("2030-01-07T09:00:00+01:00", tokyo)?.to_rfc3339(),
            "2030-01-07T08:00:00+00:00"
        );
        assert!(instant("next tuesday", tokyo).is_err());
        assert_eq!(duration("1h30m")?, Duration::minutes(90));
        assert!(duration("90").is_err());
        assert_eq!(duration("366d")?, Duration::days(366));
        for huge in ["9999999999999d", "367d", "99999999999999999999h", "366d1s"] {
            let e = duration(huge).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains("at most 366d"), "{huge}: {e}");
        }
        assert!(zone("Mars/Base").is_err());
        Ok(())
    }

    #[test]
    fn all_day_ends_are_shown_inclusive() {
        let tz = Tz::UTC;
        let s = all_day(NaiveDate::from_ymd_opt(2030, 1, 7).unwrap_or_default());
        let e = all_day(NaiveDate::from_ymd_opt(2030, 1, 8).unwrap_or_default());
        assert_eq!(show_span(Some(&s), Some(&e), tz), "2030-01-07 (all day)");
        let e3 = all_day(NaiveDate::from_ymd_opt(2030, 1, 10).unwrap_or_default());
        assert_eq!(show_span(Some(&s), Some(&e3), tz), "2030-01-07 – 2030-01-09 (all day)");
    }
}
