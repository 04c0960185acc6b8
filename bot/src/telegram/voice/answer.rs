//! Answers with voice (`/voice on|off|auto`): a chat's answer is spoken
//! ([`speech`](super::speech)) and sent with `sendVoice` before its text goes out.
//!
//! # Exactly once
//! The voice message is journaled as an answer's chunk is (`sending` as it leaves, `sent` once
//! Telegram took it), under its own number, [`VOICE_CHUNK`]; the text sent after it (when it did
//! not fit the caption, or the voice was refused) is numbered from `VOICE_CHUNK + 1`. So the
//! journal says by itself how far a voice answer got, and an answer resumed after a crash
//! ([`Chunks::resume_at`](crate::telegram::inbound::journal::Chunks::resume_at)) goes on by the
//! text's rule: nothing sent yet, it is decided (and spoken) again; the voice taken or on the
//! wire, only the text it did not carry follows; never twice.
//!
//! # What is spoken
//! `on`: every answer; `auto`: the answer to a prompt with a voice note in it ([`Speech::heard`]);
//! `off` (the default): none. Code blocks, tables and long answers stay text
//! ([`speakable`](super::speakable)), as does an answer whose text already went out while it was
//! written (a live answer's early chunks). A failed synthesis delivers the text and says so in
//! one sentence naming the service.

use super::speakable::spoken;
use super::{Voice, texts};
use crate::features::port::Target;
use crate::telegram::conversation::settings::SettingsStore;
use crate::telegram::inbound::journal::Answering;
use crate::telegram::inbound::update::{InMessage, MediaKind};
use crate::telegram::outbound::api::{Attempt, Tg};
use crate::telegram::outbound::render::{Chunk, utf16_len};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// The journal's chunk number of an answer's voice message; its text after it counts from
/// `VOICE_CHUNK + 1`. Far above any text answer's chunk count (4000 characters each).
pub const VOICE_CHUNK: usize = 1_000_000;

/// Longest caption Telegram takes (characters after entity parsing, `sendVoice.caption`).
pub const CAPTION_LIMIT: usize = 1024;

/// How many update ids of spoken prompts a chat remembers (the newest; an answer comes long
/// before 64 more notes).
const HEARD_KEPT: usize = 64;

/// When a chat's answers are spoken (`/voice on|off|auto`, kept in `chat-settings.json` as
/// `voice_reply`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Speaking {
    /// Never (the default).
    #[default]
    Off,
    /// Every answer.
    On,
    /// The answer to a voice note.
    Auto,
}

impl Speaking {
    /// The word `/voice` and the settings file use.
    pub fn as_str(self) -> &'static str {
        match self {
            Speaking::Off => "off",
            Speaking::On => "on",
            Speaking::Auto => "auto",
        }
    }

    /// `off`, `on` or `auto`; `None` for anything else.
    pub fn parse(word: &str) -> Option<Speaking> {
        match word {
            "off" => Some(Speaking::Off),
            "on" => Some(Speaking::On),
            "auto" => Some(Speaking::Auto),
            _ => None,
        }
    }
}

/// What of an answer is left for text after the voice part: its chunks from `from` on, each
/// journaled as `base + n`, then `notice` (why it was not spoken), if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPart {
    /// The first text chunk to send.
    pub from: usize,
    /// Added to a text chunk's index for its journal number.
    pub base: usize,
    /// Told after the text (plain).
    pub notice: Option<String>,
}

impl TextPart {
    /// A text answer, from chunk `from` on.
    pub fn text(from: usize) -> Self {
        TextPart::rest(0, from)
    }

    /// What is left of an answer after its chunks sent early: its chunks numbered from `first`
    /// ([`Rest`](crate::telegram::inbound::journal::Rest)), from the one numbered `from` on.
    pub fn rest(first: usize, from: usize) -> Self {
        TextPart {
            from: from.saturating_sub(first),
            base: first,
            notice: None,
        }
    }

    /// The text after a voice message, from text chunk `from` on.
    fn after_voice(from: usize) -> Self {
        TextPart {
            from,
            base: VOICE_CHUNK + 1,
            notice: None,
        }
    }
}

/// One chat's (or topic's) speaking: its setting and the prompts it heard spoken.
#[derive(Debug)]
pub struct Speech {
    voice: Arc<Voice>,
    settings: Arc<SettingsStore>,
    /// The chat key its setting is kept under.
    key: String,
    /// Update ids of prompts with a voice note, the newest [`HEARD_KEPT`].
    heard: Mutex<VecDeque<i64>>,
}

impl Speech {
    /// Speaking for the chat `key`, by `voice`'s services and its setting in `settings`.
    pub fn new(voice: Arc<Voice>, settings: Arc<SettingsStore>, key: String) -> Self {
        Speech {
            voice,
            settings,
            key,
            heard: Mutex::default(),
        }
    }

