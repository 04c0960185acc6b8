//! The edited preview of an answer in a group or forum topic (docs/telegram.md, "Live
//! answers"): a message sent silently (`disable_notification`) with a Stop button, edited as the
//! answer grows, and at last edited into the answer's first chunk.
//!
//! Sends and edits of a preview give way as drafts do ([`draft`](super::draft)); the final edit
//! is an answer's delivery: it waits out flood control and is journaled like a send.

use super::draft::{DraftSent, DraftText};
use super::{Attempt, Tg};
use crate::features::port::Target;
use teloxide::prelude::*;
use teloxide::types::{InlineKeyboardMarkup, MessageId, ParseMode, ThreadId};
use teloxide::{ApiError, RequestError};

impl Tg {
    /// Sends a preview showing `text` into `to`, without a push notification, with `stop` as
    /// its keyboard. Returns its message id; `None` when it gave way or was refused (the next
    /// change tries again).
    pub async fn send_preview(&self, to: Target, text: DraftText<'_>, stop: &InlineKeyboardMarkup) -> Option<i32> {
        if self.live_gives_way(to.chat_id).await {
            return None;
        }
        let request = |text: &str, html: bool| {
            let mut req = self
                .bot
                .send_message(ChatId(to.chat_id), text)
                .disable_notification(true)
                .reply_markup(stop.clone());
            if html {
                req = req.parse_mode(ParseMode::Html);
            }
            if let Some(t) = to.thread {
                req = req.message_thread_id(ThreadId(MessageId(t)));
            }
            req
        };
        let sent = match text {
            DraftText::Thinking => return None,
            DraftText::Plain(plain) => request(plain, false).await,
            DraftText::Html { html, plain } => match request(html, true).await {
                Err(RequestError::Api(ApiError::CantParseEntities(_))) => request(plain, false).await,
                other => other,
            },
        };
        let id = sent.as_ref().ok().map(|m| m.id.0);
        self.live_outcome(to.chat_id, sent.map(|_| ()));
        id
    }

    /// Edits the preview `message_id` to show `text` (with `stop` still offered); gives way as
    /// a draft does. "message is not modified" counts as shown.
    pub async fn edit_preview(
        &self,
        to: Target,
        message_id: i32,
        text: DraftText<'_>,
        stop: &InlineKeyboardMarkup,
    ) -> DraftSent {
        if self.live_gives_way(to.chat_id).await {
            return DraftSent::Skipped;
        }
        let request = |text: &str, html: bool| {
            let req = self
                .bot
                .edit_message_text(ChatId(to.chat_id), MessageId(message_id), text)
                .reply_markup(stop.clone());
            if html { req.parse_mode(ParseMode::Html) } else { req }
        };
        let sent = match text {
            DraftText::Thinking => return DraftSent::Skipped,
            DraftText::Plain(plain) => request(plain, false).await,
            DraftText::Html { html, plain } => match request(html, true).await {
                Err(RequestError::Api(ApiError::CantParseEntities(_))) => request(plain, false).await,
                other => other,
            },
        };
        match sent {
            Err(RequestError::Api(ApiError::MessageNotModified)) => DraftSent::Shown,
            other => self.live_outcome(to.chat_id, other.map(|_| ())),
        }
    }

    /// Edits the preview `message_id` into an answer chunk (`html`, or `plain` if Telegram
    /// cannot parse it), its Stop button removed. Waits out flood control; every attempt is
    /// told to `report` as for a send ([`send_html_reporting`](Self::send_html_reporting)).
    /// "message is not modified" (the edit had landed before) is success. An error means the
    /// preview could not become the chunk (deleted meanwhile, too old to edit, ...).
    pub async fn edit_into_answer(
        &self,
        to: Target,
        message_id: i32,
        html: &str,
        plain: &str,
        report: &(dyn Fn(Attempt) + Send + Sync),
    ) -> Result<(), RequestError> {
        let edit = |text: &str, html: bool| {
            let req = self
                .bot
                .edit_message_text(ChatId(to.chat_id), MessageId(message_id), text);
            if html { req.parse_mode(ParseMode::Html) } else { req }
        };
        let not_modified_ok = |r: Result<Message, RequestError>| match r {
            Ok(_) | Err(RequestError::Api(ApiError::MessageNotModified)) => Ok(()),
            Err(e) => Err(e),
        };
        let edited = self
            .with_flood_control_reporting(to.chat_id, "editMessageText", report, || edit(html, true).into_future())
            .await;
        match edited {
            Err(RequestError::Api(ApiError::CantParseEntities(e))) => {
                tracing::warn!(
                    chat = to.chat_id,
                    "Telegram rejected the HTML ({e}); the preview shows the plain text"
                );
                not_modified_ok(
                    self.with_flood_control_reporting(to.chat_id, "editMessageText", report, || {
                        edit(plain, false).into_future()
                    })
                    .await,
                )
            }
            other => not_modified_ok(other),
        }
    }

    /// Edits a message left by an earlier process into `html` (or `plain`), best effort: a
    /// preview that was becoming an answer chunk when the process died
    /// ([`ProgressMarks`](crate::telegram::outbound::progress_marks::ProgressMarks)).
    pub async fn finish_edit(&self, to: Target, message_id: i32, html: &str, plain: &str) {
        let r = self.edit_into_answer(to, message_id, html, plain, &|_| {}).await;
        if let Err(e) = r {
            tracing::warn!(
                chat = to.chat_id,
                "cannot finish an answer's edit left by the last run: {e}"
            );
        }
    }

    /// Answers a callback query with a toast (`text`, shown briefly to the presser).
    pub async fn answer_callback_toast(&self, id: &str, text: &str) {
        let r = self
            .bot
            .answer_callback_query(teloxide::types::CallbackQueryId(id.to_owned()))
            .text(text)
            .await;
        if let Err(e) = r {
            tracing::debug!("cannot answer a button press: {e}");
        }
    }
}
