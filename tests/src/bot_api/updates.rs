//! Builders for incoming updates, pushed with
//! [`BotApiServer::push_update`](super::BotApiServer::push_update).
//!
//! They leave out what the server fills in on push: `update_id`, `message_id` (the chat's
//! next), `date` (now), a callback query's `id` and `message` (the bot's stored message), and
//! the size, name and type of files registered with
//! [`add_file`](super::BotApiServer::add_file). Text gets Telegram's automatic entities
//! (`bot_command`, `mention`, `url`) unless entities are given.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use volcanic_testkit::bot_api::{BotApiServer, updates};
//!
//! let api = BotApiServer::start("123:TEST").await?;
//! let question = api.push_update(updates::group_message(-100, 7, "@volcanic_test_bot hi", None));
//! api.push_update(updates::group_message(-100, 7, "and this?", None).reply_to(&question));
//! api.push_update(updates::text_message(7, 7, "/start").topic(3));
//! let photo = api.add_file(&b"\x89PNG\r\n\x1a\n"[..], "cat.png");
//! api.push_update(updates::photo_message(7, 7, &photo).caption("look").media_group("album-1"));
//! # Ok(())
//! # }
//! ```

use serde_json::{Map, Value, json};

use super::state::{chat_json, chat_type_for};

/// A `User` for user id `id`: `first_name` "User {id}", `username` "user{id}".
pub fn user(id: i64) -> Value {
    json!({
        "id": id,
        "is_bot": false,
        "first_name": format!("User {id}"),
        "username": format!("user{id}"),
        "language_code": "en",
    })
}

/// The `Chat` a message from `from` in `chat_id` is in: private chats take the user's
/// names, groups (negative ids; below -10^12 a supergroup) a title.
fn chat_for(chat_id: i64, from: &Value) -> Value {
    let mut chat = chat_json(chat_id);
    if chat_type_for(chat_id) == "private" {
        chat["first_name"] = from["first_name"].clone();
        chat["username"] = from["username"].clone();
    }
    chat
}

/// An update carrying a message (`message`, or `edited_message` after
/// [`edited`](Self::edited)); turns into JSON with `Value::from`, and `push_update` takes it
/// as is.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageUpdate {
    kind: &'static str,
    message: Map<String, Value>,
}

impl MessageUpdate {
    fn new(chat_id: i64, from_user_id: i64) -> Self {
        let from = user(from_user_id);
        let mut message = Map::new();
        message.insert("chat".into(), chat_for(chat_id, &from));
        message.insert("from".into(), from);
        Self {
            kind: "message",
            message,
        }
    }

    /// Sets a `Message` field (an escape hatch for fields without a builder method).
    pub fn set(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.message.insert(key.into(), value.into());
        self
    }

    /// Sets `text`, with automatic entities (replacing any entities set before).
    pub fn text(mut self, text: &str) -> Self {
        self.message.insert("text".into(), text.into());
        self.message.remove("entities");
        let entities = auto_entities(text);
        if !entities.is_empty() {
            self.message.insert("entities".into(), entities.into());
        }
        self
    }

    /// Sets the text's `entities` exactly (an empty array removes them).
    pub fn entities(mut self, entities: Value) -> Self {
        if entities.as_array().is_some_and(Vec::is_empty) {
            self.message.remove("entities");
        } else {
            self.message.insert("entities".into(), entities);
        }
        self
    }

    /// Sets `caption`, with automatic `caption_entities`.
    pub fn caption(mut self, caption: &str) -> Self {
        self.message.insert("caption".into(), caption.into());
        self.message.remove("caption_entities");
        let entities = auto_entities(caption);
        if !entities.is_empty() {
            self.message.insert("caption_entities".into(), entities.into());
        }
        self
    }

    /// Puts the message in forum topic `thread_id`: `message_thread_id`, `is_topic_message`,
    /// and the chat becomes a forum supergroup (`is_forum`).
    pub fn topic(mut self, thread_id: i64) -> Self {
        self.message.insert("message_thread_id".into(), thread_id.into());
        self.message.insert("is_topic_message".into(), true.into());
        if let Some(chat) = self.message.get_mut("chat") {
            chat["type"] = "supergroup".into();
            chat["is_forum"] = true.into();
        }
        self
    }

    /// Sets `message_thread_id` only (a reply thread outside forums).
    pub fn thread(self, thread_id: i64) -> Self {
        self.set("message_thread_id", thread_id)
    }

    /// Makes it a reply to `to`: a `Message`, or an update carrying one (such as what
    /// `push_update` returned), or a [`ChatMessage::message`](super::ChatMessage::message).
    /// The replied-to message is embedded without its own `reply_to_message`.
    pub fn reply_to(mut self, to: &Value) -> Self {
        let mut replied = ["message", "edited_message", "channel_post"]
            .iter()
            .find_map(|key| to.get(*key))
            .unwrap_or(to)
            .clone();
        if let Some(object) = replied.as_object_mut() {
            object.remove("reply_to_message");
        }
        self.message.insert("reply_to_message".into(), replied);
        self
    }

