//! pi reads our session files: pi's own `SessionManager.open` + `buildSessionContext`
//! (`@mariozechner/pi-coding-agent` 0.73.1, installed by ./scripts/test.sh) builds the same
//! context from a file we wrote, with tool calls, a branch, a label and a compaction.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use volcanic_abstractions::messages::{
    AssistantContent, AssistantMessage, Message, StopReason, TextContent, ToolCall, ToolResultMessage, UserContent,
};
use volcanic_abstractions::model::ThinkingLevel;
use volcanic_abstractions::sessions::CompactionEntry;
use volcanic_core::sessions::{FileSessionStore, SessionManager};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn assistant(blocks: Vec<AssistantContent>, stop: StopReason) -> Message {
    let mut a = AssistantMessage::empty(
        "anthropic-messages",
        "anthropic",
        "claude-sonnet-4-5",
        1_768_467_600_000,
    );
    a.content = blocks;
    a.stop_reason = stop;
    Message::Assistant(a)
}

fn text(t: &str) -> AssistantContent {
    AssistantContent::Text(TextContent {
        text: t.into(),
        text_signature: None,
    })
}

fn call(id: &str, name: &str, args: Value) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
        thought_signature: None,
    })
}

fn result(id: &str, name: &str, out: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: name.into(),
        content: vec![UserContent::Text(TextContent {
            text: out.into(),
            text_signature: None,
        })],
        details: None,
        is_error: false,
        timestamp: 1_768_467_601_000,
    })
}

/// What both sides must agree on, per message: role and its identifying content.
fn project(m: &Value) -> Value {
    let role = m["role"].as_str().unwrap_or_default();
    let texts = |c: &Value| -> Vec<Value> {
        match c {
            Value::String(s) => vec![json!(s)],
            Value::Array(a) => a
                .iter()
                .map(|b| match b["type"].as_str() {
                    Some("text") => b["text"].clone(),
                    Some("toolCall") => json!({"call": b["id"], "name": b["name"], "args": b["arguments"]}),
                    other => json!(other),
                })
                .collect(),
            _ => vec![],
        }
    };
    match role {
        "user" | "assistant" => json!({"role": role, "content": texts(&m["content"])}),
        "toolResult" => json!({"role": role, "id": m["toolCallId"], "content": texts(&m["content"])}),
        "compactionSummary" => json!({"role": role, "summary": m["summary"]}),
        _ => json!({"role": role}),
    }
}

/// The test peers' folder, with pi installed in it (else the test fails saying how to get it).
fn pi_deps() -> PathBuf {
    let deps = repo_root().join(".testdeps");
    assert!(
        deps.join("node_modules/@mariozechner/pi-coding-agent").is_dir(),
        "pi is not installed in {}: run ./scripts/test.sh (it runs npm ci --prefix .testdeps)",
        deps.display()
    );
    deps
}

