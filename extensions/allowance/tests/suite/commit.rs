//! The journal's sync off the request's and the answer's path: a hold and a settlement return
//! once their line is written, while a sync runs (blocked here in the store's sync seam, so
//! nothing is timed); lines written during a sync, or while the sync thread gathers them, share
//! one sync; `flush` cuts the gathering short and waits for a sync begun after the last write; a
//! failed sync breaks the store with its lines still counted; lines written and not yet synced
//! survive a crash of the process and fold into a snapshot, and writes go on while a fold
//! syncs it.

use super::{charge, chat, day};
use pretty_assertions::assert_eq;
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use volcanic_allowance::{Decision, MicroUsd, Period, SYNC_GATHER, SpendStore, StoreError, SyncJournal};

const RACERS: usize = 16;
/// How long the seam (and the test) waits for the other side before failing instead of hanging.
const PATIENCE: Duration = Duration::from_secs(20);

/// A sync seam that counts syncs, tells the test when each starts, holds each until the test
/// releases it (one token per sync), and fails the syncs numbered in `fail`.
struct Seam {
    count: Arc<Mutex<usize>>,
    started: Receiver<usize>,
    release: Sender<()>,
}

impl Seam {
    fn new(fail: &'static [usize]) -> (Seam, SyncJournal) {
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
            let _ = started_tx.send(n);
            let rx = release_rx.lock().map_err(|_| std::io::Error::other("poisoned"))?;
            rx.recv_timeout(PATIENCE)
                .map_err(|_| std::io::Error::other("the test never released the sync"))?;
            if fail.contains(&n) {
                return Err(std::io::Error::other("injected sync failure"));
            }
            file.sync_data()
        });
        let seam = Seam {
            count,
            started,
            release,
        };
        (seam, sync)
    }

    /// Waits until sync `n` has started (and is held).
    fn started(&self, n: usize) -> anyhow::Result<()> {
        let got = self.started.recv_timeout(PATIENCE)?;
        anyhow::ensure!(got == n, "sync {got} started, expected sync {n}");
        Ok(())
    }

    fn release(&self, syncs: usize) -> anyhow::Result<()> {
        for _ in 0..syncs {
            self.release.send(())?;
        }
        Ok(())
    }

    fn count(&self) -> anyhow::Result<usize> {
        Ok(*self.count.lock().map_err(|_| anyhow::anyhow!("poisoned"))?)
    }
}

/// The whole lines of the store's (only) journal, as written so far.
fn journal_lines(dir: &Path) -> anyhow::Result<Vec<String>> {
    let journal = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".jsonl"))
        .ok_or_else(|| anyhow::anyhow!("no journal"))?;
    Ok(std::fs::read_to_string(journal)?.lines().map(str::to_owned).collect())
}

fn today(store: &SpendStore) -> MicroUsd {
    store.counted(&chat(), Period::Day(day(6)))
}

fn usd(n: f64) -> MicroUsd {
    MicroUsd::from_usd(n)
}

/// A store in a fresh folder, folding after `compact_after` lines, synced through a [`Seam`]
/// failing the syncs numbered in `fail`, gathering lines for the default time.
fn open(fail: &'static [usize], compact_after: usize) -> anyhow::Result<(tempfile::TempDir, Seam, Arc<SpendStore>)> {
    open_gathering(fail, compact_after, SYNC_GATHER)
}

/// [`open`], gathering lines for `gather` before each sync.
fn open_gathering(
    fail: &'static [usize],
    compact_after: usize,
    gather: Duration,
) -> anyhow::Result<(tempfile::TempDir, Seam, Arc<SpendStore>)> {
    let dir = tempfile::tempdir()?;
    let (seam, sync) = Seam::new(fail);
    let store = Arc::new(SpendStore::open_with_sync(dir.path(), compact_after, sync, gather)?);
    Ok((dir, seam, store))
}

/// Flushes the store on a thread of its own (it waits for a sync).
fn flush_apart(store: &Arc<SpendStore>) -> std::thread::JoinHandle<volcanic_allowance::Result<()>> {
    let store = store.clone();
    std::thread::spawn(move || store.flush())
}

