//! The transcription client: `POST {stt_base_url}/audio/transcriptions` as OpenAI documents it
//! (multipart `file`, `model`, optional `language` and `prompt`, `response_format=json`; the
//! answer `{"text": …}`), which Groq, whisper.cpp's server and speaches serve too.
//!
//! The audio goes from the saved file to the socket in chunks ([`CHUNK`]): a note is never held in
//! memory. Rate limits (429, waiting its `retry-after` up to [`MAX_RETRY_AFTER`]), server errors
//! (5xx) and failed connections are tried again, [`RETRIES`] times at most; a refused key (401,
//! 403), a refused file (413, 400, 415) and a timeout are not.

use crate::config::VoiceConfig;
use futures::Stream;
use std::path::Path;
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// Bytes read from the file per chunk of the upload.
const CHUNK: usize = 64 * 1024;
/// Further attempts after a failure worth trying again.
const RETRIES: u32 = 2;
/// A 429 asking to wait longer than this is reported rather than waited out (a note waits in the
/// chat's line meanwhile).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);
/// First wait after a 5xx or a failed connection; doubled each time.
const BACKOFF: Duration = Duration::from_millis(500);

/// Why a note was not transcribed. `Display` is the reason the model gets, naming the service.
#[derive(Debug, thiserror::Error)]
pub enum SttError {
    /// 401 or 403: the key is missing, wrong or lacks access.
    #[error("{service} refused the key (HTTP {status})")]
    Unauthorized {
        /// The service's host.
        service: String,
        /// 401 or 403.
        status: u16,
    },
    /// 413: the service takes smaller files.
    #[error("{service} refused the file as too large (HTTP 413)")]
    TooLarge {
        /// The service's host.
        service: String,
    },
    /// 429, still after the retries, or asking for a longer wait than [`MAX_RETRY_AFTER`].
    #[error("{service} is rate-limiting the bot (HTTP 429{})", retry_after.map(|d| format!(", retry after {} s", d.as_secs())).unwrap_or_default())]
    RateLimited {
        /// The service's host.
        service: String,
        /// Its `retry-after` (or `retry-after-ms`).
        retry_after: Option<Duration>,
    },
    /// Any other status (5xx after the retries, 400, 404, 415, …), with the start of its body.
    #[error("{service} answered HTTP {status}: {body}")]
    Status {
        /// The service's host.
        service: String,
        /// HTTP status.
        status: u16,
        /// The start of the body (what the service said).
        body: String,
    },
    /// No answer within `timeout_secs`.
    #[error("{service} did not answer within {secs} s")]
    Timeout {
        /// The service's host.
        service: String,
        /// `[voice] timeout_secs`.
        secs: u64,
    },
    /// No connection, or it broke.
    #[error("{service} could not be reached ({detail})")]
    Unreachable {
        /// The service's host.
        service: String,
        /// reqwest's message.
        detail: String,
    },
    /// A 2xx whose body is not `{"text": …}`.
    #[error("{service} answered without a transcript ({detail})")]
    BadAnswer {
        /// The service's host.
        service: String,
        /// What was wrong.
        detail: String,
    },
    /// The saved file could not be read.
    #[error("the saved note could not be read ({0})")]
    Read(std::io::Error),
}

