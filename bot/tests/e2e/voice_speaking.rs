//! Spoken answers through the real binary: `/voice on` answers a typed question with a
//! `sendVoice` whose bytes are the speech service's OGG/Opus (the Bot API double parses the
//! container) with its length and the answer as caption; `auto` speaks the answer to a voice
//! note and writes the answer to a typed message; code stays text; an answer longer than a
//! caption follows its voice message as text; a failed synthesis, or a voice message Telegram
//! refuses, delivers the text and says so.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use crate::voice::Voice;
use volcanic_testkit::audio::{SpeechRequest, parse_opus, speak};
use volcanic_testkit::bot_api::{ChatMessage, updates};
use volcanic_testkit::model_server::Turn;

/// The voice messages the bot sent to the owner.
pub(crate) fn voices(v: &Voice) -> Vec<ChatMessage> {
    v.tg.messages(OWNER)
        .into_iter()
        .filter(|m| m.message.get("voice").is_some())
        .collect()
}

impl Voice {
    /// Makes the speech double answer with a real spoken OGG/Opus of `text`: its bytes and
    /// length (whole seconds).
    pub(crate) fn speech(&self, text: &str) -> (Vec<u8>, u32) {
        let (path, secs) = speak::spoken_note(text, self.env.dir.path(), "speech").unwrap_or_else(|e| panic!("{e}"));
        let bytes = std::fs::read(path).unwrap();
        self.audio.set_speech(bytes.clone());
        (bytes, secs)
    }

    /// Sets `/voice <mode>` and waits for the answer.
    pub(crate) async fn voice_mode(&self, mode: &str, answer: &str) {
        self.tg
            .push_update(updates::text_message(OWNER, OWNER, &format!("/voice {mode}")));
        self.wait_text(answer).await;
    }

    /// Waits until `n` voice messages were sent to the owner.
    pub(crate) async fn wait_voices(&self, n: usize) -> Vec<ChatMessage> {
        eventually(&format!("{n} voice message(s)"), &self.bot, || voices(self).len() >= n).await;
        voices(self)
    }
}

