//! `/voice`: shows the chat's voice settings; `/voice on|off|auto` sets whether its answers are
//! spoken (`auto`: the answers to voice notes); `/voice lang CODE` sets the language its notes
//! are transcribed in (ISO-639-1), `/voice lang auto` leaves it to the service (or `[voice]
//! language`).

use super::Speaking;
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
            let own = host.chats.settings().get(key);
            let lang = own.voice_language.or_else(|| voice.config.language.clone());
            format!(
                "Voice notes are transcribed by {} in {}. Change with /voice lang CODE (e.g. en, de) or /voice lang auto. {}",
                voice.stt.service(),
                lang.map_or_else(|| "the language the service detects".to_owned(), |l| format!("`{l}`")),
                speaking(own.voice_reply.unwrap_or_default(), voice.tts.service())
            )
        }
        (Some("lang"), Some(code), None) => set_language(host, key, code),
        (Some(word), None, _) => match Speaking::parse(&word.to_ascii_lowercase()) {
            Some(s) => set_speaking(host, key, s, voice.tts.service()),
            None => usage(),
        },
        _ => usage(),
    }
}

/// What `s` means for the chat's answers (`service` speaks them).
fn speaking(s: Speaking, service: &str) -> String {
    match s {
        Speaking::Off => "Answers are text (/voice on or /voice auto to hear them).".to_owned(),
        Speaking::On => format!("Answers are spoken by {service}, with their text (/voice off to stop)."),
        Speaking::Auto => {
            format!("Answers to voice notes are spoken by {service}, with their text; typed messages get text.")
        }
    }
}

fn set_speaking(host: &TelegramHost, key: &str, s: Speaking, service: &str) -> String {
    if let Err(e) = host.chats.settings().update(key, |c| c.voice_reply = Some(s)) {
        return format!("⚠️ cannot save chat-settings.json: {e}");
    }
    speaking(s, service)
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
    "Usage: /voice, /voice on|off|auto (answers spoken: always, never, or to voice notes), or /voice lang CODE (e.g. en, de) or /voice lang auto.".to_owned()
}
