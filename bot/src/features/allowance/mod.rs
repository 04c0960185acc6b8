//! Spending allowances (issue 30; docs/costs.md): with `[allowance]` in the config every model
//! request of a chat's session (turns, scheduled jobs and watchers, compaction summaries, memory
//! curation) and of an A2A caller's passes this feature's [`gate::SessionGate`]: its estimate is
//! held in the spend store (`<state_dir>/allowance/spend/`, `volcanic_allowance`) against the
//! caps of the chat, the person it answers and the caller, and settled at what the provider
//! reported. A refused request is not made: the person gets one sentence (what was reached, when
//! it resets, in the chat's zone), the owners a message with top-up buttons (+$1, +$5, no limit
//! until the window ends); at 80 % of a chat cap the chat is told once per window.
//!
//! `/allowance` shows the chat's and the sender's caps and spend to everyone; owners change
//! them (`/allowance chat 5/day`, `/allowance user <id> 10/month`, or the buttons), kept in
//! `<state_dir>/allowance/overrides.json` ([`limits::Limits`]).

pub mod gate;
mod limits;
mod runs;
mod texts;

use super::port::{ChatPort, PressButton, Target, chat_key};
use super::{CommandCall, FeatureCommand, HostFeature, Press, Services, SessionPlace, Turn};
use crate::config::allowance::{RawAllowance, usd_amount};
use async_trait::async_trait;
use gate::{CallerCap, Sender, SessionGate};
use limits::{Limit, Limits};
use std::sync::Arc;
use volcanic_abstractions::spend::SpendGate;
use volcanic_allowance::{Account, MicroUsd, Period, SpendStore, Window, local_day};

/// What the feature's gates share.
pub struct Shared {
    store: SpendStore,
    limits: Limits,
    /// `[[a2a.server.callers]] daily_usd` by caller name.
    callers: std::collections::HashMap<String, MicroUsd>,
    owners: Vec<i64>,
    port: Option<Arc<dyn ChatPort>>,
    /// What each chat session (by its place) runs now ([`runs`]).
    runs: std::sync::Mutex<std::collections::HashMap<Target, runs::RunCell>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

/// The feature.
#[derive(Debug)]
pub struct Allowances {
    shared: Arc<Shared>,
}

/// The prefix of the feature's buttons' data.
const PREFIX: &str = "al:";

/// The spend store's folder under `state_dir`: `<state_dir>/allowance/spend`.
pub fn spend_dir(state_dir: &std::path::Path) -> std::path::PathBuf {
    state_dir.join("allowance").join("spend")
}

/// Builds it in the Telegram host when the config has `[allowance]`. Errors: a bad key (named), or the store's
/// folder cannot be opened.
pub fn build(services: &Services) -> anyhow::Result<Option<Arc<dyn HostFeature>>> {
    let Some(raw) = services.section::<RawAllowance>("allowance")? else {
        return Ok(None);
    };
    // The Telegram host's only: a console beside a running bot must not write its journal.
    if services.chats.is_none() {
        return Ok(None);
    }
    let defaults = raw.resolve()?;
    let dir = services.state_dir.join("allowance");
    let store = SpendStore::open(&spend_dir(&services.state_dir))?;
    let limits = Limits::load(defaults, &dir)?;
    let callers = caller_caps(services.config.features.get("a2a"))?;
    Ok(Some(Arc::new(Allowances {
        shared: Arc::new(Shared {
            store,
            limits,
            callers,
            owners: services.config.telegram.owners.clone(),
            port: services.chats.clone(),
            runs: std::sync::Mutex::default(),
        }),
    })))
}

/// Each A2A caller's `daily_usd` from `[[a2a.server.callers]]` (the A2A server feature checks
/// the rest of the section). Errors: an amount that is not one, named by its key.
pub fn caller_caps(a2a: Option<&toml::Table>) -> anyhow::Result<std::collections::HashMap<String, MicroUsd>> {
    let mut caps = std::collections::HashMap::new();
    let callers = a2a
        .and_then(|t| t.get("server"))
        .and_then(|s| s.get("callers"))
        .and_then(toml::Value::as_array);
    for (i, c) in callers.into_iter().flatten().enumerate() {
        let (Some(name), Some(usd)) = (c.get("name").and_then(toml::Value::as_str), c.get("daily_usd")) else {
            continue;
        };
        let usd = usd.as_float().or_else(|| usd.as_integer().map(|n| n as f64));
        match usd.and_then(usd_amount) {
            Some(amount) => caps.insert(name.to_owned(), amount),
            None => anyhow::bail!(
                "config key `a2a.server.callers[{i}].daily_usd`: write dollars from 0 to 1000000, e.g. 5 or 0.5"
            ),
        };
    }
    Ok(caps)
}

impl Shared {
    /// The run cell of the chat's own session at `target` (made on first use).
    fn run_cell(&self, target: Target) -> runs::RunCell {
        let mut cells = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        cells.entry(target).or_default().clone()
    }