/// The context pi's own `SessionManager` builds from `file` (`pi_context.mjs`): `messages`,
/// `thinkingLevel`, `model`.
fn pi_context(deps: &Path, file: &Path) -> Value {
    let out = std::process::Command::new("node")
        .arg(repo_root().join("core/runtime/tests/pi_context.mjs"))
        .arg(file)
        .env("PI_DEPS", deps)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pi failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn pi_builds_the_same_context_from_our_file() {
    let deps = pi_deps();
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileSessionStore::new(dir.path()));
    let mut s = SessionManager::create(store.clone(), "scope", "/home/dev/project").unwrap();
    s.append_model_change("anthropic", "claude-sonnet-4-5").unwrap();
    s.append_thinking_level_change(ThinkingLevel::High).unwrap();
    let u1 = s
        .append_message(Message::user_text("first question", 1_768_467_600_000))
        .unwrap();
    s.append_message(assistant(
        vec![text("let me look"), call("toolu_01", "read", json!({"path": "a.rs"}))],
        StopReason::ToolUse,
    ))
    .unwrap();
    s.append_message(result("toolu_01", "read", "fn main() {}")).unwrap();
    let a2 = s
        .append_message(assistant(vec![text("answer one")], StopReason::Stop))
        .unwrap();
    s.append_label(&u1, Some("checkpoint".into())).unwrap();
    s.append_message(Message::user_text("abandoned question", 1_768_467_602_000))
        .unwrap();
    s.append_message(assistant(vec![text("abandoned answer")], StopReason::Stop))
        .unwrap();
    // Fork after "answer one".
    s.branch(&a2).unwrap();
    let kept = s
        .append_message(Message::user_text("branch question", 1_768_467_603_000))
        .unwrap();
    s.append_message(assistant(vec![text("branch answer")], StopReason::Stop))
        .unwrap();
    s.append_compaction(CompactionEntry {
        summary: "## Goal\nsummary of the start".into(),
        first_kept_entry_id: kept,
        tokens_before: 1234,
        details: Some(json!({"readFiles": ["a.rs"], "modifiedFiles": []})),
        from_hook: Some(false),
    })
    .unwrap();
    s.append_message(Message::user_text("after compaction", 1_768_467_604_000))
        .unwrap();
    s.append_message(assistant(
        vec![call("toolu_02", "bash", json!({"command": "ls"}))],
        StopReason::ToolUse,
    ))
    .unwrap();
    s.append_message(result("toolu_02", "bash", "a.rs")).unwrap();
    s.append_message(assistant(vec![text("final answer")], StopReason::Stop))
        .unwrap();
    let file = s.session_file().unwrap();

    let pi = pi_context(&deps, &file);

    let ours = s.build_context();
    let ours_json: Vec<Value> = ours
        .messages
        .iter()
        .map(|m| project(&serde_json::to_value(m).unwrap()))
        .collect();
    let pi_json: Vec<Value> = pi["messages"].as_array().unwrap().iter().map(project).collect();
    assert_eq!(pi_json, ours_json);
    let roles: Vec<&str> = pi_json.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        vec![
            "compactionSummary",
            "user",
            "assistant",
            "user",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );
    assert_eq!(pi["thinkingLevel"], json!("high"));
    assert_eq!(pi["model"]["provider"], json!("anthropic"));
    assert_eq!(pi["model"]["modelId"], json!("claude-sonnet-4-5"));
}

/// The test kit's pi session generator ([`volcanic_testkit::pi_session`], used by the session
/// tests and the `session_open` bench) writes files pi itself reads: pi builds the context the
/// generator promises, with its model and thinking level, and the same one we build.
#[test]
fn pi_reads_the_generators_sessions_as_we_do() {
    let deps = pi_deps();
    let dir = tempfile::tempdir().unwrap();
    for (entries, seed) in [(40, 7), (2_000, 1)] {
        let generated = volcanic_testkit::pi_session::generate(entries, seed);
        let file = dir.path().join(format!("generated-{entries}.jsonl"));
        std::fs::write(&file, &generated.text).unwrap();
        let pi = pi_context(&deps, &file);
        let summary = &generated.summary;
        let pi_json: Vec<Value> = pi["messages"].as_array().unwrap().iter().map(project).collect();
        assert_eq!(
            pi_json.len() as u64,
            summary["expectedContextMessages"].as_u64().unwrap(),
            "{entries} entries"
        );
        assert_eq!(pi["model"]["provider"], summary["expectedModel"]["provider"]);
        assert_eq!(pi["model"]["modelId"], summary["expectedModel"]["modelId"]);
        assert_eq!(pi["thinkingLevel"], summary["expectedThinkingLevel"]);

        let store = Arc::new(FileSessionStore::new(dir.path()));
        let ours = SessionManager::open(
            store,
            &volcanic_abstractions::sessions::SessionLocation::File(file.clone()),
        )
        .unwrap()
        .build_context();
        let ours_json: Vec<Value> = ours
            .messages
            .iter()
            .map(|m| project(&serde_json::to_value(m).unwrap()))
            .collect();
        assert_eq!(pi_json, ours_json, "{entries} entries");
    }
}
