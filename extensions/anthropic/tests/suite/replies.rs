//! `AnthropicProvider` against the testkit's scripted model server, successful replies: text,
//! thinking, tool calls and their results, usage and cost, payload hook, transcript mapping.
//! The server checks every request as the real API does (auth, body, tool pairing).

use std::sync::Arc;

use futures::FutureExt;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use volcanic_abstractions::{
    AssistantContent, AssistantMessageEvent, Cost, Message, Provider, StopReason, ThinkingLevel, ToolCall, Usage,
};
use volcanic_anthropic::Messages;
use volcanic_provider_support::testing::{self, contract};
use volcanic_testkit::model_server::Turn;

use super::support::{DIALECT, ask, collect, done, model, options, provider, result_for, server};

#[tokio::test]
async fn text_reply_streams_and_ends_with_done() {
    let server = server().await;
    server.push(Turn::reply("Hello from the scripted model."));
    let events = collect(provider().stream(&model(&server.anthropic_base_url()), ask("hi"), options())).await;
    let message = done(&events);
    assert_eq!(message.text(), "Hello from the scripted model.");
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.api, "anthropic-messages");
    assert_eq!(message.provider, "anthropic");
    assert!(message.response_id.is_some());
    let deltas = events
        .iter()
        .filter(|e| matches!(e, AssistantMessageEvent::TextDelta { .. }))
        .count();
    assert!(deltas > 1, "text arrives in several deltas: {events:?}");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert!(request.is_streaming());
    assert_eq!(request.system_prompt().as_deref(), Some("You are a test."));
    assert_eq!(request.body["system"][0]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(
        request.body["tools"][0],
        json!({
            "name": "bash",
            "description": "Run a shell command",
            "input_schema": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        })
    );
}

