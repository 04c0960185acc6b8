//! The agent loop: order of events, tools, queueing, abort, and bad input from the model.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::sync::Arc;
use tokio::sync::Notify;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::messages::{Message, StopReason, UserContent, join_text};
use volcanic_core::agent::{
    AgentSessionOptions, LENGTH_STOP_ERROR, PromptInput, QueueMode, SessionError, SessionSelect,
};

fn tool_results(msgs: &[Message]) -> Vec<(String, bool, String)> {
    msgs.iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((r.tool_call_id.clone(), r.is_error, join_text(&r.content))),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn bash_tool_call_then_answer_in_spec_order() {
    let h = harness(
        vec![
            FauxTurn::calls(vec![(
                "c1",
                "bash",
                json!({"command": "echo hi > made.txt && echo done"}),
            )]),
            FauxTurn::text("file written"),
        ],
        vec![],
    )
    .await;
    h.session.prompt(PromptInput::text("make a file")).await.unwrap();
    assert!(h.workspace().join("made.txt").is_file());
    assert_eq!(
        h.event_names(),
        vec![
            "agent_start",
            "turn_start",
            "message_start", // prompt
            "message_end",
            "message_start", // assistant
            "message_end",
            "tool_execution_start",
            "tool_execution_end",
            "message_start", // tool result
            "message_end",
            "turn_end",
            "turn_start",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end",
            "agent_settled",
        ]
    );
    // The second call saw the tool result.
    let second = h.faux.context(1);
    let results = tool_results(&second.messages);
    assert_eq!(results.len(), 1);
    assert!(results[0].2.contains("done"), "{results:?}");
    // The session file reopens with the same context.
    let file = h.session.session_file().unwrap();
    let reopened = h
        .factory
        .create(AgentSessionOptions {
            cwd: h.workspace(),
            session: SessionSelect::Open(file),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(reopened.messages(), h.session.messages());
    assert_eq!(reopened.model().unwrap().key(), "faux/m1");
}

#[tokio::test]
async fn parallel_tools_end_in_completion_order_results_in_source_order() {
    let h = harness(
        vec![
            FauxTurn::calls(vec![
                ("slow", "bash", json!({"command": "sleep 0.4; echo slow"})),
                ("fast", "bash", json!({"command": "echo fast"})),
            ]),
            FauxTurn::text("ok"),
        ],
        vec![],
    )
    .await;
    h.session.prompt(PromptInput::text("go")).await.unwrap();
    let ends: Vec<String> = h
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentSessionEvent::ToolExecutionEnd { tool_call_id, .. } => Some(tool_call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ends, vec!["fast", "slow"]);
    let ids: Vec<String> = tool_results(&h.session.messages()).into_iter().map(|r| r.0).collect();
    assert_eq!(ids, vec!["slow", "fast"]);
}

#[tokio::test]
async fn unknown_tool_and_malformed_arguments_become_error_results() {
    let h = harness(
        vec![
            FauxTurn::calls(vec![
                ("u1", "teleport", json!({})),
                ("b1", "bash", json!("{\"command\": \"echo")),
                ("b2", "bash", json!({"cmd": "ls"})),
            ]),
            FauxTurn::text("sorry"),
        ],
        vec![],
    )
    .await;
    h.session.prompt(PromptInput::text("go")).await.unwrap();
    let r = tool_results(&h.session.messages());
    assert_eq!(r.len(), 3);
    assert!(r.iter().all(|x| x.1), "all errors: {r:?}");
    assert!(
        r[0].2.contains("teleport") && r[0].2.contains("not found"),
        "{}",
        r[0].2
    );
    assert!(r[1].2.contains("object"), "{}", r[1].2);
    assert!(r[2].2.contains("command"), "{}", r[2].2);
    // The session stays usable.
    h.faux.push(FauxTurn::text("still here"));
    h.session.prompt(PromptInput::text("again")).await.unwrap();
    assert_eq!(h.faux.calls(), 3);
}

#[tokio::test]
async fn length_stop_never_runs_its_tool_calls() {
    let h = harness(
        vec![
            FauxTurn::Reply(
                vec![call("c1", "bash", json!({"command": "touch should-not-exist"}))],
                StopReason::Length,
            ),
            FauxTurn::text("re-issued later"),
        ],
        vec![],
    )
    .await;
    h.session.prompt(PromptInput::text("go")).await.unwrap();
    assert!(!h.workspace().join("should-not-exist").exists());
    let r = tool_results(&h.session.messages());
    assert_eq!(r, vec![("c1".to_owned(), true, LENGTH_STOP_ERROR.to_owned())]);
    assert_eq!(h.faux.calls(), 2);
}

#[tokio::test]
async fn provider_error_ends_the_run_and_session_stays_usable() {
    let h = harness(
        vec![
            FauxTurn::Error("500 api_error: internal".into()),
            FauxTurn::text("fine now"),
        ],
        vec![],
    )
    .await;
    h.session.prompt(PromptInput::text("one")).await.unwrap();
    let Some(Message::Assistant(a)) = h.session.messages().last().cloned() else {
        panic!()
    };
    assert_eq!(a.stop_reason, StopReason::Error);
    assert_eq!(a.error_message.as_deref(), Some("500 api_error: internal"));
    h.session.prompt(PromptInput::text("two")).await.unwrap();
    // The errored message was not sent back to the model.
    let ctx = h.faux.context(1);
    assert!(ctx.messages.iter().all(|m| !matches!(m, Message::Assistant(_))));
    assert_eq!(h.session.messages().len(), 4);
}

#[tokio::test]
async fn abort_stops_a_streaming_run() {
    let gate = Arc::new(Notify::new());
    let h = harness(vec![FauxTurn::Hang(gate)], vec![]).await;
    let s = h.session.clone();
    let run = tokio::spawn(async move { s.prompt(PromptInput::text("long")).await });
    eventually(|| h.faux.calls() == 1).await;
    assert!(!h.session.is_idle());
    h.session.abort();
    run.await.unwrap().unwrap();
    assert!(h.session.is_idle());
    let Some(Message::Assistant(a)) = h.session.messages().last().cloned() else {
        panic!()
    };
    assert_eq!(a.stop_reason, StopReason::Aborted);
}

#[tokio::test]
async fn wait_for_idle_waits_for_the_run_and_its_settled_event() {
    let gate = Arc::new(Notify::new());
    let h = harness(vec![FauxTurn::Hang(gate)], vec![]).await;
    let settled = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = settled.clone();
    h.session.subscribe(move |e| {
        if matches!(e, AgentSessionEvent::AgentSettled) {
            seen.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let s = h.session.clone();
    let run = tokio::spawn(async move { s.prompt(PromptInput::text("long")).await });
    eventually(|| h.faux.calls() == 1).await;
    let during = tokio::time::timeout(std::time::Duration::from_millis(200), h.session.wait_for_idle()).await;
    assert!(during.is_err(), "wait_for_idle returned while the run was going");
    h.session.abort();
    tokio::time::timeout(std::time::Duration::from_secs(5), h.session.wait_for_idle())
        .await
        .unwrap();
    // Subscribers have seen the end of the run by then.
    assert!(settled.load(std::sync::atomic::Ordering::SeqCst));
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn busy_session_queues_follow_up_and_steer() {
    let gate = Arc::new(Notify::new());
    let h = harness(
        vec![
            FauxTurn::Hang(gate.clone()),
            FauxTurn::text("answer to steer"),
            FauxTurn::text("answer to follow-up"),
        ],
        vec![],
    )
    .await;
    let s = h.session.clone();
    let run = tokio::spawn(async move { s.prompt(PromptInput::text("first")).await });
    eventually(|| h.faux.calls() == 1).await;
    assert!(matches!(
        h.session.prompt(PromptInput::text("unqueued")).await,
        Err(SessionError::Busy)
    ));
    h.session
        .prompt(PromptInput {
            text: "later".into(),
            queue: Some(QueueMode::FollowUp),
            ..Default::default()
        })
        .await
        .unwrap();
    h.session.steer("now").await.unwrap();
    gate.notify_one();
    run.await.unwrap().unwrap();
    assert_eq!(h.faux.calls(), 3);
    let user_texts = |i: usize| user_texts(&h, i);
    // Steering is taken before follow-ups.
    assert_eq!(user_texts(1), vec!["first", "now"]);
    assert_eq!(user_texts(2), vec!["first", "now", "later"]);
}

#[tokio::test]
async fn follow_ups_are_taken_one_at_a_time_each_with_its_own_answer() {
    let gate = Arc::new(Notify::new());
    let h = harness(
        vec![
            FauxTurn::Hang(gate.clone()),
            FauxTurn::text("answer to a"),
            FauxTurn::text("answer to b"),
        ],
        vec![],
    )
    .await;
    let s = h.session.clone();
    let run = tokio::spawn(async move { s.prompt(PromptInput::text("first")).await });
    eventually(|| h.faux.calls() == 1).await;
    for text in ["a", "b"] {
        h.session
            .prompt(PromptInput {
                text: text.into(),
                queue: Some(QueueMode::FollowUp),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    gate.notify_one();
    run.await.unwrap().unwrap();
    assert_eq!(h.faux.calls(), 3);
    let last_user = |i: usize| -> String {
        h.faux
            .context(i)
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User(u) => Some(u.content.text()),
                _ => None,
            })
            .unwrap_or_default()
    };
    // "b" waits for "a"'s answer instead of sharing its turn.
    assert_eq!(last_user(1), "a");
    assert_eq!(last_user(2), "b");
    assert!(matches!(
        h.faux.context(2).messages.iter().rev().nth(1),
        Some(Message::Assistant(_))
    ));
}

#[tokio::test]
async fn secrets_are_redacted_from_tool_output() {
    let h = harness(
        vec![
            FauxTurn::calls(vec![(
                "c1",
                "bash",
                json!({"command": "echo token=sk-test-ABCDEFGH12345678"}),
            )]),
            FauxTurn::text("ok"),
        ],
        vec![],
    )
    .await;
    h.session.prompt(PromptInput::text("show")).await.unwrap();
    let r = tool_results(&h.session.messages());
    assert!(
        r[0].2.contains("[REDACTED]") && !r[0].2.contains("ABCDEFGH"),
        "{}",
        r[0].2
    );
    let ctx = h.faux.context(1);
    let sent = tool_results(&ctx.messages);
    assert!(!sent[0].2.contains("ABCDEFGH"));
}

#[tokio::test]
async fn images_reach_the_provider() {
    let h = harness(vec![FauxTurn::text("a cat")], vec![]).await;
    h.session
        .prompt(PromptInput {
            text: "what is it".into(),
            images: vec![volcanic_abstractions::messages::ImageContent {
                data: "aGVsbG8=".into(),
                mime_type: "image/png".into(),
            }],
            queue: None,
        })
        .await
        .unwrap();
    let ctx = h.faux.context(0);
    let Message::User(u) = &ctx.messages[0] else { panic!() };
    assert!(u.content.blocks().iter().any(|b| matches!(b, UserContent::Image(_))));
}

#[tokio::test]
async fn an_empty_prompt_is_refused_before_any_model_call() {
    let h = harness(vec![FauxTurn::text("never")], vec![]).await;
    for text in ["", "   \n"] {
        let err = h.session.prompt(PromptInput::text(text)).await.unwrap_err();
        assert!(matches!(err, SessionError::EmptyPrompt), "{err}");
    }
    assert_eq!(h.faux.calls(), 0);
    assert!(h.session.messages().is_empty());
}

#[tokio::test]
async fn the_provider_is_told_the_sessions_working_directory_and_time_zone() {
    let h = harness(vec![FauxTurn::text("one"), FauxTurn::text("two")], vec![]).await;
    h.session.prompt(PromptInput::text("where am I?")).await.unwrap();
    let tokyo = h
        .factory
        .create(AgentSessionOptions {
            cwd: h.workspace(),
            session: SessionSelect::New,
            time_zone: Some(chrono_tz::Asia::Tokyo),
            ..Default::default()
        })
        .await
        .unwrap();
    tokyo.prompt(PromptInput::text("and now?")).await.unwrap();
    let places = h.faux.places.lock().unwrap().clone();
    assert_eq!(
        places,
        vec![
            (Some(h.workspace()), Some("UTC".to_owned())),
            (Some(h.workspace()), Some("Asia/Tokyo".to_owned())),
        ]
    );
}
