//! Reading the raw Bot API `Update` JSON (as journaled) into what the router needs. Field names
//! are the Bot API's (`message`, `chat.id`, `from.id`, `message_thread_id`, `is_topic_message`,
//! `reply_to_message`, `entities`, `caption`, `migrate_to_chat_id`, `media_group_id`, `photo`,
//! `document`, `voice`, `audio`, `video`, `video_note`, `callback_query`,
//! `stopped_message_generation.{chat.id, message_thread_id, draft_id}`).
//!
//! A message with neither text nor a file is never dropped silently: its kind is described in
//! [`InMessage::text`] for the model (`sticker.emoji`, `location.latitude/longitude`,
//! `venue.title/address`, `contact.first_name/last_name/phone_number`,
//! `poll.question/options[].text`, `dice.emoji/value`; any other kind by its field names).

use crate::telegram::outbound::texts;
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
    /// `text` or `caption`; for a message with neither and no file, a short description of
    /// what it is (e.g. `[sticker 😀]`, see [`describe`]).
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
    /// `video`: a video file.
    Video,
    /// `video_note`: a round video message, recorded in the chat (the sender speaking).
    VideoNote,
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
        is_group(&self.chat_type)
    }

    /// What a host feature is told of it (its command, or a text it takes).
    pub fn incoming(&self) -> crate::features::port::Incoming {
        crate::features::port::Incoming {
            message_id: self.message_id,
            chat_id: self.chat_id,
            thread: self.thread,
            from_id: self.from_id,
            group: self.is_group(),
        }
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
    /// That chat's `type`: private, group, supergroup, channel.
    pub chat_type: String,
    /// That message.
    pub message_id: i64,
    /// Its topic.
    pub thread: Option<i32>,
    /// `data`.
    pub data: String,
    /// The text of the message with the button (`message.text`).
    pub message_text: String,
}

/// A press of Telegram's Stop button on a draft (`stopped_message_generation`, Bot API 10.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InStop {
    /// `chat.id` (a private chat: drafts are sent only there).
    pub chat_id: i64,
    /// `message_thread_id`, when the draft was in a topic.
    pub thread: Option<i32>,
    /// `draft_id` of the draft that was stopped.
    pub draft_id: i64,
}

impl InCallback {
    /// Whether the button's chat is a group or supergroup.
    pub fn is_group(&self) -> bool {
        is_group(&self.chat_type)
    }
}

/// Whether a `chat.type` is a group or supergroup.
fn is_group(chat_type: &str) -> bool {
    chat_type == "group" || chat_type == "supergroup"
}

/// What an update is, for the router.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// A message.
    Message(InMessage),
    /// A callback query.
    Callback(InCallback),
    /// Telegram's Stop button pressed on a draft.
    Stop(InStop),
    /// A callback query without a `message` in a chat (a button of an inline-mode message): its
    /// `id`, to answer; it belongs to no chat.
    CallbackWithoutChat(String),
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
        let id = q["id"].as_str().unwrap_or_default().to_owned();
        let msg = &q["message"];
        // Never chat 0: a press that names no chat is answered and otherwise dropped.
        let Some(chat_id) = msg["chat"]["id"].as_i64() else {
            return Inbound::CallbackWithoutChat(id);
        };
        return Inbound::Callback(InCallback {
            id,
            from_id: q["from"]["id"].as_i64().unwrap_or_default(),
            chat_id,
            chat_type: msg["chat"]["type"].as_str().unwrap_or_default().to_owned(),
            message_id: msg["message_id"].as_i64().unwrap_or_default(),
            thread: topic(msg),
            data: q["data"].as_str().unwrap_or_default().to_owned(),
            message_text: msg["text"].as_str().unwrap_or_default().to_owned(),
        });
    }
    if let Some(s) = update.get("stopped_message_generation") {
        return Inbound::Stop(InStop {
            chat_id: s["chat"]["id"].as_i64().unwrap_or_default(),
            thread: s["message_thread_id"].as_i64().and_then(|t| i32::try_from(t).ok()),
            draft_id: s["draft_id"].as_i64().unwrap_or_default(),
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
        let text = match r["text"].as_str().or_else(|| r["caption"].as_str()) {
            Some(t) => t.to_owned(),
            None => describe_kind(r).unwrap_or_default(),
        };
        (r["from"]["id"].as_i64().unwrap_or_default(), text)
    });
    let media = parse_media(m);
    let text = if text.is_empty() && media.is_none() {
        describe(m)
    } else {
        text.to_owned()
    };
    InMessage {
        message_id: m["message_id"].as_i64().unwrap_or_default(),
        chat_id: m["chat"]["id"].as_i64().unwrap_or_default(),
        chat_type: m["chat"]["type"].as_str().unwrap_or_default().to_owned(),
        from_id: m["from"]["id"].as_i64().unwrap_or_default(),
        from_name: name_of(&m["from"]),
        date: m["date"].as_i64().unwrap_or_default(),
        thread: topic(m),
        text,
        entities,
        reply_to,
        migrate_to: m["migrate_to_chat_id"].as_i64(),
        media_group_id: m["media_group_id"].as_str().map(str::to_owned),
        media,
    }
}