#[test]
fn holds_return_while_a_sync_is_held_and_the_lines_written_meanwhile_share_the_next_sync() -> anyhow::Result<()> {
    let (dir, seam, store) = open(&[], 1000)?;
    assert_eq!(store.reserve(&charge("first", 6, 0.01), &[])?, Decision::Admitted);
    seam.started(1)?;
    // The first line's sync is held in the seam: every other hold returns regardless.
    let racers: Vec<_> = (0..RACERS)
        .map(|n| {
            let store = store.clone();
            std::thread::spawn(move || store.reserve(&charge(&format!("racer:{n}"), 6, 0.01), &[]))
        })
        .collect();
    for r in racers {
        let d = r.join().map_err(|_| anyhow::anyhow!("a reserving thread panicked"))??;
        assert_eq!(d, Decision::Admitted);
    }
    assert_eq!(seam.count()?, 1, "no sync ended, none other began");
    assert_eq!(
        journal_lines(dir.path())?.len(),
        RACERS + 1,
        "every hold's line is written"
    );
    assert_eq!(today(&store), usd(0.01 * (RACERS + 1) as f64));
    seam.release(2)?;
    drop(store);
    assert_eq!(
        seam.count()?,
        2,
        "the first hold's sync, then one for the {RACERS} written during it"
    );
    let again = SpendStore::open(dir.path())?;
    assert_eq!(
        again.settled(&chat(), Period::Day(day(6))),
        usd(0.01 * (RACERS + 1) as f64)
    );
    Ok(())
}

#[test]
fn a_settle_replaces_its_hold_at_once_and_flush_waits_for_a_sync_begun_after_it() -> anyhow::Result<()> {
    let (dir, seam, store) = open(&[], 1000)?;
    store.reserve(&charge("a", 6, 0.5), &[])?;
    seam.started(1)?;
    // The hold's sync is held in the seam: the settle returns regardless.
    store.settle("a", usd(0.2))?;
    assert_eq!(journal_lines(dir.path())?.len(), 2, "the settle's line is written");
    assert_eq!(today(&store), usd(0.2), "the cost counts at once, not the estimate");
    let flush = flush_apart(&store);
    seam.release(1)?;
    // The held sync began before the settle's line was written: the next one is needed.
    seam.started(2)?;
    assert!(
        !flush.is_finished(),
        "flush returned on a sync begun before the last write"
    );
    seam.release(1)?;
    flush
        .join()
        .map_err(|_| anyhow::anyhow!("the flushing thread panicked"))??;
    assert_eq!(seam.count()?, 2);
    drop(store);
    assert_eq!(seam.count()?, 2, "nothing left to sync at the drop");
    let again = SpendStore::open(dir.path())?;
    assert_eq!(again.settled(&chat(), Period::Day(day(6))), usd(0.2));
    Ok(())
}

#[test]
fn lines_written_within_the_gather_share_one_sync_and_a_flush_cuts_it_short() -> anyhow::Result<()> {
    let (dir, seam, store) = open_gathering(&[], 1000, Duration::from_secs(600))?;
    store.reserve(&charge("a", 6, 0.5), &[])?;
    store.settle("a", usd(0.2))?;
    store.reserve(&charge("b", 6, 0.25), &[])?;
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(seam.count()?, 0, "the sync thread is still gathering");
    let flush = flush_apart(&store);
    seam.started(1)?;
    seam.release(1)?;
    flush
        .join()
        .map_err(|_| anyhow::anyhow!("the flushing thread panicked"))??;
    assert_eq!(seam.count()?, 1, "three lines, one sync");
    drop(store);
    assert_eq!(seam.count()?, 1, "nothing left to sync at the drop");
    let again = SpendStore::open(dir.path())?;
    assert_eq!(again.settled(&chat(), Period::Day(day(6))), usd(0.45));
    Ok(())
}

#[test]
fn a_failed_sync_breaks_the_store_and_what_was_written_stays_counted() -> anyhow::Result<()> {
    let (dir, seam, store) = open(&[1], 1000)?;
    store.reserve(&charge("a", 6, 0.5), &[])?;
    seam.started(1)?;
    assert_eq!(store.reserve(&charge("b", 6, 0.25), &[])?, Decision::Admitted);
    store.settle("a", usd(0.1))?;
    let flush = flush_apart(&store);
    seam.release(1)?;
    let flushed = flush
        .join()
        .map_err(|_| anyhow::anyhow!("the flushing thread panicked"))?;
    assert!(
        matches!(&flushed, Err(StoreError::Io { action: "sync", source, .. }) if source.to_string() == "injected sync failure"),
        "{flushed:?}"
    );
    let refused = store.reserve(&charge("c", 6, 0.01), &[]);
    assert!(
        matches!(&refused, Err(StoreError::Broken { reason }) if reason.contains("injected sync failure")),
        "{refused:?}"
    );
    assert!(
        matches!(store.settle("b", usd(0.1)), Err(StoreError::Broken { .. })),
        "a settle after the failure is not written"
    );
    assert_eq!(today(&store), usd(0.35), "a at its cost, b's hold at its estimate");
    drop(store);
    assert_eq!(seam.count()?, 1, "a failed sync is not tried again");
    // A restart replays what was written: a settled at its cost, b at its estimate, no c.
    let again = SpendStore::open(dir.path())?;
    assert_eq!(again.settled(&chat(), Period::Day(day(6))), usd(0.35));
    Ok(())
}

