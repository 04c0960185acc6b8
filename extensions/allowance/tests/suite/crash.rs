//! The crash rule: a journal cut at any byte opens to exactly the requests whose lines are whole
//! (holds without a settle at their estimate), and a writer killed with SIGKILL at any moment
//! loses no settled request and counts none twice.

use super::{charge, chat, day};
use pretty_assertions::assert_eq;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use volcanic_allowance::{MicroUsd, Period, SpendStore};

/// What a journal's whole lines add up to, computed here from the JSON (not by the store):
/// settled requests at their cost, open ones at their estimate.
fn expected(journal: &[u8]) -> anyhow::Result<MicroUsd> {
    let mut estimate = std::collections::BTreeMap::new();
    let mut cost = std::collections::BTreeMap::new();
    let whole = journal.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    for line in journal[..whole].split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(line)?;
        let id = v["id"].as_str().unwrap_or_default().to_owned();
        let micros = v["micros"].as_u64().unwrap_or_default();
        match v["op"].as_str() {
            Some("reserve") => estimate.insert(id, micros),
            Some("settle") => cost.insert(id, micros),
            other => anyhow::bail!("unexpected op {other:?}"),
        };
    }
    let total = estimate.iter().map(|(id, e)| cost.get(id).copied().unwrap_or(*e)).sum();
    Ok(MicroUsd(total))
}

#[test]
fn a_journal_cut_at_any_byte_opens_to_its_whole_lines() -> anyhow::Result<()> {
    let source = tempfile::tempdir()?;
    {
        let store = SpendStore::open(source.path())?;
        for (n, cost) in [(0, 0.2), (1, 0.0), (2, 0.35)] {
            let c = charge(&format!("s:{n}"), 6, 0.5);
            store.reserve(&c, &[])?;
            store.settle(&c.request, MicroUsd::from_usd(cost))?;
        }
        store.reserve(&charge("s:open", 6, 0.5), &[])?;
    }
    let journal = std::fs::read(source.path().join("journal-0.jsonl"))?;
    assert!(journal.len() > 200, "the journal holds seven lines");
    for cut in 0..=journal.len() {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("journal-0.jsonl");
        std::fs::write(&path, &journal[..cut])?;
        let want = expected(&journal[..cut])?;
        let store = SpendStore::open(dir.path())?;
        assert_eq!(store.settled(&chat(), Period::Day(day(6))), want, "cut at byte {cut}");
        // The torn tail is gone: a new request appends a clean line that reads back.
        let c = charge("after", 6, 0.01);
        store.reserve(&c, &[])?;
        store.settle("after", MicroUsd::from_usd(0.01))?;
        drop(store);
        let again = SpendStore::open(dir.path())?;
        assert_eq!(
            again.settled(&chat(), Period::Day(day(6))),
            want.plus(MicroUsd::from_usd(0.01)),
            "cut at byte {cut}, then one more request"
        );
    }
    Ok(())
}

const CHILD_DIR: &str = "VOLCANIC_ALLOWANCE_CRASH_CHILD";
const ESTIMATE: u64 = 10;
const COST: u64 = 7;

/// The writer the crash test kills: in the child (`VOLCANIC_ALLOWANCE_CRASH_CHILD` names its
/// store) it reserves and settles requests forever, printing `R n` after each hold and `S n`
/// after each settle, folding the journal every 7 lines. Run directly, it writes 50 requests and
/// checks their sum.
#[test]
#[allow(clippy::print_stdout)] // the child reports its progress to the parent on stdout
fn crash_child_writer() -> anyhow::Result<()> {
    let (dir, rounds, _keep) = match std::env::var_os(CHILD_DIR) {
        Some(d) => (std::path::PathBuf::from(d), u64::MAX, None),
        None => {
            let t = tempfile::tempdir()?;
            (t.path().to_owned(), 50, Some(t))
        }
    };
    let store = SpendStore::open_with(&dir, 7)?;
    for n in 0..rounds {
        let c = volcanic_allowance::Charge {
            estimate: MicroUsd(ESTIMATE),
            ..charge(&format!("k:{}:{n}", std::process::id()), 6, 0.0)
        };
        store.reserve(&c, &[])?;
        println!("R {n}");
        store.settle(&c.request, MicroUsd(COST))?;
        println!("S {n}");
    }
    assert_eq!(store.settled(&chat(), Period::Day(day(6))), MicroUsd(COST * 50));
    Ok(())
}

