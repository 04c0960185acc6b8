#![allow(clippy::unwrap_used)]

use super::*;
use crate::sessions::SessionManager;
use serde_json::json;
use volcanic_abstractions::messages::{
    AssistantContent, AssistantMessage, StopReason, SummaryMessage, TextContent, ToolCall, ToolResultMessage, Usage,
};
use volcanic_abstractions::model::{Api, Model};
use volcanic_abstractions::sessions::EntryKind;

fn text_block(t: &str) -> UserContent {
    UserContent::Text(TextContent {
        text: t.into(),
        text_signature: None,
    })
}

fn assistant(content: Vec<AssistantContent>, ts: i64, used: u64) -> Message {
    let mut a = AssistantMessage::empty("anthropic-messages", "p", "m", ts);
    a.content = content;
    a.stop_reason = StopReason::Stop;
    a.usage = Usage {
        input: used,
        ..Default::default()
    };
    Message::Assistant(a)
}

fn call(id: &str, name: &str, path: &str) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: json!({"path": path}),
        thought_signature: None,
    })
}

fn result(id: &str, name: &str, chars: usize) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: name.into(),
        content: vec![text_block(&"x".repeat(chars))],
        details: None,
        is_error: false,
        timestamp: 0,
    })
}

/// `turns` turns of: user, assistant calling `read` twice, two results of `chars` each, answer.
fn session(turns: usize, chars: usize) -> SessionManager {
    let mut s = SessionManager::in_memory("/w").unwrap();
    for t in 0..turns {
        s.append_message(Message::user_text(format!("question {t}"), 1))
            .unwrap();
        s.append_message(assistant(
            vec![
                call(&format!("a{t}"), "read", &format!("f{t}.txt")),
                call(&format!("b{t}"), "read", "shared.txt"),
            ],
            2,
            0,
        ))
        .unwrap();
        s.append_message(result(&format!("a{t}"), "read", chars)).unwrap();
        s.append_message(result(&format!("b{t}"), "read", chars)).unwrap();
        s.append_message(assistant(
            vec![AssistantContent::Text(TextContent {
                text: format!("answer {t}"),
                text_signature: None,
            })],
            3,
            0,
        ))
        .unwrap();
    }
    s
}

fn model(window: u64) -> Model {
    Model {
        id: "m".into(),
        name: "m".into(),
        provider: "p".into(),
        api: Api::AnthropicMessages,
        base_url: String::new(),
        reasoning: false,
        input: Vec::new(),
        cost: Default::default(),
        context_window: window,
        max_tokens: 8_192,
    }
}

