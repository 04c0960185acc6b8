#![allow(clippy::unwrap_used)]

use super::{FileSessionLog, FileSessionStore, InMemorySessionStore, ManagerError, SessionManager};
use chrono::{TimeZone, Utc};
use pretty_assertions::assert_eq;
use serde_json::json;
use std::sync::Arc;
use volcanic_abstractions::messages::{Message, SummaryMessage, UserBody};
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_abstractions::sessions::{
    CompactionEntry, EntryKind, EntryPos, SessionEntry, SessionHeader, SessionIndex, SessionLocation, SessionLog,
    SessionStore, SessionStoreError,
};

#[test]
fn entry_and_contract_types_are_send_sync_static() {
    fn check<T: Send + Sync + 'static>() {}
    check::<SessionManager>();
    check::<FileSessionStore>();
    check::<FileSessionLog>();
    check::<InMemorySessionStore>();
    check::<Arc<dyn SessionStore>>();
    check::<Box<dyn SessionLog>>();
    check::<ManagerError>();
}

#[test]
fn appends_chain_from_the_leaf_with_fresh_ids_and_the_clock() {
    let mut s = SessionManager::in_memory("/w").unwrap();
    assert_eq!(s.leaf_id(), None);
    assert_eq!(s.session_file(), None);
    assert_eq!(s.header().version, Some(3));
    s.set_clock(Arc::new(|| Utc.with_ymd_and_hms(2026, 1, 15, 9, 0, 0).unwrap()));
    let a = s.append_model_change("anthropic", "claude-sonnet-4-5").unwrap();
    let b = s.append_thinking_level_change(ThinkingLevel::High).unwrap();
    let c = s.append_custom("todo", Some(json!({"n": 1}))).unwrap();
    assert_eq!(s.leaf_id(), Some(c.as_str()));
    let entries = s.entries().unwrap();
    assert_eq!(entries.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), [&a, &b, &c]);
    assert_eq!(entries[0].parent_id, None);
    assert_eq!(entries[1].parent_id.as_deref(), Some(a.as_str()));
    assert_eq!(entries[2].parent_id.as_deref(), Some(b.as_str()));
    assert!(entries.iter().all(|e| e.timestamp == "2026-01-15T09:00:00.000Z"));
    assert!(
        entries
            .iter()
            .all(|e| e.id.len() == 8 && e.id.bytes().all(|b| b.is_ascii_hexdigit()))
    );
    assert_eq!(
        s.entry(&b).unwrap().kind,
        EntryKind::ThinkingLevelChange {
            thinking_level: ThinkingLevel::High
        }
    );
    assert_eq!(s.entry("missing"), None);
}

#[test]
fn labels_set_and_clear_and_need_an_existing_target() {
    let mut s = SessionManager::in_memory("/w").unwrap();
    let u = s.append_message(Message::user_text("hi", 1)).unwrap();
    s.append_label(&u, Some("start".into())).unwrap();
    assert_eq!(s.label(&u), Some("start"));
    s.append_label(&u, Some(String::new())).unwrap();
    assert_eq!(s.label(&u), None);
    s.append_label(&u, Some("again".into())).unwrap();
    s.append_label(&u, None).unwrap();
    assert_eq!(s.label(&u), None);
    assert!(matches!(
        s.append_label("nope", Some("x".into())),
        Err(ManagerError::UnknownEntry { .. })
    ));
}

#[test]
fn the_session_name_is_the_last_non_blank_one() {
    let mut s = SessionManager::in_memory("/w").unwrap();
    assert_eq!(s.session_name(), None);
    s.append_session_info(Some("  First ".into())).unwrap();
    s.append_session_info(None).unwrap();
    s.append_session_info(Some("   ".into())).unwrap();
    assert_eq!(s.session_name(), Some("First"));
    let store = s.store().clone();
    let reopened = SessionManager::open(store, s.location()).unwrap();
    assert_eq!(reopened.session_name(), Some("First"));
}

#[test]
fn branch_summary_moves_the_leaf_like_pis_branch_with_summary() {
    let mut s = SessionManager::in_memory("/w").unwrap();
    let u1 = s.append_message(Message::user_text("one", 1)).unwrap();
    s.append_message(Message::user_text("two", 2)).unwrap();
    let bs = s.append_branch_summary(Some(&u1), "tried two", None, None).unwrap();
    let e = s.entry(&bs).unwrap();
    assert_eq!(e.parent_id.as_deref(), Some(u1.as_str()));
    assert_eq!(
        e.kind,
        EntryKind::BranchSummary {
            from_id: u1.clone(),
            summary: "tried two".into(),
            details: None,
            from_hook: None
        }
    );
    let root = s
        .append_branch_summary(None, "from the top", Some(json!({"k": 1})), Some(true))
        .unwrap();
    let e = s.entry(&root).unwrap();
    assert_eq!(e.parent_id, None);
    assert!(matches!(e.kind, EntryKind::BranchSummary { ref from_id, .. } if from_id == "root"));
    assert!(matches!(
        s.append_branch_summary(Some("nope"), "x", None, None),
        Err(ManagerError::UnknownEntry { .. })
    ));
}

