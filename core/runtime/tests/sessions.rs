//! Sessions in pi's v3 format through the public API: a hand-written pi file, a generated large
//! one, durability (appends keep every byte), repair of a torn tail, bad lines, bad headers,
//! branching.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use volcanic_abstractions::messages::{Message, UserBody};
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_abstractions::sessions::{EntryKind, SessionLocation, SessionStore, SessionStoreError};
use volcanic_core::sessions::{FileSessionStore, ManagerError, SessionManager};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pi-session.jsonl");

fn store(dir: &Path) -> Arc<dyn SessionStore> {
    Arc::new(FileSessionStore::new(dir.join("sessions")))
}

fn open(path: &Path) -> SessionManager {
    SessionManager::open(
        store(path.parent().unwrap()),
        &SessionLocation::File(path.to_path_buf()),
    )
    .unwrap()
}

/// A copy of the fixture in a temporary directory (the test appends to it).
fn fixture_copy(dir: &Path) -> PathBuf {
    let path = dir.join("pi-session.jsonl");
    fs::copy(FIXTURE, &path).unwrap();
    path
}

fn msg(v: Value) -> Message {
    serde_json::from_value(v).unwrap()
}

fn usage(i: u64, o: u64, cr: u64, cost: Value) -> Value {
    json!({"input": i, "output": o, "cacheRead": cr, "cacheWrite": 0, "totalTokens": i + o + cr, "cost": cost})
}

fn ms(iso: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(iso).unwrap().timestamp_millis()
}

#[test]
fn pi_fixture_context_is_what_pi_builds() {
    let dir = tempfile::tempdir().unwrap();
    let session = open(&fixture_copy(dir.path()));
    let ctx = session.build_context();
    let openai_cost =
        json!({"input": 0.00003, "output": 0.000075, "cacheRead": 0.00003, "cacheWrite": 0, "total": 0.000135});
    let expected = vec![
        msg(json!({"role": "compactionSummary",
            "summary": "## Goal\nExplore src.\n\n## Progress\n### Done\n- [x] Listed src\n- [x] Read lib.rs",
            "tokensBefore": 1234, "timestamp": ms("2026-01-15T09:03:00.000Z")})),
        msg(json!({"role": "branchSummary",
            "summary": "The user asked to read main.rs; it has an empty main function.",
            "fromId": "a0000008", "timestamp": ms("2026-01-15T09:02:00.000Z")})),
        msg(
            json!({"role": "user", "content": [{"type": "text", "text": "Now read lib.rs instead"}], "timestamp": 1768467725000_i64}),
        ),
        msg(json!({"role": "assistant",
            "content": [{"type": "text", "text": "Reading lib.rs."},
                        {"type": "toolCall", "id": "call_Kl12", "name": "read", "arguments": {"path": "src/lib.rs", "limit": 50}}],
            "api": "openai-responses", "provider": "openai", "model": "gpt-5", "responseId": "resp_0a1b2c",
            "usage": usage(10, 5, 100, openai_cost.clone()), "stopReason": "toolUse", "timestamp": 1768467727000_i64})),
        msg(
            json!({"role": "toolResult", "toolCallId": "call_Kl12", "toolName": "read",
            "content": [{"type": "text", "text": "pub fn lib() {}\n"}], "isError": false, "timestamp": 1768467727300_i64}),
        ),
        msg(
            json!({"role": "assistant", "content": [{"type": "text", "text": "lib.rs defines `lib()`."}],
            "api": "openai-responses", "provider": "openai", "model": "gpt-5", "responseId": "resp_0a1b2d",
            "usage": usage(10, 5, 100, openai_cost.clone()), "stopReason": "stop", "timestamp": 1768467729000_i64}),
        ),
        msg(
            json!({"role": "custom", "customType": "reminder", "content": "Remember to run the tests.", "display": true,
            "timestamp": ms("2026-01-15T09:03:01.000Z")}),
        ),
        msg(json!({"role": "user", "content": "Run the tests", "timestamp": 1768467790000_i64})),
        msg(json!({"role": "assistant",
            "content": [{"type": "toolCall", "id": "call_Mn34", "name": "bash", "arguments": {"command": "cargo test", "timeout": 120}}],
            "api": "openai-responses", "provider": "openai", "model": "gpt-5", "responseId": "resp_0a1b2e",
            "usage": usage(10, 5, 100, openai_cost), "stopReason": "toolUse", "timestamp": 1768467792000_i64})),
        msg(
            json!({"role": "toolResult", "toolCallId": "call_Mn34", "toolName": "bash",
            "content": [{"type": "text", "text": "test lib ... FAILED\n\nCommand exited with code 101"}],
            "details": {}, "isError": true, "timestamp": 1768467820000_i64}),
        ),
        msg(
            json!({"role": "assistant", "content": [{"type": "text", "text": "One test fails: `lib` panics."}],
            "api": "openai-responses", "provider": "openai", "model": "gpt-5", "responseId": "resp_0a1b2f",
            "usage": usage(2000, 40, 0, json!({"input": 0.0025, "output": 0.0004, "cacheRead": 0, "cacheWrite": 0, "total": 0.0029})),
            "stopReason": "stop", "timestamp": 1768467830000_i64}),
        ),
    ];
    assert_eq!(ctx.messages, expected);
    assert_eq!(ctx.model, Some(("openai".to_owned(), "gpt-5".to_owned())));
    assert_eq!(ctx.thinking_level, ThinkingLevel::High);
}

