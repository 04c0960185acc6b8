//! `AnthropicProvider` against the testkit's scripted model server, failures: retries (5xx,
//! 429 with `retry-after`, dropped streams before content), errors that are not retried
//! (401, context overflow, failures after content), idle timeout and cancellation.

use std::time::{Duration, Instant};

use futures::StreamExt;
use pretty_assertions::assert_eq;
use volcanic_abstractions::provider::is_context_overflow;
use volcanic_abstractions::{AssistantMessageEvent, Provider, StopReason};
use volcanic_testkit::model_server::Turn;

use super::support::{ask, collect, done, failed, fast_config, model, options, provider, provider_with, server};

#[tokio::test]
async fn server_error_then_success_is_retried() {
    let server = server().await;
    server.push(Turn::error(500, "Internal server error"));
    server.push(Turn::error(529, "Overloaded"));
    server.push(Turn::reply("third time lucky"));
    let events = collect(provider().stream(&model(&server.anthropic_base_url()), ask("hi"), options())).await;
    assert_eq!(done(&events).text(), "third time lucky");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn rate_limit_waits_for_retry_after() {
    let server = server().await;
    server.push(Turn::rate_limited(1));
    server.push(Turn::reply("after the wait"));
    let started = Instant::now();
    let events = collect(provider().stream(&model(&server.anthropic_base_url()), ask("hi"), options())).await;
    let elapsed = started.elapsed();
    assert_eq!(done(&events).text(), "after the wait");
    assert_eq!(server.requests().len(), 2);
    // The base delay is 10 ms: a wait of a second or more is retry-after's doing.
    assert!(elapsed >= Duration::from_secs(1), "waited only {elapsed:?}");
}

#[tokio::test]
async fn a_retry_after_beyond_the_cap_is_left_to_the_caller() {
    let server = server().await;
    server.push(Turn::rate_limited(60));
    let events = collect(provider().stream(&model(&server.anthropic_base_url()), ask("hi"), options())).await;
    let message = failed(&events, StopReason::Error);
    assert!(message.starts_with("429 rate_limit_error: "), "{message}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn retries_give_up_with_the_last_status_and_message() {
    let server = server().await;
    for _ in 0..3 {
        server.push(Turn::error(503, "Service unavailable"));
    }
    let options = volcanic_abstractions::StreamOptions {
        max_retries: 2,
        ..options()
    };
    let events = collect(provider().stream(&model(&server.anthropic_base_url()), ask("hi"), options)).await;
    assert_eq!(
        failed(&events, StopReason::Error),
        "503 api_error: Service unavailable (gave up after 3 attempts)"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn unauthorized_is_not_retried() {
    let server = server().await;
    server.push(Turn::error(401, "invalid x-api-key"));
    server.push(Turn::reply("never"));
    let events = collect(provider().stream(&model(&server.anthropic_base_url()), ask("hi"), options())).await;
    assert_eq!(
        failed(&events, StopReason::Error),
        "401 authentication_error: invalid x-api-key"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_missing_key_gets_the_servers_own_message() {
    let server = server().await;
    let options = volcanic_abstractions::StreamOptions {
        api_key: None,
        ..options()
    };
    let events = collect(provider().stream(&model(&server.anthropic_base_url()), ask("hi"), options)).await;
    assert_eq!(
        failed(&events, StopReason::Error),
        "401 authentication_error: x-api-key header is required"
    );
}

#[tokio::test]
async fn a_dropped_stream_after_content_is_an_error_keeping_the_partial_text() {
    let server = server().await;
    // message_start, ping, content_block_start, two text deltas, then the connection drops.
    server.push(Turn::reply("one two three four five six").drop_after(5));
    server.push(Turn::reply("never"));
    let events = collect(provider().stream(&model(&server.anthropic_base_url()), ask("hi"), options())).await;
    let message = failed(&events, StopReason::Error);
    assert!(message.starts_with("the response stream broke off"), "{message}");
    let (_, partial) = super::support::finish(&events);
    assert!(!partial.text().is_empty(), "partial text is kept");
    assert_eq!(server.requests().len(), 1, "content was streamed: no retry");
}

#[tokio::test]
async fn a_stream_closed_before_message_stop_is_an_error() {
    let server = server().await;
    server.push(Turn::reply("cut short").end_after(5));
    let events = collect(provider().stream(&model(&server.anthropic_base_url()), ask("hi"), options())).await;
    assert_eq!(failed(&events, StopReason::Error), "stream ended before message_stop");
}

#[tokio::test]
async fn a_drop_before_any_content_is_retried() {
    let server = server().await;
    server.push(Turn::reply("x").drop_after(2));
    server.push(Turn::reply("second attempt"));
    let events = collect(provider().stream(&model(&server.anthropic_base_url()), ask("hi"), options())).await;
    assert_eq!(done(&events).text(), "second attempt");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn in_stream_overloaded_error_before_content_is_retried_and_after_content_is_not() {
    let server = server().await;
    server.push(Turn::reply("x").fail_after(2, "Overloaded"));
    server.push(Turn::reply("recovered"));
    let provider = provider();
    let model = model(&server.anthropic_base_url());
    let events = collect(provider.stream(&model, ask("hi"), options())).await;
    assert_eq!(done(&events).text(), "recovered");

    server.push(Turn::reply("some text first").fail_after(4, "Overloaded"));
    let events = collect(provider.stream(&model, ask("hi"), options())).await;
    assert_eq!(failed(&events, StopReason::Error), "overloaded_error: Overloaded");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn silence_beyond_the_idle_timeout_is_an_error() {
    let server = server().await;
    server.push(Turn::reply("stalls").stall_after(4));
    let config = volcanic_anthropic::ProviderConfig {
        idle_timeout: Duration::from_millis(300),
        ..fast_config()
    };
    let events =
        collect(provider_with(config).stream(&model(&server.anthropic_base_url()), ask("hi"), options())).await;
    assert_eq!(
        failed(&events, StopReason::Error),
        "no data from the provider for 0.3 s (idle timeout)"
    );
}

#[tokio::test]
async fn cancel_mid_stream_ends_promptly_as_aborted() {
    let server = server().await;
    server.push(Turn::reply("a long answer that stalls").stall_after(4));
    let cancel = tokio_util::sync::CancellationToken::new();
    let options = volcanic_abstractions::StreamOptions {
        cancel: cancel.clone(),
        ..options()
    };
    let config = volcanic_anthropic::ProviderConfig {
        idle_timeout: Duration::from_secs(30),
        ..fast_config()
    };
    let mut stream = provider_with(config).stream(&model(&server.anthropic_base_url()), ask("hi"), options);
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        let first_delta = matches!(event, AssistantMessageEvent::TextDelta { .. });
        events.push(event);
        if first_delta {
            break;
        }
    }
    let cancelled_at = Instant::now();
    cancel.cancel();
    events.extend(super::support::collect(stream).await);
    assert!(cancelled_at.elapsed() < Duration::from_secs(1));
    assert_eq!(failed(&events, StopReason::Aborted), "Request was aborted");
}

#[tokio::test]
async fn cancel_during_a_retry_wait_ends_as_aborted() {
    let server = server().await;
    server.push(Turn::rate_limited(3));
    let cancel = tokio_util::sync::CancellationToken::new();
    let options = volcanic_abstractions::StreamOptions {
        cancel: cancel.clone(),
        ..options()
    };
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let events = collect(provider().stream(&model(&server.anthropic_base_url()), ask("hi"), options)).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(failed(&events, StopReason::Aborted), "Request was aborted");
}

#[tokio::test]
async fn context_overflow_is_recognisable_and_not_retried() {
    let server = server().await;
    server.set_context_window(Some(10));
    server.push(Turn::reply("never"));
    let events = collect(provider().stream(
        &model(&server.anthropic_base_url()),
        ask("a prompt that is far longer than ten tokens of context window"),
        options(),
    ))
    .await;
    let message = failed(&events, StopReason::Error);
    assert!(
        message.starts_with("400 invalid_request_error: prompt is too long"),
        "{message}"
    );
    assert!(is_context_overflow(&message));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let events = collect(provider().stream(
        &model(&format!("http://127.0.0.1:{port}")),
        ask("hi"),
        volcanic_abstractions::StreamOptions {
            max_retries: 1,
            ..options()
        },
    ))
    .await;
    let message = failed(&events, StopReason::Error);
    assert!(
        message.starts_with(&format!("request to http://127.0.0.1:{port}/v1/messages failed")),
        "{message}"
    );
    assert!(message.ends_with("(gave up after 2 attempts)"), "{message}");
}
