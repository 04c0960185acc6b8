use super::{State, files_named, key};
use crate::transcript::{self, header, user};
use pretty_assertions::assert_eq;

const T0: i64 = 1_767_225_600_000;

#[test]
fn new_lines_are_indexed_once_and_a_line_waits_for_its_newline() {
    let s = State::new();
    s.write(
        "1/main/a.jsonl",
        &transcript::session("s", T0, 4, |i| format!("first batch {i}")),
    );
    assert_eq!(s.search("1", "batch").len(), 4);
    let line = user("e5", None, T0, "pelican arrives", None);
    let (head, tail) = line.split_at(line.len() / 2);
    s.append("1/main/a.jsonl", head);
    assert_eq!(s.search("1", "pelican"), vec![], "half a line is not indexed");
    s.append("1/main/a.jsonl", tail);
    assert_eq!(s.search("1", "pelican").len(), 1);
    assert_eq!(s.search("1", "batch").len(), 4, "nothing indexed twice");
    assert_eq!(s.rows("1"), 5);
}

#[test]
fn a_deleted_index_is_rebuilt_from_the_session_files() {
    let s = State::new();
    s.write(
        "1/main/a.jsonl",
        &transcript::session("s", T0, 6, |i| format!("heron {i}")),
    );
    let before = s.search("1", "heron");
    s.recall.forget_index(&key("1")).unwrap_or_else(|e| panic!("{e}"));
    assert!(!s.index_file("1").exists());
    assert_eq!(s.search("1", "heron"), before);
    assert_eq!(s.rows("1"), 6);
}

#[test]
fn a_corrupt_index_is_set_aside_and_rebuilt() {
    let mut s = State::new();
    s.write(
        "1/main/a.jsonl",
        &transcript::session("s", T0, 6, |i| format!("heron {i}")),
    );
    let before = s.search("1", "heron");
    assert_eq!(before.len(), 6);
    // Damaged while no process had it open (a crash, a disk error): found so at the next start.
    s.restart();
    std::fs::write(
        s.index_file("1"),
        b"this is not a database, it is garbage of some length......",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for side in ["-wal", "-shm"] {
        let mut p = s.index_file("1").into_os_string();
        p.push(side);
        let _ = std::fs::remove_file(p);
    }
    assert_eq!(s.search("1", "heron"), before);
    let aside = files_named(&s.dir.path().join("recall"), ".corrupt-");
    assert_eq!(aside.len(), 1, "the bad file is kept aside: {aside:?}");
}

#[test]
fn a_file_cut_shorter_is_indexed_again_without_duplicates() {
    let s = State::new();
    let full = transcript::session("s", T0, 4, |i| format!("ibis {i}"));
    s.write("1/main/a.jsonl", &full);
    assert_eq!(s.search("1", "ibis").len(), 4);
    // The store cuts a torn tail off and appends anew: the file is shorter than indexed.
    let cut: String = full.lines().take(3).map(|l| format!("{l}\n")).collect();
    s.write("1/main/a.jsonl", &cut);
    assert_eq!(s.search("1", "ibis").len(), 2);
    assert_eq!(s.rows("1"), 2);
}

#[test]
fn the_background_pass_indexes_every_chat_with_new_lines() {
    let s = State::new();
    s.write("1/main/a.jsonl", &transcript::session("s", T0, 2, |_| "alpha".into()));
    s.write(
        "g2/5/a.jsonl",
        &(header("t", T0) + &user("x", None, T0, "beta", Some("Bo"))),
    );
    let stopped = tokio_util::sync::CancellationToken::new();
    stopped.cancel();
    let none = s.recall.catch_up_all(&stopped);
    assert_eq!((none.files, none.rows), (0, 0), "a stopped pass starts no chat");
    let first = s.recall.catch_up_all(&tokio_util::sync::CancellationToken::new());
    assert_eq!((first.files, first.rows), (2, 3));
    let again = s.recall.catch_up_all(&tokio_util::sync::CancellationToken::new());
    assert_eq!((again.files, again.rows), (0, 0), "nothing grew: no chat is opened");
    s.append("g2/5/a.jsonl", &user("y", None, T0, "gamma", None));
    let third = s.recall.catch_up_all(&tokio_util::sync::CancellationToken::new());
    assert_eq!((third.files, third.rows), (1, 1));
}

#[test]
fn the_indexing_thread_runs_at_nice_19_keeps_no_index_open_and_ends_when_told() {
    let s = State::new();
    s.write("1/main/a.jsonl", &transcript::session("s", T0, 2, |_| "alpha".into()));
    s.write("2/main/a.jsonl", &transcript::session("t", T0, 3, |_| "beta".into()));
    let recall = std::sync::Arc::new(volcanic_recall::Recall::new(
        s.dir.path().join("sessions"),
        s.dir.path().join("recall"),
    ));
    let pace = volcanic_recall::Pace {
        first_after: std::time::Duration::ZERO,
        every: std::time::Duration::from_millis(20),
        chats_per_tick: 1,
        pause: std::time::Duration::from_millis(5),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = recall
        .clone()
        .spawn_indexer(pace, rx)
        .unwrap_or_else(|e| panic!("thread: {e}"));
    let index = |chat: &str| s.dir.path().join("recall").join(format!("{chat}.sqlite"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !(index("1").exists() && index("2").exists()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the thread indexed no chat in 30 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(nice_of("recall-index"), Some(19));
    drop(tx);
    assert!(thread.join().is_ok(), "the indexing thread panicked");
    // A closed index has no write-ahead log left; a kept one would.
    for chat in ["1", "2"] {
        let wal = s.dir.path().join("recall").join(format!("{chat}.sqlite-wal"));
        assert!(!wal.exists(), "{} left open", wal.display());
    }
    assert_eq!((s.rows("1"), s.rows("2")), (2, 3));
}

/// The nice value of this process's thread named `name` (`/proc/self/task/*/stat`, field 19).
fn nice_of(name: &str) -> Option<i64> {
    std::fs::read_dir("/proc/self/task").ok()?.flatten().find_map(|t| {
        let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
        if comm.trim_end() != name {
            return None;
        }
        let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
        // Fields after the command's closing parenthesis start at field 3.
        let rest = &stat[stat.rfind(')')? + 2..];
        rest.split(' ').nth(16)?.parse().ok()
    })
}
