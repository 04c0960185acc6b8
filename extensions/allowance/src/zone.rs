//! Local days and resets: allowances count in the chat's time zone.

use crate::check::Window;
use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;

/// The local date in `zone` at `now`.
pub fn local_day(now: DateTime<Utc>, zone: Tz) -> NaiveDate {
    now.with_timezone(&zone).date_naive()
}

/// When the `window` holding local day `day` ends in `zone`: the next local midnight, or the
/// first midnight of the next month (a midnight a DST change skips: the first instant after it).
pub fn resets_at(day: NaiveDate, window: Window, zone: Tz) -> DateTime<Tz> {
    let next = match window {
        Window::Daily => day.succ_opt(),
        Window::Monthly => {
            let (y, m) = if day.month() == 12 {
                (day.year() + 1, 1)
            } else {
                (day.year(), day.month() + 1)
            };
            NaiveDate::from_ymd_opt(y, m, 1)
        }
    }
    .unwrap_or(day);
    let midnight = next.and_time(chrono::NaiveTime::MIN);
    zone.from_local_datetime(&midnight)
        .earliest()
        // A skipped midnight (a zone that changes clocks at 00:00): an hour later exists.
        .or_else(|| {
            zone.from_local_datetime(&(midnight + chrono::Duration::hours(1)))
                .earliest()
        })
        .unwrap_or_else(|| zone.from_utc_datetime(&midnight))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap_or_default()
    }

    #[test]
    fn the_day_is_the_chats_and_resets_at_its_midnight() {
        let zone: Tz = chrono_tz::Asia::Tokyo;
        let now = Utc.with_ymd_and_hms(2026, 12, 6, 20, 0, 0).single().unwrap_or_default();
        assert_eq!(local_day(now, zone), date(2026, 12, 7));
        assert_eq!(
            resets_at(date(2026, 12, 7), Window::Daily, zone).to_rfc3339(),
            "2026-12-08T00:00:00+09:00"
        );
        assert_eq!(
            resets_at(date(2026, 12, 7), Window::Monthly, zone).to_rfc3339(),
            "2027-01-01T00:00:00+09:00"
        );
    }

    #[test]
    fn a_skipped_midnight_resets_an_hour_later() {
        // Chile moved its clocks from 00:00 to 01:00 on 2026-09-06.
        let zone: Tz = chrono_tz::America::Santiago;
        let at = resets_at(date(2026, 9, 5), Window::Daily, zone);
        assert_eq!(at.date_naive(), date(2026, 9, 6));
        assert_eq!(
            at.naive_local().time(),
            chrono::NaiveTime::from_hms_opt(1, 0, 0).unwrap_or_default()
        );
    }
}
