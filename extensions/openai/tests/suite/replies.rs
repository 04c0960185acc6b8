//! `OpenAiCompletionsProvider` against the testkit's scripted model server, successful replies: text,
//! thinking, tool calls and their results, usage and cost, payload hook, transcript mapping.
//! The server checks every request as the real API does (auth, body, tool pairing).

use std::sync::Arc;

use futures::FutureExt;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use volcanic_abstractions::{
    AssistantContent, AssistantMessageEvent, Cost, Message, Provider, StopReason, StreamOptions, TextContent,
    ThinkingLevel, ToolCall, ToolResultMessage, Usage, UserContent,
};
use volcanic_openai::ChatCompletions;
use volcanic_provider_support::testing::{self, contract};
use volcanic_testkit::model_server::Turn;

use super::support::{DIALECT, ask, collect, done, model, options, provider, result_for, server};

#[tokio::test]
async fn text_reply_streams_and_ends_with_done() {
    let server = server().await;
    server.push(Turn::reply("Hello from the scripted model."));
    let events = collect(provider().stream(&model(&server.openai_base_url()), ask("hi"), options())).await;
    let message = done(&events);
    assert_eq!(message.text(), "Hello from the scripted model.");
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.api, "openai-completions");
    assert_eq!(message.provider, "openai");
    assert!(message.response_id.is_some());
    let deltas = events
        .iter()
        .filter(|e| matches!(e, AssistantMessageEvent::TextDelta { .. }))
        .count();
    assert!(deltas > 1, "text arrives in several deltas: {events:?}");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert!(request.is_streaming());
    assert_eq!(request.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(request.system_prompt().as_deref(), Some("You are a test."));
    assert_eq!(
        request.body["tools"][0],
        json!({"type": "function", "function": {
            "name": "bash",
            "description": "Run a shell command",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        }})
    );
}

