//! `/voice`: shows the chat's voice settings; `/voice lang CODE` sets the language its notes are
//! transcribed in (ISO-639-1), `/voice lang auto` leaves it to the service (or `[voice] language`).

use crate::config::is_language;
use crate::telegram::TelegramHost;

/// Runs `/voice ARGS` for the chat `key`; returns the answer.
pub fn run(host: &TelegramHost, key: &str, args: &str) -> String {
    let Some(voice) = host.voice.as_deref() else {
        return "Voice is off on this bot: its owner can turn it on with a [voice] section in the config (docs/voice.md).".to_owned();
    };
    let mut words = args.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (None, ..) => {
            let own = host.chats.settings().get(key).voice_language;
            let lang = own.or_else(|| voice.config.language.clone());
            format!(
                "Voice notes are transcribed by {} in {}. Change with /voice lang CODE (e.g. en, de) or /voice lang auto.",
                voice.stt.service(),
                lang.map_or_else(|| "the language the service detects".to_owned(), |l| format!("`{l}`"))
            )
        }
        (Some("lang"), Some(code), None) => set_language(host, key, code),
        _ => usage(),
    }
}

fn set_language(host: &TelegramHost, key: &str, code: &str) -> String {
    let code = code.to_ascii_lowercase();
    let value = match code.as_str() {
        "auto" => None,
        c if is_language(c) => Some(code.clone()),
        _ => return format!("`{code}` is not a language code: use ISO-639-1, e.g. en, de, es, or auto."),
    };
    let shown = value.clone();
    if let Err(e) = host.chats.settings().update(key, |s| s.voice_language = value) {
        return format!("⚠️ cannot save chat-settings.json: {e}");
    }
    match shown {
        Some(l) => format!("Voice notes in this chat are transcribed as `{l}`."),
        None => {
            "Voice notes in this chat are transcribed in the language the service detects (or the config's).".to_owned()
        }
    }
}

fn usage() -> String {
    "Usage: /voice, or /voice lang CODE (e.g. en, de) or /voice lang auto.".to_owned()
}
