//! `/usage` (issue 30 point 5; docs/costs.md, "/usage"): what the chat spent today and this
//! month (in the chat's time zone), for owners the top chats and people this month, and a chart
//! of the chat's last 30 days ([`chart`]) sent as a photo with those numbers as its caption.
//!
//! The numbers are the spend store's settled totals (`volcanic_allowance::SpendStore`: what the
//! providers reported, as the allowance feature records it), so the command exists where that
//! store does: with `[allowance]` in the Telegram host, which routes `/usage` here. The console's
//! `/usage` prints the same [`usage`] of a chat ([`Usage::numbers`]) from the store opened to
//! read only.

pub mod chart;

use crate::features::CommandCall;
use crate::features::port::{ChatPort, chat_key};
use chrono::NaiveDate;
use volcanic_allowance::{Account, AccountKind, MicroUsd, Period, SpendStore, local_day};

/// Days the chart shows (today the last).
pub const CHART_DAYS: u32 = 30;
/// Top chats and people an owner is shown.
const TOP: usize = 5;

/// Accounts with what they spent, most first.
pub type Spenders = Vec<(Account, MicroUsd)>;

/// One chat's spend, as `/usage` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    /// The chat's spend today (local day).
    pub today: MicroUsd,
    /// The chat's spend this month (local month).
    pub month: MicroUsd,
    /// The chat's spend on each of the last [`CHART_DAYS`] days, oldest first.
    pub days: Vec<MicroUsd>,
    /// This month's top chats and people (`None` for someone who is not an owner).
    pub top: Option<(Spenders, Spenders)>,
}

/// What the chat `chat` (its chat key) spent up to local day `today`; `owner` adds the month's
/// top spenders.
pub fn usage(store: &SpendStore, chat: &str, today: NaiveDate, owner: bool) -> Usage {
    let account = Account::Chat(chat.to_owned());
    let first = today - chrono::Days::new(u64::from(CHART_DAYS - 1));
    // `daily` gives every day of the range, oldest first, zero where nothing was spent.
    let days = store
        .daily(&account, first, today)
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    let month = Period::month_of(today);
    Usage {
        today: store.settled(&account, Period::Day(today)),
        month: store.settled(&account, month),
        days,
        top: owner.then(|| {
            (
                store.top(AccountKind::Chat, month, TOP),
                store.top(AccountKind::User, month, TOP),
            )
        }),
    }
}

impl Usage {
    /// The photo's caption: the numbers of "this chat" and what the chart shows.
    pub fn text(&self) -> String {
        format!(
            "{}\nChart: the last {CHART_DAYS} days (today in orange).{}",
            self.spent("this chat"),
            self.top_lines()
        )
    }

    /// The numbers as plain text, `subject` naming the chat ("this chat", "chat 42"): what it
    /// spent today and this month, then (for an owner) the month's top chats and people, one
    /// line each.
    pub fn numbers(&self, subject: &str) -> String {
        format!("{}{}", self.spent(subject), self.top_lines())
    }

    fn spent(&self, subject: &str) -> String {
        format!("Spent in {subject}: today {}, this month {}.", self.today, self.month)
    }

    /// `\nTop chats this month: ...\nTop people this month: ...`, or nothing.
    fn top_lines(&self) -> String {
        let mut s = String::new();
        if let Some((chats, users)) = &self.top {
            for (title, list) in [("Top chats this month", chats), ("Top people this month", users)] {
                let items: Vec<String> = list.iter().map(|(a, v)| format!("{} {v}", a.id())).collect();
                let items = if items.is_empty() {
                    "none".to_owned()
                } else {
                    items.join(", ")
                };
                s.push_str(&format!("\n{title}: {items}."));
            }
        }
        s
    }
}

/// Runs `/usage` for `call` in the chat's time `zone`: the chart as a photo with the numbers as
/// its caption; `None` when it was sent, else the numbers with why the photo could not go.
pub async fn command(
    store: &SpendStore,
    port: Option<&dyn ChatPort>,
    call: CommandCall<'_>,
    zone: chrono_tz::Tz,
    owner: bool,
) -> Option<String> {
    let today = local_day(chrono::Utc::now(), zone);
    let usage = usage(store, &chat_key(call.message.chat_id), today, owner);
    let text = usage.text();
    let png = match chart::render(&usage.days) {
        Ok(png) => png,
        Err(e) => return Some(format!("{text}\n({e})")),
    };
    let Some(port) = port else { return Some(text) };
    match port.send_photo(call.target, png, &text).await {
        Ok(()) => None,
        Err(e) => {
            tracing::warn!(chat = call.message.chat_id, "usage: cannot send the chart: {e}");
            Some(format!("{text}\n(The chart could not be sent: {e}.)"))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use volcanic_allowance::Charge;

    fn spend(store: &SpendStore, id: &str, day: NaiveDate, accounts: Vec<Account>, usd: f64) {
        let charge = Charge {
            request: id.into(),
            day,
            accounts,
            estimate: MicroUsd::from_usd(usd),
        };
        store.reserve(&charge, &[]).unwrap();
        store.settle(id, MicroUsd::from_usd(usd)).unwrap();
    }

    #[test]
    fn today_the_month_the_days_and_the_top_spenders() {
        let dir = tempfile::tempdir().unwrap();
        let store = SpendStore::open(dir.path()).unwrap();
        let today = NaiveDate::from_ymd_opt(2026, 12, 6).unwrap();
        let chat = || Account::Chat("42".into());
        let user = || Account::User("7".into());
        spend(&store, "a", today, vec![chat(), user()], 0.25);
        spend(&store, "b", today - chrono::Days::new(3), vec![chat()], 1.5);
        // Last month: in the chart, not in this month's total.
        spend(&store, "c", today - chrono::Days::new(10), vec![chat()], 2.0);
        spend(&store, "d", today, vec![Account::Chat("43".into())], 3.0);
        let u = usage(&store, "42", today, true);
        assert_eq!((u.today, u.month), (MicroUsd::from_usd(0.25), MicroUsd::from_usd(1.75)));
        assert_eq!(u.days.len(), CHART_DAYS as usize);
        assert_eq!(u.days[29], MicroUsd::from_usd(0.25));
        assert_eq!(u.days[26], MicroUsd::from_usd(1.5));
        assert_eq!(u.days[19], MicroUsd::from_usd(2.0));
        assert_eq!(
            u.text(),
            "Spent in this chat: today $0.25, this month $1.75.\nChart: the last 30 days (today in orange).\n\
             Top chats this month: 43 $3.00, 42 $1.75.\nTop people this month: 7 $0.25."
        );
        assert_eq!(usage(&store, "42", today, false).top, None);
    }
}
