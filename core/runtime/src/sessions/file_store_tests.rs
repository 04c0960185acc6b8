#![allow(clippy::unwrap_used)]

use super::file_store::FileSessionStore;
use super::paths::{cwd_scope, session_file_name};
use pretty_assertions::assert_eq;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};
use volcanic_abstractions::messages::Message;
use volcanic_abstractions::sessions::{
    EntryKind, SessionEntry, SessionHeader, SessionLocation, SessionLog, SessionStore, SessionStoreError,
};

fn header(id: &str, timestamp: &str) -> SessionHeader {
    SessionHeader::new(id, timestamp, "/w")
}

fn entry(id: &str, parent: Option<&str>, text: &str) -> SessionEntry {
    SessionEntry {
        id: id.into(),
        parent_id: parent.map(Into::into),
        timestamp: "2026-01-15T09:00:00.000Z".into(),
        kind: EntryKind::Message(Message::user_text(text, 1)),
    }
}

#[test]
fn names_and_scopes() {
    assert_eq!(cwd_scope(Path::new("/home/dev/project")), "--home-dev-project--");
    assert_eq!(cwd_scope(Path::new("/")), "----");
    assert_eq!(
        session_file_name(&header("019b-uuid", "2026-01-15T08:59:55.000Z")),
        "2026-01-15T08-59-55-000Z_019b-uuid.jsonl"
    );
    let store = FileSessionStore::new("/state/sessions");
    assert_eq!(
        store.scope_dir("123/main").unwrap(),
        Path::new("/state/sessions/123/main")
    );
    assert_eq!(store.scope_dir("").unwrap(), Path::new("/state/sessions"));
    for bad in ["../x", "/abs", "a//b", "a/./b", "a/", "a\0b"] {
        assert!(
            matches!(store.scope_dir(bad), Err(SessionStoreError::InvalidScope { .. })),
            "{bad}"
        );
    }
}

#[test]
fn create_writes_only_the_header_and_refuses_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileSessionStore::new(dir.path());
    let log = store
        .create("g1/main", &header("s1", "2026-01-15T08:59:55.000Z"))
        .unwrap();
    let path = dir.path().join("g1/main/2026-01-15T08-59-55-000Z_s1.jsonl");
    assert_eq!(log.location(), &SessionLocation::File(path.clone()));
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"timestamp\":\"2026-01-15T08:59:55.000Z\",\"cwd\":\"/w\"}\n"
    );
    assert_eq!(
        fs::read_dir(dir.path().join("g1/main")).unwrap().count(),
        1,
        "no temporary file left"
    );
    let again = store.create_at(&SessionLocation::File(path), &header("s2", "t"));
    assert!(matches!(again, Err(SessionStoreError::Io { .. })));
    assert!(matches!(
        store.open(&SessionLocation::Key("k".into())),
        Err(SessionStoreError::ForeignLocation { .. })
    ));
    assert!(matches!(
        store.open(&SessionLocation::File(dir.path().join("none.jsonl"))),
        Err(SessionStoreError::NotFound { .. })
    ));
}

#[test]
fn appends_are_read_back_by_position_and_after_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileSessionStore::new(dir.path());
    let mut log = store.create("s", &header("s1", "t")).unwrap();
    let e1 = entry("a1", None, "one");
    let e2 = entry("a2", Some("a1"), "two ✓");
    assert_eq!(log.append(&e1).unwrap(), 0);
    assert_eq!(log.append(&e2).unwrap(), 1);
    assert_eq!(
        log.read(&[1, 0, 7, 1]).unwrap(),
        vec![Some(e2.clone()), Some(e1.clone()), None, Some(e2.clone())]
    );
    let reopened = store.open(log.location()).unwrap();
    assert_eq!(reopened.index().len(), 2);
    assert_eq!(reopened.index().parent(1), Some(0));
    assert_eq!(reopened.read(&[0, 1]).unwrap(), vec![Some(e1), Some(e2)]);
}

#[test]
fn a_complete_last_line_without_newline_gets_one_before_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let first = format!(
        "{}\n{}",
        serde_json::to_string(&header("s1", "t")).unwrap(),
        entry("a1", None, "x").to_json().unwrap()
    );
    fs::write(&path, &first).unwrap();
    let mut log = FileSessionStore::open_file(&path).unwrap();
    log.append(&entry("a2", Some("a1"), "y")).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        format!("{first}\n{}\n", entry("a2", Some("a1"), "y").to_json().unwrap())
    );
    assert_eq!(FileSessionStore::open_file(&path).unwrap().index().len(), 2);
    assert!(
        fs::read_dir(dir.path())
            .unwrap()
            .all(|e| !e.unwrap().file_name().to_string_lossy().contains("torn"))
    );
}

#[test]
fn another_writer_is_detected_before_appending() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileSessionStore::new(dir.path());
    let mut log = store.create("s", &header("s1", "t")).unwrap();
    log.append(&entry("a1", None, "x")).unwrap();
    let path = log.location().path().unwrap().to_path_buf();
    OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(entry("b1", Some("a1"), "pi").to_json().unwrap().as_bytes())
        .unwrap();
    let err = log.append(&entry("a2", Some("a1"), "y")).unwrap_err();
    assert!(matches!(err, SessionStoreError::ChangedOnDisk { .. }), "{err:?}");
}