    /// Sends the owners `text` with top-up buttons for `account` in `period`.
    async fn offer_top_ups(&self, text: &str, account: &Account, period: Period, window: Window) {
        let Some(port) = &self.port else { return };
        let data = |op: &str| format!("{PREFIX}{op}:{}:{}", period_code(period), account);
        let rows = vec![vec![
            PressButton {
                text: "+$1".into(),
                data: data("1"),
            },
            PressButton {
                text: "+$5".into(),
                data: data("5"),
            },
            PressButton {
                text: texts::lift_label(window).into(),
                data: data("x"),
            },
        ]];
        for owner in &self.owners {
            let to = Target {
                chat_id: *owner,
                thread: None,
            };
            if let Err(e) = port.offer(to, text, &rows).await {
                tracing::warn!(owner, "allowance: cannot tell an owner: {e}");
            }
        }
    }

    /// Tells chat `chat_id` `text` in line with its answers.
    async fn notice(&self, chat_id: i64, text: String) {
        let Some(port) = &self.port else { return };
        let to = Target { chat_id, thread: None };
        if let Err(e) = port.notice(to, text).await {
            tracing::warn!(chat_id, "allowance: cannot tell the chat: {e}");
        }
    }
}

/// `d20261206` / `m202612`.
fn period_code(p: Period) -> String {
    match p {
        Period::Day(d) => d.format("d%Y%m%d").to_string(),
        Period::Month(y, m) => format!("m{y:04}{m:02}"),
    }
}

fn parse_period(code: &str) -> Option<Period> {
    if let Some(d) = code.strip_prefix('d') {
        return chrono::NaiveDate::parse_from_str(d, "%Y%m%d").ok().map(Period::Day);
    }
    let m = code.strip_prefix('m')?;
    let (y, mo) = (m.get(..4)?.parse().ok()?, m.get(4..)?.parse().ok()?);
    chrono::NaiveDate::from_ymd_opt(y, mo, 1).map(|_| Period::Month(y, mo))
}

const COMMANDS: &[FeatureCommand] = &[
    FeatureCommand {
        name: "allowance",
        description: "Spending allowances of this chat and yours (owners change them)",
        turn: Turn::Holds,
    },
    FeatureCommand {
        name: "usage",
        description: "What this chat spent today and this month, with a chart",
        turn: Turn::Holds,
    },
];

impl Allowances {
    /// What `/allowance <args>` from `from` in chat `chat` (zone `zone`) answers.
    fn run(&self, from: i64, chat: &str, zone: chrono_tz::Tz, args: &str) -> String {
        if args.is_empty() {
            return self.show(from, chat, zone);
        }
        let Some((account, window, limit)) = parse_change(args, chat) else {
            return texts::USAGE.to_owned();
        };
        if !self.shared.owners.contains(&from) {
            return format!("{}\n{}", texts::OWNERS_ONLY, self.show(from, chat, zone));
        }
        match self.shared.limits.set(&account, window, limit) {
            Ok(()) => format!("Changed.\n{}", self.show(from, chat, zone)),
            Err(e) => texts::not_kept(&e),
        }
    }

