//! `OpenAiResponsesProvider` against the testkit's scripted model server, the failures only
//! Responses has: a failed and an incomplete response. The failures every wire API shares
//! (429 with `retry-after`, dropped streams, in-stream `error` events, context overflow) are
//! the provider contract's (`contract.rs`).

use pretty_assertions::assert_eq;
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
