//! JSON (de)serialisation of [`SessionEntry`] in pi's line format.
//!
//! Reading has two paths. [`SessionEntry::from_json`] streams the line once: when `type` is the
//! first key (always so in pi's files and ours) it dispatches to a typed struct for the rest of
//! the object, and a `message` whose first key is `role` is read straight into its variant, so
//! nothing is buffered. Anything else (another key order, an unknown type or role, a payload that
//! does not fit) takes the slow path: the line is parsed into a [`Value`] and converted, and what
//! does not fit becomes [`EntryKind::Unknown`].

use super::{CompactionEntry, EntryKind, SessionEntry};
use crate::messages::{
    AssistantMessage, BashExecutionMessage, CustomMessage, Message, SummaryMessage, ToolResultMessage, UserBody,
    UserMessage,
};
use crate::model::ThinkingLevel;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

impl SessionEntry {
    /// Reads one stored line (without its newline). Fails only when the line is not a JSON
    /// object with a string `id`; an unknown type or payload becomes [`EntryKind::Unknown`].
    pub fn from_json(line: &[u8]) -> Result<SessionEntry, serde_json::Error> {
        // Validating UTF-8 once for the line is cheaper than per string while parsing.
        if let Ok(text) = std::str::from_utf8(line) {
            return SessionEntry::from_json_str(text);
        }
        match serde_json::from_slice::<Typed>(line) {
            Ok(Typed(entry)) => Ok(entry),
            Err(typed) => {
                let value: Value = serde_json::from_slice(line)?;
                SessionEntry::from_value(value).ok_or(typed)
            }
        }
    }

    /// [`SessionEntry::from_json`] for a line already known to be UTF-8.
    pub fn from_json_str(line: &str) -> Result<SessionEntry, serde_json::Error> {
        match serde_json::from_str::<Typed>(line) {
            Ok(Typed(entry)) => Ok(entry),
            Err(typed) => {
                let value: Value = serde_json::from_str(line)?;
                SessionEntry::from_value(value).ok_or(typed)
            }
        }
    }

    /// Converts a parsed line. `None` when it is not an object with a string `id`.
    pub fn from_value(value: Value) -> Option<SessionEntry> {
        let entry_type = value.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
        value.get("id").and_then(Value::as_str)?;
        if let Ok(Typed(entry)) = typed_from_value(&entry_type, &value) {
            return Some(entry);
        }
        let field = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(SessionEntry {
            id: field("id").unwrap_or_default(),
            parent_id: field("parentId"),
            timestamp: field("timestamp").unwrap_or_default(),
            kind: EntryKind::Unknown { entry_type, raw: value },
        })
    }

    /// The line to store: compact JSON in pi's key order, without the newline. Objects inside
    /// free-form values (`details`, `data`, tool arguments) keep serde_json's key order.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
}

fn typed_from_value(entry_type: &str, value: &Value) -> Result<Typed, serde_json::Error> {
    let d = value;
    match entry_type {
        "message" => MessageWire::deserialize(d).map(Into::into),
        "model_change" => ModelChangeWire::deserialize(d).map(Into::into),
        "thinking_level_change" => ThinkingWire::deserialize(d).map(Into::into),
        "compaction" => CompactionWire::deserialize(d).map(Into::into),
        "branch_summary" => BranchSummaryWire::deserialize(d).map(Into::into),
        "custom" => CustomWire::deserialize(d).map(Into::into),
        "custom_message" => CustomMessageWire::deserialize(d).map(Into::into),
        "label" => LabelWire::deserialize(d).map(Into::into),
        "session_info" => SessionInfoWire::deserialize(d).map(Into::into),
        other => Err(de::Error::custom(format_args!("unknown entry type `{other}`"))),
    }
}

// ---- writing -----------------------------------------------------------------------------------