#[test]
fn latest_is_the_most_recently_modified_readable_session() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileSessionStore::new(dir.path());
    assert_eq!(
        store.latest("chat").unwrap(),
        None,
        "a scope without a directory is empty"
    );
    let old = store
        .create("chat", &header("old", "2026-01-01T00:00:00.000Z"))
        .unwrap();
    let new = store
        .create("chat", &header("new", "2026-01-02T00:00:00.000Z"))
        .unwrap();
    let scope = dir.path().join("chat");
    fs::write(scope.join("notes.txt"), "not a session").unwrap();
    fs::write(scope.join("2026-01-03T00-00-00-000Z_broken.jsonl"), "garbage\n").unwrap();
    let set_mtime = |loc: &SessionLocation, secs: u64| {
        let f = OpenOptions::new().append(true).open(loc.path().unwrap()).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    };
    set_mtime(old.location(), 2_000_000_000);
    set_mtime(new.location(), 1_900_000_000);
    assert_eq!(store.latest("chat").unwrap().as_ref(), Some(old.location()));
    let ids: Vec<String> = store.list("chat").unwrap().into_iter().map(|s| s.header.id).collect();
    assert_eq!(ids, ["old", "new"]);
    set_mtime(new.location(), 2_100_000_000);
    assert_eq!(store.latest("chat").unwrap().as_ref(), Some(new.location()));
    // The newest file has no header: both pass over it; `open_latest` opens what `latest` names.
    let broken = SessionLocation::File(scope.join("2026-01-03T00-00-00-000Z_broken.jsonl"));
    set_mtime(&broken, 2_200_000_000);
    assert_eq!(store.latest("chat").unwrap().as_ref(), Some(new.location()));
    let opened = store.open_latest("chat").unwrap().unwrap();
    assert_eq!(
        (opened.location(), opened.header().id.as_str()),
        (new.location(), "new")
    );
    assert!(store.open_latest("elsewhere").unwrap().is_none());
}

#[test]
fn unsynced_appends_are_written_at_once_and_synced_by_the_next_synced_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new/dirs/s.jsonl");
    let mut log = FileSessionStore::create_file(&path, &header("s1", "2026-01-15T08:59:55.000Z")).unwrap();
    // A new file (and its new directories) waits for its first sync.
    assert!(!log.is_synced());
    log.append_unsynced(&entry("a1", None, "one")).unwrap();
    log.append_unsynced(&entry("a2", Some("a1"), "two")).unwrap();
    // In the file already: a killed process keeps them.
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(!log.is_synced());
    log.append(&entry("a3", Some("a2"), "three")).unwrap();
    assert!(log.is_synced());
    log.append_unsynced(&entry("a4", Some("a3"), "four")).unwrap();
    assert!(!log.is_synced());
    log.sync().unwrap();
    assert!(log.is_synced());
    let reopened = FileSessionStore::open_file(&path).unwrap();
    assert_eq!(reopened.index().len(), 4);
    let texts: Vec<String> = reopened
        .read(&[0, 3])
        .unwrap()
        .into_iter()
        .map(|e| match e.unwrap().kind {
            EntryKind::Message(Message::User(u)) => u.content.text(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(texts, ["one", "four"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_sync_on_a_multi_thread_runtime_too() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileSessionStore::new(dir.path());
    let mut log = store
        .create("1/main", &header("s1", "2026-01-15T08:59:55.000Z"))
        .unwrap();
    log.append(&entry("a1", None, "one")).unwrap();
    log.append_unsynced(&entry("a2", Some("a1"), "two")).unwrap();
    log.sync().unwrap();
    assert_eq!(log.index().len(), 2);
}

#[test]
fn a_sync_job_runs_elsewhere_and_leaves_nothing_to_sync() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut log = FileSessionStore::create_file(&path, &header("s1", "2026-01-15T08:59:55.000Z")).unwrap();
    // A new file with only its header: the job syncs it (and its directory).
    let job = log.sync_job().unwrap().unwrap();
    assert!(log.is_synced());
    std::thread::spawn(job).join().unwrap().unwrap();
    assert!(log.sync_job().unwrap().is_none());
    log.append_unsynced(&entry("a1", None, "one")).unwrap();
    let job = log.sync_job().unwrap().unwrap();
    std::thread::spawn(job).join().unwrap().unwrap();
    assert!(log.sync_job().unwrap().is_none());
    assert_eq!(FileSessionStore::open_file(&path).unwrap().index().len(), 1);
}

#[test]
fn session_files_and_their_folders_are_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = FileSessionStore::new(dir.path().join("sessions"));
    let log = store
        .create("123/main", &header("s1", "2026-01-15T08:59:55.000Z"))
        .unwrap();
    let file = log.location().path().unwrap().to_path_buf();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600, "{}", file.display());
    for d in ["sessions", "sessions/123", "sessions/123/main"] {
        assert_eq!(mode(&dir.path().join(d)), 0o700, "{d}");
    }
}
