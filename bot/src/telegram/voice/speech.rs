//! The speech client: `POST {tts_base_url}/audio/speech` as OpenAI documents it (JSON `model`,
//! `input`, `voice`, `response_format: "opus"`; the answer is OGG/Opus audio), which speaches and
//! other OpenAI-compatible servers serve too.
//!
//! The audio goes from the socket to a file in `<state_dir>/voice-out/` as it comes (never held
//! whole), read on the way for its length ([`ogg`](super::ogg)); the file is removed when the
//! [`Spoken`] is dropped (after `sendVoice`), and what a crash left there is removed at start.
//! Failures are tried again where it helps ([`service`](super::service)).

use super::ogg::{OpusLength, whole_seconds};
use super::service::{AudioError, Service};
use crate::config::VoiceConfig;
use futures::StreamExt;
use std::path::{Path, PathBuf};
use tokio::io::AsyncWriteExt;

/// Largest spoken answer taken (50 MB, the Bot API's upload limit for `sendVoice`).
pub const MAX_SPEECH_BYTES: u64 = 50 * 1024 * 1024;

/// A spoken answer: an OGG/Opus file and its length.
#[derive(Debug)]
pub struct Spoken {
    /// The file (removed on drop).
    pub file: tempfile::TempPath,
    /// Its length in whole seconds (rounded up, at least 1), as `sendVoice` takes it.
    pub seconds: u32,
    /// Its size in bytes.
    pub bytes: u64,
}

/// The speech service's client.
#[derive(Clone)]
pub struct Speaker {
    http: reqwest::Client,
    url: String,
    model: String,
    voice: String,
    key: Option<String>,
    service: Service,
    /// `<state_dir>/voice-out`.
    dir: PathBuf,
}

impl std::fmt::Debug for Speaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Speaker")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("voice", &self.voice)
            .field("key", &self.key.as_ref().map(|_| "[hidden]"))
            .finish()
    }
}

impl Speaker {
    /// A client for `config`'s speech service, writing its audio under `state_dir`; `key` from
    /// `tts_api_key_env` (`None`: no `Authorization`, for a local server). Removes the files a
    /// crash left behind.
    pub fn new(http: reqwest::Client, config: &VoiceConfig, key: Option<String>, state_dir: &Path) -> Self {
        let dir = state_dir.join("voice-out");
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let _ = std::fs::remove_file(e.path());
            }
        }
        Speaker {
            http,
            url: format!("{}/audio/speech", config.tts_base_url),
            model: config.tts_model.clone(),
            voice: config.tts_voice.clone(),
            key,
            service: Service::new(&config.tts_base_url, config.timeout),
            dir,
        }
    }

    /// The service's host, as messages name it.
    pub fn service(&self) -> &str {
        &self.service.name
    }

    /// `text` spoken (at most 4096 characters, the API's limit; `[voice] tts_max_chars` keeps
    /// answers under it), tried again where it helps.
    pub async fn speak(&self, text: &str) -> Result<Spoken, AudioError> {
        self.service.retrying("speech", || self.once(text)).await
    }

    async fn once(&self, text: &str) -> Result<Spoken, AudioError> {
        let body = serde_json::json!({
            "model": self.model,
            "input": text,
            "voice": self.voice,
            "response_format": "opus",
        });
        let mut req = self.http.post(&self.url).json(&body).timeout(self.service.timeout);
        if let Some(key) = &self.key {
            req = req.bearer_auth(key);
        }
        let resp = req.send().await.map_err(|e| self.service.failed(&e))?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let retry_after = volcanic_provider_support::retry_after(resp.headers(), std::time::SystemTime::now());
            let text = resp.text().await.map_err(|e| self.service.failed(&e))?;
            return Err(self.service.refusal(status, retry_after, &text));
        }
        tokio::fs::create_dir_all(&self.dir).await.map_err(AudioError::File)?;
        let (file, path) = tempfile::Builder::new()
            .prefix("answer-")
            .suffix(".ogg")
            .tempfile_in(&self.dir)
            .map_err(AudioError::File)?
            .into_parts();
        let mut file = tokio::fs::File::from_std(file);
        let mut length = OpusLength::default();
        let mut bytes = 0u64;
        let mut body = resp.bytes_stream();
        while let Some(piece) = body.next().await {
            let piece = piece.map_err(|e| self.service.failed(&e))?;
            bytes += piece.len() as u64;
            if bytes > MAX_SPEECH_BYTES {
                return Err(self.service.bad_answer(format!("audio under {MAX_SPEECH_BYTES} bytes")));
            }
            length.feed(&piece).map_err(|e| self.not_opus(&e))?;
            file.write_all(&piece).await.map_err(AudioError::File)?;
        }
        file.flush().await.map_err(AudioError::File)?;
        let seconds = length.finish().map_err(|e| self.not_opus(&e))?;
        Ok(Spoken {
            file: path,
            seconds: whole_seconds(seconds),
            bytes,
        })
    }

    fn not_opus(&self, e: &super::ogg::NotOpus) -> AudioError {
        self.service.bad_answer(format!("OGG/Opus audio ({e})"))
    }
}
