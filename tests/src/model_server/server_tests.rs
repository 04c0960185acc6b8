//! Behaviour shared by both routes: turn order, recording, waiting, missing turns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::test_support::{anthropic_body, client, openai_body, parse_sse, post_anthropic, post_openai, server};
use super::{ModelServer, RecordedRequest, Turn, WaitTimeout, WireApi};

#[test]
fn public_types_are_send_sync_static() {
    fn check<T: Send + Sync + 'static>() {}
    check::<ModelServer>();
    check::<Turn>();
    check::<RecordedRequest>();
    check::<WaitTimeout>();
}

#[tokio::test]
async fn turns_are_taken_in_push_order_across_formats() {
    let server = server().await;
    server.push_all([Turn::reply("first"), Turn::reply("second")]);
    let user = json!([{"role": "user", "content": "hi"}]);
    let openai = post_openai(&server, &openai_body(user.clone())).await;
    let text: String = parse_sse(&openai.text().await.unwrap())
        .iter()
        .filter(|event| event.data != "[DONE]")
        .filter_map(|event| {
            event.json()["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, "first");
    let anthropic = post_anthropic(&server, &anthropic_body(user)).await;
    let text: String = parse_sse(&anthropic.text().await.unwrap())
        .iter()
        .filter_map(|event| event.json()["delta"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "second");
    let apis: Vec<(Option<WireApi>, Option<usize>)> = server
        .requests()
        .iter()
        .map(|request| (request.api, request.turn_index))
        .collect();
    assert_eq!(
        apis,
        [(Some(WireApi::OpenAi), Some(0)), (Some(WireApi::Anthropic), Some(1))]
    );
}

#[tokio::test]
async fn no_turn_left_is_an_obvious_500() {
    let server = server().await;
    let response = post_anthropic(&server, &anthropic_body(json!([{"role": "user", "content": "hi"}]))).await;
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "api_error");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("volcanic-testkit: no scripted turn left"),
        "{message}"
    );
    let response = post_openai(&server, &openai_body(json!([{"role": "user", "content": "hi"}]))).await;
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "server_error");
}

#[tokio::test]
async fn wait_for_requests_returns_once_enough_arrived() {
    let server = server().await;
    server.push(Turn::reply("ok"));
    let waiter = {
        let server = server.clone();
        tokio::spawn(async move { server.wait_for_requests(1, Duration::from_secs(5)).await })
    };
    post_openai(&server, &openai_body(json!([{"role": "user", "content": "hi"}]))).await;
    let requests = waiter.await.unwrap().unwrap();
    assert_eq!(requests.len(), 1);
    // The head arrived before the body was read and the request recorded.
    assert!(requests[0].first_byte <= requests[0].at);
    assert!(requests[0].at.duration_since(requests[0].first_byte) < Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn wait_for_requests_times_out_with_what_arrived() {
    let server = server().await;
    let error = server.wait_for_requests(1, Duration::from_secs(30)).await.unwrap_err();
    assert_eq!(error.wanted, 1);
    assert!(error.received.is_empty());
    assert_eq!(
        error.to_string(),
        "volcanic-testkit: waited 30s for 1 model requests, got 0"
    );
}

#[tokio::test]
async fn unknown_route_is_a_recorded_404() {
    let server = server().await;
    let response = client()
        .post(format!("{}/v1/embeddings", server.url()))
        .json(&json!({"model": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let recorded = server.requests();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].api, None);
    assert_eq!(recorded[0].path, "/v1/embeddings");
    assert_eq!(recorded[0].rejection.as_ref().unwrap().status, 404);
}

#[tokio::test]
async fn invalid_json_body_is_a_400_and_recorded_as_text() {
    let server = server().await;
    server.push(Turn::reply("ok"));
    let response = client()
        .post(format!("{}/chat/completions", server.openai_base_url()))
        .bearer_auth("k")
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let recorded = server.requests();
    assert_eq!(recorded[0].body, json!("{not json"));
    assert_eq!(server.pending_turns(), 1);
}

#[tokio::test]
async fn stall_after_keeps_the_stream_open() {
    let server = server().await;
    server.push(Turn::reply("answer").stall_after(1));
    let response = post_openai(&server, &openai_body(json!([{"role": "user", "content": "hi"}]))).await;
    let mut stream = futures::StreamExt::boxed(response.bytes_stream());
    let first = futures::StreamExt::next(&mut stream).await.unwrap().unwrap();
    assert!(first.starts_with(b"data: {"));
    let next = tokio::time::timeout(Duration::from_millis(300), futures::StreamExt::next(&mut stream)).await;
    assert!(next.is_err(), "nothing more arrives: {next:?}");
}

#[tokio::test]
async fn system_prompt_is_read_from_either_format() {
    let server = server().await;
    server.push_all([Turn::reply("a"), Turn::reply("b")]);
    let mut anthropic = anthropic_body(json!([{"role": "user", "content": "hi"}]));
    anthropic["system"] = json!([{"type": "text", "text": "Be brief."}]);
    post_anthropic(&server, &anthropic).await;
    let openai = openai_body(json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]));
    post_openai(&server, &openai).await;
    let prompts: Vec<Option<String>> = server.requests().iter().map(RecordedRequest::system_prompt).collect();
    assert_eq!(prompts, [Some("Be brief.".to_owned()), Some("Be brief.".to_owned())]);
}

#[tokio::test]
async fn a_responder_answers_interleaved_conversations_from_their_own_transcripts() {
    use super::Transcript;
    let server = server().await;
    server.set_responder(|api, body| {
        let t = Transcript::of(api, body);
        let asked = t.run_prompts().join(" + ");
        Some(if t.ends_with_tool_result() {
            Turn::reply(format!("done: {asked}"))
        } else if asked.contains("tool") {
            Turn::call(format!("call_{}", asked.len()), "bash", json!({"command": "true"}))
        } else {
            Turn::reply(format!("answer: {asked}"))
        })
    });
    let text_of = |sse: &str| -> String {
        parse_sse(sse)
            .iter()
            .filter_map(|event| event.json()["delta"]["text"].as_str().map(str::to_owned))
            .collect()
    };
    // Chat B's follow-ups arrive between chat A's tool call and its result.
    let a1 = anthropic_body(json!([{"role": "user", "content": "A uses a tool"}]));
    let response = post_anthropic(&server, &a1).await.text().await.unwrap();
    assert!(response.contains("tool_use"), "{response}");
    let b = anthropic_body(json!([{"role": "user", "content": "B one"}, {"role": "user", "content": "B two"}]));
    let response = post_anthropic(&server, &b).await.text().await.unwrap();
    assert_eq!(text_of(&response), "answer: B one + B two");
    let a2 = anthropic_body(json!([
        {"role": "user", "content": "A uses a tool"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call_13", "name": "bash", "input": {"command": "true"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_13", "content": "ok"}]},
    ]));
    let response = post_anthropic(&server, &a2).await.text().await.unwrap();
    assert_eq!(text_of(&response), "done: A uses a tool");
    assert_eq!(server.pending_turns(), 0);
    let recorded: Vec<Vec<String>> = server
        .requests()
        .iter()
        .map(|r| r.transcript().run_prompts().into_iter().map(str::to_owned).collect())
        .collect();
    assert_eq!(
        recorded,
        [vec!["A uses a tool"], vec!["B one", "B two"], vec!["A uses a tool"]]
    );
}

#[tokio::test]
async fn a_client_leaving_a_paced_stream_is_counted_and_a_finished_one_is_not() {
    let server = server().await;
    let user = json!([{"role": "user", "content": "hi"}]);
    server.push(Turn::reply("all of it"));
    let whole = post_anthropic(&server, &anthropic_body(user.clone())).await;
    assert!(whole.text().await.unwrap().contains("message_stop"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.streams_left(), 0, "read to the end");
    server.push(Turn::new().text("one").text("two").pace(Duration::from_secs(30)));
    let mut paced = post_anthropic(&server, &anthropic_body(user)).await;
    assert!(paced.chunk().await.unwrap().is_some(), "the first event comes at once");
    drop(paced);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while server.streams_left() == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(server.streams_left(), 1);
}
