//! Reading the raw Bot API `Update` JSON (as journaled) into what the router needs. Field names
//! are the Bot API's (`message`, `chat.id`, `from.id`, `message_thread_id`, `is_topic_message`,
//! `reply_to_message`, `entities`, `caption`, `migrate_to_chat_id`, `media_group_id`, `photo`,
//! `document`, `voice`, `audio`, `video`, `video_note`, `callback_query`).

use serde_json::Value;

/// A text (or captioned) message.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InMessage {
    /// `message_id`.
    pub message_id: i64,
    /// `chat.id`.
    pub chat_id: i64,
    /// `chat.type`: private, group, supergroup, channel.
    pub chat_type: String,
    /// `from.id`.
    pub from_id: i64,
    /// Sender's display name.
    pub from_name: String,
    /// `date`, Unix seconds.
    pub date: i64,
    /// Forum topic, when `is_topic_message`.
    pub thread: Option<i32>,
    /// `text` or `caption`.
    pub text: String,
    /// `entities` / `caption_entities` as `(type, offset, length)` in UTF-16 units.
    pub entities: Vec<(String, usize, usize)>,
    /// The message replied to: `(from is this bot's id?, text)`.
    pub reply_to: Option<(i64, String)>,
    /// `migrate_to_chat_id` service message.
    pub migrate_to: Option<i64>,
    /// `media_group_id` (albums).
    pub media_group_id: Option<String>,
    /// The file the message carries, if any (its caption is [`text`](Self::text)).
    pub media: Option<Box<InMedia>>,
}

/// What kind of file a message carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    /// `photo`: the largest of its sizes.
    Photo,
    /// `document` (any file sent as a file).
    Document,
    /// `voice`: a voice note (OGG/Opus).
    Voice,
    /// `audio`: a music file.
    Audio,
    /// `video` or `video_note`.
    Video,
}

/// A file attached to a message, as the update describes it (nothing downloaded yet).
#[derive(Debug, Clone, PartialEq)]
pub struct InMedia {
    /// Which field it came from.
    pub kind: MediaKind,
    /// `file_id`, for `getFile`.
    pub file_id: String,
    /// `file_size` in bytes, when Telegram gave it.
    pub file_size: Option<u64>,
    /// `file_name` as the sender's client gave it (documents, audio, video).
    pub file_name: Option<String>,
    /// `mime_type`, when given.
    pub mime_type: Option<String>,
    /// `duration` in seconds (voice, audio, video).
    pub duration: Option<u64>,
}

impl InMessage {
    /// Whether the chat is a group or supergroup.
    pub fn is_group(&self) -> bool {
        self.chat_type == "group" || self.chat_type == "supergroup"
    }

    /// The text of an entity (offsets are UTF-16 units).
    pub fn entity_text(&self, offset: usize, length: usize) -> String {
        let units: Vec<u16> = self.text.encode_utf16().collect();
        let end = (offset + length).min(units.len());
        String::from_utf16_lossy(&units[offset.min(end)..end])
    }
}

/// A button press.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InCallback {
    /// `callback_query.id`.
    pub id: String,
    /// Presser.
    pub from_id: i64,
    /// Chat of the message with the button.
    pub chat_id: i64,
    /// That message.
    pub message_id: i64,
    /// Its topic.
    pub thread: Option<i32>,
    /// `data`.
    pub data: String,
}

/// What an update is, for the router.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// A message.
    Message(InMessage),
    /// A callback query.
    Callback(InCallback),
    /// Anything else (edits, member updates, ...): ignored.
    Other,
}

fn name_of(user: &Value) -> String {
    let first = user["first_name"].as_str().unwrap_or_default();
    match user["last_name"].as_str() {
        Some(last) => format!("{first} {last}"),
        None => first.to_owned(),
    }
}

/// Classifies a raw update.
pub fn parse(update: &Value) -> Inbound {
    if let Some(m) = update.get("message") {
        return Inbound::Message(parse_message(m));
    }
    if let Some(q) = update.get("callback_query") {
        let msg = &q["message"];
        return Inbound::Callback(InCallback {
            id: q["id"].as_str().unwrap_or_default().to_owned(),
            from_id: q["from"]["id"].as_i64().unwrap_or_default(),
            chat_id: msg["chat"]["id"].as_i64().unwrap_or_default(),
            message_id: msg["message_id"].as_i64().unwrap_or_default(),
            thread: topic(msg),
            data: q["data"].as_str().unwrap_or_default().to_owned(),
        });
    }
    Inbound::Other
}

fn topic(m: &Value) -> Option<i32> {
    if m["is_topic_message"].as_bool() == Some(true) {
        m["message_thread_id"].as_i64().and_then(|t| i32::try_from(t).ok())
    } else {
        None
    }
}

