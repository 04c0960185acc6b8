//! Tools the provider ran itself (`providerToolCall` blocks, e.g. Claude Code's): shown with the
//! tool progress events, kept in the transcript, never executed by the loop; a turn holding
//! only such calls ends normally.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::messages::{
    AssistantContent, Message, ProviderToolCall, ProviderToolResult, StopReason, TextContent, UserContent,
};
use volcanic_core::agent::PromptInput;

/// A `bash` call the provider ran (the name of one of our own tools, to show it is not run).
fn ran(id: &str, result: Option<&str>) -> AssistantContent {
    AssistantContent::ProviderToolCall(ProviderToolCall {
        id: id.into(),
        name: "bash".into(),
        arguments: json!({"command": "echo hi > made.txt"}),
        result: result.map(|r| ProviderToolResult {
            content: vec![UserContent::Text(TextContent {
                text: r.into(),
                text_signature: None,
            })],
            is_error: false,
        }),
    })
}

#[tokio::test]
async fn provider_run_tools_are_progress_and_history_never_executed() {
    // `toolUse` with only provider-run calls: nothing for the loop to run.
    let h = harness(
        vec![
            FauxTurn::Reply(
                vec![ran("toolu_1", Some("made")), text("Made it.")],
                StopReason::ToolUse,
            ),
            FauxTurn::Reply(vec![ran("toolu_2", None)], StopReason::Stop),
            FauxTurn::text("still here"),
        ],
        vec![],
    )
    .await;
    h.session.prompt(PromptInput::text("make a file")).await.unwrap();
    assert!(
        !h.workspace().join("made.txt").exists(),
        "the loop ran the provider's call"
    );
    assert_eq!(h.faux.calls(), 1, "the turn ended with the answer");
    assert_eq!(
        h.event_names(),
        [
            "agent_start",
            "turn_start",
            "message_start", // prompt
            "message_end",
            "message_start", // assistant
            "tool_execution_start",
            "tool_execution_end",
            "message_end",
            "turn_end",
            "agent_end",
            "agent_settled",
        ]
    );
    let progress = h.pick(|e| match e {
        AgentSessionEvent::ToolExecutionStart {
            tool_call_id,
            tool_name,
            args,
        } => Some(format!("start {tool_call_id} {tool_name} {args}")),
        AgentSessionEvent::ToolExecutionEnd {
            tool_call_id,
            result,
            is_error,
            ..
        } => Some(format!(
            "end {tool_call_id} {is_error} {}",
            volcanic_abstractions::messages::join_text(&result.content)
        )),
        _ => None,
    });
    assert_eq!(
        progress,
        [
            r#"start toolu_1 bash {"command":"echo hi > made.txt"}"#,
            "end toolu_1 false made"
        ]
    );
    let ends = h.pick(|e| match e {
        AgentSessionEvent::TurnEnd { message, tool_results } => Some((message.stop_reason, tool_results.len())),
        _ => None,
    });
    assert_eq!(ends, [(StopReason::Stop, 0)]);

    // Only a provider-run call (no result, no text): the turn still ends; the next prompt's
    // context keeps the blocks and gets no made-up tool result.
    h.session.prompt(PromptInput::text("again")).await.unwrap();
    assert_eq!(h.faux.calls(), 2);
    h.session.prompt(PromptInput::text("and?")).await.unwrap();
    assert_eq!(h.faux.calls(), 3);
    let roles: Vec<&str> = h.faux.context(2).messages.iter().map(Message::role).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
    let Message::Assistant(kept) = &h.faux.context(2).messages[3] else {
        panic!()
    };
    assert_eq!(kept.content, [ran("toolu_2", None)]);
    let file = std::fs::read_to_string(h.session.session_file().unwrap()).unwrap();
    assert!(file.contains(r#""type":"providerToolCall","id":"toolu_1""#), "{file}");
    assert!(!h.workspace().join("made.txt").exists());
}