#[test]
fn pi_fixture_header_leaf_labels_name_and_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture_copy(dir.path());
    let session = open(&path);
    assert_eq!(session.session_id(), "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
    assert_eq!(session.cwd(), "/home/dev/project");
    assert_eq!(session.session_file(), Some(path));
    // The leaf is the last line, whatever its type.
    assert_eq!(session.leaf_id(), Some("a000001d"));
    assert_eq!(session.label("a000000e"), Some("lib branch"));
    assert_eq!(
        session.label("a0000003"),
        None,
        "a label entry without `label` clears it"
    );
    assert_eq!(session.session_name(), Some("Fixture session"));
    assert_eq!(session.index().len(), 29);

    let branch: Vec<String> = session.branch_entries().into_iter().map(|e| e.id).collect();
    let mut expected: Vec<String> = (1..=8).map(|i| format!("a{i:07x}")).collect();
    expected.extend((0x0d..=0x1d).map(|i| format!("a{i:07x}")));
    assert_eq!(branch, expected);

    // The unknown entry type is kept as written.
    let unknown = session.entry("a0000015").unwrap();
    let EntryKind::Unknown { entry_type, raw } = &unknown.kind else {
        panic!("{unknown:?}")
    };
    assert_eq!(entry_type, "context_edit");
    assert_eq!(raw["reason"], "newer pi");
    assert_eq!(unknown.parent_id.as_deref(), Some("a0000014"));
    // Entries of the abandoned branch are still there.
    let abandoned = session.entry("a000000c").unwrap();
    assert_eq!(abandoned.parent_id.as_deref(), Some("a000000b"));
}

