//! The Anthropic route over a real socket.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::test_support::{anthropic_body, parse_sse, post_anthropic, read_until_end, server};
use super::{Turn, WireApi};

fn names(events: &[super::test_support::SseEvent]) -> Vec<&str> {
    events
        .iter()
        .map(|event| event.name.as_deref().unwrap_or("<none>"))
        .collect()
}

#[tokio::test]
async fn text_turn_streams_the_full_event_sequence() {
    let server = server().await;
    server.push(Turn::reply("Hello there, world").usage(10, 5, 2, 3));
    let response = post_anthropic(&server, &anthropic_body(json!([{"role": "user", "content": "hi"}]))).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream; charset=utf-8");
    assert!(response.headers().contains_key("request-id"));
    let events = parse_sse(&response.text().await.unwrap());
    assert_eq!(
        names(&events),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let start = events[0].json();
    assert_eq!(start["message"]["model"], "claude-test");
    assert_eq!(
        start["message"]["usage"],
        json!({"input_tokens": 10, "cache_creation_input_tokens": 3,
               "cache_read_input_tokens": 2, "output_tokens": 1})
    );
    assert_eq!(events[2].json()["content_block"], json!({"type": "text", "text": ""}));
    let text: String = events[3..6]
        .iter()
        .map(|event| event.json()["delta"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, "Hello there, world");
    assert_eq!(
        events[7].json(),
        json!({"type": "message_delta",
               "delta": {"stop_reason": "end_turn", "stop_sequence": null},
               "usage": {"output_tokens": 5}})
    );
    let recorded = server.requests();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].api, Some(WireApi::Anthropic));
    assert_eq!(recorded[0].path, "/v1/messages");
    assert_eq!(recorded[0].header("X-Api-Key"), Some("sk-ant-test"));
    assert_eq!(recorded[0].turn_index, Some(0));
    assert!(recorded[0].is_streaming());
}

#[tokio::test]
async fn thinking_and_tool_call_arguments_reassemble() {
    let server = server().await;
    let arguments = json!({"command": "echo hi", "timeout": 30, "env": {"A": "b"}});
    server.push(
        Turn::new()
            .thinking("I should run it", Some("sig-1"))
            .text("Running.")
            .tool_call("call_1", "bash", arguments.clone()),
    );
    let response = post_anthropic(&server, &anthropic_body(json!([{"role": "user", "content": "go"}]))).await;
    let events = parse_sse(&response.text().await.unwrap());
    let starts: Vec<Value> = events
        .iter()
        .filter(|event| event.name.as_deref() == Some("content_block_start"))
        .map(|event| event.json()["content_block"].clone())
        .collect();
    assert_eq!(
        starts,
        [
            json!({"type": "thinking", "thinking": ""}),
            json!({"type": "text", "text": ""}),
            json!({"type": "tool_use", "id": "call_1", "name": "bash", "input": {}}),
        ]
    );
    let deltas: Vec<Value> = events
        .iter()
        .filter(|event| event.name.as_deref() == Some("content_block_delta"))
        .map(|event| event.json())
        .collect();
    let of_type = |kind: &str, field: &str| -> Vec<String> {
        deltas
            .iter()
            .filter(|delta| delta["delta"]["type"] == kind)
            .map(|delta| delta["delta"][field].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(of_type("thinking_delta", "thinking").concat(), "I should run it");
    assert_eq!(of_type("signature_delta", "signature"), ["sig-1"]);
    let pieces = of_type("input_json_delta", "partial_json");
    assert!(
        pieces.iter().filter(|piece| !piece.is_empty()).count() >= 2,
        "arguments split into several chunks: {pieces:?}"
    );
    let reassembled: Value = serde_json::from_str(&pieces.concat()).unwrap();
    assert_eq!(reassembled, arguments);
    let stop = events.iter().find(|e| e.name.as_deref() == Some("message_delta"));
    assert_eq!(stop.unwrap().json()["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn unpaired_tool_use_gets_400_and_keeps_the_turn() {
    let server = server().await;
    server.push(Turn::reply("ok"));
    let unpaired = anthropic_body(json!([
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": "never mind"},
    ]));
    let response = post_anthropic(&server, &unpaired).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately \
             after: toolu_1."
        ),
        "{message}"
    );
    assert_eq!(server.pending_turns(), 1);

    let paired = anthropic_body(json!([
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}]},
    ]));
    assert_eq!(post_anthropic(&server, &paired).await.status(), 200);
    let recorded = server.requests();
    assert_eq!(recorded[0].turn_index, None);
    assert_eq!(recorded[0].rejection.as_ref().unwrap().message, message);
    assert_eq!(recorded[1].turn_index, Some(0));
    assert_eq!(recorded[1].tool_outputs(), [("toolu_1".to_owned(), "a.txt".to_owned())]);
}

