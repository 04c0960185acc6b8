//! `sendVoice`: an OGG/Opus voice message, checked as Telegram's clients play it (a valid Ogg
//! stream with `OpusHead`; the [`audio`](crate::audio) reader), with its `duration` and caption.

use super::ApiError;
use super::messages::{caption_param, input_file, new_message, set_text, store};
use super::params::Params;
use super::state::State;
use serde_json::{Value, json};

/// `sendVoice`. The upload (or a known file id's bytes) must be OGG/Opus; the message records the
/// `duration` the bot gave and, under `voice.measured_seconds` (the double's own field, for
/// tests), the length the file really has.
pub(crate) fn send_voice(state: &mut State, params: &Params) -> Result<Value, ApiError> {
    let chat_id = params.chat_id()?;
    state.chat(chat_id)?;
    let duration = params.int("duration")?;
    if duration.is_some_and(|d| d < 0) {
        return Err(ApiError::bad_request("invalid duration specified"));
    }
    let (file, _) = input_file(state, params, "voice")?;
    let info =
        crate::audio::parse_opus(&file.bytes).map_err(|e| ApiError::bad_request(format!("VOICE_INVALID: {e}")))?;
    let caption = caption_param(params)?;
    let mut message = new_message(state, chat_id, params)?;
    let mut voice = json!({
        "file_id": file.file_id,
        "file_unique_id": file.file_unique_id,
        "file_size": file.size(),
        "mime_type": "audio/ogg",
        "duration": duration.unwrap_or(0),
        "measured_seconds": info.seconds,
    });
    if duration.is_none() {
        voice["duration"] = json!(info.seconds.round() as i64);
    }
    message.insert("voice".into(), voice);
    if let Some(caption) = &caption {
        set_text(&mut message, "caption", caption);
    }
    store(state, chat_id, message, caption, Some(file.file_id))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::super::test_support::{Part, call_multipart, server};
    use pretty_assertions::assert_eq;

    const CHAT: i64 = 42;

    #[tokio::test(flavor = "multi_thread")]
    async fn a_voice_upload_must_be_ogg_opus_and_keeps_its_duration_and_caption() {
        let server = server().await;
        server.add_chat(CHAT);
        let dir = std::env::temp_dir().join(format!("testkit-send-voice-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (path, secs) =
            crate::audio::speak::spoken_note("hello there", &dir, "hello").unwrap_or_else(|e| panic!("{e}"));
        let ogg = std::fs::read(path).unwrap();
        let chat = CHAT.to_string();
        let duration = secs.to_string();
        let (status, answer) = call_multipart(
            &server,
            "sendVoice",
            &[
                Part::Text("chat_id", &chat),
                Part::Text("duration", &duration),
                Part::Text("caption", "Hello there"),
                Part::File("voice", "answer.ogg", &ogg),
            ],
        )
        .await;
        assert_eq!(status, 200, "{answer}");
        let voice = &answer["result"]["voice"];
        assert_eq!(voice["duration"], secs);
        assert_eq!(voice["file_size"], ogg.len());
        let measured = voice["measured_seconds"].as_f64().unwrap();
        assert!((measured.ceil() as u32) == secs, "{voice}");
        assert_eq!(answer["result"]["caption"], "Hello there");
        let shown = server.messages(CHAT);
        assert_eq!(shown.len(), 1);
        assert_eq!(server.file_bytes(shown[0].file_id.as_deref().unwrap()).unwrap(), ogg);

        let (status, answer) = call_multipart(
            &server,
            "sendVoice",
            &[
                Part::Text("chat_id", &chat),
                Part::File("voice", "x.ogg", b"ID3 an mp3, not ogg"),
            ],
        )
        .await;
        assert_eq!(status, 400);
        assert!(
            answer["description"].as_str().unwrap().contains("VOICE_INVALID"),
            "{answer}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
