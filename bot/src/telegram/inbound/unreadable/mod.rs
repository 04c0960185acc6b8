//! Poison input: updates the bot cannot read never stop it.
//!
//! A `getUpdates` answer is decoded in two steps: the envelope, with each update kept as raw
//! JSON text ([`RawValue`]), then each update on its own. An update that does not decode (a lone
//! surrogate such as `"\ud800"`, which `serde_json` refuses; bytes that are not UTF-8), or whose
//! fields the router reads have another type than the Bot API gives them ([`shape`]), is
//! *unreadable*:
//!
//! 1. its bytes, exactly as received, are kept in `<state_dir>/unreadable/<update_id>.json`
//!    (`no-id-<hash>.json` when even its id cannot be read), written atomically and never
//!    overwritten, before anything is acknowledged; when that fails it is not acknowledged;
//! 2. a placeholder `{"update_id": N}` takes its place in the inbound journal, so its id counts
//!    as seen (the offset moves past it, a restart does not fetch it again) and the router, which
//!    finds neither `message` nor `callback_query` in it, marks it done;
//! 3. one warning is logged, with its id, the file and the reason (never its content);
//! 4. its chat is told [`COULD_NOT_READ`](crate::telegram::outbound::texts::COULD_NOT_READ) when the chat can be read from the raw bytes and the
//!    access rules would let the bot answer there (an allowed user's private chat; in an allowed
//!    group, an allowed sender whose message mentions the bot). A stranger gets nothing: the one
//!    reply a stranger may get stays with the readable messages' rules.
//!
//! Every other update of the same answer is handled as before. Webhook mode does the same with
//! one update per request, answering 200 once it is set aside.

mod scan;
mod shape;
#[cfg(test)]
mod tests;

use crate::features::port::Target;
use crate::telegram::TelegramHost;
use crate::telegram::conversation::access::Access;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Folder of `state_dir` holding the bytes of unreadable updates.
pub const FOLDER: &str = "unreadable";

/// One update of a delivery.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// A readable update: its `update_id` and its JSON.
    Update(i64, Value),
    /// One that is not.
    Unreadable(Unreadable),
}

/// An update that cannot be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    /// Its `update_id`, when that much could be read.
    pub id: Option<i64>,
    /// Its bytes as received.
    pub raw: Vec<u8>,
    /// Why it cannot be read (names a field or a JSON position, never the content).
    pub reason: String,
}

/// Why a `getUpdates` call brought no updates.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// No answer, or its body could not be read: the error without its URL (the URL holds the
    /// token), with its causes.
    #[error("{0}")]
    Transport(String),
    /// The body is not a Bot API answer at all (nothing in it can be acknowledged).
    #[error("the answer (HTTP {status}) is not a Bot API response: {reason}")]
    NotJson {
        /// HTTP status.
        status: u16,
        /// What the JSON decoder said (a position, no content).
        reason: String,
    },
    /// `ok: false`: Telegram's `error_code` and `description`.
    #[error("{code} {description}")]
    Api {
        /// `error_code` (the HTTP status when absent).
        code: i64,
        /// `description`.
        description: String,
    },
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    ok: bool,
    #[serde(borrow, default)]
    result: Option<Vec<&'a RawValue>>,
    #[serde(default)]
    error_code: Option<i64>,
    #[serde(default)]
    description: Option<String>,
}

/// Decodes a `getUpdates` answer (Bot API: `{"ok": true, "result": [Update, ...]}`), each
/// update on its own, in the order received.
pub fn decode_batch(status: u16, body: &[u8]) -> Result<Vec<Decoded>, BatchError> {
    // Bytes that are not UTF-8 (never sent by Telegram) become `?`, one for one, so the
    // envelope still splits and each update's range is the same in `body`.
    let (marked, invalid) = match std::str::from_utf8(body) {
        Ok(_) => (None, Vec::new()),
        Err(_) => {
            let (text, at) = mark_invalid(body);
            (Some(text), at)
        }
    };
    let text = match &marked {
        Some(t) => t.as_str(),
        None => std::str::from_utf8(body).unwrap_or_default(),
    };
    let envelope: Envelope<'_> = serde_json::from_str(text).map_err(|e| BatchError::NotJson {
        status,
        reason: e.to_string(),
    })?;
    if !envelope.ok {
        return Err(BatchError::Api {
            code: envelope.error_code.unwrap_or(i64::from(status)),
            description: envelope.description.unwrap_or_else(|| "no description".to_owned()),
        });
    }
    let base = text.as_ptr() as usize;
    Ok(envelope
        .result
        .unwrap_or_default()
        .into_iter()
        .map(|raw| {
            let start = (raw.get().as_ptr() as usize).saturating_sub(base);
            let range = start..start + raw.get().len();
            let bytes = body.get(range.clone()).unwrap_or(raw.get().as_bytes());
            if invalid.iter().any(|i| range.contains(i)) {
                unreadable(bytes, None, "it is not valid UTF-8".to_owned())
            } else {
                decode_update(bytes)
            }
        })
        .collect())
}

