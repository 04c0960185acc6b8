#![allow(clippy::unwrap_used)]

use super::{SessionContext, SessionManager};
use chrono::{TimeZone, Utc};
use pretty_assertions::assert_eq;
use std::sync::Arc;
use volcanic_abstractions::messages::{AssistantMessage, CustomMessage, Message, SummaryMessage, UserBody};
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_abstractions::sessions::{CompactionEntry, EntryKind, SessionEntry};

const T0_MS: i64 = 1_768_467_600_000; // 2026-01-15T09:00:00.000Z

fn session() -> SessionManager {
    let mut s = SessionManager::in_memory("/w").unwrap();
    s.set_clock(Arc::new(|| Utc.with_ymd_and_hms(2026, 1, 15, 9, 0, 0).unwrap()));
    s
}

fn user(text: &str) -> Message {
    Message::user_text(text, 1)
}

fn assistant(provider: &str, model: &str) -> Message {
    Message::Assistant(AssistantMessage::empty("anthropic-messages", provider, model, 2))
}

fn compaction(first_kept: &str) -> CompactionEntry {
    CompactionEntry {
        summary: "summary".into(),
        first_kept_entry_id: first_kept.into(),
        tokens_before: 42,
        details: None,
        from_hook: None,
    }
}

fn summary_message() -> Message {
    Message::CompactionSummary(SummaryMessage {
        summary: "summary".into(),
        tokens_before: Some(42),
        from_id: None,
        timestamp: T0_MS,
    })
}

#[test]
fn an_empty_session_has_an_empty_context() {
    assert_eq!(session().build_context(), SessionContext::default());
    assert_eq!(SessionContext::default().thinking_level, ThinkingLevel::Off);
}

#[test]
fn messages_custom_messages_and_branch_summaries_enter_the_context() {
    let mut s = session();
    let u = s.append_message(user("one")).unwrap();
    s.append_custom("state", None).unwrap();
    s.append_custom_message("note", UserBody::Text("psst".into()), false, None)
        .unwrap();
    s.append_branch_summary(Some(&u), "", None, None).unwrap(); // empty: left out, as in pi
    s.append_branch_summary(Some(&u), "went elsewhere", None, None).unwrap();
    s.append_message(user("two")).unwrap();
    let ctx = s.build_context();
    assert_eq!(
        ctx.messages,
        vec![
            user("one"),
            Message::BranchSummary(SummaryMessage {
                summary: "went elsewhere".into(),
                tokens_before: None,
                from_id: Some(u.clone()),
                timestamp: T0_MS,
            }),
            user("two"),
        ]
    );
    // The custom message is on the other branch now; back there it is in the context.
    let branch = s.branch_entries();
    assert_eq!(branch.len(), 3);
    let leaf_of_custom = s
        .entries()
        .unwrap()
        .into_iter()
        .find(|e| matches!(e.kind, EntryKind::CustomMessage { .. }))
        .unwrap();
    s.branch(&leaf_of_custom.id).unwrap();
    assert_eq!(
        s.build_context().messages,
        vec![
            user("one"),
            Message::Custom(CustomMessage {
                custom_type: "note".into(),
                content: UserBody::Text("psst".into()),
                display: false,
                details: None,
                timestamp: T0_MS,
            }),
        ]
    );
}

#[test]
fn the_newest_compaction_gives_summary_kept_entries_and_the_rest() {
    let mut s = session();
    s.append_message(user("old")).unwrap();
    let kept1 = s.append_message(user("kept by the first")).unwrap();
    s.append_compaction(compaction(&kept1)).unwrap();
    s.append_message(user("middle")).unwrap();
    let kept2 = s.append_message(user("kept by the second")).unwrap();
    s.append_message(assistant("anthropic", "claude-opus-4-5")).unwrap();
    s.append_compaction(compaction(&kept2)).unwrap();
    s.append_message(user("after")).unwrap();
    assert_eq!(
        s.build_context().messages,
        vec![
            summary_message(),
            user("kept by the second"),
            assistant("anthropic", "claude-opus-4-5"),
            user("after")
        ]
    );
}

#[test]
fn a_first_kept_entry_not_on_the_path_keeps_nothing_before_the_compaction() {
    let mut s = session();
    s.append_message(user("old")).unwrap();
    s.append_compaction(compaction("elsewhere")).unwrap();
    s.append_message(user("after")).unwrap();
    assert_eq!(s.build_context().messages, vec![summary_message(), user("after")]);
}

#[test]
fn model_and_thinking_level_come_from_the_branch() {
    let mut s = session();
    let root = s.append_model_change("openai", "gpt-5").unwrap();
    s.append_thinking_level_change(ThinkingLevel::Medium).unwrap();
    s.append_message(assistant("anthropic", "claude-sonnet-4-5")).unwrap();
    let ctx = s.build_context();
    assert_eq!(ctx.model, Some(("anthropic".into(), "claude-sonnet-4-5".into())));
    assert_eq!(ctx.thinking_level, ThinkingLevel::Medium);
    s.append_model_change("openai", "gpt-5-mini").unwrap();
    assert_eq!(s.build_context().model, Some(("openai".into(), "gpt-5-mini".into())));
    s.branch(&root).unwrap();
    let ctx = s.build_context();
    assert_eq!(ctx.model, Some(("openai".into(), "gpt-5".into())));
    assert_eq!(ctx.thinking_level, ThinkingLevel::Off);
}

#[test]
fn entries_this_version_cannot_represent_stay_out_of_the_context() {
    // A message with a newer role, stored by another writer, is kept but not sent.
    let mut s = session();
    s.append_message(user("one")).unwrap();
    let line = r#"{"type":"message","id":"sys00001","parentId":null,"timestamp":"t","message":{"role":"system","content":"x","timestamp":1}}"#;
    let mut entry = SessionEntry::from_json(line.as_bytes()).unwrap();
    entry.parent_id = s.leaf_id().map(str::to_owned);
    let store = s.store().clone();
    let mut log = store.open(s.location()).unwrap();
    log.append(&entry).unwrap();
    let mut s = SessionManager::open(store, s.location()).unwrap();
    assert_eq!(s.leaf_id(), Some("sys00001"));
    s.append_message(user("two")).unwrap();
    assert_eq!(s.build_context().messages, vec![user("one"), user("two")]);
}
