//! What the double keeps and reports: [`ApiCall`]s with their outcome, [`ApiError`] in
//! Telegram's shape, uploads, `getUpdates` calls, early retries, the chat's messages.

use std::fmt::Write as _;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::time::Instant;

/// An error answer in Telegram's shape:
/// `{"ok":false,"error_code":N,"description":"...","parameters":{...}}`; the HTTP status is
/// `error_code`, as Telegram sends it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error_code} {description}")]
pub struct ApiError {
    /// `error_code` and HTTP status: 400, 401, 403, 404, 409, 413, 429.
    pub error_code: u16,
    /// `description`, e.g. `Bad Request: message is too long`.
    pub description: String,
    /// `parameters.retry_after` in seconds (with 429).
    pub retry_after: Option<u64>,
    /// `parameters.migrate_to_chat_id` (a group that became a supergroup).
    pub migrate_to_chat_id: Option<i64>,
}

impl ApiError {
    /// An error with this code and description and no `parameters`.
    pub fn new(error_code: u16, description: impl Into<String>) -> Self {
        Self {
            error_code,
            description: description.into(),
            retry_after: None,
            migrate_to_chat_id: None,
        }
    }

    /// 400 `Bad Request: {detail}`.
    pub fn bad_request(detail: impl AsRef<str>) -> Self {
        Self::new(400, format!("Bad Request: {}", detail.as_ref()))
    }

    /// 429 `Too Many Requests: retry after N` with `parameters.retry_after` N.
    pub fn too_many_requests(retry_after: u64) -> Self {
        Self {
            retry_after: Some(retry_after),
            ..Self::new(429, format!("Too Many Requests: retry after {retry_after}"))
        }
    }

    /// The response body Telegram sends for this error.
    pub fn to_json(&self) -> Value {
        let mut body = json!({
            "ok": false,
            "error_code": self.error_code,
            "description": self.description,
        });
        let mut parameters = Map::new();
        if let Some(seconds) = self.retry_after {
            parameters.insert("retry_after".into(), seconds.into());
        }
        if let Some(chat_id) = self.migrate_to_chat_id {
            parameters.insert("migrate_to_chat_id".into(), chat_id.into());
        }
        if !parameters.is_empty() {
            body["parameters"] = Value::Object(parameters);
        }
        body
    }
}

/// A file part of a multipart request (a part with a file name or a content type).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadedFile {
    /// The part's name: the parameter (`document`) or the `attach://` name it was referred by.
    pub field: String,
    /// The file name the client gave, if any (teloxide sends `""` when it has none).
    pub file_name: Option<String>,
    /// The part's `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The file's content.
    pub bytes: Bytes,
}

/// One request to `/bot<token>/<method>`, as received and answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiCall {
    /// The method as requested, lowercased (`sendmessage`, `getupdates`).
    pub method: String,
    /// The parameters as one JSON object, whichever way they came (JSON, form, query string,
    /// multipart text parts). Values sent as text are normalised: known integer and boolean
    /// parameters (`chat_id`, `message_id`, `offset`, `show_alert`, ...) become numbers and
    /// booleans, known JSON parameters (`reply_markup`, `reply_parameters`, `commands`, ...)
    /// become JSON, so a test reads `params["reply_markup"]["inline_keyboard"]` either way.
    pub params: Value,
    /// File parts of a multipart request, in order.
    pub files: Vec<UploadedFile>,
    /// When the request arrived (tokio clock, so paused-clock tests see their own time).
    pub at: Instant,
    /// The `result` sent back, or the error.
    pub outcome: Result<Value, ApiError>,
}

impl ApiCall {
    /// A parameter by name (`None` when absent or `null`).
    pub fn param(&self, name: &str) -> Option<&Value> {
        self.params.get(name).filter(|value| !value.is_null())
    }

    /// The numeric `chat_id` parameter, if any.
    pub fn chat_id(&self) -> Option<i64> {
        self.param("chat_id").and_then(Value::as_i64)
    }

    /// The `text` parameter (as sent, markup included), if any.
    pub fn text(&self) -> Option<&str> {
        self.param("text").and_then(Value::as_str)
    }

    /// The call was answered with `ok: true`.
    pub fn is_ok(&self) -> bool {
        self.outcome.is_ok()
    }