fn kept_messages(s: &SessionManager, first_kept: &str) -> Vec<Message> {
    let branch = s.branch_entries();
    let at = branch.iter().position(|e| e.id == first_kept).unwrap();
    branch[at..]
        .iter()
        .filter_map(|e| match &e.kind {
            EntryKind::Message(m) => Some(m.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn reserve_and_keep_follow_the_window() {
    let c = Compactor::default();
    assert_eq!(c.reserve(200_000), 16_384);
    assert_eq!(c.reserve(40_000), 10_000);
    assert_eq!(c.keep(200_000), 20_000);
    assert_eq!(c.keep(40_000), 16_000);
    assert!(!c.should_compact(30_000, 40_000));
    assert!(c.should_compact(30_001, 40_000));
    assert!(!c.should_compact(1_000_000, 0), "an unknown window never triggers");
    let off = Compactor::new(CompactionSettings {
        enabled: false,
        ..Default::default()
    });
    assert!(!off.should_compact(1_000_000, 40_000));
}

#[test]
fn the_cut_never_separates_a_tool_call_from_its_results() {
    let s = session(12, 2_000);
    let branch = s.branch_entries();
    for keep in (0..14_000).step_by(250) {
        let plan = match plan::plan(&branch, keep, 0) {
            Ok(p) => p,
            Err(CompactionError::NothingToCompact) => continue,
            Err(e) => panic!("{e}"),
        };
        let kept = kept_messages(&s, &plan.first_kept_entry_id);
        assert!(
            !matches!(kept[0], Message::ToolResult(_)),
            "keep {keep}: starts with a tool result"
        );
        // Every kept result's call is kept too, and every summarised call's results are summarised.
        let kept_calls: Vec<String> = kept
            .iter()
            .filter_map(|m| match m {
                Message::Assistant(a) => Some(a.tool_calls().map(|c| c.id.clone()).collect::<Vec<_>>()),
                _ => None,
            })
            .flatten()
            .collect();
        for m in &kept {
            if let Message::ToolResult(r) = m {
                assert!(
                    kept_calls.contains(&r.tool_call_id),
                    "keep {keep}: orphan result {}",
                    r.tool_call_id
                );
            }
        }
        // The cut moves forward past tool results only: at most one batch (2 × 500 tokens) less.
        let kept_tokens: u64 = kept.iter().map(estimate_tokens).sum();
        let total: u64 = plan.messages_to_summarize.iter().map(estimate_tokens).sum::<u64>() + kept_tokens;
        if total < keep {
            assert_eq!(kept.len(), 5, "keep {keep} > everything: the newest turn stays");
        } else {
            assert!(kept_tokens + 1_001 >= keep, "keep {keep}: kept {kept_tokens}");
        }
        assert_eq!(plan.messages_to_summarize.len() + kept.len(), 12 * 5, "keep {keep}");
    }
}

#[test]
fn it_keeps_about_the_recent_tokens_asked_for() {
    let s = session(10, 4_000); // each turn ≈ 2,000 tokens of results
    let plan = plan::plan(&s.branch_entries(), 5_000, 0).unwrap();
    let kept: u64 = kept_messages(&s, &plan.first_kept_entry_id)
        .iter()
        .map(estimate_tokens)
        .sum();
    // The nearest cut at or after the 5,000th token back: past at most one batch of results.
    assert!(
        (3_000..=5_000).contains(&kept),
        "kept {kept} tokens for a keep of 5,000"
    );
}

#[test]
fn a_single_turn_has_nothing_to_compact_and_a_short_history_keeps_its_last_turn() {
    let s = session(1, 10);
    assert_eq!(
        plan::plan(&s.branch_entries(), 20_000, 0),
        Err(CompactionError::NothingToCompact)
    );
    let s = session(3, 10);
    let plan = plan::plan(&s.branch_entries(), 20_000, 0).unwrap();
    let kept = kept_messages(&s, &plan.first_kept_entry_id);
    assert_eq!(kept.len(), 5, "the newest turn stays");
    assert!(matches!(&kept[0], Message::User(u) if u.content.text() == "question 2"));
}

#[test]
fn files_read_and_modified_are_listed_and_carried_into_the_next_compaction() {
    let mut s = session(4, 100);
    let c = Compactor::default();
    let first = c.plan(&s.branch_entries(), 50_000, 1_234).unwrap();
    assert!(first.read_files.contains("f0.txt") && first.read_files.contains("shared.txt"));
    let entry = c.entry(&first, "## Goal\nfirst summary", None);
    assert!(
        entry.summary.starts_with("## Goal\nfirst summary\n\n<read-files>\n"),
        "{}",
        entry.summary
    );
    assert_eq!(entry.tokens_before, 1_234);
    s.append_compaction(entry).unwrap();
    // A later turn edits a file that was read before.
    s.append_message(Message::user_text("change f0", 5)).unwrap();
    s.append_message(assistant(vec![call("e1", "edit", "f0.txt")], 6, 0))
        .unwrap();
    s.append_message(result("e1", "edit", 10)).unwrap();
    s.append_message(Message::user_text("and now?", 7)).unwrap();
    let second = c.plan(&s.branch_entries(), 1, 0).unwrap();
    assert_eq!(second.previous_summary.as_deref(), Some("## Goal\nfirst summary"));
    assert!(second.modified_files.contains("f0.txt"));
    assert!(!second.read_files.contains("f0.txt"), "modified files are listed once");
    assert!(second.read_files.contains("shared.txt"), "carried forward");
    let req = c.summary_request(&second, &model(100_000), Some("focus on f0"));
    assert!(req.tools.is_empty());
    let text = req.messages[0].estimated_chars();
    assert!(text > 0);
    let Message::User(u) = &req.messages[0] else { panic!() };
    let body = u.content.text();
    assert!(
        body.contains("<previous-summary>\n## Goal\nfirst summary\n</previous-summary>"),
        "{body}"
    );
    for section in [
        "## Goal",
        "## Constraints & Preferences",
        "### Done",
        "### In Progress",
        "### Blocked",
    ] {
        assert!(body.contains(section), "{section} missing");
    }
    for section in [
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
        "focus on f0",
    ] {
        assert!(body.contains(section), "{section} missing");
    }
    assert!(
        body.contains("[Assistant tool calls]: edit({\"path\":\"f0.txt\"})"),
        "{body}"
    );
}

#[test]
fn a_summary_request_fits_the_window_by_leaving_out_the_oldest_messages() {
    let s = session(40, 8_000);
    let c = Compactor::default();
    let plan = c.plan(&s.branch_entries(), 1_000, 0).unwrap();
    let m = model(30_000);
    let req = c.summary_request(&plan, &m, None);
    let Message::User(u) = &req.messages[0] else { panic!() };
    let body = u.content.text();
    let tokens = estimate_text_tokens(&body) + estimate_text_tokens(&req.system_prompt);
    assert!(
        tokens + c.summary_max_tokens(&m) < m.context_window,
        "{tokens} tokens of request + the answer must fit"
    );
    assert!(body.contains("older messages left out"), "the cut is said");
    assert!(body.contains("answer 38"), "the newest summarised messages are there");
    // Each tool result is cut to 2,000 characters.
    assert!(body.contains("[… 6000 more characters]"));
}

#[test]
fn context_tokens_use_fresh_usage_and_estimate_after_a_compaction() {
    let msgs = vec![
        Message::user_text("x".repeat(400), 1),
        assistant(Vec::new(), 10, 5_000),
        Message::user_text("y".repeat(40), 11),
    ];
    let t = context_tokens(&msgs, 0, 999);
    assert_eq!((t.tokens, t.from_usage, t.estimated), (5_010, 5_000, 10));
    // After a compaction, usage from before the summary is stale: everything is estimated.
    let mut compacted = vec![Message::CompactionSummary(SummaryMessage {
        summary: "s".repeat(80),
        tokens_before: Some(5_000),
        from_id: None,
        timestamp: 20,
    })];
    compacted.extend(msgs.clone());
    let t = context_tokens(&compacted, 4, 7);
    assert_eq!(t.from_usage, 0);
    assert_eq!(t.tokens, 20 + 100 + 10 + 7);
    // An errored answer's usage does not count.
    let mut failed = AssistantMessage::empty("a", "p", "m", 30);
    failed.stop_reason = StopReason::Error;
    failed.usage.input = 99_999;
    compacted.push(Message::Assistant(failed));
    assert_eq!(context_tokens(&compacted, 4, 7).from_usage, 0);
    // A new answer after the compaction is fresh.
    compacted.push(assistant(Vec::new(), 40, 3_000));
    assert_eq!(context_tokens(&compacted, 4, 7).tokens, 3_000);
}

#[test]
fn a_single_message_larger_than_the_allowance_is_summarised_not_kept_forever() {
    let mut s = SessionManager::in_memory("/w").unwrap();
    s.append_message(Message::user_text(format!("huge: {}", "word ".repeat(5_000)), 1))
        .unwrap();
    s.append_message(assistant(Vec::new(), 2, 0)).unwrap();
    for i in 0..3 {
        s.append_message(Message::user_text(format!("q {i}"), 3)).unwrap();
        s.append_message(assistant(Vec::new(), 4, 0)).unwrap();
    }
    let c = Compactor::default();
    let plan = c.plan(&s.branch_entries(), 4_000, 6_500).unwrap();
    assert_eq!(plan.messages_to_summarize.len(), 1, "the huge prompt is summarised");
    let m = model(4_000);
    let req = c.summary_request(&plan, &m, None);
    let Message::User(u) = &req.messages[0] else { panic!() };
    let body = u.content.text();
    assert!(
        body.contains("[User]: huge: word word"),
        "the huge prompt is cut, not dropped"
    );
    assert!(body.contains("more characters]"));
    assert!(estimate_text_tokens(&body) + c.summary_max_tokens(&m) < 4_000 + 1_500);
}