#[tokio::test]
async fn a_local_server_without_a_key_gets_no_authorization_header() {
    let server = server().await;
    server.set_require_api_key(false);
    server.push(Turn::reply("local answer"));
    let options = StreamOptions {
        api_key: None,
        ..options()
    };
    let events = collect(provider().stream(&model(&server.openai_base_url()), ask("hi"), options)).await;
    assert_eq!(done(&events).text(), "local answer");
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn reasoning_content_becomes_thinking_and_effort_is_sent() {
    let server = server().await;
    server.push(Turn::new().thinking("Let me think about this.", None).text("Four."));
    let options = StreamOptions {
        thinking_level: ThinkingLevel::Low,
        ..options()
    };
    let events = collect(provider().stream(&model(&server.openai_base_url()), ask("2+2?"), options)).await;
    let message = done(&events);
    assert_eq!(
        message.content,
        vec![
            AssistantContent::Thinking(volcanic_abstractions::ThinkingContent {
                thinking: "Let me think about this.".into(),
                thinking_signature: None,
                redacted: None,
            }),
            AssistantContent::Text(TextContent {
                text: "Four.".into(),
                text_signature: None,
            }),
        ]
    );
    assert_eq!(server.requests()[0].body["reasoning_effort"], json!("low"));
}

#[tokio::test]
async fn tool_call_arguments_split_across_deltas_are_joined_and_the_result_goes_back() {
    let (second, arguments) = contract::tool_call_round_trip::<ChatCompletions>(&DIALECT, "call_abc").await;
    let sent_call = &second.messages()[2]["tool_calls"][0];
    assert_eq!(
        sent_call["function"]["arguments"]
            .as_str()
            .and_then(|text| serde_json::from_str::<Value>(text).ok()),
        Some(arguments)
    );
}

#[tokio::test]
async fn ids_longer_than_forty_chars_are_mapped_alike_for_call_and_result() {
    let server = server().await;
    server.push(Turn::reply("ok"));
    let call = ToolCall {
        id: format!("toolu_{}", "A".repeat(50)),
        name: "bash".into(),
        arguments: json!({"command": "ls"}),
        thought_signature: None,
    };
    let mut assistant = volcanic_abstractions::AssistantMessage::empty("anthropic-messages", "anthropic", "claude", 2);
    assistant.content = vec![AssistantContent::ToolCall(call.clone())];
    assistant.stop_reason = StopReason::ToolUse;
    let mut context = ask("list");
    context.messages.push(Message::Assistant(assistant));
    context.messages.push(result_for(&call, "a.rs"));
    let events = collect(provider().stream(&model(&server.openai_base_url()), context, options())).await;
    assert_eq!(done(&events).text(), "ok");
    let request = &server.requests()[0];
    assert!(!request.is_rejected(), "{:?}", request.rejection);
    let sent_id = request.messages()[2]["tool_calls"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(sent_id.chars().count(), 40);
    assert_eq!(request.tool_outputs()[0].0, sent_id);
}

#[tokio::test]
async fn usage_and_cost_come_from_the_usage_chunk() {
    let server = server().await;
    // Reported as prompt_tokens 1110 (100 + 1000 cached + 10), cached_tokens 1000.
    server.push(Turn::reply("cheap").usage(100, 50, 1000, 10));
    let events = collect(provider().stream(&model(&server.openai_base_url()), ask("hi"), options())).await;
    let usage = done(&events).usage;
    let cost = Cost {
        input: 110.0 * 1.25 / 1e6,
        output: 50.0 * 10.0 / 1e6,
        cache_read: 1000.0 * 0.125 / 1e6,
        cache_write: 0.0,
        total: 110.0 * 1.25 / 1e6 + 50.0 * 10.0 / 1e6 + 1000.0 * 0.125 / 1e6,
    };
    assert_eq!(
        usage,
        Usage {
            input: 110,
            output: 50,
            cache_read: 1000,
            cache_write: 0,
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
            body["user"] = json!("chat-42");
            body["seed"] = json!(7);
            body
        }
        .boxed()
    });
    let options = StreamOptions {
        on_payload: Some(hook),
        ..options()
    };
    let events = collect(provider().stream(&model(&server.openai_base_url()), ask("hi"), options)).await;
    done(&events);
    let body = &server.requests()[0].body;
    assert_eq!(body["user"], json!("chat-42"));
    assert_eq!(body["seed"], json!(7));
}

#[tokio::test]
async fn every_transcript_role_is_accepted_by_the_servers_checks() {
    let server = server().await;
    server.push(
        Turn::new()
            .tool_call("call_A", "bash", json!({"command": "ls"}))
            .tool_call("call_B", "bash", json!({"command": "pwd"})),
    );
    server.push(Turn::reply("done"));
    let provider = provider();
    let model = model(&server.openai_base_url());
    let events = collect(provider.stream(&model, ask("list files"), options())).await;
    let first = done(&events);
    let calls: Vec<ToolCall> = first.tool_calls().cloned().collect();
    assert_eq!(calls.len(), 2);
    let mut context = ask("list files");
    context.messages.push(Message::Assistant(first));
    context.messages.push(result_for(&calls[0], "a.rs"));
    context.messages.push(Message::ToolResult(ToolResultMessage {
        tool_call_id: calls[1].id.clone(),
        tool_name: calls[1].name.clone(),
        content: vec![UserContent::Image(volcanic_abstractions::ImageContent {
            data: "iVBORw0=".into(),
            mime_type: "image/png".into(),
        })],
        details: None,
        is_error: false,
        timestamp: 3,
    }));
    context.messages.extend(testing::reminder_and_bash());
    context
        .messages
        .push(Message::CompactionSummary(volcanic_abstractions::SummaryMessage {
            summary: "earlier".into(),
            tokens_before: Some(100),
            from_id: None,
            timestamp: 6,
        }));
    let events = collect(provider.stream(&model, context, options())).await;
    assert_eq!(done(&events).text(), "done");
    let request = &server.requests()[1];
    assert!(!request.is_rejected(), "{:?}", request.rejection);
    assert_eq!(
        request.tool_outputs(),
        vec![
            ("call_A".to_owned(), "a.rs".to_owned()),
            ("call_B".to_owned(), "(see attached image)".to_owned()),
        ]
    );
}