impl Serialize for SessionEntry {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(None)?;
        match &self.kind {
            EntryKind::Custom { custom_type, data } => {
                m.serialize_entry("type", "custom")?;
                m.serialize_entry("customType", custom_type)?;
                if let Some(data) = data {
                    m.serialize_entry("data", data)?;
                }
                self.base(&mut m)?;
            }
            EntryKind::CustomMessage {
                custom_type,
                content,
                display,
                details,
            } => {
                m.serialize_entry("type", "custom_message")?;
                m.serialize_entry("customType", custom_type)?;
                m.serialize_entry("content", content)?;
                m.serialize_entry("display", display)?;
                if let Some(details) = details {
                    m.serialize_entry("details", details)?;
                }
                self.base(&mut m)?;
            }
            EntryKind::Unknown { raw, .. } => {
                // Kept as read: every key of the stored object.
                if let Value::Object(obj) = raw {
                    for (k, v) in obj {
                        m.serialize_entry(k, v)?;
                    }
                }
            }
            EntryKind::Message(message) => {
                m.serialize_entry("type", "message")?;
                self.base(&mut m)?;
                m.serialize_entry("message", message)?;
            }
            EntryKind::ModelChange { provider, model_id } => {
                m.serialize_entry("type", "model_change")?;
                self.base(&mut m)?;
                m.serialize_entry("provider", provider)?;
                m.serialize_entry("modelId", model_id)?;
            }
            EntryKind::ThinkingLevelChange { thinking_level } => {
                m.serialize_entry("type", "thinking_level_change")?;
                self.base(&mut m)?;
                m.serialize_entry("thinkingLevel", thinking_level)?;
            }
            EntryKind::Compaction(c) => {
                m.serialize_entry("type", "compaction")?;
                self.base(&mut m)?;
                m.serialize_entry("summary", &c.summary)?;
                m.serialize_entry("firstKeptEntryId", &c.first_kept_entry_id)?;
                m.serialize_entry("tokensBefore", &c.tokens_before)?;
                if let Some(details) = &c.details {
                    m.serialize_entry("details", details)?;
                }
                if let Some(from_hook) = &c.from_hook {
                    m.serialize_entry("fromHook", from_hook)?;
                }
            }
            EntryKind::BranchSummary {
                from_id,
                summary,
                details,
                from_hook,
            } => {
                m.serialize_entry("type", "branch_summary")?;
                self.base(&mut m)?;
                m.serialize_entry("fromId", from_id)?;
                m.serialize_entry("summary", summary)?;
                if let Some(details) = details {
                    m.serialize_entry("details", details)?;
                }
                if let Some(from_hook) = from_hook {
                    m.serialize_entry("fromHook", from_hook)?;
                }
            }
            EntryKind::Label { target_id, label } => {
                m.serialize_entry("type", "label")?;
                self.base(&mut m)?;
                m.serialize_entry("targetId", target_id)?;
                if let Some(label) = label {
                    m.serialize_entry("label", label)?;
                }
            }
            EntryKind::SessionInfo { name } => {
                m.serialize_entry("type", "session_info")?;
                self.base(&mut m)?;
                if let Some(name) = name {
                    m.serialize_entry("name", name)?;
                }
            }
        }
        m.end()
    }
}

impl SessionEntry {
    /// `id, parentId, timestamp`; `parentId` is `null` for a root, as pi writes it.
    fn base<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("parentId", &self.parent_id)?;
        m.serialize_entry("timestamp", &self.timestamp)
    }
}

// ---- reading -----------------------------------------------------------------------------------

impl<'de> Deserialize<'de> for SessionEntry {
    /// Generic path (any deserializer): buffers the object as a [`Value`] first.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        SessionEntry::from_value(value).ok_or_else(|| de::Error::custom("session entry without a string `id`"))
    }
}

/// The streaming reader: succeeds only for a known type whose payload fits, with `type` first.
struct Typed(SessionEntry);

impl<'de> Deserialize<'de> for Typed {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(TypedVisitor)
    }
}

struct TypedVisitor;

impl<'de> Visitor<'de> for TypedVisitor {
    type Value = Typed;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a session entry object starting with `type`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Typed, A::Error> {
        let first: Option<Cow<'de, str>> = map.next_key()?;
        if first.as_deref() != Some("type") {
            return Err(de::Error::custom("`type` is not the first key"));
        }
        let entry_type: Cow<'de, str> = map.next_value()?;
        let rest = MapAccessDeserializer::new(map);
        match &*entry_type {
            "message" => MessageWire::deserialize(rest).map(Into::into),
            "model_change" => ModelChangeWire::deserialize(rest).map(Into::into),
            "thinking_level_change" => ThinkingWire::deserialize(rest).map(Into::into),
            "compaction" => CompactionWire::deserialize(rest).map(Into::into),
            "branch_summary" => BranchSummaryWire::deserialize(rest).map(Into::into),
            "custom" => CustomWire::deserialize(rest).map(Into::into),
            "custom_message" => CustomMessageWire::deserialize(rest).map(Into::into),
            "label" => LabelWire::deserialize(rest).map(Into::into),
            "session_info" => SessionInfoWire::deserialize(rest).map(Into::into),
            other => Err(de::Error::custom(format_args!("unknown entry type `{other}`"))),
        }
    }
}

