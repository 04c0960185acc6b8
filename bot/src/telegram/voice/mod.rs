//! Voice (`[voice]`, docs/voice.md): voice notes, audio files and video notes are transcribed
//! before their prompt reaches the model; `/voice` sets a chat's language.
//!
//! - [`hearing`]: the transcription client (OpenAI's `/audio/transcriptions`, streamed from the
//!   saved file, retried where it helps);
//! - [`inbound`]: what a received note becomes in the prompt and what the chat is told (the
//!   "🎤 …" quote, or why it was not transcribed);
//! - [`command`]: the `/voice` command.
//!
//! [`Voice`] is built once at start from the config and the key's variable; the host holds it
//! (`None` without a `[voice]` section: notes are saved and named as before).

pub mod command;
pub mod hearing;
pub mod inbound;
mod texts;

use crate::config::VoiceConfig;
pub use hearing::{SttError, Transcriber};

/// The voice feature's state: its config and the transcription client.
#[derive(Debug)]
pub struct Voice {
    /// `[voice]`.
    pub config: VoiceConfig,
    /// The transcription client.
    pub stt: Transcriber,
}

impl Voice {
    /// Builds the clients from `config`; `env` reads the key variables (the process environment
    /// in the binary). A key variable unset or empty: requests go without a key (a local server),
    /// with a warning.
    pub fn new(http: reqwest::Client, config: &VoiceConfig, env: impl Fn(&str) -> Option<String>) -> Voice {
        let key = env(&config.stt_api_key_env).filter(|k| !k.trim().is_empty());
        if key.is_none() {
            tracing::warn!(
                "voice: {} (voice.stt_api_key_env) is not set; transcriptions go to {} without a key",
                config.stt_api_key_env,
                config.stt_base_url
            );
        }
        Voice {
            config: config.clone(),
            stt: Transcriber::new(http, config, key),
        }
    }
}