fn parse_message(m: &Value) -> InMessage {
    let (text, entities) = match m.get("text") {
        Some(t) => (t.as_str().unwrap_or_default(), &m["entities"]),
        None => (m["caption"].as_str().unwrap_or_default(), &m["caption_entities"]),
    };
    let entities = entities
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["type"].as_str().unwrap_or_default().to_owned(),
                        e["offset"].as_u64().unwrap_or_default() as usize,
                        e["length"].as_u64().unwrap_or_default() as usize,
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let reply_to = m.get("reply_to_message").map(|r| {
        let text = r["text"].as_str().or_else(|| r["caption"].as_str()).unwrap_or_default();
        (r["from"]["id"].as_i64().unwrap_or_default(), text.to_owned())
    });
    InMessage {
        message_id: m["message_id"].as_i64().unwrap_or_default(),
        chat_id: m["chat"]["id"].as_i64().unwrap_or_default(),
        chat_type: m["chat"]["type"].as_str().unwrap_or_default().to_owned(),
        from_id: m["from"]["id"].as_i64().unwrap_or_default(),
        from_name: name_of(&m["from"]),
        date: m["date"].as_i64().unwrap_or_default(),
        thread: topic(m),
        text: text.to_owned(),
        entities,
        reply_to,
        migrate_to: m["migrate_to_chat_id"].as_i64(),
        media_group_id: m["media_group_id"].as_str().map(str::to_owned),
        media: parse_media(m),
    }
}

/// The file of a message: the largest photo size, or the first of the other file fields.
fn parse_media(m: &Value) -> Option<Box<InMedia>> {
    if let Some(sizes) = m["photo"].as_array() {
        let area = |s: &Value| s["width"].as_u64().unwrap_or(0) * s["height"].as_u64().unwrap_or(0);
        let largest = sizes
            .iter()
            .max_by_key(|s| (area(s), s["file_size"].as_u64().unwrap_or(0)))?;
        return media_of(MediaKind::Photo, largest);
    }
    [
        ("document", MediaKind::Document),
        ("voice", MediaKind::Voice),
        ("audio", MediaKind::Audio),
        ("video", MediaKind::Video),
        ("video_note", MediaKind::Video),
    ]
    .into_iter()
    .find_map(|(key, kind)| m.get(key).and_then(|f| media_of(kind, f)))
}

fn media_of(kind: MediaKind, f: &Value) -> Option<Box<InMedia>> {
    let text = |key: &str| f[key].as_str().map(str::to_owned);
    Some(Box::new(InMedia {
        kind,
        file_id: text("file_id")?,
        file_size: f["file_size"].as_u64(),
        file_name: text("file_name"),
        mime_type: text("mime_type"),
        duration: f["duration"].as_u64(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_a_topic_message_with_a_reply() {
        let u = json!({"update_id": 5, "message": {
            "message_id": 9, "date": 1700000000, "message_thread_id": 3, "is_topic_message": true,
            "chat": {"id": -1001, "type": "supergroup"}, "from": {"id": 7, "first_name": "Ann", "last_name": "Lee"},
            "text": "@volcanic_bot hi", "entities": [{"type": "mention", "offset": 0, "length": 13}],
            "reply_to_message": {"message_id": 8, "from": {"id": 99}, "text": "earlier"}}});
        let Inbound::Message(m) = parse(&u) else {
            panic!("not a message")
        };
        assert_eq!((m.chat_id, m.from_id, m.thread), (-1001, 7, Some(3)));
        assert_eq!(m.from_name, "Ann Lee");
        assert!(m.is_group());
        assert_eq!(m.entity_text(0, 13), "@volcanic_bot");
        assert_eq!(m.reply_to, Some((99, "earlier".into())));
        assert_eq!(m.media, None);
    }

    #[test]
    fn a_photo_is_its_largest_size_and_the_caption_is_the_text() {
        let u = json!({"update_id": 6, "message": {
            "message_id": 10, "date": 1700000000, "chat": {"id": 7, "type": "private"}, "from": {"id": 7},
            "media_group_id": "album1", "caption": "look",
            "photo": [
                {"file_id": "small", "width": 90, "height": 60, "file_size": 1000},
                {"file_id": "big", "width": 1280, "height": 960, "file_size": 90000},
                {"file_id": "mid", "width": 320, "height": 240, "file_size": 9000}]}});
        let Inbound::Message(m) = parse(&u) else {
            panic!("not a message")
        };
        assert_eq!(m.text, "look");
        assert_eq!(m.media_group_id.as_deref(), Some("album1"));
        let media = m.media.unwrap_or_else(|| panic!("no media"));
        assert_eq!((media.kind, media.file_id.as_str()), (MediaKind::Photo, "big"));
        assert_eq!(media.file_size, Some(90000));
    }

    #[test]
    fn documents_and_voice_notes_keep_their_details() {
        let doc = json!({"message": {"chat": {"id": 7, "type": "private"}, "from": {"id": 7},
            "document": {"file_id": "d1", "file_name": "report.pdf", "mime_type": "application/pdf", "file_size": 12}}});
        let Inbound::Message(m) = parse(&doc) else {
            panic!("not a message")
        };
        assert_eq!(
            m.media.as_deref(),
            Some(&InMedia {
                kind: MediaKind::Document,
                file_id: "d1".into(),
                file_size: Some(12),
                file_name: Some("report.pdf".into()),
                mime_type: Some("application/pdf".into()),
                duration: None,
            })
        );
        let voice = json!({"message": {"chat": {"id": 7, "type": "private"}, "from": {"id": 7},
            "voice": {"file_id": "v1", "duration": 7, "mime_type": "audio/ogg"}}});
        let Inbound::Message(m) = parse(&voice) else {
            panic!("not a message")
        };
        let media = m.media.unwrap_or_else(|| panic!("no media"));
        assert_eq!(
            (media.kind, media.duration, media.file_size),
            (MediaKind::Voice, Some(7), None)
        );
    }
}