#[test]
fn pi_fixture_continues_keeping_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture_copy(dir.path());
    let before = fs::read(&path).unwrap();
    let mut session = open(&path);
    let id = session
        .append_message(Message::user_text("And now?", 1768467900000))
        .unwrap();
    assert_eq!(id.len(), 8);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    session.append_model_change("anthropic", "claude-opus-4-5").unwrap();

    let after = fs::read(&path).unwrap();
    assert_eq!(&after[..before.len()], &before[..], "every existing byte is kept");
    let tail = std::str::from_utf8(&after[before.len()..]).unwrap();
    let first: Value = serde_json::from_str(tail.lines().next().unwrap()).unwrap();
    assert_eq!(first["parentId"], "a000001d");
    assert!(tail.lines().next().unwrap().starts_with(&format!(
        r#"{{"type":"message","id":"{id}","parentId":"a000001d","timestamp":""#
    )));

    let reopened = open(&path);
    let ctx = reopened.build_context();
    assert_eq!(ctx.messages.len(), 12);
    assert_eq!(ctx.messages[11], Message::user_text("And now?", 1768467900000));
    assert_eq!(ctx.model, Some(("anthropic".to_owned(), "claude-opus-4-5".to_owned())));
    assert_eq!(ctx.thinking_level, ThinkingLevel::High);
}

/// Writes a generated pi session ([`volcanic_testkit::pi_session`]) and returns the file and its
/// summary.
fn generate(dir: &Path, entries: u32) -> (PathBuf, Value) {
    let generated = volcanic_testkit::pi_session::generate(entries as usize, 1);
    let out = dir.join(format!("pi-session-{entries}.jsonl"));
    fs::write(&out, &generated.text).unwrap();
    (out, generated.summary)
}

#[test]
fn generated_pi_session_loads_with_the_generators_counts_and_continues() {
    let dir = tempfile::tempdir().unwrap();
    let (path, summary) = generate(dir.path(), 10_000);
    let before = fs::read(&path).unwrap();

    let mut session = open(&path);
    assert_eq!(session.session_id(), summary["sessionId"]);
    assert_eq!(session.index().len() as u64, summary["entries"].as_u64().unwrap());
    assert_eq!(session.leaf_id(), summary["leafId"].as_str());
    let ctx = session.build_context();
    assert_eq!(
        ctx.messages.len() as u64,
        summary["expectedContextMessages"].as_u64().unwrap()
    );
    let model = &summary["expectedModel"];
    assert_eq!(
        ctx.model,
        Some((
            model["provider"].as_str().unwrap().to_owned(),
            model["modelId"].as_str().unwrap().to_owned()
        ))
    );
    assert_eq!(ctx.thinking_level.as_str(), summary["expectedThinkingLevel"]);
    assert!(matches!(ctx.messages[0], Message::CompactionSummary(_)));

    session.append_message(Message::user_text("continue", 1)).unwrap();
    session.append_thinking_level_change(ThinkingLevel::Xhigh).unwrap();
    let after = fs::read(&path).unwrap();
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "appending keeps every existing byte"
    );
    let reopened = open(&path);
    let ctx2 = reopened.build_context();
    assert_eq!(ctx2.messages.len(), ctx.messages.len() + 1);
    assert_eq!(ctx2.thinking_level, ThinkingLevel::Xhigh);
}

#[test]
fn torn_last_line_is_saved_aside_and_cut_off_before_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture_copy(dir.path());
    let good = fs::read(&path).unwrap();
    let torn = br#"{"type":"message","id":"b0000001","parentId":"a000001d","timestamp":"2026-01-15T09:05:00.000Z","message":{"role":"user","content":[{"type":"te"#;
    fs::write(&path, [&good[..], &torn[..]].concat()).unwrap();

    // Opening changes nothing.
    let mut session = open(&path);
    assert_eq!(session.leaf_id(), Some("a000001d"));
    assert_eq!(session.build_context().messages.len(), 11);
    assert_eq!(fs::read(&path).unwrap().len(), good.len() + torn.len());
    let torn_copies = || {
        fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("pi-session.jsonl.torn-")
            })
            .collect::<Vec<_>>()
    };
    assert!(torn_copies().is_empty());

    session
        .append_message(Message::user_text("after the crash", 2))
        .unwrap();
    let copies = torn_copies();
    assert_eq!(copies.len(), 1);
    assert_eq!(fs::read(&copies[0]).unwrap(), torn);
    let after = fs::read(&path).unwrap();
    assert_eq!(&after[..good.len()], &good[..]);
    for line in std::str::from_utf8(&after).unwrap().lines() {
        serde_json::from_str::<Value>(line).expect("every line parses");
    }
    let reopened = open(&path);
    assert_eq!(
        reopened.build_context().messages.last(),
        Some(&Message::user_text("after the crash", 2))
    );
}

