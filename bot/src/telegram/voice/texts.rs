//! What voice tells the chat and the model (compared against in tests).

use super::AudioError;
use crate::config::VoiceConfig;
use crate::telegram::conversation::handoff::duration;

/// Longest quote of a transcript shown to the user (characters).
const QUOTE_CHARS: usize = 120;

/// For the model: what a note (`what`: "voice note", …, `secs` long) said.
pub fn transcript(what: &str, secs: Option<u64>, text: &str) -> String {
    let long = secs.map(|s| format!(", {}", duration(s))).unwrap_or_default();
    if text.is_empty() {
        format!("[{what}{long}, transcribed: no speech heard]")
    } else {
        format!("[{what}{long}, transcribed]: {text}")
    }
}

/// For the model: a note that was not transcribed, and why.
pub fn not_transcribed(what: &str, why: &str) -> String {
    format!("[a {what} that could not be transcribed ({why})]")
}

/// For the user: what was heard, a short quote so a mis-hearing shows at once.
pub fn heard(text: &str) -> String {
    if text.is_empty() {
        return "🎤 (no speech heard)".to_owned();
    }
    let mut quote: String = text.chars().take(QUOTE_CHARS).collect();
    if text.chars().count() > QUOTE_CHARS {
        quote.push('…');
    }
    format!("🎤 “{quote}”")
}

/// The reason the model gets for a note over `max_seconds`.
pub fn too_long_reason(secs: u64, max: u64) -> String {
    format!(
        "{} long, over the {} this bot transcribes",
        duration(secs),
        duration(max)
    )
}

/// For the user: a note over `max_seconds` was kept, not sent.
pub fn too_long(what: &str, path: &str, secs: u64, max: u64) -> String {
    format!(
        "🎤 The {what} ({}) is longer than the {} I transcribe ([voice] max_seconds), so it was not sent to the transcription service; it is saved as {path}.",
        duration(secs),
        duration(max)
    )
}

/// For the user: one sentence naming the service and what to check.
pub fn failed(what: &str, e: &AudioError, config: &VoiceConfig) -> String {
    let check = check(
        e,
        &Keys {
            side: "stt",
            env: &config.stt_api_key_env,
            model: &config.stt_model,
            base_url: &config.stt_base_url,
            too_large: "send a shorter note, or lower [voice] max_seconds",
            file: "check the workspace's inbox/ folder",
        },
    );
    format!("🎤 The {what} could not be transcribed: {e}; {check}. The model got the note without its words.")
}

/// For the user, after the answer as text: it could not be spoken, in one sentence naming the
/// service and what to check.
pub fn not_spoken(e: &AudioError, config: &VoiceConfig) -> String {
    let check = check(
        e,
        &Keys {
            side: "tts",
            env: &config.tts_api_key_env,
            model: &config.tts_model,
            base_url: &config.tts_base_url,
            too_large: "lower [voice] tts_max_chars",
            file: "check the free space under state_dir",
        },
    );
    format!("🔈 The answer could not be spoken: {e}; {check}. It is above as text.")
}

/// For the user, after the answer as text: Telegram did not take its voice message (`why`).
pub fn voice_refused(why: &str) -> String {
    format!("🔈 Telegram did not take the answer's voice message ({why}). It is above as text.")
}

/// One service's keys, as [`check`] names them.
struct Keys<'a> {
    /// `stt` or `tts`: the keys' prefix.
    side: &'a str,
    env: &'a str,
    model: &'a str,
    base_url: &'a str,
    /// What to do about a 413.
    too_large: &'a str,
    /// What to do about a local file that could not be used.
    file: &'a str,
}

/// What to check after `e`, naming the keys.
fn check(e: &AudioError, k: &Keys<'_>) -> String {
    let side = k.side;
    match e {
        AudioError::Unauthorized { .. } => format!(
            "check the key in {} ([voice] {side}_api_key_env) and that it may use {}",
            k.env, k.model
        ),
        AudioError::TooLarge { .. } => k.too_large.to_owned(),
        AudioError::RateLimited { .. } => "wait a little, or check the account's rate limits and credit".to_owned(),
        AudioError::Status { status, .. } if *status >= 500 => "try again later; the service is failing".to_owned(),
        AudioError::Status { .. } | AudioError::BadAnswer { .. } => format!(
            "check [voice] {side}_base_url ({}) and {side}_model ({})",
            k.base_url, k.model
        ),
        AudioError::Timeout { .. } => "check the service, or raise [voice] timeout_secs".to_owned(),
        AudioError::Unreachable { .. } => format!("check [voice] {side}_base_url ({}) and the network", k.base_url),
        AudioError::File(_) => k.file.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_model_and_the_user_read_these() {
        assert_eq!(
            transcript("voice note", Some(7), "call Anna"),
            "[voice note, 0:07, transcribed]: call Anna"
        );
        assert_eq!(
            not_transcribed("voice note", "api.openai.com refused the key (HTTP 401)"),
            "[a voice note that could not be transcribed (api.openai.com refused the key (HTTP 401))]"
        );
        assert_eq!(heard("call Anna"), "🎤 “call Anna”");
        let long = "a".repeat(200);
        assert_eq!(heard(&long).chars().count(), "🎤 “”…".chars().count() + QUOTE_CHARS);
        assert_eq!(
            too_long_reason(725, 600),
            "12:05 long, over the 10:00 this bot transcribes"
        );
    }
}
