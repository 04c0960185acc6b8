//! The OpenAI route over a real socket.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::test_support::{SseEvent, openai_body, parse_sse, post_openai, read_until_end, server};
use super::{Turn, WireApi};

/// The JSON chunks before `[DONE]`, asserting `[DONE]` ends the stream.
fn chunks_until_done(events: &[SseEvent]) -> Vec<Value> {
    let (last, chunks) = events.split_last().expect("events");
    assert_eq!(last.data, "[DONE]");
    assert!(events.iter().all(|event| event.name.is_none()));
    chunks.iter().map(SseEvent::json).collect()
}

#[tokio::test]
async fn text_turn_streams_chunks_usage_and_done() {
    let server = server().await;
    server.push(Turn::reply("Hello there, world").usage(10, 5, 2, 0));
    let response = post_openai(&server, &openai_body(json!([{"role": "user", "content": "hi"}]))).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("x-request-id"));
    let chunks = chunks_until_done(&parse_sse(&response.text().await.unwrap()));
    assert_eq!(chunks.len(), 6, "{chunks:#?}");
    assert!(chunks.iter().all(|c| c["object"] == "chat.completion.chunk"));
    assert!(chunks.iter().all(|c| c["model"] == "gpt-test"));
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks[1..4]
        .iter()
        .map(|c| c["choices"][0]["delta"]["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, "Hello there, world");
    assert_eq!(chunks[4]["choices"][0]["finish_reason"], "stop");
    assert_eq!(chunks[4]["usage"], Value::Null);
    assert_eq!(chunks[5]["choices"], json!([]));
    assert_eq!(
        chunks[5]["usage"],
        json!({"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17,
               "prompt_tokens_details": {"cached_tokens": 2}})
    );
}

#[tokio::test]
async fn without_include_usage_there_is_no_usage_chunk() {
    let server = server().await;
    server.push(Turn::reply("hi"));
    let mut body = openai_body(json!([{"role": "user", "content": "hi"}]));
    body.as_object_mut().unwrap().remove("stream_options");
    let response = post_openai(&server, &body).await;
    let chunks = chunks_until_done(&parse_sse(&response.text().await.unwrap()));
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    assert_eq!(chunks.last().unwrap()["choices"][0]["finish_reason"], "stop");
}

#[tokio::test]
async fn reasoning_and_tool_call_arguments_reassemble() {
    let server = server().await;
    let first = json!({"command": "echo hi"});
    let second = json!({"path": "/tmp/a.txt", "lines": [1, 2, 3]});
    server.push(
        Turn::new()
            .thinking("let me think", Some("ignored"))
            .tool_call("call_1", "bash", first.clone())
            .tool_call("call_2", "read", second.clone()),
    );
    let response = post_openai(&server, &openai_body(json!([{"role": "user", "content": "go"}]))).await;
    let chunks = chunks_until_done(&parse_sse(&response.text().await.unwrap()));
    let deltas: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"].get(0).map(|choice| &choice["delta"]))
        .collect();
    let reasoning: String = deltas.iter().filter_map(|d| d["reasoning_content"].as_str()).collect();
    assert_eq!(reasoning, "let me think");
    let mut calls: Vec<(String, String, String, usize)> = Vec::new();
    for delta in &deltas {
        let Some(list) = delta["tool_calls"].as_array() else {
            continue;
        };
        for call in list {
            let index = call["index"].as_u64().unwrap() as usize;
            if let Some(id) = call["id"].as_str() {
                assert_eq!(call["type"], "function");
                assert_eq!(calls.len(), index);
                let name = call["function"]["name"].as_str().unwrap().to_owned();
                calls.push((id.to_owned(), name, String::new(), 0));
            }
            let piece = call["function"]["arguments"].as_str().unwrap();
            calls[index].2.push_str(piece);
            calls[index].3 += usize::from(!piece.is_empty());
        }
    }
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0].0.as_str(), calls[0].1.as_str()), ("call_1", "bash"));
    assert_eq!((calls[1].0.as_str(), calls[1].1.as_str()), ("call_2", "read"));
    assert_eq!(serde_json::from_str::<Value>(&calls[0].2).unwrap(), first);
    assert_eq!(serde_json::from_str::<Value>(&calls[1].2).unwrap(), second);
    assert!(calls.iter().all(|call| call.3 >= 2), "arguments split: {calls:?}");
    let finish = chunks.iter().find_map(|c| c["choices"][0]["finish_reason"].as_str());
    assert_eq!(finish, Some("tool_calls"));
}

