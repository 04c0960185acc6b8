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
