//! The double's state: the bot's identity, chats and their messages, registered files, the
//! update queue, commands, faults, and everything recorded; plus the intake of pushed updates.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use super::faults::Faults;
use super::{ApiCall, ApiError, BotCommand, ChatMessage, GetUpdatesCall};

/// Keys of an update that carry a `Message`.
const MESSAGE_KEYS: &[&str] = &["message", "edited_message", "channel_post", "edited_channel_post"];

/// Keys of a `Message` that carry files (objects, or `photo`'s array of sizes).
const FILE_KEYS: &[&str] = &[
    "photo",
    "document",
    "voice",
    "audio",
    "video",
    "animation",
    "video_note",
    "sticker",
];

/// Current Unix time in seconds.
pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The chat type Telegram uses for an id: users are positive, basic groups negative,
/// supergroups and channels below -10^12 (`-100...`).
pub(crate) fn chat_type_for(chat_id: i64) -> &'static str {
    if chat_id > 0 {
        "private"
    } else if chat_id > -1_000_000_000_000 {
        "group"
    } else {
        "supergroup"
    }
}

/// A minimal `Chat` object for an id.
pub(crate) fn chat_json(chat_id: i64) -> Value {
    match chat_type_for(chat_id) {
        "private" => json!({
            "id": chat_id,
            "type": "private",
            "first_name": format!("User {chat_id}"),
            "username": format!("user{chat_id}"),
        }),
        kind => json!({"id": chat_id, "type": kind, "title": format!("Group {chat_id}")}),
    }
}

/// State shared by the handle and the handlers.
#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Bumped after every change, for long polls and waiters.
    pub(crate) changed: watch::Sender<u64>,
    /// Calls held on the wire by a test (`hold.rs`).
    pub(crate) holds: super::hold::Holds,
}

impl Shared {
    pub(crate) fn new(token: String) -> Self {
        Self {
            state: Mutex::new(State::new(token)),
            changed: watch::Sender::new(0),
            holds: super::hold::Holds::default(),
        }
    }

    /// Locks the state; a panic in another holder does not make the state unusable.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Wakes long polls and waiters. Call without holding the state lock.
    pub(crate) fn notify(&self) {
        self.changed.send_modify(|count| *count = count.wrapping_add(1));
    }
}

/// The bot `getMe` describes.
#[derive(Debug, Clone)]
pub(crate) struct BotIdentity {
    pub(crate) id: i64,
    pub(crate) first_name: String,
    pub(crate) username: String,
}

/// A file the double can serve: registered by a test or uploaded by the bot.
#[derive(Debug, Clone)]
pub(crate) struct StoredFile {
    pub(crate) file_id: String,
    pub(crate) file_unique_id: String,
    pub(crate) file_name: Option<String>,
    pub(crate) mime_type: Option<String>,
    pub(crate) file_path: String,
    pub(crate) bytes: Bytes,
}

impl StoredFile {
    pub(crate) fn size(&self) -> usize {
        self.bytes.len()
    }
}

/// Registered files by id.
#[derive(Debug, Default)]
pub(crate) struct Files {
    by_id: BTreeMap<String, StoredFile>,
    next: u64,
}

impl Files {
    /// Registers a file under a new id, its path in `folder` (`documents`, `photos`).
    pub(crate) fn add(&mut self, bytes: Bytes, file_name: Option<String>, folder: &str) -> StoredFile {
        self.next += 1;
        let n = self.next;
        let extension = file_name
            .as_deref()
            .and_then(|name| name.rsplit_once('.'))
            .map(|(_, extension)| format!(".{}", extension.to_ascii_lowercase()))
            .unwrap_or_default();
        let file = StoredFile {
            file_id: format!("testkit_file_{n}"),
            file_unique_id: format!("testkit_unique_{n}"),
            mime_type: file_name.as_deref().and_then(mime_type),
            file_name: file_name.filter(|name| !name.is_empty()),
            file_path: format!("{folder}/file_{n}{extension}"),
            bytes,
        };
        self.by_id.insert(file.file_id.clone(), file.clone());
        file
    }

