//! Table tests of the request checks and chunk splitting, without a server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::WireApi;
use super::checks::{check_anthropic, check_openai, estimated_tokens};
use super::script::split_chunks;

fn anthropic(messages: Value) -> Value {
    json!({"model": "m", "max_tokens": 2048, "messages": messages})
}

fn tool_use(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "bash", "input": {}})
}

fn tool_result(id: &str) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": "ok"})
}

/// `None` when accepted, else the start of the rejection message.
fn anthropic_verdict(body: &Value) -> Option<String> {
    let issued: HashSet<String> = ["sig-ok".to_owned()].into();
    check_anthropic(body, Some(&issued)).err().map(|r| r.message)
}

#[test]
fn anthropic_checks() {
    let user = |content: Value| json!({"role": "user", "content": content});
    let assistant = |content: Value| json!({"role": "assistant", "content": content});
    let text = |t: &str| json!({"type": "text", "text": t});
    let cases: Vec<(&str, Value, Option<&str>)> = vec![
        ("plain text", anthropic(json!([user(json!("hi"))])), None),
        (
            "paired tool call",
            anthropic(json!([
                user(json!("go")),
                assistant(json!([tool_use("t1")])),
                user(json!([tool_result("t1"), text("more")]))
            ])),
            None,
        ),
        (
            "consecutive user messages merge: result then text",
            anthropic(json!([
                user(json!("go")),
                assistant(json!([tool_use("t1")])),
                user(json!([tool_result("t1")])),
                user(json!("more"))
            ])),
            None,
        ),
        (
            "tool use with no next message",
            anthropic(json!([
                user(json!("go")),
                assistant(json!([tool_use("t1"), tool_use("t2")]))
            ])),
            Some("messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: t1, t2."),
        ),
        (
            "one of two results missing",
            anthropic(json!([
                user(json!("go")),
                assistant(json!([tool_use("t1"), tool_use("t2")])),
                user(json!([tool_result("t2")]))
            ])),
            Some("messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: t1."),
        ),
        (
            "orphan result",
            anthropic(json!([
                user(json!("go")),
                assistant(json!([text("hi")])),
                user(json!([tool_result("t9")]))
            ])),
            Some("messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: t9."),
        ),
        (
            "result for a call two turns back",
            anthropic(json!([
                user(json!("go")),
                assistant(json!([tool_use("t1")])),
                user(json!([tool_result("t1")])),
                assistant(json!([text("ok")])),
                user(json!([tool_result("t1")]))
            ])),
            Some("messages.4.content.0: unexpected `tool_use_id`"),
        ),
        (
            "text before the results",
            anthropic(json!([
                user(json!("go")),
                assistant(json!([tool_use("t1")])),
                user(json!([text("first"), tool_result("t1")]))
            ])),
            Some("messages.2.content.1: `tool_result` blocks must come first"),
        ),
        (
            "duplicate result",
            anthropic(json!([
                user(json!("go")),
                assistant(json!([tool_use("t1")])),
                user(json!([tool_result("t1"), tool_result("t1")]))
            ])),
            Some("messages.2.content.1: each `tool_use` must have a single result"),
        ),
        (
            "duplicate tool use id",
            anthropic(json!([
                user(json!("go")),
                assistant(json!([tool_use("t1")])),
                user(json!([tool_result("t1")])),
                assistant(json!([tool_use("t1")])),
                user(json!([tool_result("t1")]))
            ])),
            Some("messages.3.content.0: `tool_use` ids must be unique"),
        ),
        (
            "tool id with a dot",
            anthropic(json!([
                user(json!("go")),
                assistant(json!([tool_use("call.1")])),
                user(json!([tool_result("call.1")]))
            ])),
            Some("messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"),
        ),
        (
            "first message from the assistant",
            anthropic(json!([assistant(json!("hi"))])),
            Some("messages: first message must use the \"user\" role"),
        ),
        (
            "system role in messages",
            anthropic(json!([{"role": "system", "content": "x"}, user(json!("hi"))])),
            Some("messages: Unexpected role \"system\""),
        ),
        (
            "empty text block",
            anthropic(json!([user(json!([text("")]))])),
            Some("messages: text content blocks must be non-empty"),
        ),
        (
            "empty user content",
            anthropic(json!([user(json!([]))])),
            Some("messages.0: all messages must have non-empty content"),
        ),
        (
            "empty final assistant content (prefill) is fine",
            anthropic(json!([user(json!("hi")), assistant(json!(""))])),
            None,
        ),
        (
            "thinking without signature",
            anthropic(json!([
                user(json!("hi")),
                assistant(json!([{"type": "thinking", "thinking": "x"}, text("a")])),
                user(json!("b"))
            ])),
            Some("messages.1.content.0.thinking.signature: Field required"),
        ),
        (
            "thinking with an issued signature",
            anthropic(json!([
                user(json!("hi")),
                assistant(json!([{"type": "thinking", "thinking": "x", "signature": "sig-ok"}, text("a")])),
                user(json!("b"))
            ])),
            None,
        ),
        (
            "missing max_tokens",
            json!({"model": "m", "messages": [user(json!("hi"))]}),
            Some("max_tokens: Field required"),
        ),
        (
            "thinking budget above max_tokens",
            json!({"model": "m", "max_tokens": 2000, "thinking": {"type": "enabled", "budget_tokens": 4000},
                   "messages": [user(json!("hi"))]}),
            Some("`max_tokens` must be greater than `thinking.budget_tokens`"),
        ),
        (
            "tool name with a space",
            json!({"model": "m", "max_tokens": 10, "messages": [user(json!("hi"))],
                   "tools": [{"name": "my tool", "input_schema": {"type": "object"}}]}),
            Some("tools.0.custom.name: String should match pattern"),
        ),
        (
            "unknown block type",
            anthropic(json!([user(json!([{"type": "toolCall"}]))])),
            Some("messages.0.content.0: Input tag 'toolCall'"),
        ),
    ];
    for (name, body, expected) in cases {
        let verdict = anthropic_verdict(&body);
        match (expected, verdict) {
            (None, None) => {}
            (Some(prefix), Some(message)) => assert!(
                message.starts_with(prefix),
                "{name}: expected {prefix:?}, got {message:?}"
            ),
            (expected, verdict) => panic!("{name}: expected {expected:?}, got {verdict:?}"),
        }
    }
}