/// The speech request the bot is expected to make for `input`.
fn spoken(input: &str) -> SpeechRequest {
    SpeechRequest {
        model: "gpt-4o-mini-tts".into(),
        input: input.into(),
        voice: "alloy".into(),
        response_format: "opus".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn voice_on_answers_a_typed_question_with_a_voice_message_captioned_with_the_answer() {
    let v = Voice::start(crate::voice::KEY, "", "").await;
    v.voice_mode("on", "Answers are spoken by").await;
    let (ogg, secs) = v.speech("Sunny, 21 degrees in Lisbon.");
    v.model.push(Turn::reply("Sunny, **21** degrees in Lisbon."));
    v.tg.push_update(updates::text_message(OWNER, OWNER, "weather in Lisbon?"));
    let sent = v.wait_voices(1).await;

    let voice = &sent[0];
    assert_eq!(voice.visible_text.as_deref(), Some("Sunny, 21 degrees in Lisbon."));
    assert_eq!(voice.text.as_deref(), Some("Sunny, <b>21</b> degrees in Lisbon."));
    let meta = &voice.message["voice"];
    assert_eq!(meta["duration"], secs, "the duration read from the granule: {meta}");
    assert_eq!(meta["file_size"], ogg.len());
    assert_eq!(
        meta["measured_seconds"].as_f64().unwrap(),
        parse_opus(&ogg).unwrap().seconds
    );
    let call = &v.tg.calls("sendVoice")[0];
    assert_eq!(call.files.len(), 1, "{call:?}");
    assert_eq!(
        call.files[0].bytes.as_ref(),
        ogg.as_slice(),
        "the service's audio, as it came"
    );
    assert_eq!(v.audio.speeches(), vec![spoken("Sunny, 21 degrees in Lisbon.")]);
    assert_eq!(v.audio.violations(), Vec::<String>::new());
    // The caption carried the text: no second message with it.
    assert_eq!(count(&v.tg, OWNER, "degrees in Lisbon"), 1, "{:?}", texts(&v.tg, OWNER));
    let settings = std::fs::read_to_string(v.env.dir.path().join("data/chat-settings.json")).unwrap();
    assert!(settings.contains("\"voice_reply\": \"on\""), "{settings}");
    assert!(
        std::fs::read_dir(v.env.dir.path().join("data/voice-out"))
            .unwrap()
            .next()
            .is_none(),
        "the spoken file is removed once sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn voice_auto_speaks_to_a_voice_note_and_writes_to_a_typed_message() {
    let v = Voice::start(crate::voice::KEY, "", "").await;
    v.voice_mode("auto", "Answers to voice notes are spoken").await;
    v.speech("It is nine o'clock.");
    v.audio.set_transcript("what time is it");
    v.model.push(Turn::reply("It is nine o'clock."));
    let (file, _, secs) = v.note("what time is it", "time");
    v.tg.push_update(updates::voice_message(OWNER, OWNER, &file, secs));
    let sent = v.wait_voices(1).await;
    assert_eq!(sent[0].visible_text.as_deref(), Some("It is nine o'clock."));

    v.model.push(Turn::reply("Typed, so written."));
    v.tg.push_update(updates::text_message(OWNER, OWNER, "and typed?"));
    v.wait_text("Typed, so written.").await;
    assert_eq!(voices(&v).len(), 1, "the typed message got text");
    assert_eq!(v.audio.speeches(), vec![spoken("It is nine o'clock.")]);
    assert_eq!(v.audio.violations(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_stays_text_and_a_long_answer_follows_its_voice_as_text() {
    let v = Voice::start(crate::voice::KEY, "", "").await;
    v.voice_mode("on", "Answers are spoken by").await;
    v.speech("A long answer.");
    v.model.push(Turn::reply("Run this:\n\n```sh\nls -la\n```"));
    v.tg.push_update(updates::text_message(OWNER, OWNER, "how do I list files?"));
    v.wait_text("ls -la").await;
    assert!(voices(&v).is_empty(), "code is not read aloud");
    assert!(v.audio.speeches().is_empty());

    // Over a caption's 1024 characters, under tts_max_chars: voice first, then the text.
    let long = format!(
        "Here is the story. {}The end.",
        "Once upon a time there was a bot. ".repeat(35)
    );
    v.model.push(Turn::reply(&long));
    v.tg.push_update(updates::text_message(OWNER, OWNER, "tell me a story"));
    v.wait_text("The end.").await;
    let sent = voices(&v);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].visible_text, None, "no caption: the text follows");
    let all = v.tg.messages(OWNER);
    let at = |id| all.iter().position(|m| m.message_id == id).unwrap();
    let text = all
        .iter()
        .find(|m| m.visible_text.as_deref().is_some_and(|t| t.ends_with("The end.")))
        .unwrap();
    assert!(at(sent[0].message_id) < at(text.message_id), "the voice comes first");
    assert_eq!(v.audio.speeches(), vec![spoken(long.trim())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_synthesis_delivers_the_text_and_says_voice_failed() {
    let v = Voice::start(crate::voice::KEY, "", "").await;
    v.voice_mode("on", "Answers are spoken by").await;
    for _ in 0..3 {
        v.audio.fail_next(500, None);
    }
    v.model.push(Turn::reply("The answer, in writing."));
    v.tg.push_update(updates::text_message(OWNER, OWNER, "say it"));
    v.wait_text("could not be spoken").await;
    assert_eq!(v.audio.requests(), 3, "a 5xx is tried again twice");
    assert!(voices(&v).is_empty());
    let service = v.service();
    let shown = texts(&v.tg, OWNER);
    let n = shown.len();
    assert_eq!(shown[n - 2], "The answer, in writing.");
    assert!(
        shown[n - 1].starts_with(&format!(
            "🔈 The answer could not be spoken: {service} answered HTTP 500"
        )) && shown[n - 1].ends_with("try again later; the service is failing. It is above as text."),
        "{shown:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_auto_a_video_note_is_spoken_to_and_a_video_file_is_not() {
    let v = Voice::start(crate::voice::KEY, "", "").await;
    v.voice_mode("auto", "Answers to voice notes are spoken").await;
    v.speech("Nice wave.");
    v.audio.set_transcript("hello there");
    let clip = v.tg.add_file(b"pretend mp4 bytes".to_vec(), "");
    v.model.push(Turn::reply("Nice wave."));
    v.tg.push_update(updates::video_note_message(OWNER, OWNER, &clip, 2));
    let sent = v.wait_voices(1).await;
    assert_eq!(sent[0].visible_text.as_deref(), Some("Nice wave."));
    let text = crate::kinds::last_user_text(&v.requests(1).await[0]);
    assert!(text.contains("[video note saved: inbox/video-note-"), "{text}");
    assert!(text.contains("[video note, 0:02, transcribed]: hello there"), "{text}");

    v.model.push(Turn::reply("Nice film."));
    v.tg.push_update(updates::video_message(OWNER, OWNER, &clip, 2, "film.mp4"));
    v.wait_text("Nice film.").await;
    assert_eq!(voices(&v).len(), 1, "a video file is not the user speaking");
    let text = crate::kinds::last_user_text(&v.requests(2).await[1]);
    assert!(text.contains("[video saved: inbox/film.mp4"), "{text}");
    assert_eq!(v.audio.violations(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_message_telegram_refuses_leaves_the_answer_as_text_and_says_so() {
    let v = Voice::start(crate::voice::KEY, "", "").await;
    v.voice_mode("on", "Answers are spoken by").await;
    v.speech("Spoken, but refused.");
    v.tg.fail_next("sendVoice", 400, "Bad Request: VOICE_MESSAGES_FORBIDDEN", None);
    v.model.push(Turn::reply("Spoken, but refused."));
    v.tg.push_update(updates::text_message(OWNER, OWNER, "say it"));
    v.wait_text("did not take the answer's voice message").await;
    assert_eq!(v.tg.calls("sendVoice").len(), 1, "a refusal is not tried again");
    assert!(voices(&v).is_empty());
    assert_eq!(v.audio.speeches(), vec![spoken("Spoken, but refused.")]);
    let shown = texts(&v.tg, OWNER);
    let n = shown.len();
    assert_eq!(shown[n - 2], "Spoken, but refused.", "{shown:?}");
    assert!(
        shown[n - 1].starts_with("🔈 Telegram did not take the answer's voice message (")
            && shown[n - 1].contains("VOICE_MESSAGES_FORBIDDEN")
            && shown[n - 1].ends_with("It is above as text."),
        "{shown:?}"
    );
}
