//! The allowance check's cost per model request (goal: ≤ 0.1 ms, issue 30).
//!
//! `cargo bench -p volcanic-allowance --bench check` fills a store (in `/dev/shm` when there is
//! one: filling takes 31,000 rounds) with 500 chats and 500 users spending on each of the last
//! 62 days, then times, per request:
//! - `check`: the decision alone ([`SpendStore::would_admit`] against a chat's and a user's
//!   daily and monthly caps), the part that runs before every request;
//! - `reserve`: what a request waits for before it goes out (the check and its hold's line
//!   written; the store's sync thread syncs it beside the request), and `settle`: what the
//!   answer waits for after it (its line written), one request after the other in a folder
//!   under `target/` (a real disk, not tmpfs);
//! - the same rounds from 100 threads at once (the host's busy chats), back to back: wall time
//!   per request and, once [`SpendStore::flush`] has made every line durable, journal syncs per
//!   line (the group commit shares a sync among the lines written during one).
//!
//! Without `--bench` (as `cargo test --all-targets` runs it) it is a smoke test with few rounds.
#![allow(clippy::print_stdout)] // a bench binary reports on stdout

use chrono::NaiveDate;
use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use volcanic_allowance::{Account, Cap, Charge, Decision, MicroUsd, SpendStore, SyncJournal, Window};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const GOAL_CHECK_MS: f64 = 0.1;

fn main() -> Result<()> {
    let bench = std::env::args().any(|a| a == "--bench");
    let (rounds, on_disk) = if bench { (200_000, 300) } else { (1_000, 5) };
    let shm = std::path::Path::new("/dev/shm");
    let filled = if shm.is_dir() {
        tempfile::tempdir_in(shm)?
    } else {
        tempfile::tempdir()?
    };
    let store = SpendStore::open_with(filled.path(), 1_000_000)?;
    let today = NaiveDate::from_ymd_opt(2026, 12, 6).ok_or("date")?;
    fill(&store, today, if bench { 500 } else { 20 })?;

    let chat = Account::Chat("250".into());
    let user = Account::User("250".into());
    let caps = caps(&chat, &user);
    let charge = |n: usize| Charge {
        request: format!("bench:{n}"),
        day: today,
        accounts: vec![chat.clone(), user.clone()],
        estimate: MicroUsd::from_usd(0.01),
    };
    let probe = charge(0);
    let start = Instant::now();
    for _ in 0..rounds {
        if store.would_admit(&probe, &caps) != Decision::Admitted {
            return Err("the bench's caps refused the probe".into());
        }
    }
    let check_ms = start.elapsed().as_secs_f64() * 1000.0 / rounds as f64;

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data");
    std::fs::create_dir_all(&root)?;
    let disk = tempfile::tempdir_in(&root)?;
    let store = SpendStore::open(disk.path())?;
    let (mut holding, mut settling) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
    for n in 1..=on_disk {
        let c = charge(n);
        let hold = Instant::now();
        if store.reserve(&c, &caps)? != Decision::Admitted {
            return Err("the bench's caps refused a request".into());
        }
        holding += hold.elapsed();
        // The request's own time, during which the sync thread syncs the hold.
        std::thread::sleep(std::time::Duration::from_millis(2));
        let settle = Instant::now();
        store.settle(&c.request, MicroUsd::from_usd(0.001))?;
        settling += settle.elapsed();
    }
    store.flush()?;
    let hold_ms = holding.as_secs_f64() * 1000.0 / on_disk as f64;
    let settle_ms = settling.as_secs_f64() * 1000.0 / on_disk as f64;
    let (wall_ms, per_line) = concurrent(&root, &caps, today, if bench { 10 } else { 1 })?;

    println!(
        "check: {:.5} ms per request ({rounds} rounds; goal ≤ {GOAL_CHECK_MS} ms)",
        check_ms
    );
    println!(
        "reserve (the hold a request waits for): {hold_ms:.4} ms; settle (what the answer waits \
         for): {settle_ms:.4} ms per request ({on_disk} rounds, 2 ms apart)"
    );
    println!(
        "reserve+settle from {THREADS} threads at once: {wall_ms:.3} ms of wall time per request, \
         {per_line:.3} journal syncs per line"
    );
    if check_ms > GOAL_CHECK_MS {
        return Err(format!("the check took {check_ms:.5} ms, over its {GOAL_CHECK_MS} ms goal").into());
    }
    Ok(())
}

/// Threads of the concurrent round (the host bench's busy chats).
const THREADS: usize = 100;

/// `rounds` reserve+settle rounds in each of [`THREADS`] threads at once, on a store under
/// `root`; returns the wall time per request (ms) and the syncs per journal line.
fn concurrent(root: &std::path::Path, caps: &[Cap], today: NaiveDate, rounds: usize) -> Result<(f64, f64)> {
    let disk = tempfile::tempdir_in(root)?;
    let syncs = Arc::new(AtomicUsize::new(0));
    let counter = syncs.clone();
    let sync: SyncJournal = Arc::new(move |f: &std::fs::File| {
        counter.fetch_add(1, Ordering::Relaxed);
        f.sync_data()
    });
    let store = Arc::new(SpendStore::open_with_sync(
        disk.path(),
        1_000_000,
        sync,
        volcanic_allowance::SYNC_GATHER,
    )?);
    let start = Instant::now();
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (store, caps) = (store.clone(), caps.to_vec());
            std::thread::spawn(move || -> std::result::Result<(), String> {
                for n in 0..rounds {
                    let c = Charge {
                        request: format!("many:{t}:{n}"),
                        day: today,
                        accounts: vec![Account::Chat(t.to_string()), Account::User(t.to_string())],
                        estimate: MicroUsd::from_usd(0.01),
                    };
                    match store.reserve(&c, &caps) {
                        Ok(Decision::Admitted) => {}
                        other => return Err(format!("a concurrent request was not admitted: {other:?}")),
                    }
                    store
                        .settle(&c.request, MicroUsd::from_usd(0.001))
                        .map_err(|e| e.to_string())?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "a bench thread panicked")??;
    }
    store.flush()?;
    let requests = (THREADS * rounds) as f64;
    let wall_ms = start.elapsed().as_secs_f64() * 1000.0 / requests;
    Ok((wall_ms, syncs.load(Ordering::Relaxed) as f64 / (2.0 * requests)))
}

/// `accounts` chats and as many users with spend on each of the 62 days up to `today` (one
/// snapshot's worth).
fn fill(store: &SpendStore, today: NaiveDate, accounts: usize) -> Result<()> {
    for back in 0..62u64 {
        let day = today - chrono::Days::new(back);
        for n in 0..accounts {
            let id = format!("fill:{back}:{n}");
            let charge = Charge {
                request: id.clone(),
                day,
                accounts: vec![Account::Chat(n.to_string()), Account::User(n.to_string())],
                estimate: MicroUsd(10),
            };
            if store.reserve(&charge, &[])? != Decision::Admitted {
                return Err("an uncapped fill request was refused".into());
            }
            store.settle(&id, MicroUsd(7))?;
        }
    }
    Ok(())
}

fn caps(chat: &Account, user: &Account) -> Vec<Cap> {
    let cap = |account: &Account, window, usd| Cap {
        account: account.clone(),
        window,
        limit: MicroUsd::from_usd(usd),
    };
    vec![
        cap(chat, Window::Daily, 5.0),
        cap(chat, Window::Monthly, 50.0),
        cap(user, Window::Daily, 5.0),
        cap(user, Window::Monthly, 50.0),
    ]
}
