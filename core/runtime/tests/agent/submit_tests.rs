//! `submit`: a prompt gets its place before the call returns, whatever its `input` handlers await,
//! and the run it starts goes on in its own task.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use pretty_assertions::assert_eq;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use volcanic_abstractions::extensions::events::InputEvent;
use volcanic_abstractions::extensions::{CommandDefinition, ExtensionApiExt};
use volcanic_abstractions::messages::Message;
use volcanic_core::agent::{PromptInput, QueueMode, Submitted};

fn follow_up(text: &str) -> PromptInput {
    PromptInput {
        text: text.into(),
        queue: Some(QueueMode::FollowUp),
        ..Default::default()
    }
}

/// An `input` handler that takes its time over texts containing "slow" and swallows "swallow";
/// a `/ping` command that does nothing.
fn slow_input() -> volcanic_abstractions::extensions::ExtensionFactory {
    ext("slow-input", |api| {
        api.register_command(
            "ping",
            CommandDefinition {
                description: "does nothing".into(),
                handler: Arc::new(|_args, _ctx, _cancel| Box::pin(async { Ok(()) })),
            },
        );
        api.on::<InputEvent, _>(|e, _ctx, _cancel| {
            Box::pin(async move {
                if e.text.contains("slow") {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
                if e.text == "swallow" {
                    e.mark_handled();
                }
                Ok(())
            })
        });
        Ok(())
    })
}

#[tokio::test]
async fn a_slow_input_handler_never_reorders_prompts_submitted_one_after_the_other() {
    let gate = Arc::new(Notify::new());
    let h = harness(
        vec![FauxTurn::Hang(gate.clone()), FauxTurn::text("answer to second")],
        vec![slow_input()],
    )
    .await;
    let first = h.session.submit(follow_up("slow first")).await.unwrap();
    // Returned while the run waits on the model: the prompt is in, the run goes on.
    let Submitted::Started(run) = first else {
        panic!("expected a started run, got {first:?}")
    };
    assert!(!h.session.is_idle());
    let second = h.session.submit(follow_up("second")).await.unwrap();
    assert!(matches!(second, Submitted::Queued), "{second:?}");
    gate.notify_one();
    run.finished().await.unwrap();
    assert!(h.session.is_idle());
    assert_eq!(h.faux.calls(), 2);
    assert_eq!(user_texts(&h, 0), vec!["slow first"]);
    assert_eq!(user_texts(&h, 1), vec!["slow first", "second"]);
}

#[tokio::test]
async fn consumed_input_and_commands_are_handled_without_a_run() {
    let h = harness(vec![], vec![slow_input()]).await;
    let swallowed = h.session.submit(PromptInput::text("swallow")).await.unwrap();
    assert!(matches!(swallowed, Submitted::Handled), "{swallowed:?}");
    let command = h.session.submit(PromptInput::text("/ping")).await.unwrap();
    assert!(matches!(command, Submitted::Handled), "{command:?}");
    assert_eq!(h.faux.calls(), 0);
    assert!(h.session.messages().is_empty());
}

#[tokio::test]
async fn dropping_the_handle_leaves_the_run_going() {
    let h = harness(vec![FauxTurn::text("answered anyway")], vec![]).await;
    let submitted = h.session.submit(PromptInput::text("hello")).await.unwrap();
    drop(submitted);
    h.session.wait_for_idle().await;
    let last = h.session.messages().last().cloned();
    assert!(
        matches!(&last, Some(Message::Assistant(a)) if a.text() == "answered anyway"),
        "{last:?}"
    );
}

/// A closed session (evicted, shut down) refuses every run start and every write to its file,
/// typed, so a stale handle cannot write a second copy of the transcript beside the one a
/// session opened again loads (issue 25: the lost soak message). The file stays as it was, the
/// model is not asked, and a session opened again on the same file answers.
#[tokio::test]
async fn a_closed_session_refuses_prompts_and_writes_and_a_reopened_one_answers() {
    use volcanic_abstractions::model::ThinkingLevel;
    use volcanic_core::agent::SessionError;
    let h = harness(
        vec![FauxTurn::text("first"), FauxTurn::text("from the reopened one")],
        vec![],
    )
    .await;
    h.session.prompt(PromptInput::text("hello")).await.unwrap();
    let file = h.session.session_file().unwrap();
    let before = std::fs::read(&file).unwrap();
    assert!(!h.session.is_closed());
    h.session.dispose().await;
    assert!(h.session.is_closed());
    let closed = |r: Result<(), SessionError>, what: &str| {
        assert!(matches!(r, Err(SessionError::Closed)), "{what}: {r:?}");
    };
    closed(h.session.submit(PromptInput::text("again")).await.map(|_| ()), "submit");
    closed(
        h.session.submit(follow_up("queued")).await.map(|_| ()),
        "submit follow-up",
    );
    closed(h.session.prompt(PromptInput::text("again")).await, "prompt");
    closed(
        h.session.submit(PromptInput::text("/ping")).await.map(|_| ()),
        "command",
    );
    closed(h.session.continue_run().await.map(|_| ()), "continue_run");
    closed(h.session.compact(None).await.map(|_| ()), "compact");
    closed(h.session.set_model("faux/m1").await.map(|_| ()), "set_model");
    closed(
        h.session.set_thinking_level(ThinkingLevel::High).await,
        "set_thinking_level",
    );
    closed(h.session.new_session().await, "new_session");
    assert_eq!(h.faux.calls(), 1);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the closed session wrote to its file"
    );
    let reopened = reopen(&h).await;
    assert!(!reopened.is_closed());
    reopened.prompt(PromptInput::text("next")).await.unwrap();
    assert_eq!(h.faux.calls(), 2);
    let last = reopened.messages().last().cloned();
    assert!(
        matches!(&last, Some(Message::Assistant(a)) if a.text() == "from the reopened one"),
        "{last:?}"
    );
}

/// A prompt queued behind a run when the session closes is not run by the aborted run, and a
/// prompt submitted while the run is still winding down is refused, not queued and lost.
#[tokio::test]
async fn closing_during_a_run_takes_no_more_prompts() {
    use volcanic_core::agent::SessionError;
    let gate = Arc::new(Notify::new());
    let h = harness(vec![FauxTurn::Hang(gate.clone())], vec![]).await;
    let Submitted::Started(run) = h.session.submit(follow_up("first")).await.unwrap() else {
        panic!("expected a started run")
    };
    let closing = {
        let s = h.session.clone();
        tokio::spawn(async move { s.dispose().await })
    };
    eventually(|| h.session.is_closed()).await;
    let late = h.session.submit(follow_up("late")).await;
    assert!(matches!(late, Err(SessionError::Closed)), "{late:?}");
    let _ = run.finished().await;
    closing.await.unwrap();
    assert_eq!(h.faux.calls(), 1);
    let late_taken = h
        .session
        .messages()
        .iter()
        .any(|m| matches!(m, Message::User(u) if u.content.text() == "late"));
    assert!(!late_taken, "a closed session took a prompt into its transcript");
}
