//! Outgoing Bot API calls through teloxide, with flood control honoured per chat and globally
//! (a 429's `retry_after`: no request to that chat, or to any chat for a global limit, before it
//! runs out), "message is not modified" counted as success, and a chunk whose HTML Telegram
//! cannot parse re-sent as plain text (its Markdown source).

use super::journal::Journal;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use teloxide::prelude::*;
use teloxide::types::{ChatAction, InlineKeyboardMarkup, MessageId, ParseMode, ThreadId};
use teloxide::{ApiError, RequestError};

/// Where a message goes: a chat, and a forum topic in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    /// Chat id.
    pub chat_id: i64,
    /// Forum topic (`message_thread_id`).
    pub thread: Option<i32>,
}

/// Why [`Tg::download`] brought no file.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// `getFile` failed.
    #[error("Telegram did not hand out the file ({0})")]
    Api(RequestError),
    /// The download itself failed.
    #[error("the download failed ({0})")]
    Download(String),
    /// The file is larger than the limit asked for (its size, when known).
    #[error("the file is too large")]
    TooLarge {
        /// Size in bytes, when Telegram said.
        size: Option<u64>,
    },
}

/// The bot's outgoing side. Every message sent, edited or deleted waits first for the inbound
/// journal to be on disk ([`Journal::barrier`]).
#[derive(Debug)]
pub struct Tg {
    bot: Bot,
    journal: Arc<Journal>,
    global_until: Mutex<Option<Instant>>,
    chat_until: Mutex<HashMap<i64, Instant>>,
}

/// How many times one request is retried after flood control.
const MAX_FLOOD_RETRIES: u32 = 5;

/// One attempt of a send, as reported to a [`Tg::send_html_reporting`] caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// About to leave (reported before the journal's barrier, so a record written for it is on
    /// disk before the request is).
    Sending,
    /// Telegram took it.
    Sent,
    /// Telegram answered with an error (429, a refusal): not shown.
    Refused,
    /// No answer came (the connection failed): Telegram may or may not show it.
    Unknown,
}

impl Tg {
    /// Wraps a bot; sends wait for `journal`.
    pub fn new(bot: Bot, journal: Arc<Journal>) -> Self {
        Tg {
            bot,
            journal,
            global_until: Mutex::new(None),
            chat_until: Mutex::new(HashMap::new()),
        }
    }

