//! Persistence step of the loop: a complete message goes through `message_start`, the
//! `message_end` handlers (which may replace it with one of the same role), the session file
//! (written at once, synced now or later), the context, and the host's `message_end`.

use super::error::SessionError;
use super::inner::Inner;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::events::AgentSessionEvent;
use volcanic_abstractions::extensions::events::{MessageEndEvent, MessageStartEvent};
use volcanic_abstractions::messages::Message;

/// When a message's append waits for stable storage. Either way the line is written at once, and
/// the wait is on a sync thread ([`Inner::sync_session`]), never on an async worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durable {
    /// Synced (with everything before it) before the message counts as added.
    Now,
    /// Synced with the next `Now` message, or at the end of the run.
    Later,
}

/// A complete message (prompt, injected, tool result): `message_start`, then [`end_message`].
pub(crate) async fn add_message(
    inner: &Arc<Inner>,
    message: Message,
    durable: Durable,
) -> Result<Message, SessionError> {
    let host = AgentSessionEvent::MessageStart {
        message: message.clone(),
    };
    let mut extensions = MessageStartEvent {
        message: message.clone(),
    };
    inner.announce(host, &mut extensions, &CancellationToken::new()).await;
    end_message(inner, message, durable).await
}

/// The end of a message: `message_end` handlers may replace it (same role only), then it is
/// appended to the session file, added to the context, synced when `durable` says so, and shown
/// to the host. Returns the message as persisted.
pub(crate) async fn end_message(
    inner: &Arc<Inner>,
    message: Message,
    durable: Durable,
) -> Result<Message, SessionError> {
    let mut ev = MessageEndEvent {
        message: message.clone(),
    };
    inner
        .runner
        .emit(&mut ev, &inner.ctx(), &CancellationToken::new())
        .await;
    let message = if ev.message.role() == message.role() {
        ev.message
    } else {
        tracing::warn!("message_end handler changed the role; replacement ignored");
        message
    };
    inner.lock_manager().unsynced(|m| m.append_message(message.clone()))?;
    // In the file now, so in the context too, even if the sync fails.
    inner.lock_state().messages.push(message.clone());
    if durable == Durable::Now {
        inner.sync_session().await?;
    }
    inner.emit(AgentSessionEvent::MessageEnd {
        message: message.clone(),
    });
    Ok(message)
}
