//! The method table (names lowercased) and the methods that are not about messages:
//! `getMe`, webhooks, commands, chat actions, callback answers, `getFile`, and the ones
//! that only need to answer `true`.

use serde_json::{Value, json};

use super::params::Params;
use super::state::State;
use super::{ApiError, BotCommand, messages, reactions};

/// A method that runs under the state lock.
pub(crate) type SyncMethod = fn(&mut State, &Params) -> Result<Value, ApiError>;

/// How a method is served.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Method {
    /// Answered at once, under the lock.
    Sync(SyncMethod),
    /// `getUpdates`: a long poll.
    GetUpdates,
}

/// Largest file `getFile` hands out (20 MB).
const DOWNLOAD_LIMIT: usize = 20 * 1024 * 1024;

/// Actions `sendChatAction` accepts.
const CHAT_ACTIONS: &[&str] = &[
    "typing",
    "upload_photo",
    "record_video",
    "upload_video",
    "record_voice",
    "upload_voice",
    "upload_document",
    "choose_sticker",
    "find_location",
    "record_video_note",
    "upload_video_note",
];

/// The method for a lowercased name; `None` answers 404.
pub(crate) fn lookup(name: &str) -> Option<Method> {
    let method: SyncMethod = match name {
        "getupdates" => return Some(Method::GetUpdates),
        "getme" => get_me,
        "getwebhookinfo" => get_webhook_info,
        "setwebhook" => set_webhook,
        "deletewebhook" => delete_webhook,
        "setmycommands" => set_my_commands,
        "getmycommands" => get_my_commands,
        "deletemycommands" => delete_my_commands,
        "sendmessage" => messages::send_message,
        "sendmessagedraft" => messages::send_message_draft,
        "editmessagetext" => messages::edit_message_text,
        "editmessagereplymarkup" => messages::edit_message_reply_markup,
        "deletemessage" => messages::delete_message,
        "deletemessages" => messages::delete_messages,
        "senddocument" => messages::send_document,
        "sendphoto" => messages::send_photo,
        "sendvoice" => super::voice::send_voice,
        "sendchataction" => send_chat_action,
        "answercallbackquery" => answer_callback_query,
        "getfile" => get_file,
        "setmessagereaction" => reactions::set_message_reaction,
        "setmydescription"
        | "setmyshortdescription"
        | "setmyname"
        | "setchatmenubutton"
        | "pinchatmessage"
        | "unpinchatmessage"
        | "unpinallchatmessages"
        | "leavechat"
        | "logout"
        | "close" => accept,
        _ => return None,
    };
    Some(Method::Sync(method))
}

fn accept(_: &mut State, _: &Params) -> Result<Value, ApiError> {
    Ok(Value::Bool(true))
}

fn get_me(state: &mut State, _: &Params) -> Result<Value, ApiError> {
    let mut me = state.bot_user();
    me["can_join_groups"] = true.into();
    me["can_read_all_group_messages"] = false.into();
    me["supports_inline_queries"] = false.into();
    me["can_connect_to_business"] = false.into();
    me["has_main_web_app"] = false.into();
    me["has_topics_enabled"] = false.into();
    Ok(me)
}

fn get_webhook_info(state: &mut State, _: &Params) -> Result<Value, ApiError> {
    Ok(json!({
        "url": state.webhook_url,
        "has_custom_certificate": false,
        "pending_update_count": state.pending.len(),
    }))
}

fn set_webhook(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    let url = params.string("url")?.unwrap_or_default();
    if !url.is_empty() && !url.starts_with("https://") {
        return Err(ApiError::bad_request(
            "bad webhook: HTTPS url must be provided for webhook",
        ));
    }
    let secret = params.string("secret_token")?.unwrap_or_default();
    if secret.len() > 256
        || !secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(ApiError::bad_request(
            "bad webhook: secret token contains unallowed characters",
        ));
    }
    state.webhook_url = url;
    state.webhook_secret = secret;
    if params.flag("drop_pending_updates") {
        state.pending.clear();
    }
    Ok(Value::Bool(true))
}

fn delete_webhook(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    state.webhook_url.clear();
    state.webhook_secret.clear();
    if params.flag("drop_pending_updates") {
        state.pending.clear();
    }
    Ok(Value::Bool(true))
}

/// The key commands are kept under: scope (`default` when absent) and language code.
fn commands_key(params: &Params) -> Result<(String, String), ApiError> {
    let scope = match params.json("scope")? {
        None => "default".to_owned(),
        Some(scope) if scope.get("type").and_then(Value::as_str) == Some("default") => "default".to_owned(),
        Some(scope) => scope.to_string(),
    };
    let language = params.string("language_code")?.unwrap_or_default();
    Ok((scope, language))
}

/// A command name Telegram accepts: `[a-z0-9_]{1,32}`.
fn valid_command(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_')
}

fn set_my_commands(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    let key = commands_key(params)?;
    let list = params
        .json("commands")?
        .ok_or_else(|| ApiError::bad_request("parameter \"commands\" is required"))?;
    let list: Vec<Value> = list
        .as_array()
        .cloned()
        .ok_or_else(|| ApiError::bad_request("can't parse commands JSON object"))?;
    if list.len() > 100 {
        return Err(ApiError::bad_request("too many commands"));
    }
    let mut commands = Vec::with_capacity(list.len());
    for entry in &list {
        let field = |name: &str| entry.get(name).and_then(Value::as_str).unwrap_or("");
        let (command, description) = (field("command"), field("description"));
        if !valid_command(command) {
            return Err(ApiError::bad_request("BOT_COMMAND_INVALID"));
        }
        if !(1..=256).contains(&description.chars().count()) {
            return Err(ApiError::bad_request("BOT_COMMAND_DESCRIPTION_INVALID"));
        }
        commands.push(BotCommand {
            command: command.to_owned(),
            description: description.to_owned(),
        });
    }
    state.commands.insert(key, commands);
    Ok(Value::Bool(true))
}

fn get_my_commands(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    let commands = state.commands.get(&commands_key(params)?).cloned().unwrap_or_default();
    serde_json::to_value(commands).map_err(|error| ApiError::new(500, error.to_string()))
}

fn delete_my_commands(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    state.commands.remove(&commands_key(params)?);
    Ok(Value::Bool(true))
}

fn send_chat_action(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    let chat_id = params.chat_id()?;
    state.chat(chat_id)?;
    let action = params.string("action")?.unwrap_or_default();
    if !CHAT_ACTIONS.contains(&action.as_str()) {
        return Err(ApiError::bad_request("wrong parameter action in request"));
    }
    Ok(Value::Bool(true))
}

fn answer_callback_query(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    let id = params.string("callback_query_id")?.unwrap_or_default();
    match state.callbacks.get_mut(&id) {
        Some(answered) if !*answered => {
            *answered = true;
            Ok(Value::Bool(true))
        }
        _ => Err(ApiError::bad_request(
            "query is too old and response timeout expired or query id is invalid",
        )),
    }
}

fn get_file(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    let id = params.string("file_id")?.unwrap_or_default();
    let file = state
        .files
        .get(&id)
        .ok_or_else(|| ApiError::bad_request("invalid file id"))?;
    if file.size() > DOWNLOAD_LIMIT {
        return Err(ApiError::bad_request("file is too big"));
    }
    Ok(json!({
        "file_id": file.file_id,
        "file_unique_id": file.file_unique_id,
        "file_size": file.size(),
        "file_path": file.file_path,
    }))
}