impl SttError {
    /// How long to wait before trying again after attempt `attempt` (0-based), or `None` when
    /// trying again would not help.
    fn retry_in(&self, attempt: u32) -> Option<Duration> {
        match self {
            SttError::RateLimited { retry_after, .. } => {
                let wait = retry_after.unwrap_or(BACKOFF * 2u32.pow(attempt));
                (wait <= MAX_RETRY_AFTER).then_some(wait)
            }
            SttError::Status { status, .. } if *status >= 500 => Some(BACKOFF * 2u32.pow(attempt)),
            SttError::Unreachable { .. } => Some(BACKOFF * 2u32.pow(attempt)),
            SttError::Status { .. }
            | SttError::Unauthorized { .. }
            | SttError::TooLarge { .. }
            | SttError::Timeout { .. }
            | SttError::BadAnswer { .. }
            | SttError::Read(_) => None,
        }
    }
}

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
    service: String,
    timeout: Duration,
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
            service: service_name(&config.stt_base_url),
            timeout: config.timeout,
        }
    }

    /// The service's host, as messages name it.
    pub fn service(&self) -> &str {
        &self.service
    }

    /// The transcript of `audio` (trimmed), in `language` when given (ISO-639-1), trying again
    /// where it helps (see the module's docs).
    pub async fn transcribe(&self, audio: Audio<'_>, language: Option<&str>) -> Result<String, SttError> {
        let mut attempt = 0;
        loop {
            match self.once(audio, language).await {
                Err(e) if attempt < RETRIES => match e.retry_in(attempt) {
                    Some(wait) => {
                        tracing::info!(service = %self.service, "transcription failed ({e}); trying again in {wait:?}");
                        tokio::time::sleep(wait).await;
                        attempt += 1;
                    }
                    None => return Err(e),
                },
                done => return done,
            }
        }
    }

    async fn once(&self, audio: Audio<'_>, language: Option<&str>) -> Result<String, SttError> {
        let file = tokio::fs::File::open(audio.path).await.map_err(SttError::Read)?;
        let len = file.metadata().await.map_err(SttError::Read)?.len();
        let body = reqwest::Body::wrap_stream(chunks(file));
        let part = reqwest::multipart::Part::stream_with_length(body, len)
            .file_name(audio.name.to_owned())
            .mime_str(audio.mime)
            .map_err(|e| self.unreachable(&e))?;
        let mut form = reqwest::multipart::Form::new()
            .part("file", part)
            .text("model", self.model.clone())
            .text("response_format", "json");
        if let Some(lang) = language {
            form = form.text("language", lang.to_owned());
        }
        let mut req = self.http.post(&self.url).multipart(form).timeout(self.timeout);
        if let Some(key) = &self.key {
            req = req.bearer_auth(key);
        }
        let resp = req.send().await.map_err(|e| self.failed(&e))?;
        let status = resp.status().as_u16();
        let retry_after = volcanic_provider_support::retry_after(resp.headers(), std::time::SystemTime::now());
        let text = resp.text().await.map_err(|e| self.failed(&e))?;
        let service = self.service.clone();
        match status {
            200..=299 => transcript(&text).map_err(|detail| SttError::BadAnswer { service, detail }),
            401 | 403 => Err(SttError::Unauthorized { service, status }),
            413 => Err(SttError::TooLarge { service }),
            429 => Err(SttError::RateLimited { service, retry_after }),
            _ => Err(SttError::Status {
                service,
                status,
                body: text.chars().take(200).collect(),
            }),
        }
    }

    fn failed(&self, e: &reqwest::Error) -> SttError {
        if e.is_timeout() {
            SttError::Timeout {
                service: self.service.clone(),
                secs: self.timeout.as_secs(),
            }
        } else {
            self.unreachable(e)
        }
    }

    fn unreachable(&self, e: &dyn std::error::Error) -> SttError {
        SttError::Unreachable {
            service: self.service.clone(),
            detail: e.to_string(),
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

/// The host of a base URL (`api.openai.com`), or the URL when it has none.
pub fn service_name(base_url: &str) -> String {
    url::Url::parse(base_url)
        .ok()
        .and_then(|u| {
            u.host_str()
                .map(|h| u.port().map_or_else(|| h.to_owned(), |p| format!("{h}:{p}")))
        })
        .unwrap_or_else(|| base_url.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn service() -> String {
        "api.example".into()
    }

    #[test]
    fn what_is_tried_again_and_after_how_long() {
        let s = |status| SttError::Status {
            service: service(),
            status,
            body: String::new(),
        };
        let limited = |retry_after| SttError::RateLimited {
            service: service(),
            retry_after,
        };
        assert_eq!(s(503).retry_in(0), Some(BACKOFF));
        assert_eq!(s(502).retry_in(1), Some(BACKOFF * 2));
        assert_eq!(s(400).retry_in(0), None);
        assert_eq!(
            limited(Some(Duration::from_secs(3))).retry_in(0),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            limited(Some(Duration::from_secs(3600))).retry_in(0),
            None,
            "too long a wait is reported"
        );
        assert_eq!(limited(None).retry_in(1), Some(BACKOFF * 2));
        let key = SttError::Unauthorized {
            service: service(),
            status: 401,
        };
        assert_eq!(key.retry_in(0), None);
        let slow = SttError::Timeout {
            service: service(),
            secs: 120,
        };
        assert_eq!(slow.retry_in(0), None);
    }

    #[test]
    fn answers_and_services_read_as_expected() {
        assert_eq!(transcript(r#"{"text": " call Anna \n"}"#), Ok("call Anna".to_owned()));
        assert!(transcript("call Anna").is_err());
        assert_eq!(service_name("https://api.openai.com/v1"), "api.openai.com");
        assert_eq!(service_name("http://127.0.0.1:8000/v1"), "127.0.0.1:8000");
    }
}