#[test]
fn bad_middle_line_is_skipped_and_left_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture_copy(dir.path());
    let text = fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    // A custom entry on the abandoned branch's side, damaged; and plain garbage.
    lines.insert(10, "this is not json");
    lines.insert(11, r#"{"type":"custom","customType":"x","#);
    let damaged = lines.join("\n") + "\n";
    fs::write(&path, &damaged).unwrap();

    let mut session = open(&path);
    assert_eq!(session.index().len(), 29);
    assert_eq!(session.build_context().messages.len(), 11);
    session.append_session_info(Some("renamed".into())).unwrap();
    let after = fs::read_to_string(&path).unwrap();
    assert!(after.starts_with(&damaged), "the bad lines stay where they were");
    assert_eq!(open(&path).session_name(), Some("renamed"));
}

#[test]
fn a_lost_middle_entry_keeps_the_rest_of_the_context_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let st = store(dir.path());
    let mut session = SessionManager::create(st.clone(), "chat", dir.path()).unwrap();
    let turns = ["one", "two", "three"];
    for (i, t) in turns.iter().enumerate() {
        session
            .append_message(Message::user_text(format!("question {t}"), i as i64))
            .unwrap();
        session
            .append_message(Message::user_text(format!("answer {t}"), i as i64))
            .unwrap();
    }
    let path = session.session_file().unwrap();
    drop(session);
    // The line of "answer one" (line 3: header, question one, answer one) becomes garbage
    // bytes of another length, not valid UTF-8.
    let text = fs::read(&path).unwrap();
    let mut lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
    assert!(std::str::from_utf8(lines[2]).unwrap().contains("answer one"));
    lines[2] = b"\xff\xfe\x00 disk garbage";
    let damaged = lines.join(&b'\n');
    fs::write(&path, &damaged).unwrap();

    let mut session = open(&path);
    let said = |s: &SessionManager| -> Vec<String> {
        s.build_context()
            .messages
            .iter()
            .map(|m| match m {
                Message::User(u) => u.content.text(),
                other => panic!("{other:?}"),
            })
            .collect()
    };
    let kept = [
        "question one",
        "question two",
        "answer two",
        "question three",
        "answer three",
    ];
    assert_eq!(said(&session), kept);
    session.append_message(Message::user_text("question four", 9)).unwrap();
    let after = fs::read(&path).unwrap();
    assert!(
        after.starts_with(&damaged),
        "the garbage line stays where it was, byte for byte"
    );
    let reopened = open(&path);
    assert_eq!(said(&reopened), [&kept[..], &["question four"]].concat());
}

#[test]
fn unreadable_header_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8]); 4] = [
        ("empty.jsonl", b""),
        ("garbage.jsonl", b"{\"type\":\"sess\n"),
        (
            "entry-first.jsonl",
            b"{\"type\":\"label\",\"id\":\"x\",\"parentId\":null,\"timestamp\":\"t\",\"targetId\":\"y\"}\n",
        ),
        (
            "v1.jsonl",
            b"{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
        ),
    ];
    for (name, content) in cases {
        let path = dir.path().join(name);
        fs::write(&path, content).unwrap();
        let err = SessionManager::open(store(dir.path()), &SessionLocation::File(path.clone())).unwrap_err();
        let text = err.to_string();
        assert!(text.contains(&path.display().to_string()), "{name}: {text}");
        assert!(
            matches!(
                err,
                ManagerError::Store(SessionStoreError::BadHeader { .. } | SessionStoreError::UnsupportedVersion { .. })
            ),
            "{name}: {err:?}"
        );
    }
}