    /// Notes that update `id` brought a voice note (its answer is spoken under `auto`).
    pub fn heard(&self, id: i64) {
        let mut heard = self.heard.lock().unwrap_or_else(|e| e.into_inner());
        if heard.len() == HEARD_KEPT {
            heard.pop_front();
        }
        heard.push_back(id);
    }

    /// Whether the answer `md` for `of` is spoken: the chat wants it, and it is speakable.
    pub fn speaks(&self, md: &str, of: &Answering) -> bool {
        self.wanted(of) && spoken(md, self.voice.config.tts_max_chars).is_ok()
    }

    /// Whether an answer for `of` is spoken under the chat's setting.
    fn wanted(&self, of: &Answering) -> bool {
        let spoke = {
            let heard = self.heard.lock().unwrap_or_else(|e| e.into_inner());
            of.ids.iter().any(|id| heard.contains(id))
        };
        match self.settings.get(&self.key).voice_reply.unwrap_or_default() {
            Speaking::Off => false,
            Speaking::On => true,
            Speaking::Auto => spoke,
        }
    }

    /// Delivers the voice part of the answer `md` (rendered as `chunks`) for `of`, resumed at
    /// journal number `from` (0: nothing delivered yet); returns what is left for text.
    /// `report` journals the voice message's attempts (as chunk [`VOICE_CHUNK`]).
    pub async fn deliver(
        &self,
        tg: &Tg,
        to: Target,
        (md, chunks): (&str, &[Chunk]),
        of: &Answering,
        from: usize,
        report: &(dyn Fn(Attempt) + Send + Sync),
    ) -> TextPart {
        let caption = caption(chunks);
        if from > VOICE_CHUNK {
            // The voice went out (or was on the wire): the text it did not carry follows.
            let text_from = from - VOICE_CHUNK - 1;
            let carried = text_from == 0 && caption.is_some();
            return TextPart::after_voice(if carried { chunks.len() } else { text_from });
        }
        if from > 0 || !self.wanted(of) {
            return TextPart::text(from);
        }
        let words = match spoken(md, self.voice.config.tts_max_chars) {
            Ok(w) => w,
            Err(why) => {
                tracing::info!(chat = to.chat_id, "the answer stays text: {why}");
                return TextPart::text(0);
            }
        };
        let spoken = match self.voice.tts.speak(&words).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(chat = to.chat_id, "cannot speak the answer: {e}");
                return TextPart {
                    notice: Some(texts::not_spoken(&e, &self.voice.config)),
                    ..TextPart::text(0)
                };
            }
        };
        tracing::info!(
            chat = to.chat_id,
            seconds = spoken.seconds,
            bytes = spoken.bytes,
            "sending the answer as a voice message"
        );
        match tg
            .send_voice_reporting(to, &spoken.file, spoken.seconds, caption, report)
            .await
        {
            Ok(_) if caption.is_some() => TextPart::after_voice(chunks.len()),
            Ok(_) => TextPart::after_voice(0),
            Err(e) => {
                let why = crate::telegram::outbound::api::refusal(&e);
                tracing::warn!(chat = to.chat_id, "Telegram did not take the voice message: {why}");
                TextPart {
                    notice: Some(texts::voice_refused(&why)),
                    ..TextPart::after_voice(0)
                }
            }
        }
    }
}

/// Whether the user spoke `m` (a voice note or a video note, recorded in the chat; an audio or
/// video file is not): its answer is spoken under `/voice auto`.
pub fn spoke(m: &InMessage) -> bool {
    m.media.as_ref().is_some_and(|media| match media.kind {
        MediaKind::Voice | MediaKind::VideoNote => true,
        MediaKind::Photo | MediaKind::Document | MediaKind::Audio | MediaKind::Video => false,
    })
}

/// The caption of an answer of `chunks`: the whole answer when it is one chunk that fits
/// Telegram's caption ([`CAPTION_LIMIT`], counted on its Markdown source, which is never
/// shorter than what shows).
pub fn caption(chunks: &[Chunk]) -> Option<&Chunk> {
    match chunks {
        [one] if utf16_len(&one.source) <= CAPTION_LIMIT => Some(one),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telegram::outbound::render::markdown_chunks;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_setting_reads_as_written() {
        for s in [Speaking::Off, Speaking::On, Speaking::Auto] {
            assert_eq!(Speaking::parse(s.as_str()), Some(s));
        }
        assert_eq!(Speaking::parse("loud"), None);
    }

    #[test]
    fn a_short_answer_is_its_own_caption_a_long_one_follows_as_text() {
        let short = markdown_chunks("Sunny, **21** degrees.");
        assert_eq!(
            caption(&short).map(|c| c.html.as_str()),
            Some("Sunny, <b>21</b> degrees.")
        );
        let long = markdown_chunks(&"word ".repeat(300));
        assert_eq!(long.len(), 1);
        assert_eq!(caption(&long), None);
        assert_eq!(caption(&markdown_chunks(&"word ".repeat(1000))), None);
    }
}