/// Fields of a `Message` that say nothing about its kind (who, where, when, how it is shown).
const COMMON_FIELDS: &[&str] = &[
    "message_id",
    "message_thread_id",
    "direct_messages_topic",
    "from",
    "sender_chat",
    "sender_boost_count",
    "sender_business_bot",
    "date",
    "business_connection_id",
    "chat",
    "forward_origin",
    "is_topic_message",
    "is_automatic_forward",
    "reply_to_message",
    "external_reply",
    "quote",
    "reply_to_story",
    "reply_to_checklist_task_id",
    "via_bot",
    "edit_date",
    "has_protected_content",
    "is_from_offline",
    "is_paid_post",
    "media_group_id",
    "author_signature",
    "paid_star_count",
    "text",
    "entities",
    "caption",
    "caption_entities",
    "link_preview_options",
    "suggested_post_info",
    "effect_id",
    "show_caption_above_media",
    "has_media_spoiler",
    "reply_markup",
];

/// What a message without text, caption or file is, for the model: one of the kinds
/// [`describe_kind`] knows, else its kind-bearing field names (`[a message of a kind I cannot
/// read: giveaway]`). Never empty.
pub fn describe(m: &Value) -> String {
    if let Some(known) = describe_kind(m) {
        return known;
    }
    let fields: Vec<&str> = m
        .as_object()
        .map(|o| {
            o.keys()
                .map(String::as_str)
                .filter(|k| !COMMON_FIELDS.contains(k))
                .collect()
        })
        .unwrap_or_default();
    texts::unknown_message(&fields)
}