    /// The `result` answered, if the call succeeded.
    pub fn result(&self) -> Option<&Value> {
        self.outcome.as_ref().ok()
    }

    /// The error answered, if the call failed.
    pub fn error(&self) -> Option<&ApiError> {
        self.outcome.as_ref().err()
    }
}

/// One `getUpdates` call, recorded when it arrives (before a long poll is answered), so a
/// test can check which offset the bot acknowledged and when.
#[derive(Debug, Clone, PartialEq)]
pub struct GetUpdatesCall {
    /// When it arrived.
    pub at: Instant,
    /// The `offset` parameter: updates with a lower `update_id` are confirmed and dropped.
    pub offset: Option<i64>,
    /// The `limit` parameter.
    pub limit: Option<i64>,
    /// The `timeout` parameter in seconds.
    pub timeout: Option<i64>,
    /// When it was answered; `None` while it is being held.
    pub answered_at: Option<Instant>,
    /// The `update_id`s returned, or the error; `None` while it is being held.
    pub outcome: Option<Result<Vec<i64>, ApiError>>,
}

/// A call that arrived before a `retry_after` this server had answered for the same method
/// (and chat, see [`BotApiServer::early_retries`](super::BotApiServer::early_retries)) ran out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlyRetry {
    /// The method, lowercased.
    pub method: String,
    /// The call's `chat_id`, if any.
    pub chat_id: Option<i64>,
    /// When the call arrived.
    pub at: Instant,
    /// The earliest moment the client had been told it could call again.
    pub allowed_at: Instant,
}

impl EarlyRetry {
    /// How much too early the call came.
    pub fn too_early_by(&self) -> Duration {
        self.allowed_at.saturating_duration_since(self.at)
    }
}

/// A message the bot sent, as the chat shows it now (after edits; deleted ones are gone).
#[derive(Debug, Clone, PartialEq)]
pub struct ChatMessage {
    /// The chat.
    pub chat_id: i64,
    /// The message id (increasing per chat, shared with incoming messages as in Telegram).
    pub message_id: i64,
    /// `message_thread_id`, when sent into a thread or forum topic.
    pub thread_id: Option<i64>,
    /// The `text` (or `caption`) as the bot last sent it, markup included.
    pub text: Option<String>,
    /// The text (or caption) users see: markup parsed away, entities decoded.
    pub visible_text: Option<String>,
    /// The `parse_mode` of the last send or edit, as given.
    pub parse_mode: Option<String>,
    /// The inline keyboard (`{"inline_keyboard": [...]}`), if the message has one.
    pub reply_markup: Option<Value>,
    /// The message it replies to.
    pub reply_to_message_id: Option<i64>,
    /// The document's file id, or the photo's largest size's.
    pub file_id: Option<String>,
    /// How many times it was edited (text or keyboard).
    pub edits: u32,
    /// The full `Message` object as the Bot API returns it now.
    pub message: Value,
}

/// A bot command set by `setMyCommands`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BotCommand {
    /// The command without the slash.
    pub command: String,
    /// Its description.
    pub description: String,
}

/// Returned by the `wait_for*` helpers of [`BotApiServer`](super::BotApiServer) when the
/// condition did not hold in time; carries every call seen, for the failure message.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "volcanic-testkit: waited {waited:?} on the Bot API double for {what}; calls so far: {}",
    summary(calls)
)]
pub struct WaitTimeout {
    /// What was waited for.
    pub what: String,
    /// How long it waited.
    pub waited: Duration,
    /// Every call recorded when the wait gave up.
    pub calls: Vec<ApiCall>,
}

/// `method -> ok | status description` for each call, the last 30 at most.
fn summary(calls: &[ApiCall]) -> String {
    let skipped = calls.len().saturating_sub(30);
    let mut out = String::new();
    if skipped > 0 {
        let _ = write!(out, "({skipped} earlier) ");
    }
    for call in calls.iter().skip(skipped) {
        let _ = match &call.outcome {
            Ok(_) => write!(out, "[{} ok] ", call.method),
            Err(error) => write!(out, "[{} {}] ", call.method, error),
        };
    }
    if calls.is_empty() {
        out.push_str("none");
    }
    out.trim_end().to_owned()
}