    /// The chat's and the user's caps and spend today and this month.
    fn show(&self, from: i64, chat: &str, zone: chrono_tz::Tz) -> String {
        let day = local_day(chrono::Utc::now(), zone);
        let line = |label: &str, account: &Account| {
            let parts: Vec<String> = [Window::Daily, Window::Monthly]
                .into_iter()
                .map(|w| {
                    let spent = self.shared.store.counted(account, w.period(day));
                    let cap = self.shared.limits.caps(std::slice::from_ref(account), day);
                    let cap = cap
                        .iter()
                        .find(|c| c.window == w)
                        .map_or("no limit".to_owned(), |c| c.limit.to_string());
                    format!("{} {spent} of {cap}", texts::window_word(w))
                })
                .collect();
            format!("{label}: {}", parts.join("; "))
        };
        format!(
            "{}\n{}\n{}",
            line("This chat", &Account::Chat(chat.to_owned())),
            line("You", &Account::User(from.to_string())),
            texts::USAGE
        )
    }

    /// The buttons under `/allowance` (owners): the chat's daily cap.
    fn buttons() -> Vec<Vec<PressButton>> {
        let b = |text: &str, data: &str| PressButton {
            text: text.into(),
            data: format!("{PREFIX}set:{data}"),
        };
        vec![vec![
            b("$1/day", "1"),
            b("$5/day", "5"),
            b("$20/day", "20"),
            b("No limit", "none"),
            b("Default", "default"),
        ]]
    }

    /// A press of a top-up (`<1|5|x>:<period>:<account>`) or a choice (`set:<amount>`).
    fn apply_press(&self, press: &Press<'_>) -> Option<Result<String, String>> {
        let chat = chat_key(press.target.chat_id);
        if let Some(choice) = press.data.strip_prefix("set:") {
            let limit = parse_limit(choice)?;
            let r = self.shared.limits.set(&Account::Chat(chat), Window::Daily, limit);
            return Some(r.map(|()| "Changed.".to_owned()).map_err(|e| texts::not_kept(&e)));
        }
        let mut parts = press.data.splitn(3, ':');
        let (op, period, account) = (parts.next()?, parts.next()?, parts.next()?);
        let period = parse_period(period)?;
        let account: Account = account.parse().ok()?;
        let r = match op {
            "1" | "5" => {
                let usd: u64 = op.parse().ok()?;
                self.shared
                    .limits
                    .top_up(&account, period, MicroUsd(usd * 1_000_000))
                    .map(|()| format!("+${usd} for {account}"))
            }
            "x" => self
                .shared
                .limits
                .lift(&account, period)
                .map(|()| format!("no limit for {account} until the window ends")),
            _ => return None,
        };
        Some(r.map_err(|e| texts::not_kept(&e)))
    }
}

/// `chat 5/day`, `chat none/month`, `user 42 default/day` → (account, window, limit; `None`:
/// the default).
fn parse_change(args: &str, chat: &str) -> Option<(Account, Window, Option<Limit>)> {
    let words: Vec<&str> = args.split_whitespace().collect();
    let (account, spec) = match words.as_slice() {
        ["chat", spec] => (Account::Chat(chat.to_owned()), *spec),
        ["user", id, spec] if id.parse::<i64>().is_ok() => (Account::User((*id).to_owned()), *spec),
        _ => return None,
    };
    let (amount, window) = spec.split_once('/')?;
    let window = match window {
        "day" => Window::Daily,
        "month" => Window::Monthly,
        _ => return None,
    };
    Some((account, window, parse_limit(amount)?))
}

/// `5`, `0.5`, `$5` → an amount; `none` → no limit; `default` → `None` (the config's).
fn parse_limit(text: &str) -> Option<Option<Limit>> {
    match text {
        "none" => Some(Some(Limit::Unlimited)),
        "default" => Some(None),
        amount => {
            let usd: f64 = amount.trim_start_matches('$').parse().ok()?;
            usd_amount(usd).map(|m| Some(Limit::Usd(m)))
        }
    }
}

#[async_trait]
impl HostFeature for Allowances {
    fn name(&self) -> &'static str {
        "allowance"
    }

    fn commands(&self) -> &[FeatureCommand] {
        COMMANDS
    }

    /// Waits until every spend line written is synced (settlements are not waited for after
    /// each answer), so a clean stop leaves nothing to a power cut.
    async fn stop(&self) {
        let shared = self.shared.clone();
        match tokio::task::spawn_blocking(move || shared.store.flush()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!("allowance: {e}"),
            Err(e) => tracing::error!("allowance: the store's thread failed: {e}"),
        }
    }