#[tokio::test]
async fn unanswered_tool_call_gets_400_and_keeps_the_turn() {
    let server = server().await;
    server.push(Turn::reply("ok"));
    let call = json!({"id": "call_1", "type": "function",
                      "function": {"name": "bash", "arguments": "{}"}});
    let unanswered = openai_body(json!([
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "user", "content": "never mind"},
    ]));
    let response = post_openai(&server, &unanswered).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("The following tool_call_ids did not have response messages: call_1"),
        "{message}"
    );
    assert_eq!(server.pending_turns(), 1);
    let answered = openai_body(json!([
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "done"},
    ]));
    assert_eq!(post_openai(&server, &answered).await.status(), 200);
    let recorded = server.requests();
    assert!(recorded[0].is_rejected());
    assert_eq!(recorded[1].turn_index, Some(0));
    assert_eq!(recorded[1].tool_outputs(), [("call_1".to_owned(), "done".to_owned())]);
}

#[tokio::test]
async fn rate_limited_turn_carries_retry_after() {
    let server = server().await;
    server.push(Turn::rate_limited(3));
    let response = post_openai(&server, &openai_body(json!([{"role": "user", "content": "hi"}]))).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "3");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
}

#[tokio::test]
async fn drop_after_closes_without_done() {
    let server = server().await;
    server.push(Turn::reply("a long enough answer").drop_after(2));
    let response = post_openai(&server, &openai_body(json!([{"role": "user", "content": "hi"}]))).await;
    let (text, failed) = read_until_end(response).await;
    assert!(failed, "the connection is aborted mid-body");
    let events = parse_sse(&text);
    assert_eq!(events.len(), 2);
    assert!(events.iter().all(|event| event.data != "[DONE]"));
}

#[tokio::test]
async fn context_window_rejection_uses_the_openai_shape() {
    let server = server().await;
    server.push(Turn::reply("ok"));
    server.set_context_window(Some(5));
    let body = openai_body(json!([{"role": "user", "content": "y".repeat(100)}]));
    let tokens = super::estimated_tokens(WireApi::OpenAi, &body);
    let response = post_openai(&server, &body).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(
        error,
        json!({"error": {
            "message": format!("This model's maximum context length is 5 tokens. However, your \
                                messages resulted in {tokens} tokens."),
            "type": "invalid_request_error",
            "param": null,
            "code": "context_length_exceeded",
        }})
    );
    assert_eq!(server.pending_turns(), 1);
}

#[tokio::test]
async fn missing_bearer_is_refused_unless_keys_are_off() {
    let server = server().await;
    server.push(Turn::reply("ok"));
    let url = format!("{}/chat/completions", server.openai_base_url());
    let body = openai_body(json!([{"role": "user", "content": "hi"}]));
    let client = super::test_support::client();
    let refused = client.post(&url).json(&body).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    server.set_require_api_key(false);
    let accepted = client.post(&url).json(&body).send().await.unwrap();
    assert_eq!(accepted.status(), 200);
}

#[tokio::test]
async fn non_streaming_request_gets_a_completion_body() {
    let server = server().await;
    server.push(Turn::new().thinking("hmm", None).text("hi").length());
    let body = json!({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]});
    let completion: Value = post_openai(&server, &body).await.json().await.unwrap();
    assert_eq!(completion["object"], "chat.completion");
    assert_eq!(
        completion["choices"][0]["message"],
        json!({"role": "assistant", "content": "hi", "refusal": null, "reasoning_content": "hmm"})
    );
    assert_eq!(completion["choices"][0]["finish_reason"], "length");
}
