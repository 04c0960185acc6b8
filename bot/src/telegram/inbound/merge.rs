//! Merging the messages that make one prompt, and keeping a chat's prompts in order.
//!
//! Telegram delivers an album (one `media_group_id`) as one message per part, and a paste longer
//! than 4096 UTF-16 units as several messages sent at once. Each conversation (chat or forum topic) has an
//! [`Intake`]: its [`Buffer`] holds an album part, or a text of at least [`LONG_TEXT_UNITS`], for
//! [`HOLD`] after the sender's latest part, and hands the parts on together; every other message
//! goes straight through, so only albums and long pastes ever wait. A held group ends when the
//! timer runs out or when the same sender sends something that does not belong to it (which is
//! handed on right after it, in order).
//!
//! Preparing a prompt can take a while (files are downloaded), so prompts are prepared in
//! parallel but reach the session in arrival order: each takes a [`Ticket`] from the conversation's
//! [`Turnstile`] when it is handed on, and waits for the one before it.

use crate::features::port::Target;
use crate::telegram::TelegramHost;
use crate::telegram::inbound::update::InMessage;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// How long a held group waits for its next part (the timer restarts with each part).
pub const HOLD: Duration = Duration::from_millis(1000);

/// A text at least this long (UTF-16 units; Telegram splits at 4096) may be the first part of
/// a split paste.
pub const LONG_TEXT_UNITS: usize = 4000;

/// One accepted message on its way to becoming (part of) a prompt.
#[derive(Debug, Clone)]
pub struct Part {
    /// Its `update_id` (journal progress is tracked for every part).
    pub update_id: i64,
    /// The message.
    pub message: InMessage,
    /// Its text (or caption), the bot's mention taken out.
    pub text: String,
}

/// How a message may merge with the messages around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merge {
    /// A part of album `id`: waits for the other parts.
    Album(String),
    /// A long text that Telegram may have split: waits for the rest.
    LongText,
    /// A plain text: goes straight through, unless it continues a held long text.
    Text,
    /// Anything else: goes straight through.
    Alone,
}

/// How `m` (whose text, mention stripped, is `text`) may merge.
pub fn classify(m: &InMessage, text: &str) -> Merge {
    if let Some(id) = &m.media_group_id {
        return Merge::Album(id.clone());
    }
    if m.media.is_some() {
        return Merge::Alone;
    }
    if text.encode_utf16().count() >= LONG_TEXT_UNITS {
        Merge::LongText
    } else {
        Merge::Text
    }
}

/// Hands a message on: straight to [`media::prompt`](crate::telegram::conversation::handoff::prompt), or through the
/// conversation's buffer when it may be part of an album or a split paste.
pub fn offer(host: &Arc<TelegramHost>, update_id: i64, message: InMessage, text: String) {
    let conversation = host.chats.conversation(Target {
        chat_id: message.chat_id,
        thread: message.thread,
    });
    let merge = classify(&message, &text);
    let sender = message.from_id;
    let part = Part {
        update_id,
        message,
        text,
    };
    let host = host.clone();
    let flush: Flush<Part> = Arc::new(move |parts| crate::telegram::conversation::handoff::prompt(&host, parts));
    conversation.intake.buffer.offer(sender, merge, part, flush);
}

/// A conversation's intake: the merge buffer and the order prompts reach the session in.
#[derive(Debug, Default)]
pub struct Intake {
    /// Albums and long pastes being gathered.
    pub buffer: Buffer<Part>,
    /// Arrival order of prompts.
    pub order: Turnstile,
}

/// What a finished group is handed to.
pub type Flush<T> = Arc<dyn Fn(Vec<T>) + Send + Sync>;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Group {
    Album(String),
    Paste,
}

struct Held<T> {
    group: Group,
    items: Vec<T>,
    /// Bumped with every part: a timer that finds another value has been overtaken.
    generation: u64,
    flush: Flush<T>,
}

/// Groups held per sender (albums and long pastes); see the module docs.
pub struct Buffer<T> {
    held: Arc<Mutex<HashMap<i64, Held<T>>>>,
    hold: Duration,
}

