//! Voice (`[voice]`, docs/voice.md): voice notes, audio files and video notes are transcribed
//! before their prompt reaches the model; answers can be spoken; `/voice` sets a chat's
//! language and whether its answers are spoken.
//!
//! - [`hearing`]: the transcription client (OpenAI's `/audio/transcriptions`, streamed from the
//!   saved file, retried where it helps);
//! - [`speech`]: the speech client (OpenAI's `/audio/speech`, streamed to a file, its length read
//!   on the way by [`ogg`]); [`speakable`]: which answers are spoken, and their words;
//! - [`answer`]: an answer delivered as a voice message, journaled for exactly once;
//! - [`service`]: what both clients share (errors, retries);
//! - [`inbound`]: what a received note becomes in the prompt and what the chat is told (the
//!   "🎤 …" quote, or why it was not transcribed);
//! - [`command`]: the `/voice` command.
//!
//! [`Voice`] is built once at start from the config and the key's variable; the host holds it
//! (`None` without a `[voice]` section: notes are saved and named as before).

pub mod answer;
pub mod command;
pub mod hearing;
pub mod inbound;
pub mod ogg;
pub mod service;
pub mod speakable;
pub mod speech;
mod texts;

use crate::config::VoiceConfig;
pub use answer::{Speaking, Speech};
pub use hearing::Transcriber;
pub use service::AudioError;
pub use speech::Speaker;

/// The voice feature's state: its config and the clients of both services.
#[derive(Debug)]
pub struct Voice {
    /// `[voice]`.
    pub config: VoiceConfig,
    /// The transcription client.
    pub stt: Transcriber,
    /// The speech client.
    pub tts: Speaker,
}

impl Voice {
    /// Builds the clients from `config`; `env` reads the key variables (the process environment
    /// in the binary); spoken answers are written under `state_dir` until sent. A key variable
    /// unset or empty: requests go without a key (a local server), with a warning.
    pub fn new(
        http: reqwest::Client,
        config: &VoiceConfig,
        env: impl Fn(&str) -> Option<String>,
        state_dir: &std::path::Path,
    ) -> Voice {
        let key = |name: &str, side: &str, url: &str| {
            let key = env(name).filter(|k| !k.trim().is_empty());
            if key.is_none() {
                tracing::warn!(
                    "voice: {name} (voice.{side}_api_key_env) is not set; requests go to {url} without a key"
                );
            }
            key
        };
        let stt_key = key(&config.stt_api_key_env, "stt", &config.stt_base_url);
        let tts_key = key(&config.tts_api_key_env, "tts", &config.tts_base_url);
        Voice {
            config: config.clone(),
            stt: Transcriber::new(http.clone(), config, stt_key),
            tts: Speaker::new(http, config, tts_key, state_dir),
        }
    }
}
