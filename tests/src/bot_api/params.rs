//! A request's parameters as one JSON object, whichever way they came, with the typed reads
//! the methods need and Telegram's errors for bad values.

use serde_json::{Map, Value};

use super::{ApiError, UploadedFile};

/// Parameters whose text form is JSON (form, query string and multipart send them as text).
const JSON_PARAMS: &[&str] = &[
    "reply_markup",
    "reply_parameters",
    "link_preview_options",
    "entities",
    "caption_entities",
    "commands",
    "scope",
    "allowed_updates",
    "reaction",
    "message_ids",
    "media",
];

/// Integer parameters.
const INT_PARAMS: &[&str] = &[
    "chat_id",
    "message_id",
    "message_thread_id",
    "reply_to_message_id",
    "offset",
    "limit",
    "timeout",
    "from_chat_id",
    "user_id",
    "cache_time",
    "duration",
    "width",
    "height",
    "max_connections",
    "draft_id",
];

/// Boolean parameters.
const BOOL_PARAMS: &[&str] = &[
    "disable_notification",
    "protect_content",
    "allow_sending_without_reply",
    "show_alert",
    "drop_pending_updates",
    "is_big",
    "disable_web_page_preview",
    "has_spoiler",
    "disable_content_type_detection",
    "show_caption_above_media",
    "allow_paid_broadcast",
    "can_stop",
    "keep_on_stop",
];

/// The parameters of one request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Params {
    map: Map<String, Value>,
    /// File parts of a multipart request.
    pub(crate) files: Vec<UploadedFile>,
}

impl Params {
    /// Adds parameters given as a JSON object (a JSON body).
    pub(crate) fn extend_json(&mut self, object: Map<String, Value>) {
        self.map.extend(object);
    }

    /// Adds a parameter given as text (form, query string, multipart), normalised by name.
    pub(crate) fn insert_text(&mut self, name: String, text: String) {
        let value = normalise(&name, text);
        self.map.insert(name, value);
    }

    /// All parameters as a JSON object, for the record.
    pub(crate) fn to_value(&self) -> Value {
        Value::Object(self.map.clone())
    }

    /// A parameter, `None` when absent or `null`.
    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        self.map.get(name).filter(|value| !value.is_null())
    }

    /// A string parameter; numbers and booleans are taken as their text, as Telegram does.
    pub(crate) fn string(&self, name: &str) -> Result<Option<String>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(value @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(value.to_string())),
            Some(_) => Err(ApiError::bad_request(format!("parameter \"{name}\" must be a string"))),
        }
    }

    /// An integer parameter (a JSON number or its decimal text).
    pub(crate) fn int(&self, name: &str) -> Result<Option<i64>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(number)) => number.as_i64().map(Some).ok_or_else(|| invalid(name)),
            Some(Value::String(text)) => text.trim().parse().map(Some).map_err(|_| invalid(name)),
            Some(_) => Err(invalid(name)),
        }
    }

    /// A boolean parameter; absent is `false`.
    pub(crate) fn flag(&self, name: &str) -> bool {
        match self.get(name) {
            Some(Value::Bool(value)) => *value,
            Some(Value::String(text)) => matches!(text.as_str(), "true" | "True" | "1"),
            Some(Value::Number(number)) => number.as_i64() == Some(1),
            _ => false,
        }
    }

    /// A JSON-serialised parameter (an object or array, or its JSON text).
    pub(crate) fn json(&self, name: &str) -> Result<Option<Value>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(text)) => serde_json::from_str(text)
                .map(Some)
                .map_err(|_| ApiError::bad_request(format!("can't parse {name} JSON object"))),
            Some(value) => Ok(Some(value.clone())),
        }
    }

    /// The `chat_id` the call addresses; a `@username` names a chat this double never has.
    pub(crate) fn chat_id(&self) -> Result<i64, ApiError> {
        match self.get("chat_id") {
            None => Err(ApiError::bad_request("chat_id is empty")),
            Some(Value::String(text)) if text.trim().is_empty() => Err(ApiError::bad_request("chat_id is empty")),
            Some(_) => match self.int("chat_id") {
                Ok(Some(id)) => Ok(id),
                _ => Err(ApiError::bad_request("chat not found")),
            },
        }
    }

    /// The numeric `chat_id`, if it has one (for fault scoping; never an error).
    pub(crate) fn chat_scope(&self) -> Option<i64> {
        self.int("chat_id").ok().flatten()
    }

    /// The file part with this name.
    pub(crate) fn file_part(&self, name: &str) -> Option<&UploadedFile> {
        self.files.iter().find(|file| file.field == name)
    }
}

fn invalid(name: &str) -> ApiError {
    if name == "chat_id" {
        ApiError::bad_request("chat not found")
    } else {
        ApiError::bad_request(format!("invalid {name} specified"))
    }
}

fn normalise(name: &str, text: String) -> Value {
    if JSON_PARAMS.contains(&name) {
        return serde_json::from_str(&text).unwrap_or(Value::String(text));
    }
    if INT_PARAMS.contains(&name)
        && let Ok(number) = text.trim().parse::<i64>()
    {
        return number.into();
    }
    if BOOL_PARAMS.contains(&name) {
        match text.as_str() {
            "true" | "True" => return true.into(),
            "false" | "False" => return false.into(),
            _ => {}
        }
    }
    Value::String(text)
}

/// Decodes `application/x-www-form-urlencoded` text (also a query string) into pairs.
pub(crate) fn form_pairs(raw: &str) -> Vec<(String, String)> {
    raw.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(name, true), percent_decode(value, true))
        })
        .collect()
}

/// Decodes `%XX` escapes (and `+` as a space in form data, not in paths).
pub(crate) fn percent_decode(text: &str, plus_is_space: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'+' if plus_is_space => out.push(b' '),
            b'%' => {
                let hex = text
                    .get(index + 1..index + 3)
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok());
                if let Some(byte) = hex {
                    out.push(byte);
                    index += 3;
                    continue;
                }
                out.push(b'%');
            }
            byte => out.push(byte),
        }
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
