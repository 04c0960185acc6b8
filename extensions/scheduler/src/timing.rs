//! Schedules made ready to compute slots: crontab expressions through `croner` in a `chrono-tz`
//! zone, one-shot instants and fixed periods; parsing of the tool's `at`, `in` and `every`.
//!
//! DST follows Vixie cron (croner implements both kinds; the tests check them): a job at a fixed
//! local time (one value each for second, minute and hour) whose time falls in a gap fires once
//! right after the jump and once in a repeated hour; a job with a wildcard, list or step in those
//! fields follows real time (once per real hour in a repeated hour, nothing for slots in a gap).
//! Day of month and day of week follow crontab's OR rule: when both are restricted, a day matching
//! either fires (`0 9 13 * 5` runs on the 13th and on every Friday).

use crate::job::ScheduleSpec;
use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds};

/// The shortest period a job may have (cron, `every`), seconds.
pub const MIN_PERIOD_SECS: i64 = 30;

/// The longest `every` period (a year and a day).
pub const MAX_EVERY_SECS: i64 = 366 * 86_400;

/// The longest delay for `in` and the furthest `at` (ten years).
pub const MAX_AHEAD: Duration = Duration::days(3653);

/// How late a missed one-shot may still run.
pub const ONE_SHOT_GRACE: Duration = Duration::hours(24);

/// Occurrences looked at to check a cron expression's period.
const PERIOD_SAMPLES: usize = 64;

/// A schedule that was given wrongly; the message says what to write instead.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TimingError {
    /// Not 5 or 6 fields, or croner refused it.
    #[error(
        "invalid cron expression `{expr}`: {reason}. Use 5 fields (minute hour day-of-month month day-of-week, e.g. `0 9 * * 1-5`) or 6 with seconds first"
    )]
    Cron {
        /// The expression.
        expr: String,
        /// Why.
        reason: String,
    },
    /// Fires more often than every 30 s.
    #[error("`{expr}` fires every {gap_secs} s at times; jobs may fire at most every {MIN_PERIOD_SECS} s")]
    TooFrequent {
        /// The expression.
        expr: String,
        /// The shortest gap seen, seconds.
        gap_secs: i64,
    },
    /// Never fires.
    #[error("`{0}` never fires")]
    Never(String),
    /// Not an IANA zone.
    #[error("unknown time zone `{0}`: use an IANA name such as Europe/Berlin, America/New_York or UTC")]
    Zone(String),
    /// Not a duration.
    #[error("invalid duration `{0}`: write it like `90s`, `10m`, `2h`, `1h30m` or `1d`")]
    Duration(String),
    /// `every` below the minimum.
    #[error("`every` must be at least {MIN_PERIOD_SECS} s (got {0} s)")]
    EveryTooShort(i64),
    /// `every` above the maximum.
    #[error("`every` must be at most 366 days (got {0} s)")]
    EveryTooLong(i64),
    /// Too far ahead.
    #[error("`{0}` is too far ahead: at most ten years")]
    TooFar(String),
    /// Not a time.
    #[error(
        "invalid time `{0}`: give RFC 3339 (`2026-12-01T09:00:00+01:00`), a local `2026-12-01 09:00`, or `09:00` (the next one)"
    )]
    At(String),
    /// In the past.
    #[error("`{0}` is in the past")]
    Past(String),
}

/// A schedule ready to compute slots.
#[derive(Debug, Clone)]
pub enum Compiled {
    /// A crontab expression in a zone.
    Cron {
        /// Parsed expression.
        cron: Box<Cron>,
        /// Zone.
        tz: Tz,
    },
    /// Once.
    At(DateTime<Utc>),
    /// Every `period` from `anchor`.
    Every {
        /// Period.
        period: Duration,
        /// First slot.
        anchor: DateTime<Utc>,
    },
}

