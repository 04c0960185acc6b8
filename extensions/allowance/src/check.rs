//! What a request is checked against: its [`Charge`] (who pays, on which day, the estimate) and
//! the [`Cap`]s that apply; the answer is a [`Decision`].

use crate::account::{Account, Period};
use crate::money::MicroUsd;
use chrono::NaiveDate;

/// A request about to be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    /// Its idempotency key, unique per model request (the runtime's request id): a replay of the
    /// journal counts each key once.
    pub request: String,
    /// The local day it counts on, in the chat's zone.
    pub day: NaiveDate,
    /// Who pays (each account is charged the full amount).
    pub accounts: Vec<Account>,
    /// The estimated cost held until the request settles.
    pub estimate: MicroUsd,
}

/// How long a cap's window is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Window {
    /// The local day.
    Daily,
    /// The local calendar month.
    Monthly,
}

impl Window {
    /// The period of this window that holds `day`.
    pub fn period(self, day: NaiveDate) -> Period {
        match self {
            Window::Daily => Period::Day(day),
            Window::Monthly => Period::month_of(day),
        }
    }
}

/// A limit on one account's spend per window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cap {
    /// Whose spend.
    pub account: Account,
    /// Per day or per month.
    pub window: Window,
    /// At most this much is counted (settled plus open reservations) in the window.
    pub limit: MicroUsd,
}

/// Why a request was not admitted: the first cap it would have crossed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The cap.
    pub cap: Cap,
    /// What the cap's window counted before this request (settled plus open reservations).
    pub counted: MicroUsd,
    /// The request's estimate.
    pub estimate: MicroUsd,
}

/// The answer to [`SpendStore::reserve`](crate::SpendStore::reserve).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The estimate is held (durably): make the request, then settle it.
    Admitted,
    /// Not made: it would cross this cap.
    Refused(Refusal),
}

/// The first cap in `caps` that `charge` would cross, given what each window counts already:
/// a request is refused when counted + estimate > limit (so none passes once counted = limit).
pub(crate) fn first_crossed(
    charge: &Charge,
    caps: &[Cap],
    counted: impl Fn(&Account, Period) -> MicroUsd,
) -> Option<Refusal> {
    caps.iter().find_map(|cap| {
        let now = counted(&cap.account, cap.window.period(charge.day));
        (now.plus(charge.estimate) > cap.limit).then(|| Refusal {
            cap: cap.clone(),
            counted: now,
            estimate: charge.estimate,
        })
    })
}