#[test]
fn anthropic_signatures_are_not_checked_when_verification_is_off() {
    let body = anthropic(json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": "any"}]},
        {"role": "user", "content": "b"},
    ]));
    assert_eq!(check_anthropic(&body, None), Ok(()));
    assert!(check_anthropic(&body, Some(&HashSet::new())).is_err());
}

fn openai(messages: Value) -> Value {
    json!({"model": "m", "messages": messages})
}

fn calls(ids: &[&str]) -> Value {
    let calls: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "type": "function", "function": {"name": "bash", "arguments": "{}"}}))
        .collect();
    json!({"role": "assistant", "content": null, "tool_calls": calls})
}

fn tool(id: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": "ok"})
}

#[test]
fn openai_checks() {
    let user = json!({"role": "user", "content": "hi"});
    let cases: Vec<(&str, Value, Option<&str>)> = vec![
        ("plain", openai(json!([user])), None),
        (
            "answered calls",
            openai(json!([user, calls(&["a", "b"]), tool("b"), tool("a"), user])),
            None,
        ),
        (
            "calls answered at the end of the request",
            openai(json!([user, calls(&["a"])])),
            Some(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: a",
            ),
        ),
        (
            "user message between call and result",
            openai(json!([user, calls(&["a"]), user, tool("a")])),
            Some("An assistant message with 'tool_calls' must be followed by tool messages"),
        ),
        (
            "tool message without a call",
            openai(json!([user, tool("a")])),
            Some(
                "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
            ),
        ),
        (
            "tool message for an unknown id",
            openai(json!([user, calls(&["a"]), tool("a"), tool("z")])),
            Some("Invalid parameter: 'tool_call_id' of 'z' not found in 'tool_calls' of previous message."),
        ),
        (
            "arguments sent as an object",
            openai(json!([user, {"role": "assistant", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "bash", "arguments": {}}}]}, tool("a")])),
            Some(
                "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, but got an object instead.",
            ),
        ),
        (
            "assistant with neither content nor calls",
            openai(json!([user, {"role": "assistant", "content": null}])),
            Some("Invalid value for 'content': expected a string, got null."),
        ),
        (
            "stream_options without stream",
            json!({"model": "m", "messages": [user], "stream_options": {"include_usage": true}}),
            Some("The 'stream_options' parameter is only allowed when 'stream' is enabled."),
        ),
        (
            "bad tool name",
            json!({"model": "m", "messages": [user],
                   "tools": [{"type": "function", "function": {"name": "read.file"}}]}),
            Some("Invalid 'tools[0].function.name': string does not match pattern."),
        ),
        (
            "missing model",
            json!({"messages": [user]}),
            Some("you must provide a model parameter"),
        ),
    ];
    for (name, body, expected) in cases {
        let verdict = check_openai(&body).err().map(|r| r.message);
        match (expected, verdict) {
            (None, None) => {}
            (Some(prefix), Some(message)) => assert!(
                message.starts_with(prefix),
                "{name}: expected {prefix:?}, got {message:?}"
            ),
            (expected, verdict) => panic!("{name}: expected {expected:?}, got {verdict:?}"),
        }
    }
}

#[test]
fn estimated_tokens_counts_json_chars_over_four() {
    let body = json!({"model": "ignored-model-name", "system": "abcd",
                      "messages": [{"role": "user", "content": "hi"}]});
    // `"abcd"` is 6 chars, `[{"content":"hi","role":"user"}]` 32: 38 / 4 = 9 and 32 / 4 = 8.
    assert_eq!(estimated_tokens(WireApi::Anthropic, &body), 9);
    assert_eq!(estimated_tokens(WireApi::OpenAi, &body), 8);
}

#[test]
fn split_chunks_keeps_char_boundaries() {
    assert_eq!(split_chunks("", 3), Vec::<&str>::new());
    assert_eq!(split_chunks("ab", 3), ["a", "b"]);
    assert_eq!(split_chunks("abcdefg", 3), ["abc", "def", "g"]);
    assert_eq!(split_chunks("äöü€", 2), ["äö", "ü€"]);
}
