//! A Telegram Bot API double on `127.0.0.1`, strict like Telegram, that teloxide works against.
//!
//! [`BotApiServer::start`] binds a free port and serves `POST`/`GET /bot<token>/<method>`
//! (method names matched case-insensitively: teloxide sends `SendMessage`) and file downloads
//! at `/file/bot<token>/<file_path>`. Parameters come as a JSON body, form-urlencoded, a query
//! string or multipart (files as parts, also by `attach://<part>` as teloxide sends them).
//! Answers have Telegram's shapes: `{"ok":true,"result":...}`, or
//! `{"ok":false,"error_code":N,"description":"...","parameters":{...}}` with HTTP status N.
//! A wrong token gets 401 `Unauthorized`, an unknown method 404 `Not Found: method not found`.
//!
//! # Methods
//! - `getMe` (the bot: id from the token's digits, `@volcanic_test_bot`), `getWebhookInfo`,
//!   `setWebhook` (https `url`, `secret_token`; polling then gets 409, and
//!   [`deliver_webhooks_via`](BotApiServer::deliver_webhooks_via) posts updates as Telegram
//!   would), `deleteWebhook` (`drop_pending_updates`).
//! - `getUpdates`: `offset` confirms (drops) updates below it (negative: keep the last -N),
//!   `limit` 1-100, `timeout` seconds held until an update is pushed; a poll overtaken by a
//!   newer one gets 409 `Conflict: terminated by other getUpdates request; ...`.
//! - `sendMessageDraft` (private chats; `draft_id` non-zero; `text` optional, checked like a
//!   message's; `can_stop` recorded with the call) answers `true` and stores nothing.
//! - `getUpdates` honours `allowed_updates`: an opt-in kind (`stopped_message_generation`,
//!   `message_reaction`, ...) pushed with [`push_update`](BotApiServer::push_update) is dropped
//!   unless the bot listed it, as Telegram never delivers it.
//! - `sendMessage`, `editMessageText`, `editMessageReplyMarkup`, `deleteMessage`,
//!   `deleteMessages`, `sendDocument`, `sendPhoto` (see below), `sendChatAction` (known
//!   actions), `answerCallbackQuery` (each pushed query once), `getFile`,
//!   `setMyCommands`/`getMyCommands`/`deleteMyCommands` (per scope and language).
//! - `sendVoice`: the file must be valid OGG/Opus (the [`audio`](crate::audio) reader: pages,
//!   CRC, `OpusHead`); the message shows `voice` with the `duration` given, the measured
//!   length under `voice.measured_seconds` (the double's own field), and the caption.
//! - `setMessageReaction`: the message must exist, `reaction` at most one emoji of Telegram's
//!   list (`REACTION_INVALID`, `REACTIONS_TOO_MANY`); [`reaction`](BotApiServer::reaction)
//!   reads what a message shows.
//! - `setMyDescription`, `setMyShortDescription`, `setMyName`,
//!   `setChatMenuButton`, `(un)pinChatMessage`, `unpinAllChatMessages`, `leaveChat`, `logOut`,
//!   `close` answer `true`.
//!
//! # Telegram's checks
//! - Chats must be known (from a pushed update, or [`add_chat`](BotApiServer::add_chat)):
//!   else `Bad Request: chat not found`; after a `migrate_to_chat_id` service message the old
//!   id gets `Bad Request: group chat was upgraded to a supergroup chat` with
//!   `parameters.migrate_to_chat_id`.
//! - Text: 1-4096 UTF-16 units after entity parsing (`message is too long`; edits
//!   `MESSAGE_TOO_LONG`), captions 1024 (`message caption is too long`), empty or blank text
//!   `message text is empty`. `parse_mode` `HTML` is parsed as Telegram does (supported tags
//!   only, balanced and nested, attributes, `&` entities; errors `Bad Request: can't parse
//!   entities: Unsupported start tag "think" at byte offset 0`, `Can't find end tag
//!   corresponding to start tag "b"`, ...). Stricter than the live server in one point: a bare
//!   `&` is refused, as the Bot API documentation requires. `Markdown`/`MarkdownV2` are not
//!   checked; another mode is `unsupported parse_mode`.
//! - Inline keyboards: each button needs text and an action (`Text buttons are unallowed in
//!   the inline keyboard`), `callback_data` 1-64 bytes (`BUTTON_DATA_INVALID`).
//! - Replies: the target must exist unless `allow_sending_without_reply`
//!   (`message to be replied not found`).
//! - Edits: the bot's own message (`message to edit not found`, `message can't be edited`);
//!   the same text, entities and keyboard give `message is not modified: specified new message
//!   content and reply markup are exactly the same as a current content and reply markup of
//!   the message`; an edit without `reply_markup` removes the keyboard.
//! - Files: an upload, `attach://` part, or known file id (`wrong file identifier/HTTP URL
//!   specified`; URLs cannot be fetched here); photos must be images (`IMAGE_PROCESS_FAILED`).
//! - Commands: `[a-z0-9_]{1,32}` (`BOT_COMMAND_INVALID`), descriptions 1-256 characters
//!   (`BOT_COMMAND_DESCRIPTION_INVALID`), at most 100.
//!
//! Error descriptions are those teloxide maps to its `ApiError` variants where it has one.
//!
//! # Faults and flood control
//! [`fail_next`](BotApiServer::fail_next) queues an error for a method's next call
//! ([`fail_next_in`](BotApiServer::fail_next_in): its next call in one chat);
//! [`rate_limit`](BotApiServer::rate_limit) answers 429 to every call of a method for a while.
//! Each 429 sets a deadline (the method and chat for `fail_next`, the method in every chat
//! for `rate_limit`); a call arriving before it is an [`EarlyRetry`].
//! [`hold_next`](BotApiServer::hold_next) holds a call on the wire (received, not applied)
//! until [`release_held`](BotApiServer::release_held) serves or drops it (crash tests).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use volcanic_testkit::bot_api::{BotApiServer, updates};
//!
//! let api = BotApiServer::start("123456:TEST-TOKEN").await?;
//! // ... start the bot with its API URL set to api.url() and token api.token() ...
//! let pushed = api.push_update(updates::text_message(42, 42, "hello"));
//! api.wait_for(|api| !api.messages(42).is_empty(), Duration::from_secs(5)).await?;
//! let reply = &api.messages(42)[0];
//! assert_eq!(reply.parse_mode.as_deref(), Some("HTML"));
//! // The bot acknowledged the update: it polled with a higher offset.
//! assert!(api.confirmed_offset() > pushed["update_id"].as_i64());
//! assert!(api.early_retries().is_empty());
//! # Ok(())
//! # }
//! ```
//!
//! Dropping the last clone of the handle stops the server.
#![warn(missing_docs)]

