//! What a received voice note, audio file or video note becomes in the prompt: its transcript,
//! marked with the kind and duration (after the line naming the saved file), and the "🎤 …"
//! quote the user sees; or the reason it was not transcribed, for both.
//!
//! Notes over `max_seconds` (Telegram's `duration`) are not sent; larger than the Bot API's
//! download limit they never arrive here (the hand-off refuses them before downloading). The
//! file stays in `inbox/` either way.

use super::{Voice, hearing::Audio, texts};
use crate::features::port::chat_key;
use crate::telegram::TelegramHost;
use crate::telegram::inbound::update::{InMedia, MediaKind};

/// What a note added: the line for the prompt and what to tell the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Heard {
    /// For the model, after the saved file's line.
    pub line: String,
    /// For the user, before the answer.
    pub notice: String,
}

/// Transcribes the note `media` of chat `chat_id`, saved at `path` (`inbox/<name>`, in the chat's
/// workspace). `None` when voice is off or `media` is not something one listens to.
pub async fn hear(host: &TelegramHost, chat_id: i64, media: &InMedia, path: &str) -> Option<Heard> {
    let voice = host.voice.as_deref()?;
    let (what, default_mime) = match media.kind {
        MediaKind::Voice => ("voice note", "audio/ogg"),
        MediaKind::Audio => ("audio file", "audio/mpeg"),
        MediaKind::Video => ("video", "video/mp4"),
        MediaKind::Photo | MediaKind::Document => return None,
    };
    let max = voice.config.max_seconds;
    if let Some(secs) = media.duration.filter(|s| *s > max) {
        return Some(Heard {
            line: texts::not_transcribed(what, &texts::too_long_reason(secs, max)),
            notice: texts::too_long(what, path, secs, max),
        });
    }
    let file = match host.chats.workspace(chat_id) {
        Ok(dir) => dir.join(path),
        Err(e) => return Some(failed(voice, what, &super::AudioError::File(e))),
    };
    let name = path.rsplit('/').next().unwrap_or(path);
    let audio = Audio {
        path: &file,
        name,
        mime: media.mime_type.as_deref().unwrap_or(default_mime),
    };
    let language = host
        .chats
        .settings()
        .get(&chat_key(chat_id))
        .voice_language
        .or_else(|| voice.config.language.clone());
    match voice.stt.transcribe(audio, language.as_deref()).await {
        Ok(text) => {
            tracing::info!(
                chat = chat_id,
                file = path,
                chars = text.chars().count(),
                "transcribed a note"
            );
            Some(Heard {
                line: texts::transcript(what, media.duration, &text),
                notice: texts::heard(&text),
            })
        }
        Err(e) => {
            tracing::warn!(chat = chat_id, file = path, "cannot transcribe a note: {e}");
            Some(failed(voice, what, &e))
        }
    }
}

fn failed(voice: &Voice, what: &str, e: &super::AudioError) -> Heard {
    Heard {
        line: texts::not_transcribed(what, &e.to_string()),
        notice: texts::failed(what, e, &voice.config),
    }
}
