//! Methods that create, edit and delete messages: `sendMessage`, `sendMessageDraft`, `editMessageText`,
//! `editMessageReplyMarkup`, `deleteMessage(s)`, `sendDocument`, `sendPhoto`, with Telegram's
//! checks (text and caption length in UTF-16 units after entity parsing, HTML, inline
//! keyboards, reply targets, files).

use serde_json::{Map, Value, json};

use super::ApiError;
use super::html;
use super::params::Params;
use super::state::{State, StoredFile, StoredMessage, unix_now};

/// Longest message text, in UTF-16 units.
const TEXT_LIMIT: usize = 4096;
/// Longest caption, in UTF-16 units.
const CAPTION_LIMIT: usize = 1024;
/// Largest multipart upload the Bot API takes.
const UPLOAD_LIMIT: usize = 50 * 1024 * 1024;
/// Size given to photos whose dimensions cannot be read.
const DEFAULT_PHOTO_SIZE: (u32, u32) = (800, 600);

/// Button fields that give an inline button something to do.
const BUTTON_ACTIONS: &[&str] = &[
    "url",
    "callback_data",
    "web_app",
    "login_url",
    "switch_inline_query",
    "switch_inline_query_current_chat",
    "switch_inline_query_chosen_chat",
    "copy_text",
    "callback_game",
    "pay",
];

/// Text with its markup applied.
pub(super) struct Rendered {
    /// As the bot sent it.
    source: String,
    parse_mode: Option<String>,
    /// As users see it.
    visible: String,
    entities: Vec<Value>,
}

fn render(source: String, parse_mode: Option<String>) -> Result<Rendered, ApiError> {
    let mode = parse_mode.as_deref().map(str::to_ascii_lowercase);
    let (visible, entities) = match mode.as_deref() {
        None | Some("") | Some("markdown" | "markdownv2") => (source.clone(), Vec::new()),
        Some("html") => {
            let parsed = html::parse(&source)
                .map_err(|detail| ApiError::bad_request(format!("can't parse entities: {detail}")))?;
            (parsed.text, parsed.entities)
        }
        Some(_) => return Err(ApiError::bad_request("unsupported parse_mode")),
    };
    Ok(Rendered {
        source,
        parse_mode,
        visible,
        entities,
    })
}

/// The `text` parameter rendered and checked; `too_long` is the error detail past the limit.
fn text_param(params: &Params, too_long: &str) -> Result<Rendered, ApiError> {
    let empty = || ApiError::bad_request("message text is empty");
    let source = params.string("text")?.unwrap_or_default();
    if source.trim().is_empty() {
        return Err(empty());
    }
    let rendered = render(source, params.string("parse_mode")?)?;
    if rendered.visible.trim().is_empty() {
        return Err(empty());
    }
    if html::utf16_len(&rendered.visible) > TEXT_LIMIT {
        return Err(ApiError::bad_request(too_long));
    }
    Ok(rendered)
}

/// The optional `caption` parameter rendered and checked.
pub(super) fn caption_param(params: &Params) -> Result<Option<Rendered>, ApiError> {
    let Some(source) = params.string("caption")?.filter(|text| !text.is_empty()) else {
        return Ok(None);
    };
    let rendered = render(source, params.string("parse_mode")?)?;
    if html::utf16_len(&rendered.visible) > CAPTION_LIMIT {
        return Err(ApiError::bad_request("message caption is too long"));
    }
    Ok(Some(rendered))
}

/// The `reply_markup` parameter checked; returns the inline keyboard a `Message` shows
/// (reply keyboards, removal and force-reply are accepted and not shown).
fn inline_markup(params: &Params) -> Result<Option<Value>, ApiError> {
    let markup_error = || ApiError::bad_request("can't parse reply keyboard markup JSON object");
    let Some(markup) = params.json("reply_markup")? else {
        return Ok(None);
    };
    let object = markup.as_object().ok_or_else(markup_error)?;
    let Some(keyboard) = object.get("inline_keyboard") else {
        return if ["keyboard", "remove_keyboard", "force_reply"]
            .iter()
            .any(|key| object.contains_key(*key))
        {
            Ok(None)
        } else {
            Err(markup_error())
        };
    };
    let rows_error =
        || ApiError::bad_request("field \"inline_keyboard\" of the InlineKeyboardMarkup should be an Array of Arrays");
    for row in keyboard.as_array().ok_or_else(rows_error)? {
        for button in row.as_array().ok_or_else(rows_error)? {
            check_button(button)?;
        }
    }
    Ok(Some(json!({"inline_keyboard": keyboard})))
}

