//! Resuming a stored session: the thinking level comes from the branch when it has a
//! `thinking_level_change` entry, else from the options; a run's prompt and answer are in the file.

#![allow(clippy::unwrap_used)]

use crate::support::*;
use pretty_assertions::assert_eq;
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_core::agent::{AgentSessionOptions, PromptInput, SessionSelect};

#[tokio::test]
async fn the_thinking_level_of_the_branch_wins_over_the_options() {
    let h = harness(vec![FauxTurn::text("hello back")], vec![]).await;
    h.session.set_thinking_level(ThinkingLevel::High).await.unwrap();
    h.session.prompt(PromptInput::text("hello")).await.unwrap();
    let file = h.session.session_file().unwrap();
    let reopened = h
        .factory
        .create(AgentSessionOptions {
            cwd: h.workspace(),
            session: SessionSelect::Open(file.clone()),
            thinking: Some(ThinkingLevel::Low),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(reopened.thinking_level(), ThinkingLevel::High);
    assert_eq!(
        transcript(&reopened.messages()),
        [("user", "hello".to_owned()), ("assistant", "hello back".to_owned())]
    );
}

#[tokio::test]
async fn without_a_thinking_entry_on_the_branch_the_options_decide() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-15T09:00:00.000Z","cwd":"/w"}"#,
            "\n",
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-15T09:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
            "\n",
        ),
    )
    .unwrap();
    let factory = factory(Faux::new(vec![]), vec![], dir.path());
    let session = factory
        .create(AgentSessionOptions {
            cwd: dir.path().join("ws"),
            session: SessionSelect::Open(file),
            thinking: Some(ThinkingLevel::Medium),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(session.thinking_level(), ThinkingLevel::Medium);
}
