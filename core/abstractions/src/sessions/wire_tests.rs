#![allow(clippy::unwrap_used)]

use super::*;
use crate::messages::{CustomMessage, Message};
use pretty_assertions::assert_eq;
use serde_json::json;

/// Lines as pi 0.73 writes them (key order of `JSON.stringify`). Objects inside free-form JSON
/// values (`details`, `data`, tool arguments) are written back with sorted keys (serde_json's
/// map), so these use sorted keys there; stored lines are never rewritten anyway.
const PI_LINES: &[&str] = &[
    r#"{"type":"model_change","id":"18072e8c","parentId":null,"timestamp":"2026-01-15T09:00:00.000Z","provider":"anthropic","modelId":"claude-sonnet-4-5"}"#,
    r#"{"type":"thinking_level_change","id":"7ce42c82","parentId":"18072e8c","timestamp":"2026-01-15T09:00:00.000Z","thinkingLevel":"medium"}"#,
    r#"{"type":"message","id":"3c116549","parentId":"7ce42c82","timestamp":"2026-01-15T09:04:13.511Z","message":{"role":"user","content":[{"type":"text","text":"hi → ✓ \"q\""}],"timestamp":1768467853511}}"#,
    r#"{"type":"message","id":"3c116550","parentId":"3c116549","timestamp":"2026-01-15T09:04:13.511Z","message":{"role":"user","content":"plain","timestamp":1768467853511}}"#,
    r#"{"type":"message","id":"e31ef8fb","parentId":"61e406a6","timestamp":"2026-01-15T09:04:44.794Z","message":{"role":"toolResult","toolCallId":"toolu_01","toolName":"bash","content":[{"type":"text","text":"out"}],"details":{},"isError":false,"timestamp":1768467884794}}"#,
    r#"{"type":"compaction","id":"96cbb671","parentId":"fd27ee4d","timestamp":"2026-01-17T13:45:16.483Z","summary":"Goal: x\ny","firstKeptEntryId":"9652a2f9","tokensBefore":123,"details":{"modifiedFiles":[],"readFiles":["a"]},"fromHook":false}"#,
    r#"{"type":"compaction","id":"96cbb672","parentId":"96cbb671","timestamp":"2026-01-17T13:45:16.483Z","summary":"s","firstKeptEntryId":"9652a2f9","tokensBefore":5}"#,
    r#"{"type":"branch_summary","id":"a000000d","parentId":"a0000008","timestamp":"2026-01-15T09:02:00.000Z","fromId":"a0000008","summary":"left"}"#,
    r#"{"type":"custom","customType":"plan-mode","data":{"items":["x"],"rev":299},"id":"3f94e7c5","parentId":"9eb30bc3","timestamp":"2026-01-15T11:02:06.762Z"}"#,
    r#"{"type":"custom","customType":"plan-mode","id":"3f94e7c6","parentId":"3f94e7c5","timestamp":"2026-01-15T11:02:06.762Z"}"#,
    r#"{"type":"custom_message","customType":"reminder","content":[{"type":"text","text":"t"}],"display":true,"details":{"k":1},"id":"a0000014","parentId":"a0000013","timestamp":"2026-01-15T09:03:01.000Z"}"#,
    r#"{"type":"label","id":"0807b554","parentId":"75ff93b7","timestamp":"2026-01-15T09:10:11.257Z","targetId":"3c116549","label":"good state ✓"}"#,
    r#"{"type":"label","id":"0807b555","parentId":"0807b554","timestamp":"2026-01-15T09:10:11.257Z","targetId":"3c116549"}"#,
    r#"{"type":"session_info","id":"83c75603","parentId":"f4013dda","timestamp":"2026-01-15T13:21:01.727Z","name":"session one"}"#,
    r#"{"type":"session_info","id":"83c75604","parentId":"83c75603","timestamp":"2026-01-15T13:21:01.727Z"}"#,
];

#[test]
fn pi_lines_round_trip_byte_for_byte() {
    for line in PI_LINES {
        let entry = SessionEntry::from_json(line.as_bytes()).unwrap();
        assert!(!matches!(entry.kind, EntryKind::Unknown { .. }), "{line}");
        assert_eq!(entry.to_json().unwrap(), *line);
        // The generic `Deserialize` (any key order, via a Value) reads the same entry.
        assert_eq!(serde_json::from_str::<SessionEntry>(line).unwrap(), entry);
    }
}

#[test]
fn root_parent_is_written_as_null_and_optional_fields_are_omitted() {
    let entry = SessionEntry {
        id: "00000001".into(),
        parent_id: None,
        timestamp: "2026-01-15T09:00:00.000Z".into(),
        kind: EntryKind::BranchSummary {
            from_id: "root".into(),
            summary: "s".into(),
            details: None,
            from_hook: None,
        },
    };
    assert_eq!(
        entry.to_json().unwrap(),
        r#"{"type":"branch_summary","id":"00000001","parentId":null,"timestamp":"2026-01-15T09:00:00.000Z","fromId":"root","summary":"s"}"#
    );
}

