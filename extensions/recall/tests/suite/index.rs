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
        quiet: std::time::Duration::ZERO,
        hold_at_most: std::time::Duration::ZERO,
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
    // No file of the index folder is open in this process any more.
    let recall_dir = s.dir.path().join("recall");
    let open: Vec<_> = open_files()
        .into_iter()
        .filter(|p| p.starts_with(&recall_dir))
        .collect();
    assert_eq!(open, Vec::<std::path::PathBuf>::new(), "indexes left open");
    assert_eq!((s.rows("1"), s.rows("2")), (2, 3));
}

/// The files this process has open (`/proc/self/fd`).
fn open_files() -> Vec<std::path::PathBuf> {
    let fds = std::fs::read_dir("/proc/self/fd").unwrap_or_else(|e| panic!("/proc/self/fd: {e}"));
    fds.flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .collect()
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

#[test]
fn after_a_restart_a_pass_opens_only_the_indexes_of_chats_whose_files_grew() {
    let mut s = State::new();
    s.write("1/main/a.jsonl", &transcript::session("s", T0, 2, |_| "alpha".into()));
    s.write("2/main/a.jsonl", &transcript::session("t", T0, 3, |_| "beta".into()));
    let all = tokio_util::sync::CancellationToken::new();
    assert_eq!(s.recall.catch_up_all(&all).rows, 5);
    s.restart();
    assert_eq!(s.recall.due_chats(), vec![], "the manifests say both are caught up");
    // Chat 2's index garbled in place (same file): a pass that opened it would set it aside.
    let garbage = vec![0x5a_u8; 8192];
    std::fs::write(s.index_file("2"), &garbage).unwrap_or_else(|e| panic!("{e}"));
    s.append("1/main/a.jsonl", &user("n1", None, T0, "gamma", None));
    assert_eq!(s.recall.due_chats(), vec![key("1")]);
    let pass = s.recall.catch_up_all(&all);
    assert_eq!((pass.files, pass.rows), (1, 1));
    assert_eq!(
        std::fs::read(s.index_file("2")).ok(),
        Some(garbage),
        "chat 2 not opened"
    );
    assert_eq!(
        files_named(&s.dir.path().join("recall"), ".corrupt-"),
        Vec::<String>::new()
    );
    // A search still reads the index itself, and rebuilds the garbled one.
    assert_eq!(s.search("2", "beta").len(), 3);
}

#[test]
fn a_manifest_that_says_more_than_the_index_holds_does_not_hide_lines_from_search() {
    let mut s = State::new();
    s.write("1/main/a.jsonl", &transcript::session("s", T0, 2, |_| "alpha".into()));
    assert_eq!(s.search("1", "alpha").len(), 2);
    s.restart();
    // As after a power cut that kept the manifest but not the index's last pages: the file
    // grew, the manifest was written for the new length, the index holds the old one.
    s.append("1/main/a.jsonl", &user("n1", None, T0, "gamma", None));
    let grown = std::fs::metadata(s.dir.path().join("sessions/1/main/a.jsonl"))
        .map(|m| m.len())
        .unwrap_or_else(|e| panic!("{e}"));
    let manifest = s.dir.path().join("recall/1.seen");
    let text = std::fs::read_to_string(&manifest).unwrap_or_else(|e| panic!("{e}"));
    let mut seen: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    seen["files"]["main/a.jsonl"] = grown.into();
    std::fs::write(&manifest, seen.to_string()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.recall.due_chats(), vec![], "the pass trusts the manifest");
    assert_eq!(
        s.search("1", "gamma").len(),
        1,
        "a search reads the index's own offsets"
    );
}

#[test]
fn the_pass_holds_back_while_runs_start_and_end() {
    let s = State::new();
    s.write("1/main/a.jsonl", &transcript::session("s", T0, 2, |_| "alpha".into()));
    let recall = std::sync::Arc::new(volcanic_recall::Recall::new(
        s.dir.path().join("sessions"),
        s.dir.path().join("recall"),
    ));
    let ms = std::time::Duration::from_millis;
    let pace = volcanic_recall::Pace {
        first_after: std::time::Duration::ZERO,
        every: ms(20),
        chats_per_tick: 1,
        pause: ms(5),
        quiet: ms(1000),
        hold_at_most: std::time::Duration::from_secs(60),
    };
    recall.note_activity();
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = recall
        .clone()
        .spawn_indexer(pace, rx)
        .unwrap_or_else(|e| panic!("thread: {e}"));
    let index = s.index_file("1");
    // Busy for 1.5 s: a run starts or ends every 50 ms.
    let busy_until = std::time::Instant::now() + ms(1500);
    while std::time::Instant::now() < busy_until {
        recall.note_activity();
        std::thread::sleep(ms(50));
        assert!(!index.exists(), "indexed while runs were starting");
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !index.exists() {
        assert!(std::time::Instant::now() < deadline, "not indexed once quiet");
        std::thread::sleep(ms(10));
    }
    drop(tx);
    assert!(thread.join().is_ok(), "the indexing thread panicked");
}

#[test]
fn a_line_longer_than_a_chunk_is_indexed_whole() {
    let s = State::new();
    let long = format!("albatross {}", "word ".repeat(300_000));
    let text = header("s", T0) + &user("a", None, T0, &long, None) + &user("b", None, T0, "petrel", None);
    assert!(text.len() > 1 << 20, "the line must pass one chunk");
    s.write("1/main/a.jsonl", &text);
    assert_eq!(s.search("1", "albatross").len(), 1);
    assert_eq!(s.search("1", "petrel").len(), 1);
}
