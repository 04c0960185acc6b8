//! Outgoing Bot API calls through teloxide, with flood control that is fair and never silent
//! ([`pacing`] cites Telegram's limits): every message takes a place of a global pace that keeps
//! the bot under Telegram's rate for all chats together; a 429 holds only the chat that got it
//! (no request to that chat before its `retry_after` runs out, other chats go on), and a message
//! is tried again for as long as Telegram answers 429, so an answer or a notice is never dropped
//! after some number of retries. Progress edits and chat actions are best effort: dropped while
//! their chat is held. "message is not modified" counts as success; a chunk whose HTML Telegram
//! cannot parse is re-sent as plain text (its Markdown source), and an answer Telegram still
//! refuses is reported to its chat once ([`texts::answer_undelivered`]).

mod draft;
mod pacing;
mod preview;
mod reaction;
mod voice;

pub use draft::{DraftSent, DraftText};

use crate::config::LiveConfig;
use crate::telegram::inbound::journal::Journal;
use crate::telegram::outbound::texts;
use pacing::{BURST, Holds, Pace, RATE_PER_SECOND};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use teloxide::prelude::*;
use teloxide::types::{ChatAction, InlineKeyboardMarkup, MessageId, ParseMode, ThreadId};
use teloxide::{ApiError, RequestError};
use tokio::time::Instant;

use crate::features::port::Target;

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
    /// Every message (any chat) takes a place: Telegram's global rate.
    pace: Pace,
    /// Chats told to wait by a 429.
    holds: Holds,
    /// Chats told that an answer could not be delivered, until a send there succeeds again.
    told_undelivered: Mutex<HashSet<i64>>,
    /// Chats whose drafts got a 429: only their drafts wait ([`draft`]).
    draft_holds: Holds,
    /// How answers show while they are written.
    live: LiveConfig,
    /// The reactions on messages being worked on ([`reaction`]).
    reactions: crate::telegram::outbound::live::reaction::Reactions,
}

/// Whether a request delivers a message (and so takes a place of the global pace).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `sendMessage`, `sendDocument`, `sendPhoto`.
    Message,
    /// Deletes, `getFile`: held with their chat, not paced.
    Other,
}

/// One attempt of a send, as reported to a [`Tg::send_html_reporting`] or
/// [`Tg::send_plain_reporting`] caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// About to leave: reported after the flood-control waits and the journal's barrier, right
    /// before the request is written (a record written for it survives a process crash; a
    /// power failure can lose it, and the chunk is then sent again).
    Sending,
    /// Telegram took it.
    Sent,
    /// Telegram answered with an error (429, a refusal): not shown.
    Refused,
    /// No answer came (the connection failed): Telegram may or may not show it.
    Unknown,
}

/// An upload request (`sendPhoto`, `sendDocument`: no trait shares their setters) with the topic
/// of `to` (a `Target`) and the optional plain `caption` (an `Option<&str>`).
macro_rules! upload_options {
    ($req:expr, $to:expr, $caption:expr) => {{
        let mut req = $req;
        if let Some(t) = $to.thread {
            req = req.message_thread_id(ThreadId(MessageId(t)));
        }
        if let Some(c) = $caption {
            req = req.caption(c.to_owned());
        }
        req
    }};
}

impl Tg {
    /// Wraps a bot; sends wait for `journal`.
    pub fn new(bot: Bot, journal: Arc<Journal>) -> Self {
        Tg {
            bot,
            journal,
            pace: Pace::new(RATE_PER_SECOND, BURST),
            holds: Holds::default(),
            told_undelivered: Mutex::new(HashSet::new()),
            draft_holds: Holds::default(),
            live: LiveConfig::default(),
            reactions: Default::default(),
        }
    }

    /// With live answers configured as `live` (`[telegram] streaming`, `stream_interval_ms`).
    pub fn with_live(mut self, live: LiveConfig) -> Self {
        self.live = live;
        self
    }

