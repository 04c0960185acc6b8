use super::{charge, chat, day};
use pretty_assertions::assert_eq;
use std::sync::{Arc, Barrier};
use volcanic_allowance::{Account, AccountKind, Cap, Decision, MicroUsd, Period, SpendStore, StoreError, Window};

fn daily_cap(usd: f64) -> Cap {
    Cap {
        account: chat(),
        window: Window::Daily,
        limit: MicroUsd::from_usd(usd),
    }
}

#[test]
fn requests_pass_while_they_fit_and_none_once_the_cap_is_spent() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = SpendStore::open(dir.path())?;
    let cap = [daily_cap(1.0)];
    let mut made = 0;
    for n in 0..10 {
        let c = charge(&format!("r{n}"), 6, 0.3);
        match store.reserve(&c, &cap)? {
            Decision::Admitted => {
                made += 1;
                store.settle(&c.request, MicroUsd::from_usd(0.3))?;
            }
            Decision::Refused(r) => {
                assert_eq!(r.cap, cap[0]);
                assert_eq!(r.counted, MicroUsd::from_usd(0.9));
            }
        }
    }
    assert_eq!(made, 3, "0.3 fits three times in 1.0");
    // Another day is another window.
    assert_eq!(store.reserve(&charge("next", 7, 0.3), &cap)?, Decision::Admitted);
    Ok(())
}

#[test]
fn a_monthly_cap_counts_every_day_of_the_month() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = SpendStore::open(dir.path())?;
    let cap = [Cap {
        account: Account::User("7".into()),
        window: Window::Monthly,
        limit: MicroUsd::from_usd(1.0),
    }];
    for d in 1..=4 {
        let c = charge(&format!("d{d}"), d, 0.25);
        assert_eq!(store.reserve(&c, &cap)?, Decision::Admitted);
        store.settle(&c.request, MicroUsd::from_usd(0.25))?;
    }
    assert!(matches!(
        store.reserve(&charge("d5", 5, 0.01), &cap)?,
        Decision::Refused(_)
    ));
    assert_eq!(
        store.settled(&Account::User("7".into()), Period::month_of(day(1))),
        MicroUsd::from_usd(1.0)
    );
    Ok(())
}

#[test]
fn two_threads_racing_for_the_last_cent_cannot_both_pass() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = Arc::new(SpendStore::open(dir.path())?);
    let cap = daily_cap(0.01);
    for _ in 0..20 {
        let barrier = Arc::new(Barrier::new(2));
        let round = uuid_like();
        let handles: Vec<_> = (0..2)
            .map(|n| {
                let (store, barrier, cap, round) = (store.clone(), barrier.clone(), cap.clone(), round.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    store.reserve(&charge(&format!("{round}:{n}"), 6, 0.01), &[cap])
                })
            })
            .collect();
        let mut admitted = Vec::new();
        for h in handles {
            let d = h.join().map_err(|_| anyhow::anyhow!("a racing thread panicked"))??;
            if d == Decision::Admitted {
                admitted.push(d);
            }
        }
        assert!(admitted.len() <= 1, "both racers passed for the last cent");
        // Release the hold for the next round: the winner settles at nothing.
        for n in 0..2 {
            store.settle(&format!("{round}:{n}"), MicroUsd::ZERO)?;
        }
    }
    Ok(())
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!("race{}", N.fetch_add(1, Ordering::Relaxed))
}

#[test]
fn a_request_id_is_reserved_once_and_settling_twice_counts_once() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = SpendStore::open(dir.path())?;
    let c = charge("same", 6, 0.5);
    store.reserve(&c, &[])?;
    store.settle("same", MicroUsd::from_usd(0.2))?;
    store.settle("same", MicroUsd::from_usd(0.2))?;
    assert!(matches!(store.reserve(&c, &[]), Err(StoreError::Duplicate(id)) if id == "same"));
    assert_eq!(store.counted(&chat(), Period::Day(day(6))), MicroUsd::from_usd(0.2));
    Ok(())
}

#[test]
fn counts_survive_reopening_and_compaction_keeps_them() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    {
        let store = SpendStore::open_with(dir.path(), 5)?;
        for n in 0..12 {
            let c = charge(&format!("r{n}"), 6, 0.1);
            store.reserve(&c, &[])?;
            store.settle(&c.request, MicroUsd::from_usd(0.05))?;
        }
        // One still open when the process goes away.
        store.reserve(&charge("open", 6, 0.1), &[])?;
    }
    let journals = std::fs::read_dir(dir.path())?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("journal-"))
        .count();
    assert_eq!(journals, 1, "compaction removes folded journals");
    let store = SpendStore::open_with(dir.path(), 5)?;
    // 12 × 0.05 settled + the orphan at its 0.1 estimate.
    assert_eq!(store.settled(&chat(), Period::Day(day(6))), MicroUsd::from_usd(0.7));
    assert_eq!(
        store.counted(&chat(), Period::month_of(day(6))),
        MicroUsd::from_usd(0.7)
    );
    Ok(())
}