impl Compiled {
    /// Compiles a stored schedule (no period check: that happened when it was added).
    pub fn compile(spec: &ScheduleSpec) -> Result<Self, TimingError> {
        Ok(match spec {
            ScheduleSpec::Cron { expr, time_zone } => Compiled::Cron {
                cron: Box::new(parse_cron(expr)?),
                tz: parse_zone(time_zone)?,
            },
            ScheduleSpec::At { at, .. } => Compiled::At(*at),
            ScheduleSpec::Every { every_secs, anchor, .. } => {
                // Checked here too: the file may have been edited by hand (or by the agent).
                let secs = i64::try_from(*every_secs).unwrap_or(i64::MAX);
                if secs < MIN_PERIOD_SECS {
                    return Err(TimingError::EveryTooShort(secs));
                }
                if secs > MAX_EVERY_SECS {
                    return Err(TimingError::EveryTooLong(secs));
                }
                Compiled::Every {
                    period: Duration::seconds(secs),
                    anchor: *anchor,
                }
            }
        })
    }

    /// Whether more than one slot can come.
    pub fn is_recurring(&self) -> bool {
        !matches!(self, Compiled::At(_))
    }

    /// The first slot strictly after `t`; `None` when none is left.
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Compiled::Cron { cron, tz } => cron
                .find_next_occurrence(&t.with_timezone(tz), false)
                .ok()
                .map(|d| d.with_timezone(&Utc)),
            Compiled::At(at) => (*at > t).then_some(*at),
            Compiled::Every { period, anchor } => {
                if t < *anchor {
                    return Some(*anchor);
                }
                let period_ms = period.num_milliseconds().max(1);
                let k = (t - *anchor).num_milliseconds() / period_ms + 1;
                let offset = Duration::try_milliseconds(k.checked_mul(period_ms)?)?;
                anchor.checked_add_signed(offset)
            }
        }
    }

    /// The newest slot at or before `t`, if any.
    pub fn newest_at_or_before(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Compiled::Cron { cron, tz } => cron
                .find_previous_occurrence(&t.with_timezone(tz), true)
                .ok()
                .map(|d| d.with_timezone(&Utc)),
            Compiled::At(at) => (*at <= t).then_some(*at),
            Compiled::Every { period, anchor } => {
                if t < *anchor {
                    return None;
                }
                let period_ms = period.num_milliseconds().max(1);
                let k = (t - *anchor).num_milliseconds() / period_ms;
                anchor.checked_add_signed(Duration::try_milliseconds(k.checked_mul(period_ms)?)?)
            }
        }
    }

    /// The first slot at or after `t`.
    pub fn next_from(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.next_after(t - Duration::milliseconds(1))
            .filter(|n| *n >= t)
            .or_else(|| self.next_after(t))
    }

    /// How late a missed `slot` may still run: min(period / 2, 1 h) for recurring jobs, where the
    /// period is the gap from `slot` to the slot after it (DESIGN.md, irregular crons); 24 h for
    /// one-shots.
    pub fn grace(&self, slot: DateTime<Utc>) -> Duration {
        if !self.is_recurring() {
            return ONE_SHOT_GRACE;
        }
        let period = self.next_after(slot).map_or(Duration::hours(2), |n| n - slot);
        (period / 2).min(Duration::hours(1))
    }

    /// The next `n` slots after `t`.
    pub fn upcoming(&self, t: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
        let mut out = Vec::with_capacity(n);
        let mut at = t;
        while out.len() < n {
            match self.next_after(at) {
                Some(next) => {
                    out.push(next);
                    at = next;
                }
                None => break,
            }
        }
        out
    }
}

/// Parses a 5- or 6-field crontab expression (seconds first when 6). Nicknames such as `@daily`
/// are accepted too.
pub fn parse_cron(expr: &str) -> Result<Cron, TimingError> {
    let trimmed = expr.trim();
    let fields = trimmed.split_whitespace().count();
    if !trimmed.starts_with('@') && !(5..=6).contains(&fields) {
        return Err(TimingError::Cron {
            expr: expr.into(),
            reason: format!("it has {fields} fields"),
        });
    }
    CronParser::builder()
        .seconds(Seconds::Optional)
        .build()
        .parse(trimmed)
        .map_err(|e| TimingError::Cron {
            expr: expr.into(),
            reason: e.to_string(),
        })
}

/// Parses a cron expression for a new job: also refuses one that never fires or fires more
/// often than every [`MIN_PERIOD_SECS`] (checked over its next occurrences from `now`).
pub fn check_new_cron(expr: &str, tz: Tz, now: DateTime<Utc>) -> Result<Compiled, TimingError> {
    let compiled = Compiled::Cron {
        cron: Box::new(parse_cron(expr)?),
        tz,
    };
    let slots = compiled.upcoming(now, PERIOD_SAMPLES);
    if slots.is_empty() {
        return Err(TimingError::Never(expr.into()));
    }
    if let Some(gap) = slots.windows(2).map(|w| (w[1] - w[0]).num_seconds()).min()
        && gap < MIN_PERIOD_SECS
    {
        return Err(TimingError::TooFrequent {
            expr: expr.into(),
            gap_secs: gap,
        });
    }
    Ok(compiled)
}

