//! The store's state in memory ([`Ledger`]): settled totals per account and period, the open
//! reservations, and the records that change them. Pure: the store replays its files into one
//! and applies each new record to it after the record is on disk.

use crate::account::{Account, AccountKind, Period};
use crate::money::MicroUsd;
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// One line of the journal. A request writes `reserve` before it is made and `settle` after it.
/// Applying a line again changes nothing (a second `reserve` of a request open or settled since
/// the snapshot, a `settle` of one not open), so no request counts twice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Record {
    /// A request's estimate, held against its accounts on its local day until it settles.
    Reserve {
        /// The request's idempotency key.
        id: String,
        /// The local day it is counted on (the chat's zone, when it was admitted).
        day: NaiveDate,
        /// Who pays.
        accounts: Vec<Account>,
        /// The estimate held.
        micros: MicroUsd,
    },
    /// What the request cost, replacing its reservation.
    Settle {
        /// The request's idempotency key.
        id: String,
        /// What the provider reported (zero for a request that failed before any usage).
        micros: MicroUsd,
    },
}

/// An open reservation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Open {
    pub day: NaiveDate,
    pub accounts: Vec<Account>,
    pub micros: MicroUsd,
}

/// Settled spend and open reservations.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Ledger {
    /// Settled spend per account and period (each request adds to its day and its month).
    settled: HashMap<(Account, Period), MicroUsd>,
    /// Open reservations held per account and period.
    pending: HashMap<(Account, Period), MicroUsd>,
    /// Open reservations by request id.
    open: HashMap<String, Open>,
    /// Requests settled since the snapshot (older ones are in no journal that is replayed).
    done: HashSet<String>,
    /// The newest local day any request was counted on (what "old" is measured from).
    newest: Option<NaiveDate>,
}

impl Ledger {
    /// Applies one record (see [`Record`] for why a replay is harmless).
    pub fn apply(&mut self, record: &Record) {
        match record {
            Record::Reserve {
                id,
                day,
                accounts,
                micros,
            } => {
                if self.open.contains_key(id) || self.done.contains(id) {
                    return;
                }
                self.newest = self.newest.max(Some(*day));
                for period in [Period::Day(*day), Period::month_of(*day)] {
                    for a in accounts {
                        add(&mut self.pending, (a.clone(), period), *micros);
                    }
                }
                self.open.insert(
                    id.clone(),
                    Open {
                        day: *day,
                        accounts: accounts.clone(),
                        micros: *micros,
                    },
                );
            }
            Record::Settle { id, micros } => {
                let Some(open) = self.open.remove(id) else { return };
                self.done.insert(id.clone());
                for period in [Period::Day(open.day), Period::month_of(open.day)] {
                    for a in &open.accounts {
                        let key = (a.clone(), period);
                        if let Some(p) = self.pending.get_mut(&key) {
                            *p = p.minus(open.micros);
                            if *p == MicroUsd::ZERO {
                                self.pending.remove(&key);
                            }
                        }
                        add(&mut self.settled, key, *micros);
                    }
                }
            }
        }
    }

    /// The newest local day counted.
    pub fn newest(&self) -> Option<NaiveDate> {
        self.newest
    }

    /// Whether `id` is an open reservation.
    pub fn is_open(&self, id: &str) -> bool {
        self.open.contains_key(id)
    }

    /// Whether `id` was reserved since the snapshot (open or settled).
    pub fn is_known(&self, id: &str) -> bool {
        self.open.contains_key(id) || self.done.contains(id)
    }

    /// Forgets which requests settled: a snapshot now holds them, and their lines are in no
    /// journal that is replayed again.
    pub fn forget_done(&mut self) {
        self.done.clear();
    }

    /// Settles every open reservation at its estimate: after a restart no one is left to settle
    /// them, and the request may have been made (the safe side for a cap).
    pub fn settle_orphans(&mut self) {
        let orphans: Vec<(String, MicroUsd)> = self.open.iter().map(|(id, o)| (id.clone(), o.micros)).collect();
        for (id, micros) in orphans {
            self.apply(&Record::Settle { id, micros });
        }
    }

    /// Settled spend of `account` in `period`.
    pub fn settled(&self, account: &Account, period: Period) -> MicroUsd {
        self.lookup(&self.settled, account, period)
    }

    /// What counts against a cap: settled spend plus open reservations.
    pub fn counted(&self, account: &Account, period: Period) -> MicroUsd {
        self.settled(account, period)
            .plus(self.lookup(&self.pending, account, period))
    }

    fn lookup(&self, map: &HashMap<(Account, Period), MicroUsd>, account: &Account, period: Period) -> MicroUsd {
        // The key is borrowed as a tuple of owned values: build it once (a clone of a short
        // string; the check bench measures it).
        map.get(&(account.clone(), period)).copied().unwrap_or_default()
    }

    /// Settled spend per account of `kind` in `period`, largest first (ties by account).
    pub fn top(&self, kind: AccountKind, period: Period, n: usize) -> Vec<(Account, MicroUsd)> {
        let mut all: Vec<(Account, MicroUsd)> = self
            .settled
            .iter()
            .filter(|((a, p), m)| a.kind() == kind && *p == period && **m > MicroUsd::ZERO)
            .map(|((a, _), m)| (a.clone(), *m))
            .collect();
        all.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
        all.truncate(n);
        all
    }

    /// Forgets settled totals of days before `oldest` and of months before `oldest`'s month.
    pub fn forget_before(&mut self, oldest: NaiveDate) {
        self.settled.retain(|(_, p), _| p.not_before(oldest));
    }

    /// The settled totals and open reservations, for a snapshot, in no order (the snapshot's
    /// writer sorts them, without the store's lock).
    pub fn parts(&self) -> (Vec<Total>, Vec<(String, Open)>) {
        let totals: Vec<Total> = self
            .settled
            .iter()
            .map(|((account, period), micros)| Total {
                account: account.clone(),
                period: *period,
                micros: *micros,
            })
            .collect();
        let open: Vec<(String, Open)> = self.open.iter().map(|(id, o)| (id.clone(), o.clone())).collect();
        (totals, open)
    }

    /// A ledger from a snapshot's parts.
    pub fn from_parts(totals: Vec<Total>, open: Vec<(String, Open)>) -> Ledger {
        let mut ledger = Ledger::default();
        for t in totals {
            if let Period::Day(d) = t.period {
                ledger.newest = ledger.newest.max(Some(d));
            }
            add(&mut ledger.settled, (t.account, t.period), t.micros);
        }
        for (id, o) in open {
            ledger.apply(&Record::Reserve {
                id,
                day: o.day,
                accounts: o.accounts,
                micros: o.micros,
            });
        }
        ledger
    }
}

/// One account's settled spend in one period (a snapshot's row). Month totals are kept as they
/// were summed, never rebuilt from days, so a month stays whole when its first days are dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Total {
    pub account: Account,
    pub period: Period,
    pub micros: MicroUsd,
}

fn add(map: &mut HashMap<(Account, Period), MicroUsd>, key: (Account, Period), m: MicroUsd) {
    let v = map.entry(key).or_default();
    *v = v.plus(m);
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;