/// A sticker, dice, poll, venue, location or contact, described; `None` for other kinds.
pub fn describe_kind(m: &Value) -> Option<String> {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    if let Some(sticker) = m.get("sticker") {
        return Some(texts::sticker(sticker["emoji"].as_str()));
    }
    if let Some(dice) = m.get("dice") {
        return Some(texts::dice(
            &s(&dice["emoji"]),
            dice["value"].as_i64().unwrap_or_default(),
        ));
    }
    if let Some(poll) = m.get("poll") {
        let options: Vec<&str> = poll["options"]
            .as_array()
            .map(|a| a.iter().filter_map(|o| o["text"].as_str()).collect())
            .unwrap_or_default();
        return Some(texts::poll(&s(&poll["question"]), &options));
    }
    let coordinates = |l: &Value| {
        (
            l["latitude"].as_f64().unwrap_or_default(),
            l["longitude"].as_f64().unwrap_or_default(),
        )
    };
    // A venue also carries `location` (Bot API): the venue says more.
    if let Some(venue) = m.get("venue") {
        let (lat, lon) = coordinates(&venue["location"]);
        return Some(texts::venue(&s(&venue["title"]), &s(&venue["address"]), lat, lon));
    }
    if let Some(location) = m.get("location") {
        let (lat, lon) = coordinates(location);
        return Some(texts::location(lat, lon));
    }
    if let Some(contact) = m.get("contact") {
        return Some(texts::contact(&name_of(contact), &s(&contact["phone_number"])));
    }
    None
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
        ("video_note", MediaKind::VideoNote),
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
    fn a_stop_press_names_its_chat_and_draft() {
        let u = json!({"update_id": 7, "stopped_message_generation": {
            "chat": {"id": 42, "type": "private", "first_name": "Ann"}, "draft_id": 1_700_000_000_123_i64}});
        assert_eq!(
            parse(&u),
            Inbound::Stop(InStop {
                chat_id: 42,
                thread: None,
                draft_id: 1_700_000_000_123
            })
        );
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
        for (key, kind) in [("video", MediaKind::Video), ("video_note", MediaKind::VideoNote)] {
            let m = json!({"message": {"chat": {"id": 7, "type": "private"}, "from": {"id": 7},
                key: {"file_id": "f", "duration": 3}}});
            let Inbound::Message(m) = parse(&m) else {
                panic!("not a message")
            };
            assert_eq!(m.media.map(|media| media.kind), Some(kind), "{key}");
        }
    }

    fn text_of(message: Value) -> String {
        let mut message = message;
        message["chat"] = json!({"id": 7, "type": "private"});
        message["from"] = json!({"id": 7, "first_name": "Ann"});
        message["message_id"] = json!(3);
        message["date"] = json!(1_700_000_000);
        match parse(&json!({"update_id": 1, "message": message})) {
            Inbound::Message(m) => {
                assert_eq!(m.media, None);
                m.text
            }
            other => panic!("not a message: {other:?}"),
        }
    }

    #[test]
    fn a_press_without_a_message_names_no_chat() {
        let inline = json!({"update_id": 3, "callback_query": {"id": "q1", "from": {"id": 7},
            "inline_message_id": "AAA", "chat_instance": "c", "data": "cmd:/thinking high"}});
        assert_eq!(parse(&inline), Inbound::CallbackWithoutChat("q1".into()));
        let in_group = json!({"update_id": 4, "callback_query": {"id": "q2", "from": {"id": 7},
            "message": {"message_id": 5, "date": 0, "chat": {"id": -100, "type": "supergroup"}}, "data": "x"}});
        let Inbound::Callback(c) = parse(&in_group) else {
            panic!("not a callback")
        };
        assert_eq!((c.chat_id, c.chat_type.as_str(), c.message_id), (-100, "supergroup", 5));
    }

    #[test]
    fn kinds_without_text_are_described_for_the_model() {
        let cases = [
            (
                json!({"sticker": {"file_id": "s1", "file_unique_id": "u", "type": "regular", "width": 512,
                    "height": 512, "is_animated": false, "is_video": false, "emoji": "😀"}}),
                "[sticker 😀]",
            ),
            (json!({"sticker": {"file_id": "s2"}}), "[sticker]"),
            (
                json!({"location": {"latitude": 52.520008, "longitude": 13.404954}}),
                "[location 52.520008, 13.404954]",
            ),
            (
                json!({"venue": {"location": {"latitude": 48.8584, "longitude": 2.2945}, "title": "Eiffel Tower",
                    "address": "Champ de Mars, Paris"}, "location": {"latitude": 48.8584, "longitude": 2.2945}}),
                "[venue: Eiffel Tower, Champ de Mars, Paris (48.8584, 2.2945)]",
            ),
            (
                json!({"contact": {"phone_number": "+49 30 1234567", "first_name": "Ada", "last_name": "Lovelace"}}),
                "[contact: Ada Lovelace, +49 30 1234567]",
            ),
            (
                json!({"poll": {"id": "p", "question": "Lunch?", "options": [{"text": "pizza", "voter_count": 0},
                    {"text": "sushi", "voter_count": 1}], "total_voter_count": 1, "is_closed": false,
                    "is_anonymous": true, "type": "regular", "allows_multiple_answers": false}}),
                "[poll: Lunch? Options: pizza / sushi]",
            ),
            (json!({"dice": {"emoji": "🎲", "value": 4}}), "[dice 🎲 4]"),
            (
                json!({"giveaway": {"chats": [], "winners_selection_date": 1, "winner_count": 1}}),
                "[a message of a kind I cannot read: giveaway]",
            ),
            (json!({}), "[an empty message]"),
        ];
        for (message, want) in cases {
            assert_eq!(text_of(message), want);
        }
    }

    #[test]
    fn a_caption_or_file_is_not_replaced_and_a_quoted_sticker_is_described() {
        let video_note = json!({"message": {"chat": {"id": 7, "type": "private"}, "from": {"id": 7},
            "video_note": {"file_id": "vn", "length": 240, "duration": 3}}});
        let Inbound::Message(m) = parse(&video_note) else {
            panic!("not a message")
        };
        assert_eq!(m.text, "", "a video note is a file: media.rs names it");
        assert_eq!(m.media.map(|f| f.kind), Some(MediaKind::VideoNote));
        let reply = json!({"message": {"chat": {"id": 7, "type": "private"}, "from": {"id": 7}, "text": "why?",
            "reply_to_message": {"message_id": 2, "from": {"id": 99}, "sticker": {"file_id": "s", "emoji": "🔥"}}}});
        let Inbound::Message(m) = parse(&reply) else {
            panic!("not a message")
        };
        assert_eq!(m.text, "why?");
        assert_eq!(m.reply_to, Some((99, "[sticker 🔥]".into())));
    }
}