    /// Sets `media_group_id` (the parts of one album share it).
    pub fn media_group(self, id: &str) -> Self {
        self.set("media_group_id", id)
    }

    /// Replaces the sender (`from`); in a private chat the chat's names follow.
    pub fn from_user(mut self, from: Value) -> Self {
        if let Some(chat) = self.message.get_mut("chat")
            && chat["type"] == "private"
        {
            chat["first_name"] = from["first_name"].clone();
            chat["username"] = from["username"].clone();
        }
        self.message.insert("from".into(), from);
        self
    }

    /// Fixes the `message_id` (otherwise the chat's next one on push).
    pub fn message_id(self, id: i64) -> Self {
        self.set("message_id", id)
    }

    /// Fixes the `date` in Unix seconds (otherwise now, on push).
    pub fn date(self, unix_seconds: i64) -> Self {
        self.set("date", unix_seconds)
    }

    /// Makes it an `edited_message` update (give the [`message_id`](Self::message_id) of the
    /// message edited) with `edit_date` now.
    pub fn edited(mut self) -> Self {
        self.kind = "edited_message";
        let now = super::state::unix_now();
        self.set("edit_date", now)
    }

    /// The `Message` object built so far.
    pub fn message(&self) -> Value {
        Value::Object(self.message.clone())
    }
}

impl From<MessageUpdate> for Value {
    fn from(update: MessageUpdate) -> Self {
        json!({ update.kind: update.message })
    }
}

/// A text message from user `from_user_id` in chat `chat_id` (a private chat when positive,
/// usually the same id).
pub fn text_message(chat_id: i64, from_user_id: i64, text: &str) -> MessageUpdate {
    MessageUpdate::new(chat_id, from_user_id).text(text)
}

/// A text message in group `chat_id` (negative; below -10^12 a supergroup) from
/// `from_user_id`, with these `entities` or, when `None`, the automatic ones (so
/// `@volcanic_test_bot` is a `mention` and `/help@volcanic_test_bot` a `bot_command`).
pub fn group_message(chat_id: i64, from_user_id: i64, text: &str, entities: Option<Value>) -> MessageUpdate {
    let update = MessageUpdate::new(chat_id, from_user_id).text(text);
    match entities {
        Some(entities) => update.entities(entities),
        None => update,
    }
}

/// A text message in forum topic `thread_id` of supergroup `chat_id`.
pub fn topic_message(chat_id: i64, thread_id: i64, from_user_id: i64, text: &str) -> MessageUpdate {
    group_message(chat_id, from_user_id, text, None).topic(thread_id)
}

/// A photo (one size, of file `file_id`, e.g. from `add_file`), without caption.
pub fn photo_message(chat_id: i64, from_user_id: i64, file_id: &str) -> MessageUpdate {
    MessageUpdate::new(chat_id, from_user_id).set("photo", json!([{"file_id": file_id, "width": 800, "height": 600}]))
}

/// A document (file `file_id`; its name, size and type come from `add_file`).
pub fn document_message(chat_id: i64, from_user_id: i64, file_id: &str) -> MessageUpdate {
    MessageUpdate::new(chat_id, from_user_id).set("document", json!({"file_id": file_id}))
}

/// A voice note (file `file_id`) lasting `duration_secs`.
pub fn voice_message(chat_id: i64, from_user_id: i64, file_id: &str, duration_secs: u32) -> MessageUpdate {
    MessageUpdate::new(chat_id, from_user_id).set(
        "voice",
        json!({"file_id": file_id, "duration": duration_secs, "mime_type": "audio/ogg"}),
    )
}

/// An audio file (file `file_id`, named `file_name`, of type `mime_type`) lasting `duration_secs`.
pub fn audio_message(
    chat_id: i64,
    from_user_id: i64,
    file_id: &str,
    duration_secs: u32,
    file_name: &str,
    mime_type: &str,
) -> MessageUpdate {
    MessageUpdate::new(chat_id, from_user_id).set(
        "audio",
        json!({"file_id": file_id, "duration": duration_secs, "file_name": file_name, "mime_type": mime_type}),
    )
}

/// A video file (file `file_id`, named `file_name`) lasting `duration_secs`.
pub fn video_message(
    chat_id: i64,
    from_user_id: i64,
    file_id: &str,
    duration_secs: u32,
    file_name: &str,
) -> MessageUpdate {
    MessageUpdate::new(chat_id, from_user_id).set(
        "video",
        json!({"file_id": file_id, "duration": duration_secs, "file_name": file_name, "mime_type": "video/mp4",
            "width": 640, "height": 360}),
    )
}

