//! `sendMessageDraft` (Bot API 9.5; `can_stop` since 10.3), which teloxide 0.17 lacks: sent as
//! a raw call through teloxide's JSON request, so its errors (429 and its `retry_after`,
//! "can't parse entities") are read as for every other method.
//!
//! Drafts give way to everything else: one is skipped, never queued, while its chat is held by
//! flood control (a 429 to any request there, or to a draft: drafts have holds of their own, so
//! a draft's 429 never delays a final answer), when the chat's own live pace has no place free
//! ([`Holds::try_live`](super::pacing::Holds::try_live): Telegram's per-chat limits, with room
//! left for answers), and when the global pace has no place free now.

use super::Tg;
use crate::features::port::Target;
use serde::Serialize;
use teloxide::RequestError;
use teloxide::requests::{JsonRequest, Payload};
use teloxide::{ApiError, types::True};
use tokio::time::Instant;

/// The `sendMessageDraft` parameters (names as in the Bot API).
#[derive(Debug, Clone, Serialize)]
struct SendMessageDraft {
    chat_id: i64,
    /// Non-zero; a change of a draft with the same id is animated in place.
    draft_id: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    message_thread_id: Option<i32>,
    /// 1–4096 characters after entity parsing; absent: Telegram's "Thinking…" placeholder.
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parse_mode: Option<&'static str>,
    /// Shows Telegram's Stop button; its press arrives as `stopped_message_generation`.
    can_stop: bool,
}

impl Payload for SendMessageDraft {
    type Output = True;
    const NAME: &'static str = "sendMessageDraft";
}

/// What a draft shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftText<'a> {
    /// Telegram's "Thinking…" placeholder (no text).
    Thinking,
    /// Telegram HTML, with the plain text to show instead if Telegram cannot parse it.
    Html {
        /// The HTML.
        html: &'a str,
        /// Its fallback.
        plain: &'a str,
    },
    /// Plain text.
    Plain(&'a str),
}

/// How a draft went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftSent {
    /// Telegram took it.
    Shown,
    /// Not sent: the chat is held by flood control, or the global pace has no place now.
    Skipped,
    /// Telegram refused it (logged).
    Refused,
}

impl Tg {
    /// Sends (or updates) the draft `draft_id` in the private chat `to`, with Telegram's Stop
    /// button. Gives way as the module docs say; a draft whose HTML Telegram refuses is sent
    /// again as its plain text.
    pub async fn send_draft(&self, to: Target, draft_id: i64, text: DraftText<'_>) -> DraftSent {
        if self.live_gives_way(to.chat_id).await {
            return DraftSent::Skipped;
        }
        let request = |text: Option<&str>, html: bool| {
            let payload = SendMessageDraft {
                chat_id: to.chat_id,
                draft_id,
                message_thread_id: to.thread,
                text: text.map(str::to_owned),
                parse_mode: html.then_some("HTML"),
                can_stop: true,
            };
            JsonRequest::new(self.bot.clone(), payload)
        };
        let sent = match text {
            DraftText::Thinking => request(None, false).await,
            DraftText::Plain(plain) => request(Some(plain), false).await,
            DraftText::Html { html, plain } => match request(Some(html), true).await {
                Err(RequestError::Api(ApiError::CantParseEntities(e))) => {
                    tracing::debug!(chat = to.chat_id, "draft HTML refused ({e}); sent as plain text");
                    request(Some(plain), false).await
                }
                other => other,
            },
        };
        self.live_outcome(to.chat_id, sent.map(|True| ()))
    }

    /// Whether a live update (a draft, a preview's send or edit) to `chat` gives way now: as
    /// [`gives_way`](Self::gives_way), or the chat's own live pace has no place free.
    pub(super) async fn live_gives_way(&self, chat: i64) -> bool {
        !self.draft_holds.try_live(chat, Instant::now()) || self.gives_way(chat).await
    }

    /// Whether a request that gives way (a live update, a reaction) to `chat` does now: the
    /// chat or its live updates are held by flood control, or the global pace has no place free.
    /// Otherwise waits for the journal's barrier (as every request does) and returns `false`.
    pub(super) async fn gives_way(&self, chat: i64) -> bool {
        if self.is_limited(chat) || self.draft_holds.until(chat, Instant::now()).is_some() || !self.pace.try_reserve() {
            return true;
        }
        self.journal.barrier().await;
        false
    }

    /// How a live update went; a 429 holds only the chat's live updates (its answers go on).
    pub(super) fn live_outcome(&self, chat: i64, sent: Result<(), RequestError>) -> DraftSent {
        // Drafts, previews and reactions: one label, whichever method carried the update.
        if let Err(e) = &sent {
            crate::ops::metrics::telegram_error("live_update", e);
        }
        match sent {
            Ok(()) => DraftSent::Shown,
            Err(RequestError::RetryAfter(s)) => {
                self.draft_holds.note(chat, s.seconds(), Instant::now());
                tracing::debug!(chat, secs = s.seconds(), "live updates held by flood control");
                DraftSent::Skipped
            }
            Err(e) => {
                tracing::debug!(chat, "live update refused: {e}");
                DraftSent::Refused
            }
        }
    }
}