#[test]
fn snapshots_keep_two_months_of_days_and_whole_months() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let first = chrono::NaiveDate::from_ymd_opt(2026, 9, 1).ok_or_else(|| anyhow::anyhow!("date"))?;
    {
        let store = SpendStore::open_with(dir.path(), 10)?;
        for n in 0..100u64 {
            let d = first + chrono::Days::new(n);
            let c = volcanic_allowance::Charge {
                day: d,
                ..charge(&format!("d{n}"), 1, 0.01)
            };
            store.reserve(&c, &[])?;
            store.settle(&c.request, MicroUsd::from_usd(0.01))?;
        }
    }
    let store = SpendStore::open(dir.path())?;
    let newest = first + chrono::Days::new(99);
    let days = store.daily(&chat(), newest - chrono::Days::new(30), newest);
    assert_eq!(days.len(), 31);
    assert!(
        days.iter().all(|(_, m)| *m == MicroUsd::from_usd(0.01)),
        "the last 31 days are kept"
    );
    assert_eq!(
        store.settled(&chat(), Period::Day(first)),
        MicroUsd::ZERO,
        "September's days are gone"
    );
    assert_eq!(
        store.settled(&chat(), Period::month_of(newest)),
        MicroUsd::from_usd(0.09)
    );
    let october = chrono::NaiveDate::from_ymd_opt(2026, 10, 1).ok_or_else(|| anyhow::anyhow!("date"))?;
    assert_eq!(
        store.settled(&chat(), Period::month_of(october)),
        MicroUsd::from_usd(0.31),
        "a kept month is whole"
    );
    Ok(())
}

#[test]
fn the_top_spenders_of_today() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = SpendStore::open(dir.path())?;
    for (who, usd) in [("a", 0.3), ("b", 0.1), ("c", 0.2)] {
        let c = volcanic_allowance::Charge {
            accounts: vec![Account::Chat(who.into())],
            ..charge(who, 6, usd)
        };
        store.reserve(&c, &[])?;
        store.settle(who, MicroUsd::from_usd(usd))?;
    }
    assert_eq!(
        store.top(AccountKind::Chat, Period::Day(day(6)), 2),
        vec![
            (Account::Chat("a".into()), MicroUsd::from_usd(0.3)),
            (Account::Chat("c".into()), MicroUsd::from_usd(0.2)),
        ]
    );
    Ok(())
}

#[test]
fn a_damaged_line_refuses_to_open_and_names_the_file() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("journal-0.jsonl"), "{\"op\":\"nonsense\"}\n{}\n")?;
    let err = SpendStore::open(dir.path())
        .err()
        .ok_or_else(|| anyhow::anyhow!("opened a damaged journal"))?;
    assert!(matches!(err, StoreError::Damaged { line: 1, .. }), "{err}");
    assert!(err.to_string().contains("journal-0.jsonl line 1"), "{err}");
    Ok(())
}

/// Every file of `dir` with its bytes.
fn files(dir: &std::path::Path) -> anyhow::Result<Vec<(std::ffi::OsString, Vec<u8>)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        out.push((e.file_name(), std::fs::read(e.path())?));
    }
    out.sort();
    Ok(out)
}

#[test]
fn a_reader_beside_the_writer_sees_its_spend_and_writes_nothing() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    // Folded after 3 lines, so the reader reads a snapshot and a journal.
    let writer = SpendStore::open_with(dir.path(), 3)?;
    for (id, usd) in [("a", 0.25), ("b", 0.5)] {
        writer.reserve(&charge(id, 6, 1.0), &[])?;
        writer.settle(id, MicroUsd::from_usd(usd))?;
    }
    // A request in flight, and a line being written.
    writer.reserve(&charge("c", 6, 1.0), &[])?;
    let journal = std::fs::read_dir(dir.path())?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".jsonl"))
        .ok_or_else(|| anyhow::anyhow!("no journal"))?;
    let mut f = std::fs::OpenOptions::new().append(true).open(&journal)?;
    std::io::Write::write_all(&mut f, b"{\"op\":\"settle\",\"id\":\"c\"")?;
    let before = files(dir.path())?;

    let reader = SpendStore::open_read_only(dir.path())?;
    assert_eq!(reader.settled(&chat(), Period::Day(day(6))), MicroUsd::from_usd(0.75));
    assert_eq!(
        reader.counted(&chat(), Period::Day(day(6))),
        MicroUsd::from_usd(1.75),
        "the open hold is counted, not settled"
    );
    assert_eq!(
        reader.daily(&chat(), day(6), day(6)),
        vec![(day(6), MicroUsd::from_usd(0.75))]
    );
    assert!(matches!(
        reader.reserve(&charge("d", 6, 0.1), &[]),
        Err(StoreError::ReadOnly)
    ));
    assert!(matches!(
        reader.settle("c", MicroUsd::from_usd(0.1)),
        Err(StoreError::ReadOnly)
    ));
    drop(reader);
    assert_eq!(
        files(dir.path())?,
        before,
        "the reader changed no byte, the torn line included"
    );

    let missing = dir.path().join("never-written");
    let empty = SpendStore::open_read_only(&missing)?;
    assert_eq!(empty.settled(&chat(), Period::Day(day(6))), MicroUsd::ZERO);
    assert!(!missing.exists(), "reading creates nothing");
    Ok(())
}