mod faults;
mod hold;
mod html;
mod limits;
mod messages;
mod methods;
mod params;
mod polling;
mod raw;
mod reactions;
mod recorded;
mod server;
mod state;
pub mod updates;
mod voice;
mod webhook;

#[cfg(test)]
mod html_tests;
#[cfg(test)]
mod server_tests;
#[cfg(test)]
mod teloxide_tests;
#[cfg(test)]
mod test_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use tokio::time::Instant;

use crate::serve::{self, ServeTask};

pub use hold::HeldCall;
pub use recorded::{ApiCall, ApiError, BotCommand, ChatMessage, EarlyRetry, GetUpdatesCall, UploadedFile, WaitTimeout};
pub use updates::MessageUpdate;

use state::Shared;

/// Handle to a running Bot API double; cheap to clone, all clones share one server.
#[derive(Debug, Clone)]
pub struct BotApiServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    token: Arc<str>,
    _task: Arc<ServeTask>,
    webhook_task: Arc<std::sync::Mutex<Option<ServeTask>>>,
}

impl BotApiServer {
    /// Binds `127.0.0.1:0` and serves the bot with this token on the current tokio runtime
    /// until the last handle drops. The bot's id is the token's part before `:` when numeric.
    pub async fn start(token: impl Into<String>) -> std::io::Result<Self> {
        let token: String = token.into();
        let (listener, addr) = serve::bind_loopback().await?;
        let shared = Arc::new(Shared::new(token.clone()));
        let app = server::router(Arc::clone(&shared));
        Ok(Self {
            shared,
            addr,
            token: token.into(),
            _task: serve::spawn("Bot API double", listener, app),
            webhook_task: Arc::default(),
        })
    }

    /// The bound address (`127.0.0.1:<port>`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`, the API URL for teloxide's `Bot::set_api_url` (or
    /// `TELOXIDE_API_URL`); methods are under `/bot<token>/`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The token the server accepts.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The bot's user id (as `getMe` reports it).
    pub fn bot_id(&self) -> i64 {
        self.shared.lock().bot.id
    }

    /// The bot's username without `@` (`volcanic_test_bot`).
    pub fn bot_username(&self) -> String {
        self.shared.lock().bot.username.clone()
    }

    /// Queues an update for `getUpdates` and returns it as queued, completed: `update_id`
    /// (the next one when absent), and for messages `message_id` (the chat's next), `date`,
    /// file details of registered files; for callback queries `id` and the stored message.
    /// Chats it mentions become known, messages it carries are stored (replies and
    /// `deleteMessage` can target them). Builders are in [`updates`].
    ///
    /// # Panics
    /// If `update` is not a JSON object.
    pub fn push_update(&self, update: impl Into<Value>) -> Value {
        let pushed = self.shared.lock().push_update(update.into());
        self.shared.notify();
        pushed
    }

