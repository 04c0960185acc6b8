use super::*;
use pretty_assertions::assert_eq;

fn day(d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 12, d).unwrap_or_default()
}

fn chat() -> Account {
    Account::Chat("1".into())
}

fn user() -> Account {
    Account::User("7".into())
}

fn reserve(id: &str, d: u32, micros: u64) -> Record {
    Record::Reserve {
        id: id.into(),
        day: day(d),
        accounts: vec![chat(), user()],
        micros: MicroUsd(micros),
    }
}

fn settle(id: &str, micros: u64) -> Record {
    Record::Settle {
        id: id.into(),
        micros: MicroUsd(micros),
    }
}

#[test]
fn a_hold_counts_until_it_settles_at_the_reported_cost() {
    let mut l = Ledger::default();
    l.apply(&reserve("a", 6, 100));
    assert_eq!(l.counted(&chat(), Period::Day(day(6))), MicroUsd(100));
    assert_eq!(l.settled(&chat(), Period::Day(day(6))), MicroUsd(0));
    l.apply(&settle("a", 40));
    for a in [chat(), user()] {
        assert_eq!(l.counted(&a, Period::Day(day(6))), MicroUsd(40));
        assert_eq!(l.settled(&a, Period::month_of(day(6))), MicroUsd(40));
    }
    assert!(!l.is_open("a"));
}

#[test]
fn replaying_the_same_lines_twice_counts_each_request_once() {
    let lines = [reserve("a", 6, 100), settle("a", 40), reserve("b", 6, 10)];
    let mut once = Ledger::default();
    let mut twice = Ledger::default();
    for r in &lines {
        once.apply(r);
    }
    for r in lines.iter().chain(lines.iter()) {
        twice.apply(r);
    }
    assert_eq!(once.counted(&chat(), Period::Day(day(6))), MicroUsd(50));
    assert_eq!(twice, once);
}

#[test]
fn orphans_settle_at_their_estimate() {
    let mut l = Ledger::default();
    l.apply(&reserve("a", 6, 100));
    l.settle_orphans();
    assert_eq!(l.settled(&user(), Period::Day(day(6))), MicroUsd(100));
    assert!(!l.is_open("a"));
}

#[test]
fn a_snapshot_keeps_totals_and_holds() {
    let mut l = Ledger::default();
    l.apply(&reserve("a", 5, 100));
    l.apply(&settle("a", 30));
    l.apply(&reserve("b", 6, 70));
    let (totals, open) = l.parts();
    let back = Ledger::from_parts(totals, open);
    l.forget_done();
    assert_eq!(back, l);
}

#[test]
fn old_days_are_forgotten_but_their_month_stays_whole() {
    let mut l = Ledger::default();
    l.apply(&reserve("a", 1, 10));
    l.apply(&settle("a", 10));
    l.apply(&reserve("b", 20, 10));
    l.apply(&settle("b", 5));
    l.forget_before(day(10));
    assert_eq!(l.settled(&chat(), Period::Day(day(1))), MicroUsd(0));
    assert_eq!(l.settled(&chat(), Period::month_of(day(1))), MicroUsd(15));
    l.forget_before(NaiveDate::from_ymd_opt(2027, 1, 1).unwrap_or_default());
    assert_eq!(l.settled(&chat(), Period::month_of(day(1))), MicroUsd(0));
}

#[test]
fn the_top_lists_the_largest_spenders_of_a_kind() {
    let mut l = Ledger::default();
    for (id, who, m) in [("a", "1", 5), ("b", "2", 9), ("c", "3", 9), ("d", "4", 1)] {
        l.apply(&Record::Reserve {
            id: id.into(),
            day: day(6),
            accounts: vec![Account::Chat(who.into())],
            micros: MicroUsd(m),
        });
        l.apply(&settle(id, m));
    }
    assert_eq!(
        l.top(AccountKind::Chat, Period::Day(day(6)), 3),
        vec![
            (Account::Chat("2".into()), MicroUsd(9)),
            (Account::Chat("3".into()), MicroUsd(9)),
            (Account::Chat("1".into()), MicroUsd(5)),
        ]
    );
    assert_eq!(l.top(AccountKind::User, Period::Day(day(6)), 3), vec![]);
}