#[tokio::test]
async fn rate_limited_turn_carries_retry_after() {
    let server = server().await;
    server.push(Turn::rate_limited(7));
    let response = post_anthropic(&server, &anthropic_body(json!([{"role": "user", "content": "hi"}]))).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "7");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error");
}

#[tokio::test]
async fn error_529_is_an_overloaded_error() {
    let server = server().await;
    server.push(Turn::error(529, "Overloaded"));
    let response = post_anthropic(&server, &anthropic_body(json!([{"role": "user", "content": "hi"}]))).await;
    assert_eq!(response.status().as_u16(), 529);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
}

#[tokio::test]
async fn drop_after_closes_without_message_stop() {
    let server = server().await;
    server.push(Turn::reply("a long enough answer").drop_after(4));
    let response = post_anthropic(&server, &anthropic_body(json!([{"role": "user", "content": "hi"}]))).await;
    assert_eq!(response.status(), 200);
    let (text, failed) = read_until_end(response).await;
    assert!(failed, "the connection is aborted mid-body");
    assert_eq!(
        names(&parse_sse(&text)),
        ["message_start", "ping", "content_block_start", "content_block_delta"]
    );
}

#[tokio::test]
async fn end_after_ends_the_body_cleanly_without_message_stop() {
    let server = server().await;
    server.push(Turn::reply("answer").end_after(3));
    let response = post_anthropic(&server, &anthropic_body(json!([{"role": "user", "content": "hi"}]))).await;
    let (text, failed) = read_until_end(response).await;
    assert!(!failed);
    assert_eq!(
        names(&parse_sse(&text)),
        ["message_start", "ping", "content_block_start"]
    );
}