#[test]
fn branch_forks_at_the_next_append_and_the_context_follows() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut session = SessionManager::create(store.clone(), "123/main", "/work").unwrap();
    let u1 = session.append_message(Message::user_text("one", 1)).unwrap();
    let u2 = session.append_message(Message::user_text("two", 2)).unwrap();
    session.branch(&u1).unwrap();
    assert_eq!(session.leaf_id(), Some(u1.as_str()));
    let u3 = session.append_message(Message::user_text("three", 3)).unwrap();

    let texts = |s: &SessionManager| -> Vec<String> {
        s.build_context()
            .messages
            .iter()
            .map(|m| match m {
                Message::User(u) => u.content.text(),
                other => panic!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(texts(&session), ["one", "three"]);
    let e3 = session.entry(&u3).unwrap();
    assert_eq!(e3.parent_id.as_deref(), Some(u1.as_str()));
    session.branch(&u2).unwrap();
    assert_eq!(texts(&session), ["one", "two"]);
    assert!(matches!(session.branch("nope"), Err(ManagerError::UnknownEntry { .. })));

    // On reopen the leaf is the last line again (`three`).
    let reopened = SessionManager::continue_recent(store, "123/main", "/work").unwrap();
    assert_eq!(reopened.session_id(), session.session_id());
    assert_eq!(texts(&reopened), ["one", "three"]);
}

#[test]
fn our_files_round_trip_in_pis_format() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut session = SessionManager::create(store.clone(), "g42/7", "/home/me").unwrap();
    let path = session.session_file().unwrap();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.ends_with(&format!("_{}.jsonl", session.session_id())), "{name}");
    assert_eq!(path.parent().unwrap(), dir.path().join("sessions/g42/7"));

    session.append_model_change("anthropic", "claude-sonnet-4-5").unwrap();
    session.append_thinking_level_change(ThinkingLevel::Low).unwrap();
    let u = session.append_message(Message::user_text("hi", 10)).unwrap();
    session.append_custom("plan", Some(json!({"step": 1}))).unwrap();
    session.append_custom("plan", None).unwrap();
    session
        .append_custom_message("note", UserBody::Text("psst".into()), false, None)
        .unwrap();
    session.append_label(&u, Some("first".into())).unwrap();
    session.append_session_info(Some("  Chat  ".into())).unwrap();
    let entries = session.entries().unwrap();

    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with(&format!(
        r#"{{"type":"session","version":3,"id":"{}","timestamp":""#,
        session.session_id()
    )));
    assert!(lines[1].starts_with(r#"{"type":"model_change","id":""#));
    assert!(lines[1].contains(r#","parentId":null,"timestamp":""#));
    assert!(lines[1].ends_with(r#"","provider":"anthropic","modelId":"claude-sonnet-4-5"}"#));
    assert!(lines[4].starts_with(r#"{"type":"custom","customType":"plan","data":{"step":1},"id":""#));
    assert!(lines[5].starts_with(r#"{"type":"custom","customType":"plan","id":""#));
    assert!(
        lines[6].starts_with(r#"{"type":"custom_message","customType":"note","content":"psst","display":false,"id":""#)
    );
    assert!(
        !text.contains("null,") || text.matches("null").count() == 1,
        "only the root's parentId is null"
    );

    let reopened = SessionManager::open(store, &SessionLocation::File(path)).unwrap();
    assert_eq!(reopened.entries().unwrap(), entries);
    assert_eq!(reopened.label(&u), Some("first"));
    assert_eq!(reopened.session_name(), Some("Chat"));
    let ctx = reopened.build_context();
    assert_eq!(
        ctx.model,
        Some(("anthropic".to_owned(), "claude-sonnet-4-5".to_owned()))
    );
    assert_eq!(ctx.thinking_level, ThinkingLevel::Low);
    assert_eq!(ctx.messages.len(), 2);
}
