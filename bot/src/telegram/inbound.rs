//! Reading the raw Bot API `Update` JSON (as journaled) into what the router needs. Field names
//! are the Bot API's (`message`, `chat.id`, `from.id`, `message_thread_id`, `is_topic_message`,
//! `reply_to_message`, `entities`, `caption`, `migrate_to_chat_id`, `callback_query`).

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
    }
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
    }
}