#[tokio::test]
async fn fail_after_sends_an_error_event() {
    let server = server().await;
    server.push(Turn::reply("answer").fail_after(2, "Overloaded"));
    let response = post_anthropic(&server, &anthropic_body(json!([{"role": "user", "content": "hi"}]))).await;
    let events = parse_sse(&response.text().await.unwrap());
    assert_eq!(names(&events), ["message_start", "ping", "error"]);
    assert_eq!(
        events[2].json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
}

#[tokio::test]
async fn context_window_rejects_a_long_prompt_without_using_a_turn() {
    let server = server().await;
    server.push(Turn::reply("ok"));
    server.set_context_window(Some(10));
    let body = anthropic_body(json!([{"role": "user", "content": "x".repeat(200)}]));
    let tokens = super::estimated_tokens(WireApi::Anthropic, &body);
    let response = post_anthropic(&server, &body).await;
    assert_eq!(response.status(), 400);
    let body_json: Value = response.json().await.unwrap();
    assert_eq!(
        body_json,
        json!({"type": "error", "error": {"type": "invalid_request_error",
               "message": format!("prompt is too long: {tokens} tokens > 10 maximum")}})
    );
    assert_eq!(server.pending_turns(), 1);
    server.set_context_window(None);
    assert_eq!(post_anthropic(&server, &body).await.status(), 200);
}

#[tokio::test]
async fn missing_api_key_and_version_are_refused() {
    let server = server().await;
    server.push(Turn::reply("ok"));
    let body = anthropic_body(json!([{"role": "user", "content": "hi"}]));
    let url = format!("{}/v1/messages", server.anthropic_base_url());
    let client = super::test_support::client();
    let no_key = client
        .post(&url)
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(no_key.status(), 401);
    let error: Value = no_key.json().await.unwrap();
    assert_eq!(error["error"]["type"], "authentication_error");
    let no_version = client
        .post(&url)
        .header("x-api-key", "k")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(no_version.status(), 400);
    assert_eq!(server.pending_turns(), 1);
}

#[tokio::test]
async fn thinking_signatures_must_be_ones_the_server_issued() {
    let server = server().await;
    server.push(Turn::new().thinking("hmm", Some("sig-issued")).text("done"));
    server.push(Turn::reply("again"));
    let first = anthropic_body(json!([{"role": "user", "content": "hi"}]));
    assert_eq!(post_anthropic(&server, &first).await.status(), 200);
    let history = |signature: &str| {
        anthropic_body(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": signature},
                {"type": "text", "text": "done"}]},
            {"role": "user", "content": "and now?"},
        ]))
    };
    let forged = post_anthropic(&server, &history("sig-from-elsewhere")).await;
    assert_eq!(forged.status(), 400);
    assert_eq!(post_anthropic(&server, &history("sig-issued")).await.status(), 200);
}

#[tokio::test]
async fn non_streaming_request_gets_a_message_body() {
    let server = server().await;
    server.push(
        Turn::new()
            .text("hi")
            .tool_call("call_1", "bash", json!({"command": "ls"})),
    );
    let mut body = anthropic_body(json!([{"role": "user", "content": "hi"}]));
    body["stream"] = json!(false);
    let response = post_anthropic(&server, &body).await;
    let message: Value = response.json().await.unwrap();
    assert_eq!(message["type"], "message");
    assert_eq!(
        message["content"],
        json!([{"type": "text", "text": "hi"},
               {"type": "tool_use", "id": "call_1", "name": "bash", "input": {"command": "ls"}}])
    );
    assert_eq!(message["stop_reason"], "tool_use");
}

#[tokio::test]
async fn delay_holds_back_the_response_headers() {
    let server = server().await;
    server.push(Turn::reply("late").delay(Duration::from_millis(200)));
    let started = std::time::Instant::now();
    let response = post_anthropic(&server, &anthropic_body(json!([{"role": "user", "content": "hi"}]))).await;
    assert_eq!(response.status(), 200);
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[tokio::test]
async fn a_responder_answers_before_the_queue_and_passes_on_what_it_does_not_take() {
    let server = server().await;
    server.push(Turn::reply("from the queue"));
    server.set_responder(|api, body| {
        assert_eq!(api, WireApi::Anthropic);
        let first = body["messages"][0]["content"].as_str()?;
        first
            .starts_with("summarise")
            .then(|| Turn::reply("from the responder"))
    });
    let texts = |events: &[super::test_support::SseEvent]| -> String {
        events
            .iter()
            .filter_map(|e| e.json()["delta"]["text"].as_str().map(str::to_owned))
            .collect()
    };
    let summary = anthropic_body(json!([{"role": "user", "content": "summarise this"}]));
    let response = post_anthropic(&server, &summary).await;
    assert_eq!(texts(&parse_sse(&response.text().await.unwrap())), "from the responder");
    assert_eq!(server.pending_turns(), 1, "the queue was not used");
    let other = anthropic_body(json!([{"role": "user", "content": "hello"}]));
    let response = post_anthropic(&server, &other).await;
    assert_eq!(texts(&parse_sse(&response.text().await.unwrap())), "from the queue");
    assert_eq!(server.pending_turns(), 0);
}