    pub(crate) fn get(&self, file_id: &str) -> Option<&StoredFile> {
        self.by_id.get(file_id)
    }

    pub(crate) fn by_path(&self, path: &str) -> Option<&StoredFile> {
        self.by_id.values().find(|file| file.file_path == path)
    }
}

/// The MIME type Telegram would report for a file name, for common extensions.
fn mime_type(name: &str) -> Option<String> {
    let (_, extension) = name.rsplit_once('.')?;
    let mime = match extension.to_ascii_lowercase().as_str() {
        "txt" | "log" => "text/plain",
        "md" => "text/markdown",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "json" => "application/json",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ogg" | "oga" | "opus" => "audio/ogg",
        "mp3" => "audio/mpeg",
        "mp4" => "video/mp4",
        _ => return None,
    };
    Some(mime.to_owned())
}

/// A message in a chat: incoming (pushed in an update) or sent by the bot.
#[derive(Debug, Clone)]
pub(crate) struct StoredMessage {
    /// The `Message` object as the API shows it now.
    pub(crate) json: Value,
    /// Sent by the bot.
    pub(crate) outgoing: bool,
    /// `text` or `caption` as the bot sent it (markup included).
    pub(crate) source: Option<String>,
    /// `parse_mode` as given.
    pub(crate) parse_mode: Option<String>,
    /// Document or largest photo size.
    pub(crate) file_id: Option<String>,
    /// Edits so far.
    pub(crate) edits: u32,
}

impl StoredMessage {
    pub(crate) fn to_chat_message(&self, chat_id: i64) -> ChatMessage {
        let json = &self.json;
        let text = |key: &str| json.get(key).and_then(Value::as_str).map(str::to_owned);
        ChatMessage {
            chat_id,
            message_id: json["message_id"].as_i64().unwrap_or(0),
            thread_id: json.get("message_thread_id").and_then(Value::as_i64),
            text: self.source.clone(),
            visible_text: text("text").or_else(|| text("caption")),
            parse_mode: self.parse_mode.clone(),
            reply_markup: json.get("reply_markup").cloned(),
            reply_to_message_id: json.pointer("/reply_to_message/message_id").and_then(Value::as_i64),
            file_id: self.file_id.clone(),
            edits: self.edits,
            message: json.clone(),
        }
    }
}

/// One chat the bot knows.
#[derive(Debug, Clone)]
pub(crate) struct ChatState {
    /// The `Chat` object used in messages.
    pub(crate) chat: Value,
    /// The next message id to give.
    pub(crate) next_message_id: i64,
    /// Messages by id.
    pub(crate) messages: BTreeMap<i64, StoredMessage>,
    /// Set once the group became this supergroup.
    pub(crate) migrated_to: Option<i64>,
}

impl ChatState {
    fn new(chat: Value) -> Self {
        Self {
            chat,
            next_message_id: 1,
            messages: BTreeMap::new(),
            migrated_to: None,
        }
    }

    /// A new message id.
    pub(crate) fn take_message_id(&mut self) -> i64 {
        let id = self.next_message_id;
        self.next_message_id += 1;
        id
    }

    /// The chat is a forum supergroup.
    pub(crate) fn is_forum(&self) -> bool {
        self.chat.get("is_forum").and_then(Value::as_bool) == Some(true)
    }
}

