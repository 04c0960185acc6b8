//! `[voice]`: the assistant hears voice notes and can answer with its own voice (docs/voice.md).
//! The section's presence turns the feature on; every key has a default. The API keys are never
//! in the file: `stt_api_key_env` / `tts_api_key_env` name the variables they are read from, which
//! are secrets like every other key ([`Secrets::of`](crate::secrets::Secrets::of)). Every error
//! names its key.

use super::{ConfigError, invalid};
use serde::Deserialize;
use std::time::Duration;

/// OpenAI's API, where both audio endpoints live unless the keys say otherwise.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// Default `stt_model`.
pub const DEFAULT_STT_MODEL: &str = "gpt-4o-mini-transcribe";
/// Default `tts_model`.
pub const DEFAULT_TTS_MODEL: &str = "gpt-4o-mini-tts";
/// Default `stt_api_key_env`.
pub const DEFAULT_KEY_ENV: &str = "OPENAI_API_KEY";
/// Default `tts_voice`.
pub const DEFAULT_TTS_VOICE: &str = "alloy";
/// Default `max_seconds`: ten minutes of speech.
pub const DEFAULT_MAX_SECONDS: u64 = 600;
/// Default `tts_max_chars`: about a minute and a half of speech.
pub const DEFAULT_TTS_MAX_CHARS: usize = 1500;
/// Upper bound of `tts_max_chars`: OpenAI's `/audio/speech` takes at most 4096 characters.
const TTS_MAX_CHARS_LIMIT: usize = 4096;
/// Default `timeout_secs` for one request to either service.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVoice {
    stt_base_url: Option<String>,
    stt_model: Option<String>,
    stt_api_key_env: Option<String>,
    language: Option<String>,
    max_seconds: Option<u64>,
    tts_base_url: Option<String>,
    tts_model: Option<String>,
    tts_voice: Option<String>,
    tts_api_key_env: Option<String>,
    tts_max_chars: Option<usize>,
    timeout_secs: Option<u64>,
}

/// `[voice]`, resolved. Holds variable names, never key values.
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceConfig {
    /// `stt_base_url`: the OpenAI-compatible API transcriptions are posted to
    /// (`{stt_base_url}/audio/transcriptions`), without a trailing `/`.
    pub stt_base_url: String,
    /// `stt_model` (default `gpt-4o-mini-transcribe`; `whisper-large-v3` on Groq, …).
    pub stt_model: String,
    /// `stt_api_key_env` (default `OPENAI_API_KEY`): the variable holding the transcription
    /// service's key. Unset or empty: requests go without `Authorization` (a local server).
    pub stt_api_key_env: String,
    /// `language`: ISO-639-1 code given to the service unless a chat set its own (`/voice lang`).
    pub language: Option<String>,
    /// `max_seconds` (default 600): longer notes (Telegram's `duration`) are not sent.
    pub max_seconds: u64,
    /// `tts_base_url` (default OpenAI's): speech is posted to `{tts_base_url}/audio/speech`.
    pub tts_base_url: String,
    /// `tts_model` (default `gpt-4o-mini-tts`).
    pub tts_model: String,
    /// `tts_voice` (default `alloy`).
    pub tts_voice: String,
    /// `tts_api_key_env` (default: `stt_api_key_env`'s variable).
    pub tts_api_key_env: String,
    /// `tts_max_chars` (default 1500, at most 4096): longer answers stay text only.
    pub tts_max_chars: usize,
    /// `timeout_secs` (default 120): one request to either service, whole.
    pub timeout: Duration,
}

/// Checks `[voice]` (`None`: no section, the feature is off).
pub(super) fn resolve(raw: Option<RawVoice>) -> Result<Option<VoiceConfig>, ConfigError> {
    let Some(raw) = raw else { return Ok(None) };
    let stt_base_url = base_url("voice.stt_base_url", raw.stt_base_url)?;
    let tts_base_url = base_url("voice.tts_base_url", raw.tts_base_url)?;
    let stt_api_key_env =
        variable("voice.stt_api_key_env", raw.stt_api_key_env)?.unwrap_or_else(|| DEFAULT_KEY_ENV.into());
    let tts_api_key_env =
        variable("voice.tts_api_key_env", raw.tts_api_key_env)?.unwrap_or_else(|| stt_api_key_env.clone());
    if let Some(code) = raw.language.as_deref()
        && !is_language(code)
    {
        return Err(invalid(
            "voice.language",
            format!("`{code}`: use an ISO-639-1 code such as \"en\", \"de\" or \"es\""),
        ));
    }
    let max_seconds = raw.max_seconds.unwrap_or(DEFAULT_MAX_SECONDS);
    if max_seconds == 0 {
        return Err(invalid(
            "voice.max_seconds",
            "0: use the longest note to transcribe, in seconds (e.g. 600)",
        ));
    }
    let tts_max_chars = raw.tts_max_chars.unwrap_or(DEFAULT_TTS_MAX_CHARS);
    if !(1..=TTS_MAX_CHARS_LIMIT).contains(&tts_max_chars) {
        return Err(invalid(
            "voice.tts_max_chars",
            format!("{tts_max_chars}: use 1 to {TTS_MAX_CHARS_LIMIT} (the speech API's limit)"),
        ));
    }
    let timeout_secs = raw.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
    if timeout_secs == 0 {
        return Err(invalid("voice.timeout_secs", "0: use seconds above 0 (e.g. 120)"));
    }
    Ok(Some(VoiceConfig {
        stt_base_url,
        stt_model: name("voice.stt_model", raw.stt_model, DEFAULT_STT_MODEL)?,
        stt_api_key_env,
        language: raw.language,
        max_seconds,
        tts_base_url,
        tts_model: name("voice.tts_model", raw.tts_model, DEFAULT_TTS_MODEL)?,
        tts_voice: name("voice.tts_voice", raw.tts_voice, DEFAULT_TTS_VOICE)?,
        tts_api_key_env,
        tts_max_chars,
        timeout: Duration::from_secs(timeout_secs),
    }))
}

