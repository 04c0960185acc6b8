//! What caps apply: `[allowance]`'s defaults, the caps owners set per chat or user with
//! `/allowance`, top-ups for one window and "no limit until tomorrow", kept in
//! `<state_dir>/allowance/overrides.json` (written whole, atomically, on every change), plus the
//! notices already sent (each at most once per window).

use crate::config::allowance::AllowanceConfig;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use volcanic_allowance::{Account, Cap, KEEP_DAYS, MicroUsd, Period, Window};

/// A cap an owner set: an amount, or none at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// At most this much per window.
    Usd(MicroUsd),
    /// No cap (whatever `[allowance]` says).
    Unlimited,
}

/// Which notice went out (once per account and window).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Notice {
    /// The chat was told 80 % is used.
    Nearly,
    /// The owners were told the cap is reached.
    Reached,
    /// The chat was told its cap is reached by a run no one in it asked for (a scheduled job, a
    /// watcher, an A2A caller acting for it): such runs are skipped until the window ends.
    Skipped,
}

/// The overrides file.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// Caps owners set: `(account, window daily?, limit)`.
    #[serde(default)]
    set: Vec<(Account, bool, Limit)>,
    /// Extra allowance in one window (a top-up button).
    #[serde(default)]
    top_ups: Vec<(Account, Period, MicroUsd)>,
    /// No cap in one window ("no limit until tomorrow").
    #[serde(default)]
    lifted: Vec<(Account, Period)>,
    /// Notices sent.
    #[serde(default)]
    noticed: Vec<(Account, Period, Notice)>,
}

/// The caps in force, durable.
#[derive(Debug)]
pub struct Limits {
    defaults: AllowanceConfig,
    path: PathBuf,
    file: Mutex<File>,
}