    /// The live-answer settings.
    pub fn live(&self) -> LiveConfig {
        self.live
    }

    /// Whether a request to `chat` would have to wait for flood control now (a 429 for that
    /// chat whose `retry_after` has not run out; other chats' holds do not count).
    pub fn is_limited(&self, chat: i64) -> bool {
        self.holds.until(chat, Instant::now()).is_some()
    }

    async fn wait_turn(&self, chat: i64) {
        while let Some(until) = self.holds.until(chat, Instant::now()) {
            tokio::time::sleep_until(until).await;
        }
    }

    fn note_retry_after(&self, chat: i64, secs: u32, tries: u32) {
        let until = self.holds.note(chat, secs, Instant::now());
        let held_for = until.saturating_duration_since(Instant::now()).as_secs();
        tracing::warn!(chat, secs, held_for, tries, "Telegram flood control: this chat waits");
    }

    /// Runs `call` (Bot API `method`, named in the error metrics) for `chat`: waits for the chat's
    /// hold and (for a message) a place of the global pace, and after a 429 holds the chat for
    /// its `retry_after` and tries again, as long as Telegram answers 429. Any other outcome is
    /// returned.
    async fn with_flood_control<T, F, Fut>(
        &self,
        chat: i64,
        kind: Kind,
        method: &'static str,
        mut call: F,
    ) -> Result<T, RequestError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, RequestError>>,
    {
        let mut tries: u32 = 0;
        loop {
            self.wait_turn(chat).await;
            if kind == Kind::Message {
                let wait = self.pace.reserve();
                if !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                    // Held meanwhile (another request to the chat got a 429): wait for that first.
                    if self.is_limited(chat) {
                        continue;
                    }
                }
            }
            let result = call().await;
            if let Err(e) = &result {
                crate::ops::metrics::telegram_error(method, e);
            }
            match result {
                Err(RequestError::RetryAfter(s)) => {
                    tries = tries.saturating_add(1);
                    self.note_retry_after(chat, s.seconds(), tries);
                }
                other => return other,
            }
        }
    }

    /// After an answer chunk's last try: a success ends the chat's "told" state; a failure is
    /// reported to the chat once (until a send there succeeds again), in its topic or, if that
    /// fails, in the chat itself. Nothing more can be done when neither can be written to.
    async fn settle_answer<T>(&self, to: Target, outcome: &Result<T, RequestError>) {
        let e = match outcome {
            Ok(_) => {
                let mut told = self.told_undelivered.lock().unwrap_or_else(|e| e.into_inner());
                if !told.is_empty() {
                    told.remove(&to.chat_id);
                }
                return;
            }
            Err(e) => e,
        };
        let why = refusal(e);
        tracing::error!(chat = to.chat_id, "an answer could not be delivered: {why}");
        let first = self
            .told_undelivered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(to.chat_id);
        if !first {
            return;
        }
        let notice = texts::answer_undelivered(&why);
        let mut targets = vec![to];
        if to.thread.is_some() {
            targets.push(Target {
                chat_id: to.chat_id,
                thread: None,
            });
        }
        for target in targets {
            match self.plain(target, &notice, None).await {
                Ok(_) => return,
                Err(e) => tracing::error!(chat = to.chat_id, "cannot tell the chat either: {}", refusal(&e)),
            }
        }
    }

    /// Sends one answer chunk as HTML; if Telegram cannot parse it, sends `fallback` (its
    /// Markdown source) as plain text instead. Waits out flood control for as long as it lasts.
    /// When Telegram refuses the chunk anyway (another 400, 403, a network failure), the error
    /// is returned and the chat is told once that an answer could not be delivered.
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
            .with_flood_control_reporting(to.chat_id, "sendMessage", report, || {
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
        let sent = match sent {
            Err(RequestError::Api(ApiError::CantParseEntities(e))) => {
                tracing::warn!(
                    chat = to.chat_id,
                    "Telegram rejected the HTML ({e}); sending the Markdown source as plain text"
                );
                self.with_flood_control_reporting(to.chat_id, "sendMessage", report, || {
                    self.plain_request(to, fallback, markup.clone()).into_future()
                })
                .await
            }
            other => other,
        };
        self.settle_answer(to, &sent).await;
        sent
    }

    /// [`with_flood_control`](Self::with_flood_control) (`method` names the Bot API call for the
    /// metrics) with each attempt reported, and the
    /// journal's barrier before each.
    async fn with_flood_control_reporting<T, F, Fut>(
        &self,
        chat: i64,
        method: &'static str,
        report: &(dyn Fn(Attempt) + Send + Sync),
        mut call: F,
    ) -> Result<T, RequestError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, RequestError>>,
    {
        self.with_flood_control(chat, Kind::Message, method, || {
            let attempt = call();
            async move {
                self.journal.barrier().await;
                // Right before the request leaves (after every wait): a `sending` record means
                // the request was on its way when the process died.
                report(Attempt::Sending);
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

    /// Sends plain text (no parse mode), waiting out flood control for as long as it lasts.
    pub async fn send_plain(
        &self,
        to: Target,
        text: &str,
        markup: Option<InlineKeyboardMarkup>,
    ) -> Result<Message, RequestError> {
        self.send_plain_reporting(to, text, markup, &|_| {}).await
    }

    /// [`send_plain`](Self::send_plain), telling `report` about every attempt (as
    /// [`send_html_reporting`](Self::send_html_reporting) does): the down report marks itself
    /// `sending` only as its request leaves, not while it waits out flood control.
    pub async fn send_plain_reporting(
        &self,
        to: Target,
        text: &str,
        markup: Option<InlineKeyboardMarkup>,
        report: &(dyn Fn(Attempt) + Send + Sync),
    ) -> Result<Message, RequestError> {
        self.with_flood_control_reporting(to.chat_id, "sendMessage", report, || {
            self.plain_request(to, text, markup.clone()).into_future()
        })
        .await
    }

    async fn plain(
        &self,
        to: Target,
        text: &str,
        markup: Option<InlineKeyboardMarkup>,
    ) -> Result<Message, RequestError> {
        self.with_flood_control(to.chat_id, Kind::Message, "sendMessage", || {
            self.plain_request(to, text, markup.clone()).into_future()
        })
        .await
    }

    /// Edits a progress message; dropped (not queued) while the chat is held by flood control.
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
            .inspect_err(|e| crate::ops::metrics::telegram_error("editMessageText", e))
        {
            Ok(_) | Err(RequestError::Api(ApiError::MessageNotModified)) => {}
            Err(RequestError::RetryAfter(s)) => self.note_retry_after(to.chat_id, s.seconds(), 1),
            Err(e) => tracing::debug!(chat = to.chat_id, "progress edit failed: {e}"),
        }
    }

    /// Replaces a message's text and buttons (`None`: none), waiting out flood control.
    /// "message is not modified" is success.
    pub async fn edit_with_buttons(
        &self,
        to: Target,
        message_id: i32,
        text: &str,
        markup: Option<InlineKeyboardMarkup>,
    ) -> Result<(), RequestError> {
        self.journal.barrier().await;
        let sent = self
            .with_flood_control(to.chat_id, Kind::Message, "editMessageText", || {
                let req = self
                    .bot
                    .edit_message_text(ChatId(to.chat_id), MessageId(message_id), text);
                let markup = markup
                    .clone()
                    .unwrap_or_else(|| InlineKeyboardMarkup::new(Vec::<Vec<_>>::new()));
                req.reply_markup(markup).into_future()
            })
            .await;
        match sent {
            Ok(_) | Err(RequestError::Api(ApiError::MessageNotModified)) => Ok(()),
            Err(e) => Err(e),
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
        self.with_flood_control(to.chat_id, Kind::Other, "deleteMessage", || {
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
            .with_flood_control(chat, Kind::Other, "getFile", || {
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
        let sent = req
            .await
            .inspect_err(|e| crate::ops::metrics::telegram_error("sendChatAction", e));
        if let Err(RequestError::RetryAfter(s)) = sent {
            self.note_retry_after(to.chat_id, s.seconds(), 1);
        }
    }

    /// Answers a callback query (stops the button's spinner), with `toast` shown to the presser
    /// when given (Bot API `answerCallbackQuery.text`, 0-200 characters).
    pub async fn bot_answer_callback(&self, id: &str, toast: Option<&str>) -> Result<(), RequestError> {
        let mut req = self
            .bot
            .answer_callback_query(teloxide::types::CallbackQueryId(id.to_owned()));
        if let Some(text) = toast {
            req = req.text(text);
        }
        req.await
            .map(|_| ())
            .inspect_err(|e| crate::ops::metrics::telegram_error("answerCallbackQuery", e))
    }

    /// Uploads the file at `path` as a document named `name`, or as a photo when `as_photo`
    /// (under flood control, for as long as it lasts).
    pub async fn send_file(
        &self,
        to: Target,
        path: &std::path::Path,
        name: &str,
        caption: Option<&str>,
        as_photo: bool,
    ) -> Result<(), RequestError> {
        let kind = if as_photo { Upload::Photo } else { Upload::Document };
        let file = || teloxide::types::InputFile::file(path.to_path_buf()).file_name(name.to_owned());
        self.upload(to, kind, file, caption).await.map(|_| ())
    }

    /// Sends `bytes` as `kind` (a photo: PNG or JPEG; or a document) named `file_name`, with an
    /// optional plain caption (at most 1024 characters, Telegram's caption limit), under flood
    /// control for as long as it lasts.
    pub async fn send_bytes(
        &self,
        to: Target,
        kind: Upload,
        file_name: &str,
        bytes: Vec<u8>,
        caption: Option<&str>,
    ) -> Result<Message, RequestError> {
        let file = || teloxide::types::InputFile::memory(bytes.clone()).file_name(file_name.to_owned());
        self.upload(to, kind, file, caption).await
    }

    /// Sends the file `file` makes (anew for each attempt) as `kind`, in `to`'s topic with the
    /// optional plain `caption`, after the journal's barrier and under flood control.
    async fn upload(
        &self,
        to: Target,
        kind: Upload,
        file: impl Fn() -> teloxide::types::InputFile,
        caption: Option<&str>,
    ) -> Result<Message, RequestError> {
        self.journal.barrier().await;
        self.with_flood_control(to.chat_id, Kind::Message, kind.method(), || {
            let (bot, chat, file) = (&self.bot, ChatId(to.chat_id), file());
            async move {
                match kind {
                    Upload::Photo => upload_options!(bot.send_photo(chat, file), to, caption).await,
                    Upload::Document => upload_options!(bot.send_document(chat, file), to, caption).await,
                }
            }
        })
        .await
    }
}

/// How [`Tg::send_bytes`] sends a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upload {
    /// `sendPhoto`: shown as an image.
    Photo,
    /// `sendDocument`: a file to open.
    Document,
}

impl Upload {
    /// The Bot API method that sends it (named in the error metrics).
    fn method(self) -> &'static str {
        match self {
            Upload::Photo => "sendPhoto",
            Upload::Document => "sendDocument",
        }
    }
}

/// What Telegram said, for people: its description for an API error; a network, file or
/// parsing failure named without its details (they are no use to a user).
pub fn refusal(e: &RequestError) -> String {
    match e {
        RequestError::Api(api) => api.to_string(),
        RequestError::MigrateToChatId(_) => "the group became a supergroup".to_owned(),
        RequestError::RetryAfter(s) => format!("flood control (retry after {} s)", s.seconds()),
        RequestError::Network(_) => "a network error".to_owned(),
        RequestError::InvalidJson { .. } => "an answer from Telegram that could not be read".to_owned(),
        RequestError::Io(_) => "a file that could not be read".to_owned(),
    }
}