/// Starts the writer on `dir`, kills it (SIGKILL) after `lines` lines, and returns every line
/// it printed.
fn run_and_kill(dir: &Path, lines: usize) -> anyhow::Result<Vec<String>> {
    let mut child = Command::new(std::env::current_exe()?)
        .args([
            "--exact",
            "suite::crash::crash_child_writer",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().ok_or_else(|| anyhow::anyhow!("no stdout"))?;
    let mut reader = BufReader::new(stdout);
    let mut seen = Vec::new();
    let mut line = String::new();
    while seen.len() < lines {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            anyhow::bail!("the writer stopped by itself after {} lines", seen.len());
        }
        if line.starts_with("R ") || line.starts_with("S ") {
            seen.push(line.trim().to_owned());
        }
    }
    child.kill()?;
    child.wait()?;
    for l in reader.lines() {
        let l = l?;
        if l.starts_with("R ") || l.starts_with("S ") {
            seen.push(l);
        }
    }
    Ok(seen)
}

#[test]
fn a_writer_killed_at_any_moment_loses_no_settled_request_and_counts_none_twice() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    // What the store counted after the previous round: each round starts on the same files.
    let mut before = 0u64;
    for (round, lines) in [3usize, 18, 41, 9, 60, 27].into_iter().enumerate() {
        let printed = run_and_kill(dir.path(), lines)?;
        let settled = printed.iter().filter(|l| l.starts_with("S ")).count() as u64;
        // The last line says where the writer was: after `R n` its settle may be on disk; after
        // `S n` (or nothing) the next hold may be.
        let in_flight: &[u64] = if printed.last().is_some_and(|l| l.starts_with("R ")) {
            &[COST, ESTIMATE]
        } else {
            &[0, ESTIMATE]
        };
        let store = SpendStore::open_with(dir.path(), 7)?;
        let got = store.settled(&chat(), Period::Day(day(6))).0;
        let options: Vec<u64> = in_flight.iter().map(|f| before + COST * settled + f).collect();
        assert!(
            options.contains(&got),
            "round {round} (killed after {lines} lines): counted {got}, expected one of {options:?}"
        );
        before = got;
    }
    Ok(())
}

#[test]
fn lines_a_power_cut_left_as_zeros_are_cut_off_with_everything_after_them() -> anyhow::Result<()> {
    let source = tempfile::tempdir()?;
    {
        let store = SpendStore::open(source.path())?;
        for n in 0..4 {
            store.reserve(&charge(&format!("z:{n}"), 6, 0.25), &[])?;
        }
    }
    let journal = std::fs::read(source.path().join("journal-0.jsonl"))?;
    let ends: Vec<usize> = journal
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(ends.len(), 4);
    // The third line's first bytes never reached the disk (zeros), the fourth did.
    let mut holed = journal.clone();
    holed[ends[1]..ends[1] + 20].fill(0);
    for (read_only, name) in [(false, "the owner"), (true, "a reader")] {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("journal-0.jsonl");
        std::fs::write(&path, &holed)?;
        let want = MicroUsd::from_usd(0.5);
        if read_only {
            let reader = SpendStore::open_read_only(dir.path())?;
            assert_eq!(reader.counted(&chat(), Period::Day(day(6))), want, "{name}");
            assert_eq!(std::fs::read(&path)?, holed, "{name} cuts nothing");
            continue;
        }
        let store = SpendStore::open(dir.path())?;
        assert_eq!(store.settled(&chat(), Period::Day(day(6))), want, "{name}");
        assert_eq!(std::fs::read(&path)?, journal[..ends[1]], "{name} cuts the tail off");
        store.reserve(&charge("after", 6, 0.125), &[])?;
        drop(store);
        let again = SpendStore::open(dir.path())?;
        assert_eq!(
            again.settled(&chat(), Period::Day(day(6))),
            want.plus(MicroUsd::from_usd(0.125))
        );
    }
    // Damage that is not zeros still refuses to open.
    let mut garbled = journal.clone();
    garbled[ends[1]..ends[1] + 20].fill(b'x');
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("journal-0.jsonl"), &garbled)?;
    assert!(matches!(
        SpendStore::open(dir.path()),
        Err(volcanic_allowance::StoreError::Damaged { line: 3, .. })
    ));
    Ok(())
}