impl Limits {
    /// Loads `<dir>/overrides.json` (none yet: no overrides). Errors: the file cannot be read or
    /// is not the bot's (the message names it).
    pub fn load(defaults: AllowanceConfig, dir: &Path) -> anyhow::Result<Limits> {
        let path = dir.join("overrides.json");
        let file = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                anyhow::anyhow!(
                    "{} is damaged ({e}); move it aside to drop the overrides",
                    path.display()
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => File::default(),
            Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
        };
        Ok(Limits {
            defaults,
            path,
            file: Mutex::new(file),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, File> {
        self.file.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The caps of `accounts` on local day `day`, each window's: the owner's cap else the
    /// default, plus top-ups, none where lifted.
    pub fn caps(&self, accounts: &[Account], day: chrono::NaiveDate) -> Vec<Cap> {
        let f = self.lock();
        let mut caps = Vec::new();
        for account in accounts {
            for window in [Window::Daily, Window::Monthly] {
                let period = window.period(day);
                if f.lifted.iter().any(|(a, p)| a == account && *p == period) {
                    continue;
                }
                let Some(base) = self.base(&f, account, window) else {
                    continue;
                };
                let extra = f
                    .top_ups
                    .iter()
                    .filter(|(a, p, _)| a == account && *p == period)
                    .fold(MicroUsd::ZERO, |sum, (_, _, m)| sum.plus(*m));
                caps.push(Cap {
                    account: account.clone(),
                    window,
                    limit: base.plus(extra),
                });
            }
        }
        caps
    }

    fn base(&self, f: &File, account: &Account, window: Window) -> Option<MicroUsd> {
        let daily = window == Window::Daily;
        if let Some((_, _, limit)) = f.set.iter().find(|(a, d, _)| a == account && *d == daily) {
            return match limit {
                Limit::Usd(m) => Some(*m),
                Limit::Unlimited => None,
            };
        }
        let d = &self.defaults;
        match (account, window) {
            (Account::Chat(_), Window::Daily) => d.chat_daily,
            (Account::Chat(_), Window::Monthly) => d.chat_monthly,
            (Account::User(_), Window::Daily) => d.user_daily,
            (Account::User(_), Window::Monthly) => d.user_monthly,
            // A caller's cap is its `[a2a.server.callers]` entry's, given with its gate.
            (Account::Caller(_), Window::Daily | Window::Monthly) => None,
        }
    }

    /// Sets `account`'s cap per `window` (`None`: back to the default). Errors: the file could
    /// not be written (nothing changed).
    pub fn set(&self, account: &Account, window: Window, limit: Option<Limit>) -> std::io::Result<()> {
        let daily = window == Window::Daily;
        self.change(|f| {
            f.set.retain(|(a, d, _)| !(a == account && *d == daily));
            if let Some(l) = limit {
                f.set.push((account.clone(), daily, l));
            }
        })
    }

    /// Adds `amount` to `account`'s cap in `period`.
    pub fn top_up(&self, account: &Account, period: Period, amount: MicroUsd) -> std::io::Result<()> {
        self.change(|f| f.top_ups.push((account.clone(), period, amount)))
    }

    /// Lifts every cap of `account` in `period`.
    pub fn lift(&self, account: &Account, period: Period) -> std::io::Result<()> {
        self.change(|f| f.lifted.push((account.clone(), period)))
    }

    /// Records `notice` for `account` in `period`; `false` when it was sent already (send it
    /// only on `true`). A notice that cannot be kept is sent anyway (logged).
    pub fn first_notice(&self, account: &Account, period: Period, notice: Notice) -> bool {
        let key = (account.clone(), period, notice);
        if self.lock().noticed.contains(&key) {
            return false;
        }
        if let Err(e) = self.change(|f| f.noticed.push(key)) {
            tracing::warn!("allowance: cannot keep that a notice was sent: {e}");
        }
        true
    }

    /// Applies `edit` and writes the file; on failure the change is undone.
    fn change(&self, edit: impl FnOnce(&mut File)) -> std::io::Result<()> {
        let mut f = self.lock();
        let before = f.clone();
        edit(&mut f);
        prune(&mut f);
        let bytes = serde_json::to_vec_pretty(&*f).map_err(std::io::Error::other)?;
        if let Err(e) = crate::store_file::write_atomic(&self.path, &bytes) {
            *f = before;
            return Err(e);
        }
        Ok(())
    }
}

/// Drops windows that ended more than two months ago (the spend store's [`KEEP_DAYS`]), so the
/// file stays small.
fn prune(f: &mut File) {
    let oldest = chrono::Utc::now().date_naive() - chrono::Days::new(KEEP_DAYS);
    f.top_ups.retain(|(_, p, _)| p.not_before(oldest));
    f.lifted.retain(|(_, p)| p.not_before(oldest));
    f.noticed.retain(|(_, p, _)| p.not_before(oldest));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day() -> chrono::NaiveDate {
        chrono::Utc::now().date_naive()
    }

    #[test]
    fn caps_are_the_defaults_then_the_owners_then_top_ups_and_lifts() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let defaults = AllowanceConfig {
            chat_daily: Some(MicroUsd(1_000_000)),
            ..Default::default()
        };
        let chat = Account::Chat("5".into());
        let limits = Limits::load(defaults, dir.path())?;
        let daily = |l: &Limits| {
            l.caps(std::slice::from_ref(&chat), day())
                .iter()
                .map(|c| c.limit)
                .collect::<Vec<_>>()
        };
        assert_eq!(daily(&limits), vec![MicroUsd(1_000_000)]);
        limits.set(&chat, Window::Daily, Some(Limit::Usd(MicroUsd(5_000_000))))?;
        limits.top_up(&chat, Period::Day(day()), MicroUsd(1_000_000))?;
        assert_eq!(daily(&limits), vec![MicroUsd(6_000_000)]);
        // Durable: a new load reads the same.
        let again = Limits::load(defaults, dir.path())?;
        assert_eq!(daily(&again), vec![MicroUsd(6_000_000)]);
        again.lift(&chat, Period::Day(day()))?;
        assert_eq!(daily(&again), Vec::<MicroUsd>::new());
        again.set(&chat, Window::Monthly, Some(Limit::Unlimited))?;
        assert!(again.caps(std::slice::from_ref(&chat), day()).is_empty());
        Ok(())
    }

    #[test]
    fn a_notice_goes_once_per_window() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let limits = Limits::load(AllowanceConfig::default(), dir.path())?;
        let chat = Account::Chat("5".into());
        assert!(limits.first_notice(&chat, Period::Day(day()), Notice::Nearly));
        assert!(!limits.first_notice(&chat, Period::Day(day()), Notice::Nearly));
        assert!(limits.first_notice(&chat, Period::month_of(day()), Notice::Nearly));
        let again = Limits::load(AllowanceConfig::default(), dir.path())?;
        assert!(!again.first_notice(&chat, Period::Day(day()), Notice::Nearly));
        Ok(())
    }
}