    async fn command(&self, name: &str, call: CommandCall<'_>) -> Option<String> {
        let owner = self.shared.owners.contains(&call.message.from_id);
        let zone = call.time_zone.parse().unwrap_or(chrono_tz::UTC);
        if name == "usage" {
            let port = self.shared.port.as_deref();
            return super::usage::command(&self.shared.store, port, call, zone, owner).await;
        }
        let text = self.run(call.message.from_id, &chat_key(call.message.chat_id), zone, call.args);
        match (&self.shared.port, call.args.is_empty() && owner) {
            (Some(port), true) => match port.offer(call.target, &text, &Self::buttons()).await {
                Ok(_) => None,
                Err(e) => {
                    tracing::warn!("allowance: cannot offer the buttons: {e}");
                    Some(text)
                }
            },
            _ => Some(text),
        }
    }

    fn help(&self) -> &[&'static str] {
        &[
            "/allowance [chat 5/day | user <id> 10/month] - spending allowances (owners change them)",
            "/usage - what this chat spent today and this month, with a chart",
        ]
    }

    fn press_prefix(&self) -> Option<&'static str> {
        Some(PREFIX)
    }

    async fn press(&self, press: Press<'_>) -> Option<String> {
        if !press.owner {
            return Some(texts::OWNERS_ONLY.to_owned());
        }
        let done = self.apply_press(&press)?;
        tracing::info!(user = press.from_id, data = press.data, "allowance button pressed");
        match done {
            Ok(what) => {
                if let Some(port) = &self.shared.port {
                    let text = texts::topped_up("Allowance changed", &what, press.from_id);
                    if let Err(e) = port.edit(press.target, press.message_id, &text, &[]).await {
                        tracing::debug!("allowance: cannot update the message: {e}");
                    }
                }
                Some(what)
            }
            Err(why) => Some(why),
        }
    }

    /// A chat's own session gets the extension that notes what its run is ([`runs`]).
    fn session_extensions(&self, place: &SessionPlace<'_>) -> Vec<volcanic_abstractions::extensions::ExtensionFactory> {
        match (place.chat, place.caller) {
            (Some(target), None) => vec![runs::factory(self.shared.run_cell(target))],
            _ => Vec::new(),
        }
    }

    fn spend_gate(&self, place: &SessionPlace<'_>, sender: Sender) -> Option<Arc<dyn SpendGate>> {
        let caller = place.caller.map(|c| CallerCap {
            name: c.name.clone(),
            daily: self.shared.callers.get(&c.name).copied(),
        });
        Some(Arc::new(SessionGate {
            shared: self.shared.clone(),
            chat: place.chat.map(|t| (chat_key(t.chat_id), t.chat_id)),
            zone: place.time_zone,
            sender,
            run: match (place.chat, &caller) {
                (Some(target), None) => Some(self.shared.run_cell(target)),
                _ => None,
            },
            caller,
        }))
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod parse_tests {
    use super::*;

    #[test]
    fn changes_read_as_owners_write_them() {
        assert_eq!(
            parse_change("chat 5/day", "g1"),
            Some((
                Account::Chat("g1".into()),
                Window::Daily,
                Some(Limit::Usd(MicroUsd(5_000_000)))
            ))
        );
        assert_eq!(
            parse_change("user 42 none/month", "g1"),
            Some((Account::User("42".into()), Window::Monthly, Some(Limit::Unlimited)))
        );
        assert_eq!(
            parse_change("chat default/day", "g1"),
            Some((Account::Chat("g1".into()), Window::Daily, None))
        );
        assert_eq!(parse_change("chat 5/week", "g1"), None);
        assert_eq!(parse_change("user bob 5/day", "g1"), None);
        assert_eq!(parse_change("chat -5/day", "g1"), None);
    }

    #[test]
    fn periods_round_trip_through_button_data() {
        for p in [
            Period::Day(chrono::NaiveDate::from_ymd_opt(2026, 12, 6).unwrap_or_default()),
            Period::Month(2026, 12),
        ] {
            assert_eq!(parse_period(&period_code(p)), Some(p));
        }
        assert_eq!(parse_period("m202613"), None);
        let data = format!(
            "1:{}:{}",
            period_code(Period::Month(2026, 12)),
            Account::Chat("g1001234567890".into())
        );
        assert!(PREFIX.len() + data.len() <= super::super::port::PRESS_DATA_LIMIT);
    }
}
