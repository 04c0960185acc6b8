//! Compaction in a session: threshold compaction in a long conversation, overflow recovery (one
//! compaction, one retry), `/compact`, extensions cancelling or supplying the summary, busy
//! while compacting, token figures, and the reopened file giving the same context.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::sync::Arc;
use tokio::sync::Notify;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::extensions::events::{CompactionOverride, SessionBeforeCompactEvent, SessionCompactEvent};
use volcanic_abstractions::messages::{Message, StopReason};
use volcanic_core::agent::{PromptInput, QueueMode, SessionError};
use volcanic_core::compaction::CompactionError;

const OVERFLOW: &str = "prompt is too long: 210000 tokens > 200000 maximum";

fn compaction_ends(h: &Harness) -> Vec<(String, bool)> {
    h.pick(|e| match e {
        AgentSessionEvent::CompactionEnd { reason, success, .. } => Some((reason.clone(), *success)),
        _ => None,
    })
}

/// Estimated tokens of a request as the faux provider counts them.
fn request_tokens(c: &volcanic_abstractions::provider::ProviderContext) -> usize {
    (c.system_prompt.len() + c.messages.iter().map(Message::estimated_chars).sum::<usize>()) / 4
}

fn text_of(m: &Message) -> String {
    match m {
        Message::User(u) => u.content.text(),
        Message::Assistant(a) => a.text(),
        Message::Custom(c) => c.content.text(),
        _ => String::new(),
    }
}