impl<T> std::fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("hold", &self.hold)
            .finish_non_exhaustive()
    }
}

impl<T: Send + 'static> Default for Buffer<T> {
    fn default() -> Self {
        Self::new(HOLD)
    }
}

impl<T: Send + 'static> Buffer<T> {
    /// A buffer holding groups for `hold` after their latest part.
    pub fn new(hold: Duration) -> Self {
        Buffer {
            held: Arc::new(Mutex::new(HashMap::new())),
            hold,
        }
    }

    /// Offers `item` from `sender`. `flush` receives every finished group, in order: at once
    /// for an item that goes straight through (after the sender's held group, if it does not
    /// belong to it), or when a held group's timer runs out. Must be called within a tokio
    /// runtime; `flush` runs under the buffer's lock, so it must not call back into it.
    pub fn offer(&self, sender: i64, merge: Merge, item: T, flush: Flush<T>) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let joins = held.get(&sender).is_some_and(|h| match (&h.group, &merge) {
            (Group::Album(a), Merge::Album(b)) => a == b,
            (Group::Paste, Merge::LongText | Merge::Text) => true,
            (Group::Album(_), _) | (Group::Paste, Merge::Album(_) | Merge::Alone) => false,
        });
        if joins && let Some(h) = held.get_mut(&sender) {
            h.items.push(item);
            h.generation += 1;
            h.flush = flush;
            let generation = h.generation;
            drop(held);
            self.arm(sender, generation);
            return;
        }
        if let Some(earlier) = held.remove(&sender) {
            (earlier.flush)(earlier.items);
        }
        let group = match merge {
            Merge::Album(id) => Group::Album(id),
            Merge::LongText => Group::Paste,
            Merge::Text | Merge::Alone => {
                flush(vec![item]);
                return;
            }
        };
        held.insert(
            sender,
            Held {
                group,
                items: vec![item],
                generation: 0,
                flush,
            },
        );
        drop(held);
        self.arm(sender, 0);
    }

    /// Hands `sender`'s held group on now, if there is one (a command from the sender must not
    /// overtake the album or paste they sent before it).
    pub fn release(&self, sender: i64) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = held.remove(&sender) {
            (h.flush)(h.items);
        }
    }

    /// Hands `sender`'s group on after the hold, unless another part came meanwhile.
    fn arm(&self, sender: i64, generation: u64) {
        let held = self.held.clone();
        let hold = self.hold;
        tokio::spawn(async move {
            tokio::time::sleep(hold).await;
            let mut held = held.lock().unwrap_or_else(|e| e.into_inner());
            if held.get(&sender).is_some_and(|h| h.generation == generation)
                && let Some(h) = held.remove(&sender)
            {
                (h.flush)(h.items);
            }
        });
    }
}

/// Hands out [`Ticket`]s in arrival order.
#[derive(Debug, Default)]
pub struct Turnstile {
    last: Mutex<Option<oneshot::Receiver<()>>>,
}

impl Turnstile {
    /// The next place in line (take it synchronously, where the order is known).
    pub fn ticket(&self) -> Ticket {
        let (done, next) = oneshot::channel();
        let before = self.last.lock().unwrap_or_else(|e| e.into_inner()).replace(next);
        Ticket {
            before,
            done: Some(done),
        }
    }
}

/// A place in line: [`wait`](Ticket::wait) returns once every earlier ticket is done; dropping
/// this one lets the next go (after the earlier ones, even if it never waited).
#[derive(Debug)]
pub struct Ticket {
    before: Option<oneshot::Receiver<()>>,
    done: Option<oneshot::Sender<()>>,
}

impl Ticket {
    /// Waits for the earlier tickets to be done.
    pub async fn wait(&mut self) {
        if let Some(before) = self.before.take() {
            // Never sent: the earlier ticket's drop closes the channel.
            let _ = before.await;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        // Dropped without waiting: pass the turn on only once the earlier ones are done.
        if let (Some(before), Some(done)) = (self.before.take(), self.done.take())
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(async move {
                let _ = before.await;
                drop(done);
            });
        }
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