/// `body` with every byte that is not part of valid UTF-8 replaced by `?`, and where they were.
fn mark_invalid(body: &[u8]) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(body.len());
    let mut at = Vec::new();
    for chunk in body.utf8_chunks() {
        out.push_str(chunk.valid());
        for _ in chunk.invalid() {
            at.push(out.len());
            out.push('?');
        }
    }
    (out, at)
}

/// Decodes one update (a webhook request's body, or one element of a batch).
pub fn decode_update(bytes: &[u8]) -> Decoded {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(update) => match (shape::check(&update), update["update_id"].as_i64()) {
            (Ok(()), Some(id)) => Decoded::Update(id, update),
            (Ok(()), None) => unreadable(bytes, None, "`update_id` is out of range".to_owned()),
            (Err(reason), id) => unreadable(bytes, id, reason),
        },
        Err(e) => unreadable(bytes, None, format!("it is not valid JSON: {e}")),
    }
}

fn unreadable(bytes: &[u8], id: Option<i64>, reason: String) -> Decoded {
    Decoded::Unreadable(Unreadable {
        id: id.or_else(|| scan::int_field(bytes, "update_id")),
        raw: bytes.to_vec(),
        reason,
    })
}

/// The journal's stand-in for an unreadable update: its id, nothing to route.
pub fn placeholder(id: i64) -> (i64, Value) {
    (id, json!({ "update_id": id }))
}

/// An unreadable update whose bytes are kept.
#[derive(Debug)]
pub struct Aside {
    /// The update.
    pub update: Unreadable,
    /// Where its bytes are.
    pub file: PathBuf,
    /// Whether this call wrote the file (else it was there from an earlier delivery).
    pub new: bool,
}

/// Keeps the bytes of each unreadable update under `<state_dir>/unreadable/` (an existing file
/// is left as it is). Returns those kept and the lowest `update_id` that could not be (it must
/// not be acknowledged: Telegram sends it again). A failure is logged.
pub fn keep_all(state_dir: &Path, updates: Vec<Unreadable>) -> (Vec<Aside>, Option<i64>) {
    let dir = state_dir.join(FOLDER);
    let mut kept = Vec::with_capacity(updates.len());
    let mut not_kept: Option<i64> = None;
    for update in updates {
        let file = dir.join(match update.id {
            Some(id) => format!("{id}.json"),
            None => format!("no-id-{:016x}.json", content_hash(&update.raw)),
        });
        let written = if file.exists() {
            Ok(false)
        } else {
            crate::telegram::conversation::store_file::write_atomic(&file, &update.raw).map(|()| true)
        };
        match written {
            Ok(new) => kept.push(Aside { update, file, new }),
            Err(e) => {
                tracing::error!(
                    update_id = update.id, file = %file.display(),
                    "cannot set an unreadable update aside ({e}): it is not acknowledged, and Telegram sends it again"
                );
                if let Some(id) = update.id {
                    not_kept = Some(not_kept.map_or(id, |n| n.min(id)));
                }
            }
        }
    }
    (kept, not_kept)
}

/// A stable name for bytes without an id (the same bytes delivered again find their file).
fn content_hash(bytes: &[u8]) -> u64 {
    use std::hash::{DefaultHasher, Hasher};
    let mut h = DefaultHasher::new();
    h.write(bytes);
    h.finish()
}

/// Logs an update set aside (one line: id, file, reason) and tells its chat when it may be
/// answered ([`chat_to_tell`]); the message is sent in its own task.
pub fn report(host: &Arc<TelegramHost>, aside: &Aside) {
    let to = chat_to_tell(&aside.update.raw, &host.access, &host.bot_username);
    tracing::warn!(
        update_id = aside.update.id,
        file = %aside.file.display(),
        reason = %aside.update.reason,
        chat_told = to.is_some(),
        "an update could not be read: its bytes were set aside and it counts as handled"
    );
    if let Some(to) = to {
        let tg = host.tg.clone();
        tokio::spawn(async move {
            if let Err(e) = tg
                .send_plain(to, crate::telegram::outbound::texts::COULD_NOT_READ, None)
                .await
            {
                tracing::warn!(
                    chat = to.chat_id,
                    "cannot tell the chat that its message was unreadable: {e}"
                );
            }
        });
    }
}

/// The chat to tell about an unreadable update, read leniently from its bytes, when the access
/// rules let the bot answer there: a private chat (positive id) of an allowed user (the sender,
/// when readable, allowed too); a group (negative id) that is allowed, with an allowed sender
/// and a mention of the bot (the only sign of being addressed that survives a broken update).
pub fn chat_to_tell(raw: &[u8], access: &Access, bot_username: &str) -> Option<Target> {
    let chat = scan::nested_int(raw, "chat", "id")?;
    let from = scan::nested_int(raw, "from", "id");
    let allowed = if chat > 0 {
        access.is_allowed_user(chat) && from.is_none_or(|f| access.is_allowed_user(f))
    } else {
        access.is_allowed_chat(chat)
            && from.is_some_and(|f| access.is_allowed_user(f))
            && scan::mentions(raw, bot_username)
    };
    let thread = scan::is_true(raw, "is_topic_message")
        .then(|| scan::int_field(raw, "message_thread_id"))
        .flatten()
        .and_then(|t| i32::try_from(t).ok());
    allowed.then_some(Target { chat_id: chat, thread })
}
