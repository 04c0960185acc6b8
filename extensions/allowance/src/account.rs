//! [`Account`]: who a request's spend is counted against, and [`Period`]: the windows caps and
//! totals are kept in.

use chrono::{Datelike, NaiveDate};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Who pays for a request. A request is counted against each of its accounts (a group message:
/// the chat and its sender). Written `chat:<key>`, `user:<id>`, `caller:<name>` in the store's
/// files.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Account {
    /// A chat, by the host's chat key (e.g. `123` or `-100123/7` for a forum topic).
    Chat(String),
    /// A person, by their Telegram user id.
    User(String),
    /// An A2A caller, by its configured name.
    Caller(String),
}

/// An account's text does not say `chat:`, `user:` or `caller:`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("`{0}` is no account: write chat:<key>, user:<id> or caller:<name>")]
pub struct BadAccount(pub String);

/// The kinds of [`Account`], for listing the top spenders of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccountKind {
    /// [`Account::Chat`].
    Chat,
    /// [`Account::User`].
    User,
    /// [`Account::Caller`].
    Caller,
}

impl AccountKind {
    /// `chat`, `user` or `caller`, as the store's files write it.
    pub fn as_str(self) -> &'static str {
        match self {
            AccountKind::Chat => "chat",
            AccountKind::User => "user",
            AccountKind::Caller => "caller",
        }
    }
}

impl Account {
    /// The account's kind.
    pub fn kind(&self) -> AccountKind {
        match self {
            Account::Chat(_) => AccountKind::Chat,
            Account::User(_) => AccountKind::User,
            Account::Caller(_) => AccountKind::Caller,
        }
    }

    /// Its key within its kind.
    pub fn id(&self) -> &str {
        match self {
            Account::Chat(id) | Account::User(id) | Account::Caller(id) => id,
        }
    }
}

impl std::fmt::Display for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.kind().as_str(), self.id())
    }
}

impl std::str::FromStr for Account {
    type Err = BadAccount;
    fn from_str(s: &str) -> Result<Self, BadAccount> {
        let bad = || BadAccount(s.to_owned());
        let (kind, id) = s.split_once(':').ok_or_else(bad)?;
        if id.is_empty() {
            return Err(bad());
        }
        match kind {
            "chat" => Ok(Account::Chat(id.to_owned())),
            "user" => Ok(Account::User(id.to_owned())),
            "caller" => Ok(Account::Caller(id.to_owned())),
            _ => Err(bad()),
        }
    }
}

impl Serialize for Account {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Account {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A window of spend: one day or one calendar month, in the chat's time zone (the caller gives
/// the local date; the store keeps no zones). Written `{"day": "2026-12-06"}` or
/// `{"month": [2026, 12]}` in snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Period {
    /// One local day.
    Day(NaiveDate),
    /// One local calendar month: `(year, month 1–12)`.
    Month(i32, u32),
}

impl Period {
    /// The month `day` falls in.
    pub fn month_of(day: NaiveDate) -> Period {
        Period::Month(day.year(), day.month())
    }

    /// Whether `day` falls in this period.
    pub fn contains(self, day: NaiveDate) -> bool {
        match self {
            Period::Day(d) => d == day,
            Period::Month(y, m) => day.year() == y && day.month() == m,
        }
    }

    /// Whether this period does not end before `oldest`: a day from `oldest` on, a month from
    /// `oldest`'s month on (what is kept when older windows are forgotten).
    pub fn not_before(self, oldest: NaiveDate) -> bool {
        match self {
            Period::Day(d) => d >= oldest,
            Period::Month(y, m) => (y, m) >= (oldest.year(), oldest.month()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_read_back_what_they_write_and_refuse_other_kinds() {
        for a in [
            Account::Chat("-100123/7".into()),
            Account::User("42".into()),
            Account::Caller("ops:bot".into()),
        ] {
            assert_eq!(a.to_string().parse::<Account>(), Ok(a));
        }
        assert_eq!("group:1".parse::<Account>(), Err(BadAccount("group:1".into())));
        assert_eq!("chat:".parse::<Account>(), Err(BadAccount("chat:".into())));
    }

    #[test]
    fn a_month_holds_its_days_only() {
        let d = |y, m, day| NaiveDate::from_ymd_opt(y, m, day).unwrap_or_default();
        let month = Period::month_of(d(2026, 12, 6));
        assert!(month.contains(d(2026, 12, 31)));
        assert!(!month.contains(d(2027, 1, 1)));
        assert!(Period::Day(d(2026, 12, 6)).contains(d(2026, 12, 6)));
    }

    #[test]
    fn a_period_is_not_before_a_day_when_it_ends_on_or_after_it() {
        let d = |y, m, day| NaiveDate::from_ymd_opt(y, m, day).unwrap_or_default();
        let oldest = d(2026, 10, 15);
        assert!(Period::Day(d(2026, 10, 15)).not_before(oldest));
        assert!(!Period::Day(d(2026, 10, 14)).not_before(oldest));
        assert!(Period::month_of(d(2026, 10, 1)).not_before(oldest));
        assert!(!Period::month_of(d(2026, 9, 30)).not_before(oldest));
        assert!(Period::month_of(d(2027, 1, 1)).not_before(oldest));
    }
}
