//! `sendVoice` for a spoken answer ([`voice::answer`](crate::telegram::voice::answer)): an
//! OGG/Opus file with its length and the answer as its caption, journaled attempt by attempt as
//! an answer's chunk is, under flood control for as long as it lasts.

use super::{Attempt, Tg};
use crate::features::port::Target;
use crate::telegram::outbound::render::Chunk;
use std::path::Path;
use teloxide::prelude::*;
use teloxide::types::{InputFile, MessageId, ParseMode, ThreadId};
use teloxide::{ApiError, RequestError};

impl Tg {
    /// Sends the OGG/Opus file at `path` (`seconds` long) as a voice message, with `caption`'s
    /// HTML as its caption (its Markdown source as plain text if Telegram cannot parse the
    /// HTML), telling `report` about every attempt. A refusal is returned, not told to the
    /// chat: the caller delivers the answer as text instead.
    pub async fn send_voice_reporting(
        &self,
        to: Target,
        path: &Path,
        seconds: u32,
        caption: Option<&Chunk>,
        report: &(dyn Fn(Attempt) + Send + Sync),
    ) -> Result<Message, RequestError> {
        let request = |html: bool| {
            let mut req = self
                .bot
                .send_voice(ChatId(to.chat_id), InputFile::file(path.to_path_buf()))
                .duration(seconds);
            if let Some(t) = to.thread {
                req = req.message_thread_id(ThreadId(MessageId(t)));
            }
            match caption {
                Some(c) if html => req = req.caption(c.html.clone()).parse_mode(ParseMode::Html),
                Some(c) => req = req.caption(c.source.clone()),
                None => {}
            }
            req.into_future()
        };
        match self
            .with_flood_control_reporting(to.chat_id, "sendVoice", report, || request(true))
            .await
        {
            Err(RequestError::Api(ApiError::CantParseEntities(e))) if caption.is_some() => {
                tracing::warn!(
                    chat = to.chat_id,
                    "Telegram rejected the caption's HTML ({e}); sending its Markdown source as plain text"
                );
                self.with_flood_control_reporting(to.chat_id, "sendVoice", report, || request(false))
                    .await
            }
            other => other,
        }
    }
}
