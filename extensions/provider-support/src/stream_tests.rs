//! The transport side of reading a body (end of body, broken and silent bodies, cancel, error
//! events), with a toy mapper: each event's data is a text delta, `stop` ends the stream and
//! `fail` is an in-stream error. The wire APIs' own tests feed real SSE through their mappers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures::StreamExt;
use pretty_assertions::assert_eq;
use volcanic_abstractions::{
    Api, AssistantContent, AssistantMessage, AssistantMessageEvent as E, InputKind, Model, ModelCost, TextContent,
};

use super::*;
use crate::http::channel;

/// The toy mapper.
struct Lines {
    message: AssistantMessage,
    finished: bool,
}

impl EventMapper for Lines {
    const TERMINAL_EVENT: &'static str = "stop";

    fn new(model: &Model, timestamp: i64) -> Self {
        Self {
            message: AssistantMessage::empty(model.api.as_str(), &model.provider, &model.id, timestamp),
            finished: false,
        }
    }

    fn message(&self) -> &AssistantMessage {
        &self.message
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    type Event = String;

    fn decode(event: &eventsource_stream::Event) -> Result<String, ProviderError> {
        Ok(event.data.clone())
    }

    fn on_event(&mut self, event: String, out: &mut Vec<E>) -> Result<(), ProviderError> {
        match event.as_str() {
            "stop" => self.finished = true,
            "fail" => {
                return Err(ProviderError::Stream {
                    kind: "overloaded_error".into(),
                    message: "Overloaded".into(),
                    transient: true,
                });
            }
            text => {
                if self.message.content.is_empty() {
                    self.message.content.push(AssistantContent::Text(TextContent {
                        text: String::new(),
                        text_signature: None,
                    }));
                    out.push(E::TextStart { content_index: 0 });
                }
                if let Some(AssistantContent::Text(block)) = self.message.content.first_mut() {
                    block.text.push_str(text);
                }
                out.push(E::TextDelta {
                    content_index: 0,
                    delta: text.to_owned(),
                });
            }
        }
        Ok(())
    }

    fn finish(self) -> (AssistantMessage, Result<(), ProviderError>) {
        (self.message, Ok(()))
    }

    fn into_partial(self) -> AssistantMessage {
        self.message
    }
}

fn model() -> Model {
    Model {
        id: "toy".into(),
        name: "Toy".into(),
        provider: "toy".into(),
        api: Api::AnthropicMessages,
        base_url: "http://127.0.0.1:9".into(),
        reasoning: false,
        input: vec![InputKind::Text],
        cost: ModelCost::default(),
        context_window: 1000,
        max_tokens: 100,
    }
}

/// Runs `body` through the stream reader; returns the events, the outcome (error text) and
/// the partial text.
async fn run_body<S>(body: S, cancel: CancellationToken, idle: Duration) -> (Vec<E>, Result<(), String>, String)
where
    S: futures::Stream<Item = Result<Vec<u8>, std::io::Error>>,
{
    let mut mapper = Lines::new(&model(), 7);
    let (emitter, receiver) = channel();
    let result = read_stream(body, &mut mapper, &emitter, &cancel, idle).await;
    drop(emitter);
    let events: Vec<E> = receiver.collect().await;
    (
        events,
        result.map_err(|error| error.to_string()),
        mapper.into_partial().text(),
    )
}

async fn run_text(text: &str) -> (Vec<E>, Result<(), String>, String) {
    let body = futures::stream::iter(vec![Ok(text.as_bytes().to_vec())]);
    run_body(body, CancellationToken::new(), Duration::from_secs(5)).await
}

#[tokio::test]
async fn the_terminal_event_ends_the_read_and_later_bytes_are_not_read() {
    let (events, outcome, text) = run_text("data: a\n\ndata: b\n\ndata: stop\n\ndata: c\n\n").await;
    assert_eq!(outcome, Ok(()));
    assert_eq!(events.len(), 3);
    assert_eq!(text, "ab");
}

#[tokio::test]
async fn a_body_closing_before_the_terminal_event_names_it() {
    let (events, outcome, text) = run_text("data: a\n\ndata: stop").await;
    assert_eq!(outcome, Err("stream ended before stop".to_owned()));
    assert_eq!(events.len(), 2);
    assert_eq!(text, "a");
}

#[tokio::test]
async fn an_error_event_ends_the_read_after_the_events_before_it() {
    let (events, outcome, text) = run_text("data: a\n\ndata: fail\n\ndata: b\n\n").await;
    assert_eq!(outcome, Err("overloaded_error: Overloaded".to_owned()));
    assert_eq!(events.len(), 2);
    assert_eq!(text, "a");
}

#[tokio::test]
async fn transport_failure_mid_stream_is_a_body_error() {
    let body = futures::stream::iter(vec![
        Ok(b"data: a\n\n".to_vec()),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "connection reset by peer",
        )),
    ]);
    let (events, outcome, _) = run_body(body, CancellationToken::new(), Duration::from_secs(5)).await;
    assert_eq!(events.len(), 2);
    assert_eq!(
        outcome,
        Err("the response stream broke off: connection reset by peer".to_owned())
    );
}

#[tokio::test]
async fn silence_longer_than_the_idle_timeout_is_an_error() {
    let first = futures::stream::iter(vec![Ok(b"data: a\n\nda".to_vec())]);
    let body = first.chain(futures::stream::pending());
    let (_, outcome, text) = run_body(body, CancellationToken::new(), Duration::from_millis(50)).await;
    assert_eq!(
        outcome,
        Err("no data from the provider for 0.05 s (idle timeout)".to_owned())
    );
    assert_eq!(text, "a");
}

#[tokio::test]
async fn cancel_stops_waiting_for_the_next_event() {
    let first = futures::stream::iter(vec![Ok(b"data: a\n\n".to_vec())]);
    let body = first.chain(futures::stream::pending());
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        trigger.cancel();
    });
    let (events, outcome, _) = run_body(body, cancel, Duration::from_secs(30)).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(outcome, Err("Request was aborted".to_owned()));
}

#[tokio::test]
async fn an_already_cancelled_read_reads_nothing() {
    let cancel = CancellationToken::new();
    cancel.cancel();
    let body = futures::stream::iter(vec![Ok(b"data: a\n\ndata: stop\n\n".to_vec())]);
    let (events, outcome, _) = run_body(body, cancel, Duration::from_secs(5)).await;
    assert_eq!(events, vec![]);
    assert_eq!(outcome, Err("Request was aborted".to_owned()));
}