    /// Starts delivering updates to the webhook, as Telegram does once `setWebhook` was called
    /// (see the `webhook` module): posts go to `via` (`http://127.0.0.1:<port>`, standing in for
    /// the TLS proxy in front of the bot) plus the registered URL's path. Until then, and after
    /// `deleteWebhook`, updates wait for `getUpdates` (which answers 409 while a webhook is set).
    pub fn deliver_webhooks_via(&self, via: &str) {
        let task = tokio::spawn(webhook::deliver(
            Arc::clone(&self.shared),
            via.trim_end_matches('/').to_owned(),
        ));
        *self.webhook_task.lock().unwrap_or_else(|e| e.into_inner()) = Some(ServeTask(task));
    }

    /// The webhook set by `setWebhook`: `(url, secret_token)`; `None` without one.
    pub fn webhook(&self) -> Option<(String, String)> {
        let state = self.shared.lock();
        (!state.webhook_url.is_empty()).then(|| (state.webhook_url.clone(), state.webhook_secret.clone()))
    }

    /// Every webhook delivery attempt: `(update_id, HTTP status)`, 0 when no answer came.
    pub fn webhook_attempts(&self) -> Vec<(i64, u16)> {
        self.shared.lock().webhook_attempts.clone()
    }

    /// Makes a chat known without an update (private for positive ids, a group for negative
    /// ones, a supergroup below -10^12).
    pub fn add_chat(&self, chat_id: i64) {
        self.shared.lock().learn_chat(&state::chat_json(chat_id));
    }

    /// Registers a file the bot can fetch with `getFile` and download; returns its `file_id`
    /// for [`updates::photo_message`], [`updates::document_message`], ...
    pub fn add_file(&self, bytes: impl Into<Bytes>, name: &str) -> String {
        let name = Some(name.to_owned()).filter(|name| !name.is_empty());
        self.shared.lock().files.add(bytes.into(), name, "documents").file_id
    }

    /// The content of a registered or uploaded file.
    pub fn file_bytes(&self, file_id: &str) -> Option<Bytes> {
        self.shared.lock().files.get(file_id).map(|file| file.bytes.clone())
    }

    /// Updates queued and not yet confirmed by an `offset`.
    pub fn pending_updates(&self) -> Vec<Value> {
        self.shared.lock().pending.iter().cloned().collect()
    }

    /// Every API call so far, in the order they were answered (a long poll is recorded
    /// when it returns; [`get_updates_calls`](Self::get_updates_calls) has them on arrival).
    pub fn sent(&self) -> Vec<ApiCall> {
        self.shared.lock().calls.clone()
    }

    /// The calls to one method (any case: `"sendMessage"` or `"sendmessage"`).
    pub fn calls(&self, method: &str) -> Vec<ApiCall> {
        let method = method.to_ascii_lowercase();
        self.shared
            .lock()
            .calls
            .iter()
            .filter(|call| call.method == method)
            .cloned()
            .collect()
    }

    /// The reaction emoji the bot's last accepted `setMessageReaction` left on `message_id` in
    /// `chat_id` (`None`: never set, or removed).
    pub fn reaction(&self, chat_id: i64, message_id: i64) -> Option<String> {
        let last = self.calls("setMessageReaction").into_iter().rev().find(|call| {
            call.is_ok()
                && call.chat_id() == Some(chat_id)
                && call.param("message_id").and_then(Value::as_i64) == Some(message_id)
        })?;
        let reaction = match last.param("reaction")? {
            Value::String(text) => serde_json::from_str(text).ok()?,
            value => value.clone(),
        };
        reaction.get(0)?.get("emoji")?.as_str().map(str::to_owned)
    }

    /// Every file uploaded in a call, in order.
    pub fn uploads(&self) -> Vec<UploadedFile> {
        self.shared
            .lock()
            .calls
            .iter()
            .flat_map(|call| call.files.iter().cloned())
            .collect()
    }

    /// The bot's messages in a chat as they are now (edited ones in their last version,
    /// deleted ones gone), by message id.
    pub fn messages(&self, chat_id: i64) -> Vec<ChatMessage> {
        let state = self.shared.lock();
        let Some(chat) = state.chats.get(&chat_id) else {
            return Vec::new();
        };
        chat.messages
            .values()
            .filter(|stored| stored.outgoing)
            .map(|stored| stored.to_chat_message(chat_id))
            .collect()
    }