    fn until(&self, chat: i64) -> Option<Instant> {
        let g = *self.global_until.lock().unwrap_or_else(|e| e.into_inner());
        let c = self
            .chat_until
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&chat)
            .copied();
        g.max(c)
    }

    /// Whether a request to `chat` would have to wait for flood control now.
    pub fn is_limited(&self, chat: i64) -> bool {
        self.until(chat).is_some_and(|u| u > Instant::now())
    }

    async fn wait_turn(&self, chat: i64) {
        if let Some(u) = self.until(chat) {
            tokio::time::sleep_until(u.into()).await;
        }
    }

    fn note_retry_after(&self, chat: i64, secs: u32) {
        let until = Instant::now() + Duration::from_secs(u64::from(secs.max(1)));
        tracing::warn!(chat, secs, "Telegram flood control: waiting");
        // Telegram's 429 does not say whether the limit is per chat or global: honour both.
        let mut c = self.chat_until.lock().unwrap_or_else(|e| e.into_inner());
        let e = c.entry(chat).or_insert(until);
        *e = (*e).max(until);
        let mut g = self.global_until.lock().unwrap_or_else(|e| e.into_inner());
        *g = Some(g.map_or(until, |x| x.max(until)));
    }

    /// Runs `call` for `chat`, waiting out flood control and retrying after a 429.
    async fn with_flood_control<T, F, Fut>(&self, chat: i64, mut call: F) -> Result<T, RequestError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, RequestError>>,
    {
        let mut tries = 0;
        loop {
            self.wait_turn(chat).await;
            match call().await {
                Err(RequestError::RetryAfter(s)) if tries < MAX_FLOOD_RETRIES => {
                    tries += 1;
                    self.note_retry_after(chat, s.seconds());
                }
                other => return other,
            }
        }
    }

    /// Sends one HTML chunk; if Telegram cannot parse it, sends `fallback` as plain text instead.
    pub async fn send_html(
        &self,
        to: Target,
        html: &str,
        fallback: &str,
        markup: Option<InlineKeyboardMarkup>,
    ) -> Result<Message, RequestError> {
        self.send_html_reporting(to, html, fallback, markup, &|_| {}).await
    }

    /// [`send_html`](Self::send_html), telling `report` about every attempt (each flood-control
    /// retry and the plain-text fallback): an answer's delivery journals them, so that after a
    /// crash it knows which chunks Telegram took.
    pub async fn send_html_reporting(
        &self,
        to: Target,
        html: &str,
        fallback: &str,
        markup: Option<InlineKeyboardMarkup>,
        report: &(dyn Fn(Attempt) + Send + Sync),
    ) -> Result<Message, RequestError> {
        let sent = self
            .with_flood_control_reporting(to.chat_id, report, || {
                let mut req = self
                    .bot
                    .send_message(ChatId(to.chat_id), html)
                    .parse_mode(ParseMode::Html);
                if let Some(t) = to.thread {
                    req = req.message_thread_id(ThreadId(MessageId(t)));
                }
                if let Some(m) = markup.clone() {
                    req = req.reply_markup(m);
                }
                req.into_future()
            })
            .await;
        match sent {
            Err(RequestError::Api(ApiError::CantParseEntities(e))) => {
                tracing::warn!(
                    chat = to.chat_id,
                    "Telegram rejected the HTML ({e}); sending the Markdown source as plain text"
                );
                self.with_flood_control_reporting(to.chat_id, report, || {
                    self.plain_request(to, fallback, markup.clone()).into_future()
                })
                .await
            }
            other => other,
        }
    }

    /// [`with_flood_control`](Self::with_flood_control) with each attempt reported, and the
    /// journal's barrier before each (the `Sending` record on disk before the request).
    async fn with_flood_control_reporting<T, F, Fut>(
        &self,
        chat: i64,
        report: &(dyn Fn(Attempt) + Send + Sync),
        mut call: F,
    ) -> Result<T, RequestError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, RequestError>>,
    {
        self.with_flood_control(chat, || {
            report(Attempt::Sending);
            let attempt = call();
            async move {
                self.journal.barrier().await;
                let r = attempt.await;
                report(match &r {
                    Ok(_) => Attempt::Sent,
                    Err(RequestError::Network(_) | RequestError::Io(_)) => Attempt::Unknown,
                    Err(_) => Attempt::Refused,
                });
                r
            }
        })
        .await
    }

    fn plain_request(
        &self,
        to: Target,
        text: &str,
        markup: Option<InlineKeyboardMarkup>,
    ) -> teloxide::requests::JsonRequest<teloxide::payloads::SendMessage> {
        let mut req = self.bot.send_message(ChatId(to.chat_id), text);
        if let Some(t) = to.thread {
            req = req.message_thread_id(ThreadId(MessageId(t)));
        }
        if let Some(m) = markup {
            req = req.reply_markup(m);
        }
        req
    }

    /// Sends plain text (no parse mode).
    pub async fn send_plain(
        &self,
        to: Target,
        text: &str,
        markup: Option<InlineKeyboardMarkup>,
    ) -> Result<Message, RequestError> {
        self.journal.barrier().await;
        self.with_flood_control(to.chat_id, || {
            let mut req = self.bot.send_message(ChatId(to.chat_id), text);
            if let Some(t) = to.thread {
                req = req.message_thread_id(ThreadId(MessageId(t)));
            }
            if let Some(m) = markup.clone() {
                req = req.reply_markup(m);
            }
            req.into_future()
        })
        .await
    }

    /// Edits a progress message; dropped (not queued) while flood control is active.
    /// "message is not modified" is success.
    pub async fn edit_progress(&self, to: Target, message_id: i32, text: &str) {
        if self.is_limited(to.chat_id) {
            return;
        }
        self.journal.barrier().await;
        match self
            .bot
            .edit_message_text(ChatId(to.chat_id), MessageId(message_id), text)
            .await
        {
            Ok(_) | Err(RequestError::Api(ApiError::MessageNotModified)) => {}
            Err(RequestError::RetryAfter(s)) => self.note_retry_after(to.chat_id, s.seconds()),
            Err(e) => tracing::debug!(chat = to.chat_id, "progress edit failed: {e}"),
        }
    }

    /// Deletes a message (best effort).
    pub async fn delete(&self, to: Target, message_id: i32) {
        if let Err(e) = self.try_delete(to, message_id).await {
            tracing::debug!(chat = to.chat_id, "delete failed: {e}");
        }
    }

    /// Deletes a message; the error says why it could not be.
    pub async fn try_delete(&self, to: Target, message_id: i32) -> Result<(), RequestError> {
        self.journal.barrier().await;
        self.with_flood_control(to.chat_id, || {
            self.bot
                .delete_message(ChatId(to.chat_id), MessageId(message_id))
                .into_future()
        })
        .await
        .map(|_| ())
    }

    /// Fetches a file a user sent: `getFile` (under flood control), then its bytes from the
    /// file URL. More than `limit` bytes (by `getFile`'s size, by Telegram's "file is too big",
    /// or while downloading) is [`FetchError::TooLarge`], and the download stops there.
    pub async fn download(&self, chat: i64, file_id: &str, limit: u64) -> Result<Vec<u8>, FetchError> {
        use futures::StreamExt;
        use teloxide::net::Download;
        let file = self
            .with_flood_control(chat, || {
                self.bot
                    .get_file(teloxide::types::FileId(file_id.to_owned()))
                    .into_future()
            })
            .await
            .map_err(|e| match e {
                RequestError::Api(ref api) if api.to_string().contains("file is too big") => {
                    FetchError::TooLarge { size: None }
                }
                other => FetchError::Api(other),
            })?;
        // `size` is `u32::MAX` when Telegram left it out.
        let size = u64::from(file.meta.size);
        if size > limit && file.meta.size != u32::MAX {
            return Err(FetchError::TooLarge { size: Some(size) });
        }
        let mut bytes = Vec::new();
        let mut stream = self.bot.download_file_stream(&file.path);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| FetchError::Download(e.to_string()))?;
            bytes.extend_from_slice(&chunk);
            if bytes.len() as u64 > limit {
                return Err(FetchError::TooLarge { size: None });
            }
        }
        Ok(bytes)
    }

    /// Shows "typing…" (best effort; skipped under flood control).
    pub async fn typing(&self, to: Target) {
        if self.is_limited(to.chat_id) {
            return;
        }
        let mut req = self.bot.send_chat_action(ChatId(to.chat_id), ChatAction::Typing);
        if let Some(t) = to.thread {
            req = req.message_thread_id(ThreadId(MessageId(t)));
        }
        if let Err(RequestError::RetryAfter(s)) = req.await {
            self.note_retry_after(to.chat_id, s.seconds());
        }
    }

    /// Answers a callback query (stops the button's spinner).
    pub async fn bot_answer_callback(&self, id: &str) -> Result<(), RequestError> {
        self.bot
            .answer_callback_query(teloxide::types::CallbackQueryId(id.to_owned()))
            .await
            .map(|_| ())
    }

    /// Uploads a file as a document, or as a photo when `as_photo`.
    pub async fn send_file(
        &self,
        to: Target,
        path: &std::path::Path,
        caption: Option<&str>,
        as_photo: bool,
    ) -> Result<(), RequestError> {
        use teloxide::types::InputFile;
        self.journal.barrier().await;
        self.with_flood_control(to.chat_id, || {
            let file = InputFile::file(path.to_path_buf());
            let thread = to.thread.map(|t| ThreadId(MessageId(t)));
            let caption = caption.map(str::to_owned);
            let bot = self.bot.clone();
            async move {
                if as_photo {
                    let mut req = bot.send_photo(ChatId(to.chat_id), file);
                    if let Some(t) = thread {
                        req = req.message_thread_id(t);
                    }
                    if let Some(c) = caption {
                        req = req.caption(c);
                    }
                    req.await.map(|_| ())
                } else {
                    let mut req = bot.send_document(ChatId(to.chat_id), file);
                    if let Some(t) = thread {
                        req = req.message_thread_id(t);
                    }
                    if let Some(c) = caption {
                        req = req.caption(c);
                    }
                    req.await.map(|_| ())
                }
            }
        })
        .await
    }
}