#[test]
fn reset_leaf_makes_the_next_entry_a_new_root() {
    let mut s = SessionManager::in_memory("/w").unwrap();
    s.append_message(Message::user_text("one", 1)).unwrap();
    s.reset_leaf();
    assert!(s.build_context().messages.is_empty());
    let r = s.append_message(Message::user_text("fresh", 2)).unwrap();
    assert_eq!(s.entry(&r).unwrap().parent_id, None);
    assert_eq!(s.build_context().messages, vec![Message::user_text("fresh", 2)]);
}

#[test]
fn summary_messages_are_not_appended_as_messages() {
    let mut s = SessionManager::in_memory("/w").unwrap();
    let summary = SummaryMessage {
        summary: "s".into(),
        tokens_before: Some(1),
        from_id: None,
        timestamp: 1,
    };
    let err = s.append_message(Message::CompactionSummary(summary)).unwrap_err();
    assert!(matches!(
        err,
        ManagerError::SummaryMessage {
            role: "compactionSummary"
        }
    ));
    assert_eq!(s.index().len(), 0);
}

#[test]
fn continue_recent_opens_the_latest_session_of_the_scope_or_creates_one() {
    let store: Arc<dyn SessionStore> = Arc::new(InMemorySessionStore::new());
    let mut first = SessionManager::continue_recent(store.clone(), "chat", "/w").unwrap();
    first.append_message(Message::user_text("a", 1)).unwrap();
    let second = SessionManager::create(store.clone(), "chat", "/w").unwrap();
    let other = SessionManager::create(store.clone(), "elsewhere", "/w").unwrap();
    let again = SessionManager::continue_recent(store.clone(), "chat", "/w").unwrap();
    assert_eq!(again.session_id(), second.session_id());
    assert_ne!(again.session_id(), other.session_id());
    first
        .append_compaction(CompactionEntry {
            summary: "s".into(),
            first_kept_entry_id: "x".into(),
            tokens_before: 1,
            details: None,
            from_hook: None,
        })
        .unwrap();
    let latest = SessionManager::continue_recent(store.clone(), "chat", "/w").unwrap();
    assert_eq!(
        latest.session_id(),
        first.session_id(),
        "appending makes a session current"
    );
    assert_eq!(latest.index().len(), 2);
    assert_eq!(store.list("chat").unwrap().len(), 2);
}

#[test]
fn custom_messages_keep_their_shape() {
    let mut s = SessionManager::in_memory("/w").unwrap();
    let id = s
        .append_custom_message("note", UserBody::Text("psst".into()), true, Some(json!({"a": 1})))
        .unwrap();
    assert_eq!(
        s.entry(&id)
            .unwrap()
            .to_json()
            .unwrap()
            .split(",\"id\"")
            .next()
            .unwrap(),
        r#"{"type":"custom_message","customType":"note","content":"psst","display":true,"details":{"a":1}"#
    );
}

/// A log that records which kind of append each entry got.
#[derive(Debug)]
struct Recording {
    inner: Box<dyn SessionLog>,
    calls: Arc<std::sync::Mutex<Vec<&'static str>>>,
}

impl SessionLog for Recording {
    fn location(&self) -> &SessionLocation {
        self.inner.location()
    }
    fn header(&self) -> &SessionHeader {
        self.inner.header()
    }
    fn index(&self) -> &SessionIndex {
        self.inner.index()
    }
    fn read(&self, positions: &[EntryPos]) -> Result<Vec<Option<SessionEntry>>, SessionStoreError> {
        self.inner.read(positions)
    }
    fn append(&mut self, entry: &SessionEntry) -> Result<EntryPos, SessionStoreError> {
        self.calls.lock().unwrap().push("append");
        self.inner.append(entry)
    }
    fn append_unsynced(&mut self, entry: &SessionEntry) -> Result<EntryPos, SessionStoreError> {
        self.calls.lock().unwrap().push("unsynced");
        self.inner.append_unsynced(entry)
    }
    fn sync(&mut self) -> Result<(), SessionStoreError> {
        self.calls.lock().unwrap().push("sync");
        self.inner.sync()
    }
}

#[test]
fn appends_inside_unsynced_do_not_wait_for_the_disk_and_sync_makes_them_durable() {
    let store: Arc<dyn SessionStore> = Arc::new(InMemorySessionStore::new());
    let header = SessionHeader::new("s1", "2026-01-15T09:00:00.000Z", "/w");
    let calls = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Recording {
        inner: store.create("", &header).unwrap(),
        calls: calls.clone(),
    };
    let mut s = SessionManager::from_log(store, Box::new(log)).unwrap();
    s.append_model_change("anthropic", "claude-sonnet-4-5").unwrap();
    let id = s
        .unsynced(|s| {
            s.append_thinking_level_change(ThinkingLevel::Off)?;
            // Nested scopes keep the outer one.
            s.unsynced(|s| s.append_message(Message::user_text("inner", 1)))?;
            s.append_message(Message::user_text("hi", 1))
        })
        .unwrap();
    s.append_custom("todo", None).unwrap();
    s.sync().unwrap();
    assert_eq!(
        *calls.lock().unwrap(),
        ["append", "unsynced", "unsynced", "unsynced", "append", "sync"]
    );
    assert_eq!(s.entries().unwrap().len(), 5);
    assert!(s.entry(&id).is_some());
}
