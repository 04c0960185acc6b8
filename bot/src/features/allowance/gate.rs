//! The host's [`SpendGate`] for one session: it knows the chat, its zone, who the current run
//! answers (a group's sender; no one for a scheduled job) and, for an A2A caller's session, the
//! caller and its `daily_usd`. Holds and settlements go to the spend store on the task's own
//! thread (its lock is held for microseconds, even while it folds): one journal line each,
//! the hold written before the request is made, the settlement after it (durable against
//! `kill -9` once written, against power loss once the store's sync thread has synced it, within
//! about 10 ms; neither the request nor the answer waits for the disk). A store that
//! cannot write (or whose sync failed) refuses the request (deny by default).

use super::Shared;
use super::limits::Notice;
use super::runs::{RunCell, RunKind};
use super::texts;
use async_trait::async_trait;
use chrono_tz::Tz;
use std::sync::Arc;
use volcanic_abstractions::messages::Usage;
use volcanic_abstractions::spend::{SpendGate, SpendRefused, SpendRequest};
use volcanic_allowance::{Account, Cap, Charge, Decision, MicroUsd, Refusal, Window, local_day};

/// Who the session's current run answers (a Telegram user id), asked at each request.
pub type Sender = Arc<dyn Fn() -> Option<i64> + Send + Sync>;

/// An A2A caller's own allowance.
#[derive(Debug, Clone)]
pub struct CallerCap {
    /// Its configured name.
    pub name: String,
    /// `daily_usd`, if set.
    pub daily: Option<MicroUsd>,
}

/// The gate of one session.
pub struct SessionGate {
    pub(super) shared: Arc<Shared>,
    /// The chat key (`features::port::chat_key`), `None` for a session of no chat.
    pub(super) chat: Option<(String, i64)>,
    pub(super) zone: Tz,
    pub(super) sender: Sender,
    pub(super) caller: Option<CallerCap>,
    /// What the chat's own session runs now (`None` for a caller's session or no chat).
    pub(super) run: Option<RunCell>,
}

impl SessionGate {
    /// Who pays now, and the caps that apply on local day `day`.
    fn payers(&self, day: chrono::NaiveDate) -> (Vec<Account>, Vec<Cap>) {
        let mut accounts = Vec::new();
        if let Some((key, _)) = &self.chat {
            accounts.push(Account::Chat(key.clone()));
        }
        if let Some(user) = (self.sender)() {
            accounts.push(Account::User(user.to_string()));
        }
        let mut caps = self.shared.limits.caps(&accounts, day);
        if let Some(c) = &self.caller {
            let account = Account::Caller(c.name.clone());
            if let Some(limit) = c.daily {
                caps.push(Cap {
                    account: account.clone(),
                    window: Window::Daily,
                    limit,
                });
            }
            accounts.push(account);
        }
        (accounts, caps)
    }

    /// Tells the owners (once per window) with top-up buttons, and the chat (once per window)
    /// when its cap refused a run no one in it asked for (no sender, so no one there hears the
    /// sentence), saying what was refused: an A2A caller acting for it, else what the run is
    /// ([`RunKind`]); returns the refused person's sentence.
    async fn refused(&self, r: &Refusal, day: chrono::NaiveDate) -> String {
        let resets = volcanic_allowance::resets_at(day, r.cap.window, self.zone);
        let period = r.cap.window.period(day);
        if let Some((_, chat_id)) = &self.chat
            && matches!(r.cap.account, Account::Chat(_))
            && (self.sender)().is_none()
            && self.shared.limits.first_notice(&r.cap.account, period, Notice::Skipped)
        {
            let text = match (&self.caller, &self.run) {
                (Some(c), _) => texts::caller_refused(&c.name, r.cap.window, r.cap.limit, resets),
                (None, run) => {
                    let kind = run
                        .as_ref()
                        .map_or(RunKind::default(), |c| *c.lock().unwrap_or_else(|e| e.into_inner()));
                    texts::run_refused(kind, r.cap.window, r.cap.limit, resets)
                }
            };
            self.shared.notice(*chat_id, text).await;
        }
        if self.shared.limits.first_notice(&r.cap.account, period, Notice::Reached) {
            let chat = self.chat.as_ref().map_or("-", |(k, _)| k.as_str());
            let text = texts::owners_reached(&r.cap.account, chat, r.cap.window, r.cap.limit, resets);
            self.shared
                .offer_top_ups(&text, &r.cap.account, period, r.cap.window)
                .await;
        }
        texts::reached(&r.cap.account, r.cap.window, r.cap.limit, resets)
    }

    /// After a settle: the chat is told once per window when 80 % of a chat cap is counted.
    async fn nearly(&self, day: chrono::NaiveDate) {
        let Some((key, chat_id)) = &self.chat else { return };
        let account = Account::Chat(key.clone());
        for cap in self.shared.limits.caps(std::slice::from_ref(&account), day) {
            let period = cap.window.period(day);
            let counted = self.shared.store.counted(&account, period);
            // 80 %, in integers: counted × 5 ≥ limit × 4.
            let over = u128::from(counted.0) * 5 >= u128::from(cap.limit.0) * 4;
            if over && cap.limit.0 > 0 && self.shared.limits.first_notice(&account, period, Notice::Nearly) {
                self.shared
                    .notice(*chat_id, texts::nearly(cap.window, counted, cap.limit))
                    .await;
            }
        }
    }
}

#[async_trait]
impl SpendGate for SessionGate {
    async fn admit(&self, request: &SpendRequest) -> Result<(), SpendRefused> {
        let day = local_day(chrono::Utc::now(), self.zone);
        let (accounts, caps) = self.payers(day);
        let charge = Charge {
            request: request.id.clone(),
            day,
            accounts,
            estimate: MicroUsd::from_usd(request.estimate_usd),
        };
        match self.shared.store.reserve(&charge, &caps) {
            Ok(Decision::Admitted) => Ok(()),
            Ok(Decision::Refused(r)) => {
                tracing::info!(account = %r.cap.account, counted = r.counted.0, estimate = r.estimate.0, "allowance reached");
                Err(SpendRefused {
                    message: self.refused(&r, day).await,
                })
            }
            Err(e) => {
                tracing::error!("allowance: {e}");
                Err(SpendRefused {
                    message: texts::NOT_RECORDED.to_owned(),
                })
            }
        }
    }

    async fn settle(&self, id: &str, usage: &Usage) {
        let cost = MicroUsd::from_usd(usage.cost.total);
        // On an error the hold stays: counted at its estimate (the safe side).
        if let Err(e) = self.shared.store.settle(id, cost) {
            tracing::error!("allowance: {e}");
        }
        self.nearly(local_day(chrono::Utc::now(), self.zone)).await;
    }
}
