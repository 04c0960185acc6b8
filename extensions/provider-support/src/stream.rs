//! Reading one response body: SSE bytes → events → a wire API's [`EventMapper`] → provider
//! events, with the idle timeout and cancellation applied between events.

use futures::{Stream, StreamExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::{AssistantContent, AssistantMessage, AssistantMessageEvent, Model, ToolCall};

use crate::error::ProviderError;
use crate::http::{Emitter, Interrupted, error_chain, sse_events, within};

/// Turns the SSE events of one response of a wire API into provider events (`text_*`,
/// `thinking_*`, `toolcall_*`), building the final [`AssistantMessage`] on the way. Pure and
/// synchronous: the provider does the I/O.
pub trait EventMapper: Send + Sized {
    /// The stream's terminal event (`message_stop`, `[DONE]`); a stream that closes without it
    /// ends with [`ProviderError::EndedEarly`] naming it.
    const TERMINAL_EVENT: &'static str;

    /// A mapper for one response of `model`, stamping the message with `timestamp` (Unix epoch
    /// milliseconds).
    fn new(model: &Model, timestamp: i64) -> Self;

    /// The message built so far.
    fn message(&self) -> &AssistantMessage;

    /// Whether any content block was started (after which a failure is not retried).
    fn has_content(&self) -> bool {
        !self.message().content.is_empty()
    }

    /// Whether the terminal event arrived.
    fn is_finished(&self) -> bool;

    /// One SSE event of the API, decoded.
    type Event;

    /// Decodes one SSE event.
    ///
    /// # Errors
    /// [`ProviderError::Decode`] for an event that cannot be decoded.
    fn decode(event: &eventsource_stream::Event) -> Result<Self::Event, ProviderError>;

    /// Handles one decoded event, appending the provider events it yields to `out`.
    ///
    /// # Errors
    /// [`ProviderError::Stream`] for an error the stream reports.
    fn on_event(&mut self, event: Self::Event, out: &mut Vec<AssistantMessageEvent>) -> Result<(), ProviderError>;

    /// Decodes and handles one SSE event ([`decode`](Self::decode), then
    /// [`on_event`](Self::on_event)).
    ///
    /// # Errors
    /// As [`decode`](Self::decode) and [`on_event`](Self::on_event).
    fn on_sse_event(
        &mut self,
        event: &eventsource_stream::Event,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> Result<(), ProviderError> {
        Self::decode(event).and_then(|event| self.on_event(event, out))
    }

    /// The final message after the terminal event, with the failure its stop reason stands
    /// for ([`ProviderError::StopReason`]), if any.
    fn finish(self) -> (AssistantMessage, Result<(), ProviderError>);

    /// The message as far as it got, with usage and cost; for the final `error` event.
    fn into_partial(self) -> AssistantMessage;
}

/// Starts a tool-call block at the end of `message` with `arguments` so far (an empty object
/// for APIs that stream them all), emitting its `toolcall_start`.
pub fn start_tool_call(
    message: &mut AssistantMessage,
    id: String,
    name: String,
    arguments: Value,
    out: &mut Vec<AssistantMessageEvent>,
) {
    let content_index = message.content.len();
    message.content.push(AssistantContent::ToolCall(ToolCall {
        id: id.clone(),
        name: name.clone(),
        arguments,
        thought_signature: None,
    }));
    out.push(AssistantMessageEvent::ToolCallStart {
        content_index,
        id,
        name,
    });
}

/// Feeds a response body through `mapper`, emitting provider events as they come, until the
/// terminal event (`Ok`).
///
/// # Errors
/// The body closing first ([`ProviderError::EndedEarly`]), breaking off
/// ([`ProviderError::Body`]), staying silent for `idle` ([`ProviderError::Idle`]), `cancel`
/// firing ([`ProviderError::Aborted`]), or the mapper's error for an event
/// ([`ProviderError::Stream`], [`ProviderError::Decode`]); events emitted before stay emitted.
pub(crate) async fn read_stream<M, S, B, E>(
    bytes: S,
    mapper: &mut M,
    emitter: &Emitter,
    cancel: &CancellationToken,
    idle: std::time::Duration,
) -> Result<(), ProviderError>
where
    M: EventMapper,
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::error::Error,
{
    let events = sse_events(bytes);
    futures::pin_mut!(events);
    let mut out = Vec::new();
    loop {
        let next = match within(cancel, idle, events.next()).await {
            Err(Interrupted::Cancelled) => return Err(ProviderError::Aborted),
            Err(Interrupted::Idle) => return Err(ProviderError::Idle(idle)),
            Ok(next) => next,
        };
        let event = match next {
            None if mapper.is_finished() => return Ok(()),
            None => return Err(ProviderError::EndedEarly(M::TERMINAL_EVENT)),
            Some(Err(eventsource_stream::EventStreamError::Transport(error))) => {
                return Err(ProviderError::Body(error_chain(&error)));
            }
            Some(Err(error)) => return Err(ProviderError::Body(error.to_string())),
            Some(Ok(event)) => event,
        };
        let result = mapper.on_sse_event(&event, &mut out);
        for event in out.drain(..) {
            emitter.emit(event);
        }
        result?;
        if mapper.is_finished() {
            return Ok(());
        }
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