fn check_button(button: &Value) -> Result<(), ApiError> {
    let text = button.get("text").and_then(Value::as_str);
    if text.is_none_or(str::is_empty) {
        return Err(ApiError::bad_request(
            "can't parse inline keyboard button: Text must be non-empty",
        ));
    }
    if !BUTTON_ACTIONS.iter().any(|key| button.get(*key).is_some()) {
        return Err(ApiError::bad_request(
            "can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard",
        ));
    }
    if let Some(data) = button.get("callback_data") {
        let size = data.as_str().map_or(0, str::len);
        if !(1..=64).contains(&size) {
            return Err(ApiError::bad_request("BUTTON_DATA_INVALID"));
        }
    }
    if let Some(url) = button.get("url")
        && url.as_str().is_none_or(|url| url.trim().is_empty())
    {
        return Err(ApiError::bad_request("BUTTON_URL_INVALID"));
    }
    Ok(())
}

/// The message replied to (`reply_parameters` or `reply_to_message_id`), without its own
/// `reply_to_message`, as a reply shows it.
fn reply_target(state: &State, chat_id: i64, params: &Params) -> Result<Option<Value>, ApiError> {
    let (target_chat, message_id, allow_missing) = match params.json("reply_parameters")? {
        Some(reply) => (
            reply.get("chat_id").and_then(Value::as_i64).unwrap_or(chat_id),
            reply
                .get("message_id")
                .and_then(Value::as_i64)
                .ok_or_else(|| ApiError::bad_request("message identifier is not specified"))?,
            reply.get("allow_sending_without_reply").and_then(Value::as_bool) == Some(true),
        ),
        None => match params.int("reply_to_message_id")? {
            Some(id) => (chat_id, id, params.flag("allow_sending_without_reply")),
            None => return Ok(None),
        },
    };
    let found = state
        .chats
        .get(&target_chat)
        .and_then(|chat| chat.messages.get(&message_id));
    match found {
        Some(stored) => {
            let mut message = stored.json.clone();
            if let Some(object) = message.as_object_mut() {
                object.remove("reply_to_message");
            }
            Ok(Some(message))
        }
        None if allow_missing => Ok(None),
        None => Err(ApiError::bad_request("message to be replied not found")),
    }
}

/// A new outgoing message's common fields (id, sender, chat, date, thread, reply, keyboard).
pub(super) fn new_message(state: &mut State, chat_id: i64, params: &Params) -> Result<Map<String, Value>, ApiError> {
    let markup = inline_markup(params)?;
    let reply = reply_target(state, chat_id, params)?;
    let thread = params.int("message_thread_id")?;
    let from = state.bot_user();
    let chat = state.chat(chat_id)?;
    let mut message = Map::new();
    message.insert("message_id".into(), chat.take_message_id().into());
    message.insert("from".into(), from);
    message.insert("chat".into(), chat.chat.clone());
    message.insert("date".into(), unix_now().into());
    if let Some(thread) = thread {
        message.insert("message_thread_id".into(), thread.into());
        if chat.is_forum() {
            message.insert("is_topic_message".into(), true.into());
        }
    }
    if let Some(reply) = reply {
        message.insert("reply_to_message".into(), reply);
    }
    if let Some(markup) = markup {
        message.insert("reply_markup".into(), markup);
    }
    Ok(message)
}

/// Puts `text` or `caption` (with its entities) into a message.
pub(super) fn set_text(message: &mut Map<String, Value>, key: &str, rendered: &Rendered) {
    let entities_key = if key == "text" { "entities" } else { "caption_entities" };
    message.insert(key.into(), rendered.visible.clone().into());
    if rendered.entities.is_empty() {
        message.remove(entities_key);
    } else {
        message.insert(entities_key.into(), rendered.entities.clone().into());
    }
}

/// Stores an outgoing message and returns it.
pub(super) fn store(
    state: &mut State,
    chat_id: i64,
    message: Map<String, Value>,
    rendered: Option<Rendered>,
    file_id: Option<String>,
) -> Result<Value, ApiError> {
    let json = Value::Object(message);
    let id = json["message_id"].as_i64().unwrap_or(0);
    let (source, parse_mode) = rendered
        .map(|rendered| (Some(rendered.source), rendered.parse_mode))
        .unwrap_or_default();
    state.chat(chat_id)?.messages.insert(
        id,
        StoredMessage {
            json: json.clone(),
            outgoing: true,
            source,
            parse_mode,
            file_id,
            edits: 0,
        },
    );
    Ok(json)
}

