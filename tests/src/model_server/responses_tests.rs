//! The Responses format of the model server: the event stream of a turn, encrypted reasoning
//! handed out and checked when it comes back, failed and incomplete endings, strict input checks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::test_support::{client, parse_sse, server};
use super::{ModelServer, Turn};

async fn post(server: &ModelServer, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/responses", server.openai_base_url()))
        .bearer_auth("sk-test")
        .json(body)
        .send()
        .await
        .expect("request reaches the server")
}

fn body(model: &str, input: Value) -> Value {
    json!({
        "model": model,
        "input": input,
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
    })
}

fn ask() -> Value {
    json!([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}])
}

#[tokio::test]
async fn a_turn_streams_as_output_items_with_encrypted_reasoning() {
    let server = server().await;
    server.push(
        Turn::new()
            .thinking("Plan.", None)
            .text("Hello.")
            .tool_call("call_1", "bash", json!({"command": "ls"}))
            .usage(10, 5, 4, 0),
    );
    let response = post(&server, &body("gpt-5", ask())).await;
    assert_eq!(response.status(), 200);
    let events = parse_sse(&response.text().await.unwrap());
    let kinds: Vec<&str> = events.iter().map(|e| e.name.as_deref().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"response.created"));
    assert_eq!(kinds.last(), Some(&"response.completed"));
    for (index, event) in events.iter().enumerate() {
        assert_eq!(event.json()["type"], event.name.as_deref().unwrap());
        assert_eq!(event.json()["sequence_number"], index);
    }
    let done: Vec<Value> = events
        .iter()
        .filter(|e| e.name.as_deref() == Some("response.output_item.done"))
        .map(|e| e.json()["item"].clone())
        .collect();
    assert_eq!(done[0]["type"], "reasoning");
    assert_eq!(done[0]["encrypted_content"], "enc_testkit_0000_0");
    assert_eq!(done[1]["content"][0]["text"], "Hello.");
    assert_eq!(done[2]["call_id"], "call_1");
    assert_eq!(done[2]["arguments"], "{\"command\":\"ls\"}");
    let usage = &events.last().unwrap().json()["response"]["usage"];
    assert_eq!(usage["input_tokens"], 14);
    assert_eq!(usage["input_tokens_details"]["cached_tokens"], 4);

    // The reasoning goes back with the call's output: accepted for the same model only.
    let mut input = ask().as_array().unwrap().clone();
    input.push(done[0].clone());
    input.push(json!({"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": "{}", "id": "fc_testkit_0000_2"}));
    input.push(json!({"type": "function_call_output", "call_id": "call_1", "output": "a.txt"}));
    server.push(Turn::reply("ok"));
    assert_eq!(post(&server, &body("gpt-5", json!(input.clone()))).await.status(), 200);
    let foreign = post(&server, &body("o4-mini", json!(input.clone()))).await;
    assert_eq!(foreign.status(), 400);
    let error = foreign.json::<Value>().await.unwrap();
    assert_eq!(error["error"]["code"], "invalid_encrypted_content");
    let mut bare = input.clone();
    bare[1].as_object_mut().unwrap().remove("encrypted_content");
    let rejected = post(&server, &body("gpt-5", json!(bare)))
        .await
        .json::<Value>()
        .await
        .unwrap();
    assert!(
        rejected["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Items are not persisted"),
        "{rejected}"
    );
    assert_eq!(server.pending_turns(), 0);
}

#[tokio::test]
async fn failed_and_incomplete_turns_end_with_their_status() {
    let server = server().await;
    server.push(Turn::reply("partial").failed("The model crashed."));
    server.push(Turn::reply("cut").length());
    let failed = parse_sse(&post(&server, &body("gpt-5", ask())).await.text().await.unwrap());
    let last = failed.last().unwrap().json();
    assert_eq!(last["type"], "response.failed");
    assert_eq!(
        last["response"]["error"],
        json!({"code": "server_error", "message": "The model crashed."})
    );
    let incomplete = parse_sse(&post(&server, &body("gpt-5", ask())).await.text().await.unwrap());
    let last = incomplete.last().unwrap().json();
    assert_eq!(last["type"], "response.incomplete");
    assert_eq!(last["response"]["incomplete_details"]["reason"], "max_output_tokens");
}

#[tokio::test]
async fn malformed_inputs_are_rejected_without_using_a_turn() {
    let server = server().await;
    server.push(Turn::reply("unused"));
    let call = json!({"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}"});
    let cases = [
        (json!({"model": "m", "messages": []}), "moved to 'input'"),
        (body("m", json!([call])), "No tool output found for function call c1"),
        (
            body(
                "m",
                json!([{"type": "function_call_output", "call_id": "c9", "output": "x"}]),
            ),
            "No tool call found",
        ),
        (
            body(
                "m",
                json!([{"type": "function_call", "call_id": "c1", "name": "bash", "arguments": {}}, {"type": "function_call_output", "call_id": "c1", "output": "x"}]),
            ),
            "expected a string",
        ),
        (
            body(
                "m",
                json!([{"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}", "id": "call_x"}, {"type": "function_call_output", "call_id": "c1", "output": "x"}]),
            ),
            "begins with 'fc'",
        ),
        (
            json!({"model": "m", "input": ask(), "tools": [{"type": "function", "function": {"name": "bash"}}]}),
            "tools[0].name",
        ),
        (
            json!({"model": "m", "input": ask(), "reasoning": {"effort": "max"}}),
            "reasoning.effort",
        ),
    ];
    for (request, expected) in cases {
        let response = post(&server, &request).await;
        assert_eq!(response.status(), 400, "{request}");
        let error = response.json::<Value>().await.unwrap();
        assert!(
            error["error"]["message"].as_str().unwrap().contains(expected),
            "{error}"
        );
    }
    assert_eq!(server.pending_turns(), 1);
    let transcript = server.requests()[1].transcript();
    assert_eq!(transcript.run_calls()[0].id, "c1");
}
