//! Group commit: the lines of concurrent calls share one sync (counted through the store's sync
//! seam, not timed), each call returns only once its line is durable, and a failed sync fails
//! every call of its batch while their holds stay counted (the safe side).

use super::{charge, chat, day};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use volcanic_allowance::{Decision, MicroUsd, Period, SpendStore, StoreError, SyncJournal};

const RACERS: usize = 16;

/// A sync seam that counts syncs, holds the first one until released (telling the test it
/// started), and fails the syncs numbered in `fail`.
struct Seam {
    count: Arc<Mutex<usize>>,
    started: Receiver<()>,
    release: Sender<()>,
}

fn seam(fail: &'static [usize]) -> (Seam, SyncJournal) {
    let count = Arc::new(Mutex::new(0usize));
    let (started_tx, started) = channel();
    let (release, release_rx) = channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let counter = count.clone();
    let sync: SyncJournal = Arc::new(move |file| {
        let n = {
            let mut c = counter.lock().map_err(|_| std::io::Error::other("poisoned"))?;
            *c += 1;
            *c
        };
        if n == 1 {
            let _ = started_tx.send(());
            let rx = release_rx.lock().map_err(|_| std::io::Error::other("poisoned"))?;
            rx.recv().map_err(std::io::Error::other)?;
        }
        if fail.contains(&n) {
            return Err(std::io::Error::other("injected sync failure"));
        }
        file.sync_data()
    });
    (
        Seam {
            count,
            started,
            release,
        },
        sync,
    )
}

/// Starts one reserve that holds the first sync, then `RACERS` more that queue behind it;
/// returns once every hold is counted in memory (so every line is queued), with the first
/// sync still held.
fn queue_racers(
    store: &Arc<SpendStore>,
    seam: &Seam,
) -> anyhow::Result<Vec<std::thread::JoinHandle<volcanic_allowance::Result<Decision>>>> {
    let spawn = |id: String| {
        let store = store.clone();
        std::thread::spawn(move || store.reserve(&charge(&id, 6, 0.01), &[]))
    };
    let mut handles = vec![spawn("first".into())];
    seam.started.recv()?;
    handles.extend((0..RACERS).map(|n| spawn(format!("racer:{n}"))));
    let all = MicroUsd::from_usd(0.01 * (RACERS + 1) as f64);
    let mut waited = 0;
    while store.counted(&chat(), Period::Day(day(6))) != all {
        anyhow::ensure!(waited < 10_000, "the racers' holds were not all counted");
        waited += 1;
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    anyhow::ensure!(
        handles.iter().all(|h| !h.is_finished()),
        "a reserve returned before its line was synced"
    );
    Ok(handles)
}

#[test]
fn concurrent_holds_share_one_sync_and_return_once_durable() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (seam, sync) = seam(&[]);
    let store = Arc::new(SpendStore::open_with_sync(dir.path(), 1000, sync)?);
    let handles = queue_racers(&store, &seam)?;
    seam.release.send(())?;
    for h in handles {
        let d = h.join().map_err(|_| anyhow::anyhow!("a reserving thread panicked"))??;
        assert_eq!(d, Decision::Admitted);
    }
    let syncs = *seam.count.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    assert_eq!(
        syncs, 2,
        "the first hold's sync, then one for the {RACERS} queued behind it"
    );
    drop(store);
    // Every hold is on disk: reopened, each counts at its estimate.
    let again = SpendStore::open(dir.path())?;
    let all = MicroUsd::from_usd(0.01 * (RACERS + 1) as f64);
    assert_eq!(again.settled(&chat(), Period::Day(day(6))), all);
    Ok(())
}

#[test]
fn a_failed_sync_fails_its_whole_batch_and_keeps_the_holds_counted() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (seam, sync) = seam(&[2]);
    let store = Arc::new(SpendStore::open_with_sync(dir.path(), 1000, sync)?);
    let handles = queue_racers(&store, &seam)?;
    seam.release.send(())?;
    let mut outcomes = Vec::new();
    for h in handles {
        outcomes.push(h.join().map_err(|_| anyhow::anyhow!("a reserving thread panicked"))?);
    }
    assert!(matches!(outcomes[0], Ok(Decision::Admitted)), "the first batch synced");
    for (n, o) in outcomes.iter().enumerate().skip(1) {
        assert!(
            matches!(o, Err(StoreError::Io { source, .. }) if source.to_string() == "injected sync failure"),
            "racer {n}: {o:?}"
        );
    }
    // Failed holds stay counted until a restart: high, never low.
    let all = MicroUsd::from_usd(0.01 * (RACERS + 1) as f64);
    assert_eq!(store.counted(&chat(), Period::Day(day(6))), all);
    // The failed batch was cut back off: the store goes on writing clean lines.
    assert_eq!(store.reserve(&charge("after", 6, 0.01), &[])?, Decision::Admitted);
    store.settle("after", MicroUsd::from_usd(0.005))?;
    drop(store);
    let again = SpendStore::open(dir.path())?;
    assert_eq!(
        again.settled(&chat(), Period::Day(day(6))),
        MicroUsd::from_usd(0.015),
        "the first hold at its estimate and the settled one; none of the failed batch"
    );
    Ok(())
}

#[test]
fn concurrent_requests_across_foldings_count_each_once() -> anyhow::Result<()> {
    const THREADS: u64 = 6;
    const ROUNDS: u64 = 40;
    let dir = tempfile::tempdir()?;
    // A fold every 7 lines, so folds happen while other threads' lines wait for a sync.
    let store = Arc::new(SpendStore::open_with(dir.path(), 7)?);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || -> volcanic_allowance::Result<()> {
                for n in 0..ROUNDS {
                    let c = charge(&format!("t{t}:{n}"), 6, 0.01);
                    store.reserve(&c, &[])?;
                    store.settle(&c.request, MicroUsd(3))?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| anyhow::anyhow!("a writing thread panicked"))??;
    }
    let want = MicroUsd(3 * THREADS * ROUNDS);
    assert_eq!(store.counted(&chat(), Period::Day(day(6))), want);
    drop(store);
    assert_eq!(
        SpendStore::open(dir.path())?.counted(&chat(), Period::Day(day(6))),
        want
    );
    Ok(())
}
