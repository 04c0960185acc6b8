//! What a received voice note, audio file or video note becomes in the prompt: its transcript,
//! marked with the kind and duration (after the line naming the saved file), and the "🎤 …"
//! quote the user sees; or the reason it was not transcribed, for both.
//!
//! Notes over `max_seconds` (Telegram's `duration`) are not sent; larger than the Bot API's
//! download limit they never arrive here (the hand-off refuses them before downloading). The
//! file stays in `inbox/` either way.

use super::{Voice, hearing::Audio, texts};
use crate::features::port::{Target, chat_key};
use crate::telegram::TelegramHost;
use crate::telegram::inbound::update::{InMedia, InMessage, MediaKind};
use volcanic_abstractions::messages::{Message, StopReason};

/// Longest context given to the service as `prompt` (characters; Whisper reads at most its last
/// 224 tokens).
const PROMPT_CHARS: usize = 300;

/// What a note added: the line for the prompt and what to show the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Heard {
    /// For the model, after the saved file's line.
    pub line: String,
    /// For the user: what was heard (`Ok`, the "🎤 …" quote for the progress line or draft), or
    /// why nothing was (`Err`, a message before the answer).
    pub shown: Result<String, String>,
}

/// Transcribes the note `media` of the message `m`, saved at `path` (`inbox/<name>`, in the
/// chat's workspace), with the conversation's last answer as the service's `prompt`. `None`
/// when voice is off or `media` is not something one listens to.
pub async fn hear(host: &TelegramHost, m: &InMessage, media: &InMedia, path: &str) -> Option<Heard> {
    let chat_id = m.chat_id;
    let voice = host.voice.as_deref()?;
    let (what, default_mime) = match media.kind {
        MediaKind::Voice => ("voice note", "audio/ogg"),
        MediaKind::Audio => ("audio file", "audio/mpeg"),
        MediaKind::Video => ("video", "video/mp4"),
        MediaKind::VideoNote => ("video note", "video/mp4"),
        MediaKind::Photo | MediaKind::Document => return None,
    };
    let max = voice.config.max_seconds;
    if let Some(secs) = media.duration.filter(|s| *s > max) {
        return Some(Heard {
            line: texts::not_transcribed(what, &texts::too_long_reason(secs, max)),
            shown: Err(texts::too_long(what, path, secs, max)),
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
    let conversation = host.chats.conversation(Target {
        chat_id,
        thread: m.thread,
    });
    let prompt = match host.chats.session(&conversation).await {
        Ok(session) => context(&session.messages()),
        Err(_) => None,
    };
    match voice
        .stt
        .transcribe(audio, language.as_deref(), prompt.as_deref())
        .await
    {
        Ok(text) => {
            tracing::info!(
                chat = chat_id,
                file = path,
                chars = text.chars().count(),
                "transcribed a note"
            );
            Some(Heard {
                line: texts::transcript(what, media.duration, &text),
                shown: Ok(texts::heard(&text)),
            })
        }
        Err(e) => {
            tracing::warn!(chat = chat_id, file = path, "cannot transcribe a note: {e}");
            Some(failed(voice, what, &e))
        }
    }
}

/// The end of the conversation's last answer (at most [`PROMPT_CHARS`], from a word's start):
/// what the note most likely answers, so names and terms in it are spelled as before.
fn context(messages: &[Message]) -> Option<String> {
    let last = messages.iter().rev().find_map(|m| match m {
        Message::Assistant(a) => (a.stop_reason == StopReason::Stop).then(|| a.text()),
        Message::User(_)
        | Message::Custom(_)
        | Message::ToolResult(_)
        | Message::BashExecution(_)
        | Message::BranchSummary(_)
        | Message::CompactionSummary(_) => None,
    })?;
    let text = last.split_whitespace().collect::<Vec<_>>().join(" ");
    let skip = text.chars().count().saturating_sub(PROMPT_CHARS);
    let tail: String = text.chars().skip(skip).collect();
    let tail = match tail.split_once(' ') {
        Some((_, rest)) if skip > 0 => rest.to_owned(),
        _ => tail,
    };
    (!tail.is_empty()).then_some(tail)
}

fn failed(voice: &Voice, what: &str, e: &super::AudioError) -> Heard {
    Heard {
        line: texts::not_transcribed(what, &e.to_string()),
        shown: Err(texts::failed(what, e, &voice.config)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volcanic_abstractions::messages::{AssistantContent, AssistantMessage, TextContent, UserBody, UserMessage};

    fn answer(text: &str, stop: StopReason) -> Message {
        let mut a = AssistantMessage::empty("anthropic-messages", "anthropic", "m", 0);
        a.content.push(AssistantContent::Text(TextContent {
            text: text.into(),
            text_signature: None,
        }));
        a.stop_reason = stop;
        Message::Assistant(a)
    }

    #[test]
    fn the_prompt_is_the_end_of_the_last_answer() {
        let user = Message::User(UserMessage {
            content: UserBody::Text("hi".into()),
            timestamp: 0,
        });
        assert_eq!(context(std::slice::from_ref(&user)), None, "nothing answered yet");
        let msgs = vec![
            answer("Should I call   Anna\nor Jörg?", StopReason::Stop),
            user.clone(),
            answer("cut off", StopReason::Aborted),
        ];
        assert_eq!(context(&msgs).as_deref(), Some("Should I call Anna or Jörg?"));
        let long = format!("{} Anna Jörg", "word ".repeat(100));
        let got = context(&[answer(&long, StopReason::Stop)]).unwrap_or_default();
        assert!(
            got.chars().count() <= PROMPT_CHARS && got.starts_with("word ") && got.ends_with("Anna Jörg"),
            "{got}"
        );
    }
}