#[test]
fn any_key_order_and_unknown_fields_are_read() {
    let line = r#"{"id":"a1","newField":[1,2],"timestamp":"t","type":"model_change","modelId":"m","provider":"p"}"#;
    let entry = SessionEntry::from_json(line.as_bytes()).unwrap();
    assert_eq!(
        entry,
        SessionEntry {
            id: "a1".into(),
            parent_id: None,
            timestamp: "t".into(),
            kind: EntryKind::ModelChange {
                provider: "p".into(),
                model_id: "m".into()
            },
        }
    );
    let line = r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"t","message":{"timestamp":5,"content":"x","role":"user","extra":true},"usage":{}}"#;
    let entry = SessionEntry::from_json(line.as_bytes()).unwrap();
    assert_eq!(
        entry.kind,
        EntryKind::Message(Message::User(crate::messages::UserMessage {
            content: UserBody::Text("x".into()),
            timestamp: 5,
        }))
    );
}

#[test]
fn unknown_types_and_payloads_are_kept_not_dropped() {
    let cases = [
        (
            r#"{"type":"context_edit","id":"u1","parentId":"p","timestamp":"t","edits":[]}"#,
            "context_edit",
        ),
        (
            r#"{"type":"message","id":"u2","parentId":"p","timestamp":"t","message":{"role":"system","content":"x","timestamp":1}}"#,
            "message",
        ),
        (
            r#"{"type":"thinking_level_change","id":"u3","parentId":null,"timestamp":"t","thinkingLevel":"ultra"}"#,
            "thinking_level_change",
        ),
        (
            r#"{"type":"model_change","id":"u4","parentId":"p","timestamp":"t"}"#,
            "model_change",
        ),
    ];
    for (line, ty) in cases {
        let entry = SessionEntry::from_json(line.as_bytes()).unwrap();
        let EntryKind::Unknown { entry_type, raw } = &entry.kind else {
            panic!("{entry:?}")
        };
        assert_eq!(entry_type, ty);
        assert_eq!(raw, &serde_json::from_str::<Value>(line).unwrap());
        assert_eq!(entry.kind.type_name(), ty);
        // Written back with every key (serde_json orders object keys).
        assert_eq!(serde_json::from_str::<Value>(&entry.to_json().unwrap()).unwrap(), *raw);
    }
    let system = SessionEntry::from_json(cases[1].0.as_bytes()).unwrap();
    assert_eq!(system.parent_id.as_deref(), Some("p"));
    assert_eq!(RoleTag::of_entry(&system.kind), Some(RoleTag::Other));
}

#[test]
fn version_2_hook_messages_read_as_custom() {
    let line = r#"{"type":"message","id":"h1","parentId":null,"timestamp":"t","message":{"role":"hookMessage","customType":"x","content":"c","display":true,"timestamp":3}}"#;
    let expected = EntryKind::Message(Message::Custom(CustomMessage {
        custom_type: "x".into(),
        content: UserBody::Text("c".into()),
        display: true,
        details: None,
        timestamp: 3,
    }));
    assert_eq!(SessionEntry::from_json(line.as_bytes()).unwrap().kind, expected);
    let reordered = r#"{"type":"message","id":"h1","parentId":null,"timestamp":"t","message":{"customType":"x","role":"hookMessage","content":"c","display":true,"timestamp":3}}"#;
    assert_eq!(SessionEntry::from_json(reordered.as_bytes()).unwrap().kind, expected);
}

#[test]
fn lines_that_are_not_entries_are_errors() {
    for line in [
        "",
        "not json",
        r#"{"type":"label""#,
        r#"{"type":"label","targetId":"x"}"#,
        r#"{"type":"label","id":7}"#,
        "[1]",
    ] {
        assert!(SessionEntry::from_json(line.as_bytes()).is_err(), "{line}");
    }
    assert!(SessionEntry::from_json(b"{\"type\":\"custom\",\"id\":\"\xff\"}").is_err());
}

#[test]
fn header_is_written_as_pi_writes_it() {
    let header = SessionHeader::new("019b", "2026-01-15T08:59:55.000Z", "/home/dev/project");
    let line = r#"{"type":"session","version":3,"id":"019b","timestamp":"2026-01-15T08:59:55.000Z","cwd":"/home/dev/project"}"#;
    assert_eq!(serde_json::to_string(&header).unwrap(), line);
    assert_eq!(serde_json::from_str::<SessionHeader>(line).unwrap(), header);
    let forked = r#"{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/","parentSession":"/a.jsonl"}"#;
    let h: SessionHeader = serde_json::from_str(forked).unwrap();
    assert_eq!(h.parent_session.as_deref(), Some("/a.jsonl"));
    assert_eq!(serde_json::to_string(&h).unwrap(), forked);
    let v1: SessionHeader = serde_json::from_str(r#"{"type":"session","id":"x","timestamp":"t","cwd":"/"}"#).unwrap();
    assert_eq!(v1.version, None);
    assert_eq!(
        serde_json::to_value(&v1).unwrap(),
        json!({"type": "session", "id": "x", "timestamp": "t", "cwd": "/"})
    );
}