async fn converse(h: &Harness, turns: usize) {
    for i in 0..turns {
        h.faux.push(FauxTurn::text(&format!("answer {i}")));
        h.session
            .prompt(PromptInput::text(format!("question {i}")))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_300_turn_conversation_with_large_tool_outputs_compacts_and_reopens_to_the_same_context() {
    let h = harness(vec![], vec![]).await;
    // ≈ 3,000 tokens per read; the faux model's window is 100,000 tokens.
    std::fs::write(
        h.workspace().join("big.txt"),
        "0123456789 abcdefghij klmnopqrst\n".repeat(360),
    )
    .unwrap();
    for i in 0..300 {
        h.faux.push(FauxTurn::calls(vec![(
            &format!("call_{i}"),
            "read",
            json!({"path": "big.txt"}),
        )]));
        h.faux.push(FauxTurn::text(&format!("answer {i}")));
        h.session
            .prompt(PromptInput::text(format!("question {i}")))
            .await
            .unwrap();
    }
    let contexts = h.faux.contexts.lock().unwrap().clone();
    assert_eq!(contexts.len(), 600, "one call and one answer per turn, no retry");
    let largest = contexts.iter().map(request_tokens).max().unwrap();
    assert!(largest <= 100_000 - 16_384 + 4_000, "largest request {largest} tokens");
    let summaries = h.faux.summaries.lock().unwrap().len();
    assert!(summaries >= 8, "only {summaries} compactions");
    assert_eq!(compaction_ends(&h).len(), summaries);
    assert!(compaction_ends(&h).iter().all(|(r, ok)| r == "threshold" && *ok));
    // A later summary request updates the previous summary.
    let last = h.faux.summaries.lock().unwrap().last().cloned().unwrap();
    let text = match &last.messages[0] {
        Message::User(u) => u.content.text(),
        _ => panic!("summary request is one user message"),
    };
    assert!(
        text.contains("<previous-summary>\n## Goal\nsummary"),
        "{}",
        &text[text.len() - 2_000..]
    );
    assert!(
        text.contains("read({\"path\":\"big.txt\"})"),
        "the tool calls are in the summarised text"
    );
    // Every request pairs tool calls and results (the cut never separates them).
    for c in &contexts {
        let mut open: Vec<String> = Vec::new();
        for m in &c.messages {
            match m {
                Message::Assistant(a) => open.extend(a.tool_calls().map(|t| t.id.clone())),
                Message::ToolResult(r) => {
                    let at = open.iter().position(|id| *id == r.tool_call_id);
                    assert!(at.is_some(), "result {} without its call", r.tool_call_id);
                    open.remove(at.unwrap());
                }
                _ => {}
            }
        }
    }
    let messages = h.session.messages();
    assert!(matches!(messages[0], Message::CompactionSummary(_)));
    assert_eq!(text_of(messages.last().unwrap()), "answer 299");
    let reopened = reopen(&h).await;
    assert_eq!(reopened.messages(), messages, "the file gives the same context");
}

#[tokio::test]
async fn an_overflow_recovers_with_exactly_one_compaction_and_one_retry() {
    let h = harness(vec![], vec![]).await;
    converse(&h, 3).await;
    h.faux.push(FauxTurn::Error(OVERFLOW.into()));
    h.faux.push(FauxTurn::text("recovered"));
    h.session.prompt(PromptInput::text("big question")).await.unwrap();
    assert_eq!(h.faux.calls(), 5);
    assert_eq!(h.faux.summaries.lock().unwrap().len(), 1);
    assert_eq!(compaction_ends(&h), vec![("overflow".to_owned(), true)]);
    let retry = h.faux.context(4);
    assert!(matches!(retry.messages[0], Message::CompactionSummary(_)));
    assert_eq!(text_of(retry.messages.last().unwrap()), "big question");
    assert_eq!(text_of(h.session.messages().last().unwrap()), "recovered");
    // The turn the host shows ends with the answer, not the overflow.
    let turn_ends: Vec<StopReason> = h.pick(|e| match e {
        AgentSessionEvent::TurnEnd { message, .. } => Some(message.stop_reason),
        _ => None,
    });
    assert_eq!(turn_ends.last(), Some(&StopReason::Stop));
    assert_eq!(reopen(&h).await.messages(), h.session.messages());
}

#[tokio::test]
async fn a_second_overflow_ends_the_run_with_a_clear_error_and_no_loop() {
    let h = harness(vec![], vec![]).await;
    converse(&h, 3).await;
    h.faux.push(FauxTurn::Error(OVERFLOW.into()));
    h.faux.push(FauxTurn::Error(OVERFLOW.into()));
    h.faux.push(FauxTurn::text("never asked"));
    h.session.prompt(PromptInput::text("big question")).await.unwrap();
    assert_eq!(h.faux.calls(), 5, "the call, one retry, nothing more");
    assert_eq!(h.faux.summaries.lock().unwrap().len(), 1);
    let Some(Message::Assistant(last)) = h.session.messages().pop() else {
        panic!()
    };
    assert_eq!(last.stop_reason, StopReason::Error);
    let error = last.error_message.unwrap();
    assert!(error.contains("prompt is too long"), "{error}");
    assert!(error.contains("after compacting") && error.contains("/new"), "{error}");
    assert!(h.session.is_idle());
}

#[tokio::test]
async fn an_overflow_whose_compaction_fails_says_so() {
    let h = harness(vec![], vec![]).await;
    converse(&h, 2).await;
    *h.faux.summary_error.lock().unwrap() = Some("overloaded".into());
    h.faux.push(FauxTurn::Error(OVERFLOW.into()));
    h.session.prompt(PromptInput::text("big question")).await.unwrap();
    assert_eq!(h.faux.calls(), 3, "no retry without a compaction");
    assert_eq!(compaction_ends(&h), vec![("overflow".to_owned(), false)]);
    let ends: Vec<String> = h.pick(|e| match e {
        AgentSessionEvent::TurnEnd { message, .. } => message.error_message.clone(),
        _ => None,
    });
    assert!(
        ends[0].contains("compacting it failed") && ends[0].contains("overloaded"),
        "{ends:?}"
    );
}

#[tokio::test]
async fn compact_summarises_and_the_figures_show_before_and_after() {
    let h = harness(vec![], vec![]).await;
    for i in 0..4 {
        h.faux.push(FauxTurn::text(&"long answer ".repeat(500)));
        h.session
            .prompt(PromptInput::text(format!("question {i}")))
            .await
            .unwrap();
    }
    let before = h.session.stats();
    assert!(!before.context_estimated);
    let entry = h.session.compact(Some("keep the numbers".into())).await.unwrap();
    let after = h.session.stats();
    assert!(
        after.context_tokens < before.context_tokens / 2,
        "{before:?} → {after:?}"
    );
    assert!(after.context_estimated && after.compacted);
    assert_eq!(entry.tokens_before, before.context_tokens);
    assert_eq!(after.total_tokens, before.total_tokens, "totals survive compaction");
    assert!((after.cost - before.cost).abs() < 1e-9);
    let request = h.faux.summaries.lock().unwrap()[0].clone();
    assert!(request.tools.is_empty());
    assert!(text_of(&request.messages[0]).contains("focus on: keep the numbers"));
    // The newest turn is kept verbatim after the summary.
    let msgs = h.session.messages();
    assert_eq!(msgs.len(), 3);
    assert_eq!(text_of(&msgs[1]), "question 3");
    // A new answer brings fresh usage; reopening keeps the totals.
    h.faux.push(FauxTurn::text("fresh"));
    h.session.prompt(PromptInput::text("next")).await.unwrap();
    assert!(!h.session.stats().context_estimated);
    let reopened = reopen(&h).await;
    assert_eq!(reopened.messages(), h.session.messages());
    assert_eq!(reopened.stats().total_tokens, h.session.stats().total_tokens);
    assert_eq!(compaction_ends(&h), vec![("manual".to_owned(), true)]);
}

#[tokio::test]
async fn compacting_a_single_turn_is_refused_clearly() {
    let h = harness(vec![FauxTurn::text("hi")], vec![]).await;
    h.session.prompt(PromptInput::text("hello")).await.unwrap();
    let err = h.session.compact(None).await.unwrap_err();
    assert!(
        matches!(err, SessionError::Compaction(CompactionError::NothingToCompact)),
        "{err}"
    );
    assert!(err.to_string().contains("nothing to compact"));
    assert!(h.session.is_idle());
}

#[tokio::test]
async fn an_extension_can_cancel_or_supply_the_summary() {
    let log = new_log();
    let l = log.clone();
    let mode = Arc::new(std::sync::Mutex::new("cancel"));
    let m = mode.clone();
    let e = ext("summariser", move |api| {
        let m = m.clone();
        on_sync::<SessionBeforeCompactEvent>(&*api, move |e, _| {
            match *m.lock().unwrap() {
                "cancel" => e.cancel(),
                _ => {
                    e.override_summary = Some(CompactionOverride {
                        summary: format!("mine: {} messages", e.preparation.messages_to_summarize.len()),
                        details: Some(json!({"by": "summariser"})),
                    })
                }
            }
            Ok(())
        });
        let l = l.clone();
        on_sync::<SessionCompactEvent>(&*api, move |e, _| {
            push(&l, format!("{} {}", e.compaction.summary, e.from_extension));
            Ok(())
        });
        Ok(())
    });
    let h = harness(vec![], vec![e]).await;
    converse(&h, 3).await;
    let err = h.session.compact(None).await.unwrap_err();
    assert!(
        matches!(err, SessionError::Compaction(CompactionError::Cancelled)),
        "{err}"
    );
    *mode.lock().unwrap() = "override";
    let entry = h.session.compact(None).await.unwrap();
    assert_eq!(entry.summary, "mine: 4 messages");
    assert_eq!(entry.from_hook, Some(true));
    assert_eq!(entry.details.unwrap()["extension"], json!({"by": "summariser"}));
    assert_eq!(h.faux.summaries.lock().unwrap().len(), 0, "no model call");
    assert_eq!(logged(&log), vec!["mine: 4 messages true"]);
}

#[tokio::test]
async fn the_session_is_busy_while_compacting_and_a_message_sent_meanwhile_runs_afterwards() {
    let h = harness(vec![], vec![]).await;
    converse(&h, 3).await;
    // The summary request hangs until released.
    *h.faux.summary_error.lock().unwrap() = None;
    let gate = Arc::new(Notify::new());
    let hold = ext_free_summary_gate(&h, gate.clone());
    let s = h.session.clone();
    let compacting = tokio::spawn(async move { s.compact(None).await });
    eventually(|| !h.session.is_idle()).await;
    h.faux.push(FauxTurn::text("after compaction"));
    h.session
        .prompt(PromptInput {
            text: "sent meanwhile".into(),
            images: Vec::new(),
            queue: Some(QueueMode::FollowUp),
        })
        .await
        .unwrap();
    let err = h.session.prompt(PromptInput::text("unqueued")).await.unwrap_err();
    assert!(matches!(err, SessionError::Busy));
    gate.notify_one();
    compacting.await.unwrap().unwrap();
    drop(hold);
    h.session.wait_for_idle().await;
    eventually(|| h.session.messages().last().map(text_of).as_deref() == Some("after compaction")).await;
    let msgs = h.session.messages();
    assert!(matches!(msgs[0], Message::CompactionSummary(_)));
    let n = msgs.len();
    assert_eq!(text_of(&msgs[n - 2]), "sent meanwhile");
}

/// Makes the next summary request hang until `gate` is notified.
fn ext_free_summary_gate(h: &Harness, gate: Arc<Notify>) -> Arc<Notify> {
    *h.faux.summary_gate.lock().unwrap() = Some(gate.clone());
    gate
}

#[tokio::test]
async fn compact_from_an_extension_runs_when_the_session_is_idle() {
    let keeper: Arc<std::sync::Mutex<Option<Arc<dyn volcanic_abstractions::extensions::ExtensionContext>>>> =
        Arc::default();
    let k = keeper.clone();
    let e = ext("compacter", move |api| {
        let k = k.clone();
        on_sync::<volcanic_abstractions::extensions::events::AgentEndEvent>(&*api, move |_, ctx| {
            *k.lock().unwrap() = Some(ctx.clone());
            Ok(())
        });
        Ok(())
    });
    let h = harness(vec![], vec![e]).await;
    converse(&h, 3).await;
    let ctx = keeper.lock().unwrap().clone().unwrap();
    let usage = ctx.context_usage().unwrap();
    assert!(!usage.estimated && usage.tokens > 0 && usage.context_window == 100_000);
    ctx.compact(Some("short".into())).unwrap();
    eventually(|| compaction_ends(&h) == vec![("manual".to_owned(), true)]).await;
    h.session.wait_for_idle().await;
    assert!(ctx.context_usage().unwrap().estimated);
}