/// Everything behind the handle.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) token: String,
    pub(crate) bot: BotIdentity,
    pub(crate) next_update_id: i64,
    /// Updates not yet confirmed by an `offset`, by increasing `update_id`.
    pub(crate) pending: VecDeque<Value>,
    /// Bumped by each `getUpdates`; a held poll whose generation is stale gets 409.
    pub(crate) poll_generation: u64,
    /// `allowed_updates` of the last `getUpdates` that gave it (Telegram keeps it until changed).
    pub(crate) allowed_updates: Option<Vec<String>>,
    pub(crate) webhook_url: String,
    /// `secret_token` of the last `setWebhook`.
    pub(crate) webhook_secret: String,
    /// Webhook deliveries: `(update_id, HTTP status)`; 0 when the request failed.
    pub(crate) webhook_attempts: Vec<(i64, u16)>,
    pub(crate) chats: BTreeMap<i64, ChatState>,
    pub(crate) files: Files,
    /// Callback query ids pushed, and whether they were answered.
    pub(crate) callbacks: BTreeMap<String, bool>,
    next_callback: u64,
    /// Commands by scope key (`default`, or the scope's JSON) and language code.
    pub(crate) commands: BTreeMap<(String, String), Vec<BotCommand>>,
    pub(crate) calls: Vec<ApiCall>,
    pub(crate) polls: Vec<GetUpdatesCall>,
    pub(crate) faults: Faults,
    pub(crate) downloads: Vec<String>,
}

impl State {
    fn new(token: String) -> Self {
        let id = token
            .split_once(':')
            .and_then(|(id, _)| id.parse().ok())
            .unwrap_or(7_000_000_001);
        Self {
            token,
            bot: BotIdentity {
                id,
                first_name: "Volcanic Test Bot".into(),
                username: "volcanic_test_bot".into(),
            },
            next_update_id: 1,
            pending: VecDeque::new(),
            poll_generation: 0,
            allowed_updates: None,
            webhook_url: String::new(),
            webhook_secret: String::new(),
            webhook_attempts: Vec::new(),
            chats: BTreeMap::new(),
            files: Files::default(),
            callbacks: BTreeMap::new(),
            next_callback: 0,
            commands: BTreeMap::new(),
            calls: Vec::new(),
            polls: Vec::new(),
            faults: Faults::default(),
            downloads: Vec::new(),
        }
    }

    /// The bot as a `User`.
    pub(crate) fn bot_user(&self) -> Value {
        json!({
            "id": self.bot.id,
            "is_bot": true,
            "first_name": self.bot.first_name,
            "username": self.bot.username,
        })
    }

    /// A chat the bot may write to: known, and not migrated.
    pub(crate) fn chat(&mut self, chat_id: i64) -> Result<&mut ChatState, ApiError> {
        let chat = self
            .chats
            .get_mut(&chat_id)
            .ok_or_else(|| ApiError::bad_request("chat not found"))?;
        if let Some(new_id) = chat.migrated_to {
            return Err(ApiError {
                migrate_to_chat_id: Some(new_id),
                ..ApiError::bad_request("group chat was upgraded to a supergroup chat")
            });
        }
        Ok(chat)
    }

    /// Makes a chat known, or refreshes what is known of it.
    pub(crate) fn learn_chat(&mut self, chat: &Value) -> Option<i64> {
        let id = chat.get("id")?.as_i64()?;
        self.chats
            .entry(id)
            .and_modify(|known| {
                if let (Some(known), Some(new)) = (known.chat.as_object_mut(), chat.as_object()) {
                    known.extend(new.clone());
                }
            })
            .or_insert_with(|| ChatState::new(chat.clone()));
        Some(id)
    }

    /// Completes an update (ids, dates, files, callback message) and queues it.
    pub(crate) fn push_update(&mut self, update: Value) -> Value {
        let mut update = match update {
            Value::Object(map) => map,
            other => panic!("volcanic-testkit: an update must be a JSON object, got {other}"),
        };
        match update.get("update_id").and_then(Value::as_i64) {
            Some(id) => self.next_update_id = self.next_update_id.max(id + 1),
            None => {
                update.insert("update_id".into(), self.next_update_id.into());
                self.next_update_id += 1;
            }
        }
        for key in MESSAGE_KEYS {
            if let Some(Value::Object(message)) = update.get_mut(*key) {
                self.take_incoming(message);
            }
        }
        if let Some(Value::Object(query)) = update.get_mut("callback_query") {
            self.take_callback(query);
        }
        let update = Value::Object(update);
        let id = update["update_id"].as_i64().unwrap_or(0);
        let position = self
            .pending
            .iter()
            .position(|queued| queued["update_id"].as_i64().unwrap_or(0) > id)
            .unwrap_or(self.pending.len());
        self.pending.insert(position, update.clone());
        update
    }