/// `sendMessage`.
pub(crate) fn send_message(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    let chat_id = params.chat_id()?;
    state.chat(chat_id)?;
    let rendered = text_param(params, "message is too long")?;
    let mut message = new_message(state, chat_id, params)?;
    set_text(&mut message, "text", &rendered);
    store(state, chat_id, message, Some(rendered), None)
}

/// `sendMessageDraft` (Bot API 9.5): private chats only, `draft_id` non-zero, `text` optional
/// (absent: Telegram's "Thinking…" placeholder) and checked like a message's. Nothing is
/// stored: a draft is not a message (read the calls, [`BotApiServer::calls`](super::BotApiServer::calls)).
pub(crate) fn send_message_draft(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    let chat_id = params.chat_id()?;
    state.chat(chat_id)?;
    if chat_id < 0 {
        return Err(ApiError::bad_request("TEXTDRAFT_PEER_INVALID"));
    }
    if params.int("draft_id")?.unwrap_or(0) == 0 {
        return Err(ApiError::bad_request("parameter \"draft_id\" must be non-zero"));
    }
    if params.get("text").is_some() {
        text_param(params, "message is too long")?;
    }
    Ok(Value::Bool(true))
}

/// The bot's own message to edit.
fn editable<'a>(state: &'a mut State, params: &Params) -> Result<&'a mut StoredMessage, ApiError> {
    if params.get("inline_message_id").is_some() {
        return Err(ApiError::bad_request("MESSAGE_ID_INVALID"));
    }
    let chat_id = params.chat_id()?;
    let message_id = params
        .int("message_id")?
        .ok_or_else(|| ApiError::bad_request("message identifier is not specified"))?;
    let stored = state
        .chat(chat_id)?
        .messages
        .get_mut(&message_id)
        .ok_or_else(|| ApiError::bad_request("message to edit not found"))?;
    if !stored.outgoing {
        return Err(ApiError::bad_request("message can't be edited"));
    }
    Ok(stored)
}

fn not_modified() -> ApiError {
    ApiError::bad_request(
        "message is not modified: specified new message content and reply markup are exactly \
         the same as a current content and reply markup of the message",
    )
}

/// Replaces (or removes) a message's keyboard.
fn set_markup(message: &mut Map<String, Value>, markup: Option<Value>) {
    match markup {
        Some(markup) => message.insert("reply_markup".into(), markup),
        None => message.remove("reply_markup"),
    };
}

/// `editMessageText`; without `reply_markup` the keyboard is removed, as in Telegram.
pub(crate) fn edit_message_text(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    let rendered = text_param(params, "MESSAGE_TOO_LONG")?;
    let markup = inline_markup(params)?;
    let stored = editable(state, params)?;
    let Some(message) = stored.json.as_object_mut() else {
        return Err(ApiError::bad_request("message to edit not found"));
    };
    if !message.contains_key("text") {
        return Err(ApiError::bad_request("there is no text in the message to edit"));
    }
    let entities = message.get("entities").cloned().unwrap_or_else(|| json!([]));
    if message.get("text").and_then(Value::as_str) == Some(rendered.visible.as_str())
        && entities == json!(rendered.entities)
        && message.get("reply_markup") == markup.as_ref()
    {
        return Err(not_modified());
    }
    set_text(message, "text", &rendered);
    set_markup(message, markup);
    message.insert("edit_date".into(), unix_now().into());
    stored.source = Some(rendered.source);
    stored.parse_mode = rendered.parse_mode;
    stored.edits += 1;
    Ok(stored.json.clone())
}

/// `editMessageReplyMarkup`; without `reply_markup` the keyboard is removed.
pub(crate) fn edit_message_reply_markup(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    let markup = inline_markup(params)?;
    let stored = editable(state, params)?;
    let Some(message) = stored.json.as_object_mut() else {
        return Err(ApiError::bad_request("message to edit not found"));
    };
    if message.get("reply_markup") == markup.as_ref() {
        return Err(not_modified());
    }
    set_markup(message, markup);
    message.insert("edit_date".into(), unix_now().into());
    stored.edits += 1;
    Ok(stored.json.clone())
}

/// `deleteMessage`.
pub(crate) fn delete_message(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    let chat_id = params.chat_id()?;
    let message_id = params
        .int("message_id")?
        .ok_or_else(|| ApiError::bad_request("message identifier is not specified"))?;
    state
        .chat(chat_id)?
        .messages
        .remove(&message_id)
        .map(|_| Value::Bool(true))
        .ok_or_else(|| ApiError::bad_request("message to delete not found"))
}