/// A video note (a round video recorded in the chat; file `file_id`) lasting `duration_secs`.
pub fn video_note_message(chat_id: i64, from_user_id: i64, file_id: &str, duration_secs: u32) -> MessageUpdate {
    MessageUpdate::new(chat_id, from_user_id).set(
        "video_note",
        json!({"file_id": file_id, "duration": duration_secs, "length": 240}),
    )
}

/// A sticker showing `emoji` (a regular, static one; no file behind it).
pub fn sticker_message(chat_id: i64, from_user_id: i64, emoji: &str) -> MessageUpdate {
    MessageUpdate::new(chat_id, from_user_id).set(
        "sticker",
        json!({"file_id": format!("sticker-{emoji}"), "file_unique_id": format!("u-{emoji}"), "type": "regular",
            "width": 512, "height": 512, "is_animated": false, "is_video": false, "emoji": emoji}),
    )
}

/// A shared location (degrees).
pub fn location_message(chat_id: i64, from_user_id: i64, latitude: f64, longitude: f64) -> MessageUpdate {
    MessageUpdate::new(chat_id, from_user_id).set("location", json!({"latitude": latitude, "longitude": longitude}))
}

/// The service message a group gets when it becomes supergroup `new_chat_id`; pushing it
/// makes the double answer calls to the old id with 400 and `migrate_to_chat_id`.
pub fn migrate_to_chat(chat_id: i64, new_chat_id: i64, from_user_id: i64) -> MessageUpdate {
    MessageUpdate::new(chat_id, from_user_id).set("migrate_to_chat_id", new_chat_id)
}

/// The service message the new supergroup `chat_id` gets after group `old_chat_id` migrated.
pub fn migrate_from_chat(chat_id: i64, old_chat_id: i64, from_user_id: i64) -> MessageUpdate {
    MessageUpdate::new(chat_id, from_user_id).set("migrate_from_chat_id", old_chat_id)
}

/// A button press by `from_user_id` on message `message_id` in `chat_id`, with `data`. On
/// push the query gets its `id` (answer it once with `answerCallbackQuery`) and the
/// message as the bot last left it; an unknown message stays inaccessible (`date` 0).
pub fn callback_query(from_user_id: i64, message_id: i64, chat_id: i64, data: &str) -> Value {
    let from = user(from_user_id);
    json!({
        "callback_query": {
            "from": from,
            "message": {"message_id": message_id, "chat": chat_for(chat_id, &from), "date": 0},
            "chat_instance": format!("testkit_instance_{chat_id}"),
            "data": data,
        }
    })
}

/// Telegram's Stop button pressed by the user of the private chat `chat_id` on the draft
/// `draft_id` (`stopped_message_generation`, Bot API 10.3; delivered only to a bot that lists
/// it in `allowed_updates`).
pub fn stopped_generation(chat_id: i64, draft_id: i64) -> Value {
    json!({
        "stopped_message_generation": {
            "chat": chat_for(chat_id, &user(chat_id)),
            "draft_id": draft_id,
        }
    })
}

/// Telegram's automatic entities in user text: `/command[@bot]`, `@username` (5-32
/// characters) and `http(s)://` links, each starting a word; offsets in UTF-16 units.
pub fn auto_entities(text: &str) -> Vec<Value> {
    let chars: Vec<char> = text.chars().collect();
    let mut utf16_at = Vec::with_capacity(chars.len() + 1);
    let mut units = 0;
    for c in &chars {
        utf16_at.push(units);
        units += c.len_utf16();
    }
    utf16_at.push(units);
    let mut entities = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        let word_end = (start..chars.len())
            .find(|&index| chars[index].is_whitespace())
            .unwrap_or(chars.len());
        let word = &chars[start..word_end];
        let found = match word.first() {
            Some('/') => command_len(word).map(|len| ("bot_command", len)),
            Some('@') => name_len(&word[1..], 5).map(|len| ("mention", len + 1)),
            Some('h') if starts_with(word, "http://") || starts_with(word, "https://") => Some(("url", word.len())),
            _ => None,
        };
        if let Some((kind, len)) = found {
            entities.push(json!({
                "type": kind,
                "offset": utf16_at[start],
                "length": utf16_at[start + len] - utf16_at[start],
            }));
        }
        start = word_end + 1;
    }
    entities
}

fn starts_with(word: &[char], prefix: &str) -> bool {
    word.iter().copied().take(prefix.len()).eq(prefix.chars())
}

/// Length of a leading `[A-Za-z0-9_]` run of at least `min` (at most 32) characters.
fn name_len(chars: &[char], min: usize) -> Option<usize> {
    let len = chars
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
        .count();
    (min..=32).contains(&len).then_some(len)
}

/// Length of `/command` or `/command@bot` at the start of `word`.
fn command_len(word: &[char]) -> Option<usize> {
    let name = name_len(&word[1..], 1)?;
    let mut len = 1 + name;
    if word.get(len) == Some(&'@')
        && let Some(bot) = name_len(&word[len + 1..], 1)
    {
        len += 1 + bot;
    }
    Some(len)
}
