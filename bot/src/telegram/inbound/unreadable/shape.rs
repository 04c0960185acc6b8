//! Whether a decoded update has the shape the router reads ([`inbound`](crate::telegram::inbound::update)
//! reads `serde_json::Value` leniently: a field of another type would silently become a default,
//! a `0` chat or sender, an empty text). Field names and types are the Bot API's ("Update",
//! "Message", "CallbackQuery", "MessageEntity", "PhotoSize", "Document", ...).

use serde_json::Value;

/// A JSON type the Bot API gives a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    Str,
    Bool,
    Object,
    Array,
}

impl Kind {
    fn matches(self, v: &Value) -> bool {
        match self {
            Kind::Int => v.is_i64() || v.is_u64(),
            Kind::Str => v.is_string(),
            Kind::Bool => v.is_boolean(),
            Kind::Object => v.is_object(),
            Kind::Array => v.is_array(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Int => "an integer",
            Kind::Str => "a string",
            Kind::Bool => "a boolean",
            Kind::Object => "an object",
            Kind::Array => "an array",
        }
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "a number",
        Value::Number(_) => "a number that is not a 64-bit integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The fields of one object, named from the update's root for the reason.
struct Fields<'a> {
    v: &'a Value,
    at: String,
}

impl<'a> Fields<'a> {
    fn new(v: &'a Value, at: impl Into<String>) -> Self {
        Fields { v, at: at.into() }
    }

    fn path(&self, key: &str) -> String {
        if self.at.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.at)
        }
    }

    /// `key` has type `kind` when present (required: and is present). The reason names the
    /// field and its type, never its content.
    fn want(&self, key: &str, kind: Kind, required: bool) -> Result<Option<&'a Value>, String> {
        match self.v.get(key) {
            None if required => Err(format!("`{}` is missing", self.path(key))),
            None => Ok(None),
            Some(x) if kind.matches(x) => Ok(Some(x)),
            Some(x) => Err(format!(
                "`{}` is {} where the Bot API gives {}",
                self.path(key),
                type_name(x),
                kind.name()
            )),
        }
    }

    fn object(&self, key: &str, required: bool) -> Result<Option<Fields<'a>>, String> {
        Ok(self
            .want(key, Kind::Object, required)?
            .map(|v| Fields::new(v, self.path(key))))
    }

    fn all(&self, kinds: &[(&str, Kind)]) -> Result<(), String> {
        kinds
            .iter()
            .try_for_each(|(k, kind)| self.want(k, *kind, false).map(drop))
    }
}

/// `Ok` when every field the router reads has the Bot API's type; else the first field that
/// does not, named by its path (`message.chat.id is a string where the Bot API gives an
/// integer`). Updates of other kinds pass (the router ignores them).
pub fn check(update: &Value) -> Result<(), String> {
    let u = Fields::new(update, "");
    u.want("update_id", Kind::Int, true)?;
    if let Some(m) = u.object("message", false)? {
        message(&m)?;
    }
    if let Some(q) = u.object("callback_query", false)? {
        q.want("id", Kind::Str, true)?;
        q.want("data", Kind::Str, false)?;
        user(&q, true)?;
        if let Some(m) = q.object("message", false)? {
            m.want("message_id", Kind::Int, true)?;
            chat(&m)?;
            m.all(&[("message_thread_id", Kind::Int), ("is_topic_message", Kind::Bool)])?;
        }
    }
    Ok(())
}

fn chat(m: &Fields<'_>) -> Result<(), String> {
    let Some(c) = m.object("chat", true)? else {
        return Ok(());
    };
    c.want("id", Kind::Int, true)?;
    c.want("type", Kind::Str, true).map(drop)
}

fn user(m: &Fields<'_>, required: bool) -> Result<(), String> {
    let Some(f) = m.object("from", required)? else {
        return Ok(());
    };
    f.want("id", Kind::Int, true)?;
    f.all(&[("first_name", Kind::Str), ("last_name", Kind::Str)])
}

fn message(m: &Fields<'_>) -> Result<(), String> {
    m.want("message_id", Kind::Int, true)?;
    chat(m)?;
    // Without a sender the access rules cannot be applied (a service message moving a group
    // to a supergroup is handled before them).
    user(m, m.v.get("migrate_to_chat_id").is_none())?;
    m.all(&[
        ("date", Kind::Int),
        ("text", Kind::Str),
        ("caption", Kind::Str),
        ("is_topic_message", Kind::Bool),
        ("message_thread_id", Kind::Int),
        ("migrate_to_chat_id", Kind::Int),
        ("media_group_id", Kind::Str),
    ])?;
    for key in ["entities", "caption_entities"] {
        for (i, e) in items(m, key)? {
            let e = Fields::new(e, format!("{}[{i}]", m.path(key)));
            e.want("type", Kind::Str, true)?;
            e.want("offset", Kind::Int, true)?;
            e.want("length", Kind::Int, true)?;
        }
    }
    if let Some(r) = m.object("reply_to_message", false)? {
        user(&r, false)?;
        r.all(&[("text", Kind::Str), ("caption", Kind::Str)])?;
    }
    for (i, size) in items(m, "photo")? {
        let size = Fields::new(size, format!("{}[{i}]", m.path("photo")));
        file(&size)?;
        size.all(&[("width", Kind::Int), ("height", Kind::Int)])?;
    }
    for key in ["document", "voice", "audio", "video", "video_note"] {
        if let Some(f) = m.object(key, false)? {
            file(&f)?;
            f.all(&[
                ("file_name", Kind::Str),
                ("mime_type", Kind::Str),
                ("duration", Kind::Int),
            ])?;
        }
    }
    Ok(())
}

fn file(f: &Fields<'_>) -> Result<(), String> {
    f.want("file_id", Kind::Str, true)?;
    f.want("file_size", Kind::Int, false).map(drop)
}

/// The elements of the array `key` (none when absent), each an object.
fn items<'a>(m: &Fields<'a>, key: &str) -> Result<Vec<(usize, &'a Value)>, String> {
    let Some(list) = m.want(key, Kind::Array, false)?.and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    list.iter()
        .enumerate()
        .map(|(i, e)| match e {
            Value::Object(_) => Ok((i, e)),
            other => Err(format!(
                "`{}[{i}]` is {} where the Bot API gives an object",
                m.path(key),
                type_name(other)
            )),
        })
        .collect()
}