/// `deleteMessages`: deletes those found, skips the others.
pub(crate) fn delete_messages(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    let chat_id = params.chat_id()?;
    let ids = params
        .json("message_ids")?
        .and_then(|ids| ids.as_array().cloned())
        .filter(|ids| (1..=100).contains(&ids.len()))
        .ok_or_else(|| ApiError::bad_request("message_ids must be an array of 1-100 ids"))?;
    let chat = state.chat(chat_id)?;
    for id in ids.iter().filter_map(Value::as_i64) {
        chat.messages.remove(&id);
    }
    Ok(Value::Bool(true))
}

/// `sendDocument`.
pub(crate) fn send_document(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    send_file(state, params, "document")
}

/// `sendPhoto`.
pub(crate) fn send_photo(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    send_file(state, params, "photo")
}

fn send_file(state: &mut State, params: &Params, field: &str) -> Result<Value, ApiError> {
    let chat_id = params.chat_id()?;
    state.chat(chat_id)?;
    let (file, uploaded) = input_file(state, params, field)?;
    let caption = caption_param(params)?;
    let mut message = new_message(state, chat_id, params)?;
    if field == "photo" {
        let (width, height) = uploaded.as_deref().and_then(png_size).unwrap_or(DEFAULT_PHOTO_SIZE);
        message.insert(
            "photo".into(),
            json!([{
                "file_id": file.file_id,
                "file_unique_id": file.file_unique_id,
                "file_size": file.size(),
                "width": width,
                "height": height,
            }]),
        );
    } else {
        let mut document = json!({
            "file_id": file.file_id,
            "file_unique_id": file.file_unique_id,
            "file_size": file.size(),
        });
        if let Some(name) = &file.file_name {
            document["file_name"] = name.clone().into();
        }
        if let Some(mime) = &file.mime_type {
            document["mime_type"] = mime.clone().into();
        }
        message.insert("document".into(), document);
    }
    if let Some(caption) = &caption {
        set_text(&mut message, "caption", caption);
    }
    store(state, chat_id, message, caption, Some(file.file_id))
}

/// The file named by the parameter: `attach://<part>`, a part named like the parameter, or a
/// known file id. An upload is registered (so `getFile` serves it); its bytes are returned.
pub(super) fn input_file(
    state: &mut State,
    params: &Params,
    field: &str,
) -> Result<(StoredFile, Option<bytes::Bytes>), ApiError> {
    let wrong = || ApiError::bad_request("wrong file identifier/HTTP URL specified");
    let missing = || ApiError::bad_request(format!("there is no {field} in the request"));
    let upload = match params.get(field) {
        Some(Value::String(value)) => {
            if let Some(part) = value.strip_prefix("attach://") {
                params.file_part(part).ok_or_else(wrong)?
            } else if value.starts_with("http://") || value.starts_with("https://") {
                return Err(ApiError::bad_request("failed to get HTTP URL content"));
            } else {
                let file = state.files.get(value).cloned().ok_or_else(wrong)?;
                return Ok((file, None));
            }
        }
        Some(_) => return Err(missing()),
        None => params.file_part(field).ok_or_else(missing)?,
    };
    if upload.bytes.is_empty() {
        return Err(ApiError::bad_request("file must be non-empty"));
    }
    if upload.bytes.len() > UPLOAD_LIMIT {
        return Err(ApiError::new(413, "Request Entity Too Large"));
    }
    let folder = match field {
        "photo" if !looks_like_image(&upload.bytes) => return Err(ApiError::bad_request("IMAGE_PROCESS_FAILED")),
        "photo" => "photos",
        "voice" => "voice",
        _ => "documents",
    };
    let file = state.files.add(upload.bytes.clone(), upload.file_name.clone(), folder);
    Ok((file, Some(upload.bytes.clone())))
}

/// PNG, JPEG, GIF, WebP or BMP by their magic bytes.
fn looks_like_image(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x89PNG\r\n\x1a\n")
        || bytes.starts_with(&[0xFF, 0xD8, 0xFF])
        || bytes.starts_with(b"GIF8")
        || (bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP"))
        || bytes.starts_with(b"BM")
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if !bytes.starts_with(b"\x89PNG\r\n\x1a\n") || bytes.get(12..16) != Some(b"IHDR") {
        return None;
    }
    let read =
        |range: std::ops::Range<usize>| -> Option<u32> { Some(u32::from_be_bytes(bytes.get(range)?.try_into().ok()?)) };
    Some((read(16..20)?, read(20..24)?))
}
