mod commit;
mod crash;
mod store;

use chrono::NaiveDate;
use volcanic_allowance::{Account, Charge, MicroUsd};

pub fn day(d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 12, d).unwrap_or_default()
}

pub fn chat() -> Account {
    Account::Chat("100".into())
}

pub fn charge(id: &str, d: u32, usd: f64) -> Charge {
    Charge {
        request: id.into(),
        day: day(d),
        accounts: vec![chat(), Account::User("7".into())],
        estimate: MicroUsd::from_usd(usd),
    }
}