    /// The newest `n` messages the bot has in `chat_id`, newest first: cheaper than
    /// [`messages`](Self::messages) for a poll that only looks for the latest answer.
    pub fn newest_messages(&self, chat_id: i64, n: usize) -> Vec<ChatMessage> {
        let state = self.shared.lock();
        let Some(chat) = state.chats.get(&chat_id) else {
            return Vec::new();
        };
        chat.messages
            .values()
            .rev()
            .filter(|stored| stored.outgoing)
            .take(n)
            .map(|stored| stored.to_chat_message(chat_id))
            .collect()
    }

    /// The commands `setMyCommands` set for the default scope and no language.
    pub fn commands(&self) -> Vec<BotCommand> {
        self.shared
            .lock()
            .commands
            .get(&("default".to_owned(), String::new()))
            .cloned()
            .unwrap_or_default()
    }

    /// Every `getUpdates` call, recorded on arrival (see [`GetUpdatesCall`]).
    pub fn get_updates_calls(&self) -> Vec<GetUpdatesCall> {
        self.shared.lock().polls.clone()
    }

    /// The highest `offset` any `getUpdates` call sent: updates below it are confirmed.
    pub fn confirmed_offset(&self) -> Option<i64> {
        self.shared.lock().polls.iter().filter_map(|call| call.offset).max()
    }

    /// File paths downloaded from `/file/bot<token>/`, in order.
    pub fn downloads(&self) -> Vec<String> {
        self.shared.lock().downloads.clone()
    }

    /// Answers the next call to `method` (any case) with this error instead of serving it;
    /// queued errors are used in order. With `retry_after`, the body carries
    /// `parameters.retry_after`, and a call to the same method and chat before it ran out is
    /// an [`EarlyRetry`].
    pub fn fail_next(&self, method: &str, status: u16, description: impl Into<String>, retry_after: Option<u64>) {
        let error = ApiError {
            retry_after,
            ..ApiError::new(status, description)
        };
        self.shared.lock().faults.fail_next(method, None, error);
    }

    /// Like [`fail_next`](Self::fail_next), for the next call to `method` with this `chat_id`
    /// only: calls for other chats are served. Errors queued for the chat come before errors
    /// queued for any chat.
    pub fn fail_next_in(
        &self,
        method: &str,
        chat_id: i64,
        status: u16,
        description: impl Into<String>,
        retry_after: Option<u64>,
    ) {
        let error = ApiError {
            retry_after,
            ..ApiError::new(status, description)
        };
        self.shared.lock().faults.fail_next(method, Some(chat_id), error);
    }

    /// From now for `retry_after_secs`, every call to `method` (any case) gets 429 `Too Many
    /// Requests: retry after N` with N the seconds left, rounded up. A call arriving before
    /// the N seconds it was told (in any chat) is an [`EarlyRetry`]. 0 ends the window.
    pub fn rate_limit(&self, method: &str, retry_after_secs: u64) {
        self.shared
            .lock()
            .faults
            .rate_limit(method, retry_after_secs, Instant::now());
    }

    /// Calls that came before the `retry_after` they had been given ran out; tests assert
    /// this is empty.
    pub fn early_retries(&self) -> Vec<EarlyRetry> {
        self.shared.lock().faults.early.clone()
    }

    /// Waits until `predicate` holds for the server (checked now and after every call,
    /// push and download), or fails after `timeout`.
    pub async fn wait_for(
        &self,
        mut predicate: impl FnMut(&Self) -> bool,
        timeout: Duration,
    ) -> Result<(), WaitTimeout> {
        self.wait_until("a condition", timeout, |api| predicate(api).then_some(()))
            .await
    }

    /// Waits until at least `n` calls to `method` (any case) were answered; returns them.
    pub async fn wait_for_calls(&self, method: &str, n: usize, timeout: Duration) -> Result<Vec<ApiCall>, WaitTimeout> {
        let what = format!("{n} calls to {method}");
        self.wait_until(&what, timeout, |api| {
            let calls = api.calls(method);
            (calls.len() >= n).then_some(calls)
        })
        .await
    }

    async fn wait_until<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut check: impl FnMut(&Self) -> Option<T>,
    ) -> Result<T, WaitTimeout> {
        let mut changed = self.shared.changed.subscribe();
        let deadline = Instant::now() + timeout;
        loop {
            changed.borrow_and_update();
            if let Some(found) = check(self) {
                return Ok(found);
            }
            let woke = tokio::time::timeout_at(deadline, changed.changed()).await;
            if !matches!(woke, Ok(Ok(()))) {
                return check(self).ok_or_else(|| WaitTimeout {
                    what: what.to_owned(),
                    waited: timeout,
                    calls: self.sent(),
                });
            }
        }
    }
}