/// One typed struct per entry type: `id`, `parentId`, `timestamp` and the type's fields. A
/// missing `parentId` reads as `null` (a root), a missing `timestamp` as empty.
macro_rules! wire {
    ($name:ident { $($(#[$attr:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct $name {
            id: String,
            #[serde(default)]
            parent_id: Option<String>,
            #[serde(default)]
            timestamp: String,
            $($(#[$attr])* $field: $ty,)*
        }
    };
}

fn typed(id: String, parent_id: Option<String>, timestamp: String, kind: EntryKind) -> Typed {
    Typed(SessionEntry {
        id,
        parent_id,
        timestamp,
        kind,
    })
}

wire!(MessageWire {
    #[serde(deserialize_with = "message_fast")]
    message: Message,
});
wire!(ModelChangeWire {
    provider: String,
    model_id: String
});
wire!(ThinkingWire {
    thinking_level: ThinkingLevel
});
wire!(CompactionWire {
    summary: String,
    first_kept_entry_id: String,
    tokens_before: u64,
    #[serde(default)]
    details: Option<Value>,
    #[serde(default)]
    from_hook: Option<bool>,
});
wire!(BranchSummaryWire {
    from_id: String,
    summary: String,
    #[serde(default)]
    details: Option<Value>,
    #[serde(default)]
    from_hook: Option<bool>,
});
wire!(CustomWire {
    custom_type: String,
    #[serde(default)]
    data: Option<Value>,
});
wire!(CustomMessageWire {
    custom_type: String,
    content: UserBody,
    #[serde(default)]
    display: bool,
    #[serde(default)]
    details: Option<Value>,
});
wire!(LabelWire {
    target_id: String,
    #[serde(default)]
    label: Option<String>,
});
wire!(SessionInfoWire {
    #[serde(default)]
    name: Option<String>,
});

impl From<MessageWire> for Typed {
    fn from(w: MessageWire) -> Self {
        typed(w.id, w.parent_id, w.timestamp, EntryKind::Message(w.message))
    }
}
impl From<ModelChangeWire> for Typed {
    fn from(w: ModelChangeWire) -> Self {
        let kind = EntryKind::ModelChange {
            provider: w.provider,
            model_id: w.model_id,
        };
        typed(w.id, w.parent_id, w.timestamp, kind)
    }
}
impl From<ThinkingWire> for Typed {
    fn from(w: ThinkingWire) -> Self {
        let kind = EntryKind::ThinkingLevelChange {
            thinking_level: w.thinking_level,
        };
        typed(w.id, w.parent_id, w.timestamp, kind)
    }
}
impl From<CompactionWire> for Typed {
    fn from(w: CompactionWire) -> Self {
        let kind = EntryKind::Compaction(CompactionEntry {
            summary: w.summary,
            first_kept_entry_id: w.first_kept_entry_id,
            tokens_before: w.tokens_before,
            details: w.details,
            from_hook: w.from_hook,
        });
        typed(w.id, w.parent_id, w.timestamp, kind)
    }
}
impl From<BranchSummaryWire> for Typed {
    fn from(w: BranchSummaryWire) -> Self {
        let kind = EntryKind::BranchSummary {
            from_id: w.from_id,
            summary: w.summary,
            details: w.details,
            from_hook: w.from_hook,
        };
        typed(w.id, w.parent_id, w.timestamp, kind)
    }
}
impl From<CustomWire> for Typed {
    fn from(w: CustomWire) -> Self {
        let kind = EntryKind::Custom {
            custom_type: w.custom_type,
            data: w.data,
        };
        typed(w.id, w.parent_id, w.timestamp, kind)
    }
}
impl From<CustomMessageWire> for Typed {
    fn from(w: CustomMessageWire) -> Self {
        let kind = EntryKind::CustomMessage {
            custom_type: w.custom_type,
            content: w.content,
            display: w.display,
            details: w.details,
        };
        typed(w.id, w.parent_id, w.timestamp, kind)
    }
}
impl From<LabelWire> for Typed {
    fn from(w: LabelWire) -> Self {
        let kind = EntryKind::Label {
            target_id: w.target_id,
            label: w.label,
        };
        typed(w.id, w.parent_id, w.timestamp, kind)
    }
}
impl From<SessionInfoWire> for Typed {
    fn from(w: SessionInfoWire) -> Self {
        typed(w.id, w.parent_id, w.timestamp, EntryKind::SessionInfo { name: w.name })
    }
}

/// Reads a [`Message`] without buffering when `role` is its first key (pi writes it first): the
/// rest of the object goes straight into the role's struct. Otherwise the object is collected
/// and read by `Message`'s own `Deserialize`. pi's version-2 role `hookMessage` reads as
/// `custom`; any other unknown role is an error (the entry is then kept as `Unknown`).
fn message_fast<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Message, D::Error> {
    deserializer.deserialize_map(MessageVisitor)
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Message;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let first: Option<Cow<'de, str>> = map.next_key()?;
        if first.as_deref() == Some("role") {
            let role: Cow<'de, str> = map.next_value()?;
            let rest = MapAccessDeserializer::new(map);
            return match &*role {
                "user" => UserMessage::deserialize(rest).map(Message::User),
                "assistant" => AssistantMessage::deserialize(rest).map(Message::Assistant),
                "toolResult" => ToolResultMessage::deserialize(rest).map(Message::ToolResult),
                "custom" | "hookMessage" => CustomMessage::deserialize(rest).map(Message::Custom),
                "bashExecution" => BashExecutionMessage::deserialize(rest).map(Message::BashExecution),
                "branchSummary" => SummaryMessage::deserialize(rest).map(Message::BranchSummary),
                "compactionSummary" => SummaryMessage::deserialize(rest).map(Message::CompactionSummary),
                other => Err(de::Error::custom(format_args!("unknown message role `{other}`"))),
            };
        }
        let mut obj = Map::new();
        if let Some(key) = first {
            obj.insert(key.into_owned(), map.next_value()?);
        }
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            obj.insert(key, value);
        }
        if obj.get("role").and_then(Value::as_str) == Some("hookMessage") {
            obj.insert("role".to_owned(), Value::String("custom".to_owned()));
        }
        Message::deserialize(Value::Object(obj)).map_err(de::Error::custom)
    }
}
