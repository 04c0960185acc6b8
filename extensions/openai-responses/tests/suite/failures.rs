//! `OpenAiResponsesProvider` against the testkit's scripted model server, failures: a failed
//! and an incomplete response, 429 with `retry-after`, dropped streams, in-stream `error`
//! events, context overflow.

use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use volcanic_abstractions::provider::is_context_overflow;
use volcanic_abstractions::{Provider, StopReason};
use volcanic_testkit::model_server::Turn;

use super::support::{ask, collect, done, failed, finish, model, options, provider, server};

#[tokio::test]
async fn a_failed_response_is_an_error_keeping_the_partial_text() {
    let server = server().await;
    server.push(Turn::reply("Half an answer").failed("The model produced invalid content."));
    server.push(Turn::reply("never"));
    let events = collect(provider().stream(&model(&server.openai_base_url()), ask("hi"), options())).await;
    assert_eq!(
        failed(&events, StopReason::Error),
        "server_error: The model produced invalid content."
    );
    let (_, partial) = finish(&events);
    assert_eq!(partial.text(), "Half an answer");
    assert_eq!(server.requests().len(), 1, "content was streamed: no retry");
}

#[tokio::test]
async fn a_failed_response_before_content_is_retried() {
    let server = server().await;
    server.push(Turn::new().failed("Overloaded, try again."));
    server.push(Turn::reply("second try"));
    let events = collect(provider().stream(&model(&server.openai_base_url()), ask("hi"), options())).await;
    assert_eq!(done(&events).text(), "second try");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn an_incomplete_response_stops_with_length() {
    let server = server().await;
    server.push(Turn::reply("cut off mid").length());
    let events = collect(provider().stream(&model(&server.openai_base_url()), ask("hi"), options())).await;
    let message = done(&events);
    assert_eq!(message.stop_reason, StopReason::Length);
    assert_eq!(message.text(), "cut off mid");
}

#[tokio::test]
async fn rate_limit_waits_for_retry_after() {
    let server = server().await;
    server.push(Turn::rate_limited(1));
    server.push(Turn::reply("after the wait"));
    let started = Instant::now();
    let events = collect(provider().stream(&model(&server.openai_base_url()), ask("hi"), options())).await;
    let elapsed = started.elapsed();
    assert_eq!(done(&events).text(), "after the wait");
    assert_eq!(server.requests().len(), 2);
    // The base delay is 10 ms: a wait of a second or more is retry-after's doing.
    assert!(elapsed >= Duration::from_secs(1), "waited only {elapsed:?}");
}

#[tokio::test]
async fn a_drop_before_content_is_retried_and_after_content_is_not() {
    let server = server().await;
    // created, in_progress, then the connection drops: nothing of the answer yet.
    server.push(Turn::reply("first").drop_after(2));
    server.push(Turn::reply("retried"));
    let events = collect(provider().stream(&model(&server.openai_base_url()), ask("hi"), options())).await;
    assert_eq!(done(&events).text(), "retried");
    assert_eq!(server.requests().len(), 2);

    server.push(Turn::reply("one two three four five six").drop_after(5));
    server.push(Turn::reply("never"));
    let events = collect(provider().stream(&model(&server.openai_base_url()), ask("hi"), options())).await;
    let message = failed(&events, StopReason::Error);
    assert!(message.starts_with("the response stream broke off"), "{message}");
    assert!(!finish(&events).1.text().is_empty(), "partial text is kept");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_stream_closed_before_its_terminal_event_is_an_error() {
    let server = server().await;
    server.push(Turn::reply("cut short").end_after(5));
    let events = collect(provider().stream(&model(&server.openai_base_url()), ask("hi"), options())).await;
    assert_eq!(
        failed(&events, StopReason::Error),
        "stream ended before response.completed"
    );
}

#[tokio::test]
async fn an_error_event_after_content_is_reported() {
    let server = server().await;
    server.push(Turn::reply("some text here").fail_after(5, "Internal error"));
    let events = collect(provider().stream(&model(&server.openai_base_url()), ask("hi"), options())).await;
    assert_eq!(failed(&events, StopReason::Error), "server_error: Internal error");
}

#[tokio::test]
async fn context_overflow_is_recognisable_and_not_retried() {
    let server = server().await;
    server.set_context_window(Some(10));
    let events = collect(provider().stream(&model(&server.openai_base_url()), ask("hi"), options())).await;
    let message = failed(&events, StopReason::Error);
    assert!(message.starts_with("400 context_length_exceeded:"), "{message}");
    assert!(is_context_overflow(&message), "{message}");
    assert_eq!(server.requests().len(), 1);
}
