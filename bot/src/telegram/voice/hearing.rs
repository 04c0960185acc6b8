//! The transcription client: `POST {stt_base_url}/audio/transcriptions` as OpenAI documents it
//! (multipart `file`, `model`, optional `language` and `prompt`, `response_format=json`; the
//! answer `{"text": …}`), which Groq, whisper.cpp's server and speaches serve too.
//!
//! The audio goes from the saved file to the socket in chunks ([`CHUNK`]): a note is never held in
//! memory. Failures are tried again where it helps ([`service`](super::service)).

use super::service::{AudioError, Service};
use crate::config::VoiceConfig;
use futures::Stream;
use std::path::Path;
use tokio::io::AsyncReadExt;

/// Bytes read from the file per chunk of the upload.
const CHUNK: usize = 64 * 1024;

/// One note to transcribe: the saved file, the name the service sees (its extension tells the
/// format) and its content type.
#[derive(Debug, Clone, Copy)]
pub struct Audio<'a> {
    /// The file in the workspace's `inbox/`.
    pub path: &'a Path,
    /// File name sent in the multipart part (`voice-….ogg`).
    pub name: &'a str,
    /// Content type of the part (`audio/ogg`, …).
    pub mime: &'a str,
}

/// The transcription service's client.
#[derive(Clone)]
pub struct Transcriber {
    http: reqwest::Client,
    url: String,
    model: String,
    key: Option<String>,
    service: Service,
}

impl std::fmt::Debug for Transcriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transcriber")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("key", &self.key.as_ref().map(|_| "[hidden]"))
            .finish()
    }
}

impl Transcriber {
    /// A client for `config`'s service; `key` from `stt_api_key_env` (`None`: no
    /// `Authorization`, for a local server).
    pub fn new(http: reqwest::Client, config: &VoiceConfig, key: Option<String>) -> Self {
        Transcriber {
            http,
            url: format!("{}/audio/transcriptions", config.stt_base_url),
            model: config.stt_model.clone(),
            key,
            service: Service::new(&config.stt_base_url, config.timeout),
        }
    }

    /// The service's host, as messages name it.
    pub fn service(&self) -> &str {
        &self.service.name
    }

    /// The transcript of `audio` (trimmed), in `language` when given (ISO-639-1), with `prompt`
    /// (the conversation so far, which helps with names and spelling) when given, trying again
    /// where it helps (see the module's docs).
    pub async fn transcribe(
        &self,
        audio: Audio<'_>,
        language: Option<&str>,
        prompt: Option<&str>,
    ) -> Result<String, AudioError> {
        self.service
            .retrying("transcription", || self.once(audio, language, prompt))
            .await
    }

    async fn once(&self, audio: Audio<'_>, language: Option<&str>, prompt: Option<&str>) -> Result<String, AudioError> {
        let file = tokio::fs::File::open(audio.path).await.map_err(AudioError::File)?;
        let len = file.metadata().await.map_err(AudioError::File)?.len();
        let body = reqwest::Body::wrap_stream(chunks(file));
        let part = reqwest::multipart::Part::stream_with_length(body, len)
            .file_name(audio.name.to_owned())
            .mime_str(audio.mime)
            .map_err(|e| self.service.unreachable(&e))?;
        let mut form = reqwest::multipart::Form::new()
            .part("file", part)
            .text("model", self.model.clone())
            .text("response_format", "json");
        if let Some(lang) = language {
            form = form.text("language", lang.to_owned());
        }
        if let Some(prompt) = prompt {
            form = form.text("prompt", prompt.to_owned());
        }
        let mut req = self.http.post(&self.url).multipart(form).timeout(self.service.timeout);
        if let Some(key) = &self.key {
            req = req.bearer_auth(key);
        }
        let resp = req.send().await.map_err(|e| self.service.failed(&e))?;
        let status = resp.status().as_u16();
        let retry_after = volcanic_provider_support::retry_after(resp.headers(), std::time::SystemTime::now());
        let text = resp.text().await.map_err(|e| self.service.failed(&e))?;
        if (200..300).contains(&status) {
            transcript(&text).map_err(|detail| self.service.bad_answer(format!("a transcript ({detail})")))
        } else {
            Err(self.service.refusal(status, retry_after, &text))
        }
    }
}

/// `file` as a stream of chunks of at most [`CHUNK`] bytes.
fn chunks(file: tokio::fs::File) -> impl Stream<Item = std::io::Result<Vec<u8>>> + Send + 'static {
    futures::stream::try_unfold(file, |mut file| async move {
        let mut buf = vec![0; CHUNK];
        let n = file.read(&mut buf).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.truncate(n);
        Ok(Some((buf, file)))
    })
}

/// The `text` of a `{"text": …}` answer, trimmed.
fn transcript(body: &str) -> Result<String, String> {
    #[derive(serde::Deserialize)]
    struct Answer {
        text: String,
    }
    serde_json::from_str::<Answer>(body)
        .map(|a| a.text.trim().to_owned())
        .map_err(|e| format!("expected {{\"text\": …}}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn answers_read_as_expected() {
        assert_eq!(transcript(r#"{"text": " call Anna \n"}"#), Ok("call Anna".to_owned()));
        assert!(transcript("call Anna").is_err());
    }
}