/// An IANA zone.
pub fn parse_zone(name: &str) -> Result<Tz, TimingError> {
    name.trim().parse::<Tz>().map_err(|_| TimingError::Zone(name.into()))
}

/// A duration such as `90s`, `10m`, `2h`, `1h30m`, `1d`, `2 minutes` (humantime's syntax).
/// At most ten years ([`MAX_AHEAD`]).
pub fn parse_duration(text: &str) -> Result<Duration, TimingError> {
    let std = humantime::parse_duration(text.trim()).map_err(|_| TimingError::Duration(text.into()))?;
    let d = Duration::from_std(std).map_err(|_| TimingError::TooFar(text.into()))?;
    if d <= Duration::zero() {
        return Err(TimingError::Duration(text.into()));
    }
    if d > MAX_AHEAD {
        return Err(TimingError::TooFar(text.into()));
    }
    Ok(d)
}

/// `now + d`, refused past ten years ahead.
pub fn ahead(now: DateTime<Utc>, d: Duration, text: &str) -> Result<DateTime<Utc>, TimingError> {
    if d > MAX_AHEAD {
        return Err(TimingError::TooFar(text.into()));
    }
    now.checked_add_signed(d)
        .ok_or_else(|| TimingError::TooFar(text.into()))
}

/// An `every` period: a duration of at least [`MIN_PERIOD_SECS`].
pub fn parse_every(text: &str) -> Result<Duration, TimingError> {
    let d = parse_duration(text)?;
    if d.num_seconds() < MIN_PERIOD_SECS {
        return Err(TimingError::EveryTooShort(d.num_seconds()));
    }
    if d.num_seconds() > MAX_EVERY_SECS {
        return Err(TimingError::EveryTooLong(d.num_seconds()));
    }
    Ok(d)
}

/// An `at` time: RFC 3339 with an offset; or a local date and time read in `tz`; or a local
/// `HH:MM` meaning its next occurrence. A local time in a DST gap moves to the first minute after
/// the jump; a repeated one takes its first occurrence. Refuses instants before `now`.
pub fn parse_at(text: &str, tz: Tz, now: DateTime<Utc>) -> Result<DateTime<Utc>, TimingError> {
    let t = text.trim();
    let at = if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        d.with_timezone(&Utc)
    } else if let Some(naive) = [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(t, f).ok())
    {
        local_to_utc(naive, tz).ok_or_else(|| TimingError::At(text.into()))?
    } else if let Some(time) = ["%H:%M:%S", "%H:%M"]
        .iter()
        .find_map(|f| NaiveTime::parse_from_str(t, f).ok())
    {
        let today = now.with_timezone(&tz).date_naive();
        let first = local_to_utc(today.and_time(time), tz).ok_or_else(|| TimingError::At(text.into()))?;
        if first > now {
            first
        } else {
            let tomorrow = today.succ_opt().ok_or_else(|| TimingError::At(text.into()))?;
            local_to_utc(tomorrow.and_time(time), tz).ok_or_else(|| TimingError::At(text.into()))?
        }
    } else {
        return Err(TimingError::At(text.into()));
    };
    if at <= now {
        return Err(TimingError::Past(text.into()));
    }
    if at - now > MAX_AHEAD {
        return Err(TimingError::TooFar(text.into()));
    }
    Ok(at)
}

/// A local time in `tz`: the earlier of a repeated time; a time in a gap moves past the jump.
fn local_to_utc(naive: NaiveDateTime, tz: Tz) -> Option<DateTime<Utc>> {
    for shift in 0..=(3 * 60) {
        let local = naive.checked_add_signed(Duration::minutes(shift))?;
        match tz.from_local_datetime(&local) {
            LocalResult::Single(d) => return Some(d.with_timezone(&Utc)),
            LocalResult::Ambiguous(a, _) => return Some(a.with_timezone(&Utc)),
            LocalResult::None => {}
        }
    }
    None
}
