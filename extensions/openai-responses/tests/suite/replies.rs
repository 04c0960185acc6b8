//! `OpenAiResponsesProvider` against the testkit's scripted model server, successful replies:
//! streamed text, reasoning with encrypted content replayed statelessly, parallel function calls
//! and their outputs, images in, usage and cost. The server checks every request as the real API
//! does (auth, input items, call/output pairing, reasoning it issued to this model).

use pretty_assertions::assert_eq;
use serde_json::json;
use volcanic_abstractions::{
    AssistantContent, AssistantMessageEvent, ImageContent, Message, Provider, StopReason, StreamOptions, TextContent,
    ThinkingLevel, UserBody, UserContent, UserMessage,
};
use volcanic_testkit::model_server::Turn;

use super::support::{ask, collect, done, model, model_named, options, provider, result_for, server};

#[tokio::test]
async fn text_streams_in_deltas_and_ends_with_done_and_cost() {
    let server = server().await;
    server.push(Turn::reply("Hello from the Responses API.").usage(1000, 200, 600, 0));
    let events = collect(provider().stream(&model(&server.openai_base_url()), ask("hi"), options())).await;
    let message = done(&events);
    assert_eq!(message.text(), "Hello from the Responses API.");
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.api, "openai-responses");
    assert_eq!(message.response_id.as_deref(), Some("resp_testkit_0000"));
    let deltas = events
        .iter()
        .filter(|e| matches!(e, AssistantMessageEvent::TextDelta { .. }))
        .count();
    assert!(deltas > 1, "text arrives in several deltas: {events:?}");
    assert_eq!(
        (message.usage.input, message.usage.cache_read, message.usage.output),
        (1000, 600, 200)
    );
    let expected = (1000.0 * 1.25 + 600.0 * 0.125 + 200.0 * 10.0) / 1e6;
    assert!(
        (message.usage.cost.total - expected).abs() < 1e-12,
        "{:?}",
        message.usage.cost
    );

    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(request.system_prompt().as_deref(), Some("You are a test."));
    assert_eq!(request.body["store"], false);
    assert_eq!(request.body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        request.body["tools"][0],
        json!({"type": "function", "name": "bash", "description": "Run a shell command", "strict": false,
               "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}})
    );
}

#[tokio::test]
async fn reasoning_comes_back_encrypted_and_is_replayed_with_parallel_call_outputs() {
    let server = server().await;
    server.push(
        Turn::new()
            .thinking("I should list both folders.", None)
            .tool_call("call_a", "bash", json!({"command": "ls a"}))
            .tool_call("call_b", "bash", json!({"command": "ls b"})),
    );
    server.push(Turn::reply("Both are empty."));
    let provider = provider();
    let model = model(&server.openai_base_url());
    let opts = StreamOptions {
        thinking_level: ThinkingLevel::Medium,
        ..options()
    };
    let mut context = ask("list a and b");
    let first = done(&collect(provider.stream(&model, context.clone(), opts.clone())).await);
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    let AssistantContent::Thinking(thinking) = &first.content[0] else {
        panic!("reasoning first: {first:?}");
    };
    assert_eq!(thinking.thinking, "I should list both folders.");
    assert!(
        thinking
            .thinking_signature
            .as_deref()
            .unwrap()
            .contains("enc_testkit_0000_0")
    );
    let calls: Vec<_> = first.tool_calls().cloned().collect();
    let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_a|fc_testkit_0000_1", "call_b|fc_testkit_0000_2"]);
    assert_eq!(calls[1].arguments, json!({"command": "ls b"}));

    context.messages.push(Message::Assistant(first.clone()));
    for call in &calls {
        context.messages.push(result_for(call, "(empty)"));
    }
    let second = done(&collect(provider.stream(&model, context, opts)).await);
    assert_eq!(second.text(), "Both are empty.");

    let request = &server.requests()[1];
    assert!(!request.is_rejected(), "{:?}", request.rejection);
    assert_eq!(
        request.body["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
    let input = request.messages();
    assert_eq!(input[1]["type"], "reasoning");
    assert_eq!(input[1]["encrypted_content"], "enc_testkit_0000_0");
    assert_eq!(input[2]["id"], "fc_testkit_0000_1");
    assert_eq!(
        request.tool_outputs(),
        [
            ("call_a".to_owned(), "(empty)".to_owned()),
            ("call_b".to_owned(), "(empty)".to_owned())
        ]
    );
}

#[tokio::test]
async fn another_models_reasoning_is_not_replayed_and_would_be_rejected() {
    let server = server().await;
    server.push(Turn::new().thinking("Thinking on gpt-5.", None).text("First."));
    server.push(Turn::reply("Second."));
    let provider = provider();
    let gpt5 = model_named("gpt-5", &server.openai_base_url());
    let mut context = ask("hi");
    let first = done(&collect(provider.stream(&gpt5, context.clone(), options())).await);
    context.messages.push(Message::Assistant(first.clone()));
    context.messages.push(Message::user_text("again", 2));

    // Straight to another model (no normaliser in between): the provider leaves it out.
    let mini = model_named("gpt-5-mini", &server.openai_base_url());
    let second = done(&collect(provider.stream(&mini, context.clone(), options())).await);
    assert_eq!(second.text(), "Second.");
    let sent = &server.requests()[1];
    assert!(
        sent.messages().iter().all(|item| item["type"] != "reasoning"),
        "{:?}",
        sent.body
    );

    // Sent anyway, the server refuses it as OpenAI does: its encryption is bound to gpt-5.
    let mut forged = sent.body.clone();
    let item: serde_json::Value = match &first.content[0] {
        AssistantContent::Thinking(t) => serde_json::from_str(t.thinking_signature.as_deref().unwrap()).unwrap(),
        other => panic!("{other:?}"),
    };
    forged["input"].as_array_mut().unwrap().insert(1, item);
    let response = reqwest::Client::new()
        .post(format!("{}/responses", server.openai_base_url()))
        .bearer_auth("sk-test")
        .json(&forged)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_encrypted_content", "{body}");
}

#[tokio::test]
async fn images_go_in_as_input_images() {
    let server = server().await;
    server.push(Turn::reply("A red dot."));
    let mut context = ask("");
    context.messages = vec![Message::User(UserMessage {
        content: UserBody::Blocks(vec![
            UserContent::Text(TextContent {
                text: "What is this?".into(),
                text_signature: None,
            }),
            UserContent::Image(ImageContent {
                data: "iVBORw0KGgo=".into(),
                mime_type: "image/png".into(),
            }),
        ]),
        timestamp: 1,
    })];
    let message = done(&collect(provider().stream(&model(&server.openai_base_url()), context, options())).await);
    assert_eq!(message.text(), "A red dot.");
    let request = &server.requests()[0];
    assert_eq!(
        request.messages()[0]["content"][1],
        json!({"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"})
    );
}