/// Whether `code` looks like an ISO-639-1 (or -3) language code: 2 or 3 lowercase letters.
pub fn is_language(code: &str) -> bool {
    (2..=3).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_lowercase())
}

/// An http(s) URL without its trailing `/` (OpenAI's by default).
fn base_url(key: &str, v: Option<String>) -> Result<String, ConfigError> {
    let v = v.unwrap_or_else(|| OPENAI_BASE_URL.into());
    match url::Url::parse(&v) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(v.trim_end_matches('/').to_owned()),
        _ => Err(invalid(
            key,
            format!("`{v}` is not an http(s) URL (e.g. {OPENAI_BASE_URL} or http://127.0.0.1:8000/v1)"),
        )),
    }
}

/// An environment variable's name: letters, digits and `_`, not starting with a digit.
fn variable(key: &str, v: Option<String>) -> Result<Option<String>, ConfigError> {
    match v {
        None => Ok(None),
        Some(n)
            if !n.is_empty()
                && !n.starts_with(|c: char| c.is_ascii_digit())
                && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
        {
            Ok(Some(n))
        }
        Some(n) => Err(invalid(
            key,
            format!(
                "`{n}` is not an environment variable's name (e.g. OPENAI_API_KEY); the key itself never goes in the file"
            ),
        )),
    }
}

/// A model or voice name: not empty.
fn name(key: &str, v: Option<String>, default: &str) -> Result<String, ConfigError> {
    match v {
        None => Ok(default.to_owned()),
        Some(n) if !n.trim().is_empty() => Ok(n),
        Some(_) => Err(invalid(key, format!("empty: leave the key out for \"{default}\""))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn parse(text: &str) -> Result<Option<VoiceConfig>, ConfigError> {
        resolve(Some(
            toml::from_str::<RawVoice>(text).map_err(|e| invalid("voice", e.to_string()))?,
        ))
    }

    #[test]
    fn an_empty_section_turns_voice_on_with_openai_defaults() {
        let c = parse("").unwrap().unwrap();
        assert_eq!(
            c,
            VoiceConfig {
                stt_base_url: OPENAI_BASE_URL.into(),
                stt_model: DEFAULT_STT_MODEL.into(),
                stt_api_key_env: "OPENAI_API_KEY".into(),
                language: None,
                max_seconds: 600,
                tts_base_url: OPENAI_BASE_URL.into(),
                tts_model: DEFAULT_TTS_MODEL.into(),
                tts_voice: "alloy".into(),
                tts_api_key_env: "OPENAI_API_KEY".into(),
                tts_max_chars: DEFAULT_TTS_MAX_CHARS,
                timeout: Duration::from_secs(120),
            }
        );
        assert_eq!(resolve(None).unwrap(), None, "no section: voice is off");
    }

    #[test]
    fn the_speech_key_follows_the_transcription_key_unless_set() {
        let c = parse("stt_base_url = \"https://api.groq.com/openai/v1/\"\nstt_api_key_env = \"GROQ_API_KEY\"")
            .unwrap()
            .unwrap();
        assert_eq!(c.stt_base_url, "https://api.groq.com/openai/v1");
        assert_eq!(c.tts_api_key_env, "GROQ_API_KEY");
        let c = parse("stt_api_key_env = \"A\"\ntts_api_key_env = \"B\"")
            .unwrap()
            .unwrap();
        assert_eq!((c.stt_api_key_env.as_str(), c.tts_api_key_env.as_str()), ("A", "B"));
    }

    #[test]
    fn bad_values_and_unknown_keys_name_their_key() {
        let cases = [
            ("stt_base_url = \"ftp://x\"", "voice.stt_base_url"),
            ("tts_base_url = \"nope\"", "voice.tts_base_url"),
            ("stt_api_key_env = \"sk-abc-123\"", "voice.stt_api_key_env"),
            ("language = \"English\"", "voice.language"),
            ("max_seconds = 0", "voice.max_seconds"),
            ("tts_max_chars = 5000", "voice.tts_max_chars"),
            ("tts_voice = \" \"", "voice.tts_voice"),
            ("timeout_secs = 0", "voice.timeout_secs"),
            ("api_key = \"sk-secret\"", "api_key"),
        ];
        for (text, key) in cases {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(key), "{text}: {err}");
        }
    }
}
