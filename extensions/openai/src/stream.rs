//! Reading one response body: SSE bytes → decoded events (`wire.rs`) → provider events
//! (`mapper.rs`), with the idle timeout and cancellation applied between events.

use futures::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::error::OpenAiError;
use crate::http::{Emitter, Interrupted, error_chain, sse_events, within};
use crate::mapper::Mapper;
use crate::wire;

/// Feeds a response body through `mapper`, emitting provider events as they come, until
/// `[DONE]` (`Ok`) or a failure: the body closing first (`EndedEarly`), breaking off
/// (`Body`), staying silent for `idle` (`Idle`), an in-stream error chunk (`Stream`), an
/// undecodable event (`Decode`) or `cancel` firing (`Aborted`).
pub(crate) async fn read_stream<S, B, E>(
    bytes: S,
    mapper: &mut Mapper,
    emitter: &Emitter,
    cancel: &CancellationToken,
    idle: std::time::Duration,
) -> Result<(), OpenAiError>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::error::Error,
{
    let events = sse_events(bytes);
    futures::pin_mut!(events);
    let mut out = Vec::new();
    loop {
        let next = match within(cancel, idle, events.next()).await {
            Err(Interrupted::Cancelled) => return Err(OpenAiError::Aborted),
            Err(Interrupted::Idle) => return Err(OpenAiError::Idle(idle)),
            Ok(next) => next,
        };
        let event = match next {
            None if mapper.is_finished() => return Ok(()),
            None => return Err(OpenAiError::EndedEarly),
            Some(Err(eventsource_stream::EventStreamError::Transport(error))) => {
                return Err(OpenAiError::Body(error_chain(&error)));
            }
            Some(Err(error)) => return Err(OpenAiError::Body(error.to_string())),
            Some(Ok(event)) => event,
        };
        let result = wire::decode(&event).and_then(|event| mapper.on_event(event, &mut out));
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