    /// Fills an incoming message's gaps and stores it in its chat.
    fn take_incoming(&mut self, message: &mut Map<String, Value>) {
        let Some(chat_id) = message.get("chat").and_then(|chat| self.learn_chat(chat)) else {
            return;
        };
        for key in FILE_KEYS {
            match message.get_mut(*key) {
                Some(Value::Array(sizes)) => {
                    for size in sizes {
                        self.complete_file(size, false);
                    }
                }
                Some(file) => self.complete_file(file, true),
                None => {}
            }
        }
        message.entry("date").or_insert_with(|| unix_now().into());
        let Some(chat) = self.chats.get_mut(&chat_id) else {
            return;
        };
        match message.get("message_id").and_then(Value::as_i64) {
            Some(id) => chat.next_message_id = chat.next_message_id.max(id + 1),
            None => {
                message.insert("message_id".into(), chat.take_message_id().into());
            }
        }
        let id = message["message_id"].as_i64().unwrap_or(0);
        chat.messages.insert(
            id,
            StoredMessage {
                json: Value::Object(message.clone()),
                outgoing: false,
                source: None,
                parse_mode: None,
                file_id: None,
                edits: 0,
            },
        );
        if let Some(new_id) = message.get("migrate_to_chat_id").and_then(Value::as_i64) {
            chat.migrated_to = Some(new_id);
            let mut supergroup = chat.chat.clone();
            supergroup["id"] = new_id.into();
            supergroup["type"] = "supergroup".into();
            self.chats.entry(new_id).or_insert_with(|| ChatState::new(supergroup));
        }
    }

    /// Adds `file_unique_id`, and for a registered file `file_size` (and, `with_name`,
    /// `file_name` and `mime_type`).
    fn complete_file(&self, file: &mut Value, with_name: bool) {
        let Some(object) = file.as_object_mut() else {
            return;
        };
        let Some(file_id) = object.get("file_id").and_then(Value::as_str).map(str::to_owned) else {
            return;
        };
        let stored = self.files.get(&file_id);
        let unique = stored.map_or_else(
            || format!("testkit_unique_{file_id}"),
            |stored| stored.file_unique_id.clone(),
        );
        object.entry("file_unique_id").or_insert(unique.into());
        let Some(stored) = stored else {
            return;
        };
        object.entry("file_size").or_insert_with(|| stored.size().into());
        if !with_name {
            return;
        }
        if let Some(name) = &stored.file_name {
            object.entry("file_name").or_insert_with(|| name.clone().into());
        }
        if let Some(mime) = &stored.mime_type {
            object.entry("mime_type").or_insert_with(|| mime.clone().into());
        }
    }

    /// Gives a callback query its id and the current version of the message it came from.
    fn take_callback(&mut self, query: &mut Map<String, Value>) {
        if !query.contains_key("id") {
            self.next_callback += 1;
            query.insert("id".into(), format!("testkit_query_{}", self.next_callback).into());
        }
        if let Some(id) = query.get("id").and_then(Value::as_str) {
            self.callbacks.insert(id.to_owned(), false);
        }
        let Some(message) = query.get_mut("message") else {
            return;
        };
        if let Some(chat) = message.get("chat") {
            self.learn_chat(&chat.clone());
        }
        let stored = message
            .pointer("/chat/id")
            .and_then(Value::as_i64)
            .zip(message.get("message_id").and_then(Value::as_i64))
            .and_then(|(chat_id, id)| self.chats.get(&chat_id)?.messages.get(&id));
        let placeholder = message.get("date").and_then(Value::as_i64) == Some(0);
        if let Some(stored) = stored
            && placeholder
        {
            *message = stored.json.clone();
        }
    }
}