/// Copies every file of `from` into `to` (the folder as a killed process leaves it: written
/// lines are in the system's page cache, synced or not).
fn copy_folder(from: &Path, to: &Path) -> anyhow::Result<()> {
    for e in std::fs::read_dir(from)? {
        let e = e?;
        std::fs::copy(e.path(), to.join(e.file_name()))?;
    }
    Ok(())
}

#[test]
fn holds_and_settlements_written_and_not_synced_survive_a_crash_of_the_process() -> anyhow::Result<()> {
    let (dir, seam, store) = open(&[], 1000)?;
    for (id, est) in [("a", 0.5), ("b", 0.25), ("c", 0.125)] {
        store.reserve(&charge(id, 6, est), &[])?;
    }
    seam.started(1)?;
    store.settle("a", usd(0.0625))?;
    // The process "dies" here: its files as written, no sync ended.
    let crashed = tempfile::tempdir()?;
    copy_folder(dir.path(), crashed.path())?;
    assert_eq!(seam.count()?, 1);
    let reopened = SpendStore::open(crashed.path())?;
    assert_eq!(
        reopened.settled(&chat(), Period::Day(day(6))),
        usd(0.4375),
        "a at its cost, b and c at their estimates"
    );
    seam.release(2)?;
    drop(store);
    Ok(())
}

#[test]
fn writes_go_on_while_a_fold_syncs_its_snapshot_which_makes_the_lines_before_it_durable() -> anyhow::Result<()> {
    // Folded after 4 lines: the first sync's end finds 4 written, 3 of them not synced.
    let (dir, seam, store) = open(&[], 4)?;
    store.reserve(&charge("a", 6, 0.5), &[])?;
    seam.started(1)?;
    store.reserve(&charge("b", 6, 0.25), &[])?;
    store.reserve(&charge("c", 6, 0.125), &[])?;
    store.settle("a", usd(0.1))?;
    let flush = flush_apart(&store);
    seam.release(1)?;
    // Sync 2 is the fold's snapshot, held in the seam: a settle goes to the next journal meanwhile.
    seam.started(2)?;
    let (done, settled) = channel();
    let writer = store.clone();
    std::thread::spawn(move || done.send(writer.settle("b", usd(0.05))));
    settled
        .recv_timeout(PATIENCE)
        .map_err(|_| anyhow::anyhow!("a settle waited for the fold's sync"))??;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("journal-1.jsonl"))?
            .lines()
            .count(),
        1,
        "the settle's line is in the next journal"
    );
    assert!(!flush.is_finished(), "flush returned before the snapshot was synced");
    // The process "dies" here: the old journal and the next one replay in order.
    let crashed = tempfile::tempdir()?;
    copy_folder(dir.path(), crashed.path())?;
    assert_eq!(
        SpendStore::open(crashed.path())?.settled(&chat(), Period::Day(day(6))),
        usd(0.275),
        "a and b at their cost, c at its estimate"
    );
    seam.release(2)?;
    flush
        .join()
        .map_err(|_| anyhow::anyhow!("the flushing thread panicked"))??;
    assert_eq!(today(&store), usd(0.275));
    drop(store);
    assert_eq!(seam.count()?, 3, "the first sync, the snapshot's, the next journal's");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())?
        .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()?;
    names.sort();
    assert_eq!(
        names,
        ["journal-1.jsonl", "snapshot.json"],
        "the folded journal is removed"
    );
    let again = SpendStore::open(dir.path())?;
    assert_eq!(again.settled(&chat(), Period::Day(day(6))), usd(0.275));
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
    assert_eq!(today(&store), want);
    drop(store);
    assert_eq!(
        SpendStore::open(dir.path())?.counted(&chat(), Period::Day(day(6))),
        want
    );
    Ok(())
}