#[tokio::test]
async fn thinking_is_streamed_and_its_signature_accepted_on_the_next_call() {
    let server = server().await;
    server.push(
        Turn::new()
            .thinking("Let me think about this.", Some("sig-testkit-1"))
            .text("Four."),
    );
    server.push(Turn::reply("Yes, still four."));
    let provider = provider();
    let model = model(&server.anthropic_base_url());
    let options = || volcanic_abstractions::StreamOptions {
        thinking_level: ThinkingLevel::Low,
        ..options()
    };
    let events = collect(provider.stream(&model, ask("2+2?"), options())).await;
    let first = done(&events);
    assert_eq!(
        first.content[0],
        AssistantContent::Thinking(volcanic_abstractions::ThinkingContent {
            thinking: "Let me think about this.".into(),
            thinking_signature: Some("sig-testkit-1".into()),
            redacted: None,
        })
    );
    assert!(events.iter().any(|e| matches!(
        e,
        AssistantMessageEvent::ThinkingEnd { signature: Some(s), .. } if s == "sig-testkit-1"
    )));
    let request = &server.requests()[0];
    assert_eq!(
        request.body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(request.body["max_tokens"], json!(64_000));

    let mut context = ask("2+2?");
    context.messages.push(Message::Assistant(first));
    context.messages.push(Message::user_text("Sure?", 2));
    let events = collect(provider.stream(&model, context, options())).await;
    assert_eq!(done(&events).text(), "Yes, still four.");
    let second = &server.requests()[1];
    assert!(!second.is_rejected(), "{:?}", second.rejection);
    assert_eq!(
        second.messages()[1]["content"][0],
        json!({"type": "thinking", "thinking": "Let me think about this.", "signature": "sig-testkit-1"})
    );
}

#[tokio::test]
async fn tool_call_arguments_split_across_deltas_are_joined_and_the_result_goes_back() {
    let (second, _) = contract::tool_call_round_trip::<Messages>(&DIALECT, "toolu_01ABC").await;
    let last = second.messages().last().cloned().unwrap_or_default();
    assert_eq!(last["content"][0]["cache_control"], json!({"type": "ephemeral"}));
}

#[tokio::test]
async fn ids_the_api_rejects_are_mapped_alike_for_call_and_result() {
    let server = server().await;
    server.push(Turn::reply("ok"));
    let call = ToolCall {
        id: "call_1|fc_abc.def".into(),
        name: "bash".into(),
        arguments: json!({"command": "ls"}),
        thought_signature: None,
    };
    let mut assistant = volcanic_abstractions::AssistantMessage::empty("openai-responses", "openai", "gpt-5", 2);
    assistant.content = vec![AssistantContent::ToolCall(call.clone())];
    assistant.stop_reason = StopReason::ToolUse;
    let mut context = ask("list");
    context.messages.push(Message::Assistant(assistant));
    context.messages.push(result_for(&call, "a.rs"));
    let events = collect(provider().stream(&model(&server.anthropic_base_url()), context, options())).await;
    assert_eq!(done(&events).text(), "ok");
    let request = &server.requests()[0];
    assert!(!request.is_rejected(), "{:?}", request.rejection);
    let sent_id = request.messages()[1]["content"][0]["id"].clone();
    assert_eq!(request.tool_outputs()[0].0, sent_id.as_str().unwrap_or_default());
}

#[tokio::test]
async fn usage_and_cost_come_from_the_stream() {
    let server = server().await;
    server.push(Turn::reply("cheap").usage(100, 50, 1000, 10));
    let events = collect(provider().stream(&model(&server.anthropic_base_url()), ask("hi"), options())).await;
    let usage = done(&events).usage;
    let cost = Cost {
        input: 100.0 * 3.0 / 1e6,
        output: 50.0 * 15.0 / 1e6,
        cache_read: 1000.0 * 0.3 / 1e6,
        cache_write: 10.0 * 3.75 / 1e6,
        total: 100.0 * 3.0 / 1e6 + 50.0 * 15.0 / 1e6 + 1000.0 * 0.3 / 1e6 + 10.0 * 3.75 / 1e6,
    };
    assert_eq!(
        usage,
        Usage {
            input: 100,
            output: 50,
            cache_read: 1000,
            cache_write: 10,
            total_tokens: 1160,
            cost,
        }
    );
}

#[tokio::test]
async fn on_payload_replaces_the_body_sent() {
    let server = server().await;
    server.push(Turn::reply("ok"));
    let hook: volcanic_abstractions::provider::PayloadHook = Arc::new(|mut body: Value| {
        async move {
            body["max_tokens"] = json!(321);
            body["metadata"] = json!({"user_id": "chat-42"});
            body
        }
        .boxed()
    });
    let options = volcanic_abstractions::StreamOptions {
        on_payload: Some(hook),
        ..options()
    };
    let events = collect(provider().stream(&model(&server.anthropic_base_url()), ask("hi"), options)).await;
    done(&events);
    let body = &server.requests()[0].body;
    assert_eq!(body["max_tokens"], json!(321));
    assert_eq!(body["metadata"], json!({"user_id": "chat-42"}));
}

#[tokio::test]
async fn every_transcript_role_is_accepted_by_the_servers_checks() {
    let server = server().await;
    server.push(Turn::call("toolu_A", "bash", json!({"command": "ls"})));
    server.push(Turn::reply("done"));
    let provider = provider();
    let model = model(&server.anthropic_base_url());
    let events = collect(provider.stream(&model, ask("list files"), options())).await;
    let first = done(&events);
    let call = first.tool_calls().next().cloned().expect("call");
    let mut context = ask("list files");
    context.messages.push(Message::Assistant(first));
    context.messages.push(result_for(&call, "a.rs"));
    context.messages.extend(testing::reminder_and_bash());
    context
        .messages
        .push(Message::BranchSummary(volcanic_abstractions::SummaryMessage {
            summary: "tried another way".into(),
            tokens_before: None,
            from_id: Some("e1".into()),
            timestamp: 6,
        }));
    let events = collect(provider.stream(&model, context, options())).await;
    assert_eq!(done(&events).text(), "done");
    let request = &server.requests()[1];
    assert!(!request.is_rejected(), "{:?}", request.rejection);
}
