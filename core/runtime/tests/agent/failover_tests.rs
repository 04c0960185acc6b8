//! Failover: a call the primary's provider failed goes on with the fallback model in the same
//! turn; the next run asks the primary again; aborts, overflows and refusals never fail over.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::sync::Arc;
use tokio::sync::Notify;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::messages::{Message, StopReason};
use volcanic_abstractions::model::Model;
use volcanic_abstractions::provider::ProviderRegistration;
use volcanic_core::agent::{AgentSession, PromptInput};

const OVERLOADED: &str = "529 overloaded_error: Overloaded (gave up after 4 attempts)";

/// A session on `faux/m1` whose fallback is `backup/b1` (a second faux provider).
struct Pair {
    session: AgentSession,
    primary: Arc<Faux>,
    backup: Arc<Faux>,
    events: Arc<std::sync::Mutex<Vec<AgentSessionEvent>>>,
    _dir: tempfile::TempDir,
}

fn backup_model() -> Model {
    Model {
        id: "b1".into(),
        provider: "backup".into(),
        ..faux_model()
    }
}

async fn pair(primary: Vec<FauxTurn>, backup: Vec<FauxTurn>) -> Pair {
    let dir = tempfile::tempdir().unwrap();
    let (primary, backup) = (Faux::new(primary), Faux::new(backup));
    let mut config = factory_config(primary.clone(), vec![], dir.path());
    config.models.register_provider(ProviderRegistration {
        name: "backup".into(),
        provider: backup.clone(),
        models: vec![backup_model()],
        api_key: None,
        api_key_env: None,
    });
    config.fallback_models = vec!["backup/b1".into()];
    let Harness {
        session, events, dir, ..
    } = harness_on(config, primary.clone(), dir).await;
    Pair {
        session,
        primary,
        backup,
        events,
        _dir: dir,
    }
}

impl Pair {
    fn fallbacks(&self) -> Vec<(String, String, String)> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                AgentSessionEvent::ModelFallback {
                    from,
                    to,
                    error_message,
                } => Some((from.clone(), to.clone(), error_message.clone())),
                _ => None,
            })
            .collect()
    }

    fn last_answer(&self) -> (StopReason, String, String) {
        match self.session.messages().last() {
            Some(Message::Assistant(a)) => (a.stop_reason, a.text(), a.error_message.clone().unwrap_or_default()),
            other => panic!("no answer: {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_overloaded_primary_fails_over_and_the_next_run_asks_it_again() {
    let p = pair(
        vec![FauxTurn::Error(OVERLOADED.into()), FauxTurn::text("primary is back")],
        vec![FauxTurn::text("from the backup")],
    )
    .await;
    p.session.prompt(PromptInput::text("hello")).await.unwrap();
    assert_eq!(
        p.last_answer(),
        (StopReason::Stop, "from the backup".into(), String::new())
    );
    assert_eq!(
        p.fallbacks(),
        vec![("faux/m1".into(), "backup/b1".into(), OVERLOADED.into())]
    );
    // The backup was asked the conversation without the failed message.
    let asked = p.backup.context(0);
    assert!(
        asked.messages.iter().all(|m| !matches!(m, Message::Assistant(_))),
        "{:?}",
        asked.messages
    );
    // The chat's model did not change, and the next run asks it first.
    assert_eq!(p.session.model().unwrap().key(), "faux/m1");
    p.session.prompt(PromptInput::text("again")).await.unwrap();
    assert_eq!(p.last_answer().1, "primary is back");
    assert_eq!((p.primary.calls(), p.backup.calls()), (2, 1));
}

#[tokio::test]
async fn the_fallback_answers_the_rest_of_the_run_a_refused_key_too() {
    let p = pair(
        vec![FauxTurn::Error("401 authentication_error: invalid x-api-key".into())],
        vec![
            FauxTurn::calls(vec![("c1", "bash", json!({"command": "echo tool-ran"}))]),
            FauxTurn::text("done after the tool"),
        ],
    )
    .await;
    p.session.prompt(PromptInput::text("run it")).await.unwrap();
    assert_eq!(p.last_answer().1, "done after the tool");
    // The tool loop's second call went straight to the backup.
    assert_eq!((p.primary.calls(), p.backup.calls()), (1, 2));
    assert_eq!(p.fallbacks().len(), 1);
}

#[tokio::test]
async fn aborts_overflows_and_rejections_are_not_failed_over() {
    let gate = Arc::new(Notify::new());
    let p = pair(
        vec![
            FauxTurn::Hang(gate),
            FauxTurn::Error("400 invalid_request_error: bad image".into()),
            FauxTurn::Error("the model stopped with stop_reason `refusal`".into()),
        ],
        vec![],
    )
    .await;
    let s = p.session.clone();
    let run = tokio::spawn(async move { s.prompt(PromptInput::text("long")).await });
    eventually(|| p.primary.calls() == 1).await;
    p.session.abort();
    run.await.unwrap().unwrap();
    assert_eq!(p.last_answer().0, StopReason::Aborted);
    for prompt in ["a bad image", "something refused"] {
        p.session.prompt(PromptInput::text(prompt)).await.unwrap();
        assert_eq!(p.last_answer().0, StopReason::Error, "{prompt}");
    }
    assert_eq!((p.primary.calls(), p.backup.calls()), (3, 0));
    assert_eq!(p.fallbacks(), Vec::new());
}

#[tokio::test]
async fn a_failing_fallback_ends_the_turn_with_its_own_error() {
    let p = pair(
        vec![FauxTurn::Error(OVERLOADED.into())],
        vec![FauxTurn::Error("500 api_error: backup down too".into())],
    )
    .await;
    p.session.prompt(PromptInput::text("hello")).await.unwrap();
    let (stop, _, error) = p.last_answer();
    assert_eq!(
        (stop, error.as_str()),
        (StopReason::Error, "500 api_error: backup down too")
    );
    assert_eq!((p.primary.calls(), p.backup.calls()), (1, 1));
}

#[tokio::test]
async fn fallback_models_are_checked_when_set() {
    let p = pair(vec![], vec![]).await;
    assert_eq!(p.session.fallback_models(), vec!["backup/b1".to_owned()]);
    let e = p
        .session
        .set_fallback_models(Some(vec!["nope/none".into()]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("nope/none"), "{e}");
    assert_eq!(p.session.fallback_models(), vec!["backup/b1".to_owned()]);
    assert_eq!(
        p.session.set_fallback_models(Some(vec![])).unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(
        p.session.set_fallback_models(None).unwrap(),
        vec!["backup/b1".to_owned()]
    );
}
