//! A strict double of OpenAI's audio API on `127.0.0.1`: `POST /v1/audio/transcriptions` and
//! `POST /v1/audio/speech`, as OpenAI documents them (the shapes Groq, whisper.cpp's server and
//! speaches serve too).
//!
//! Transcriptions: `Authorization: Bearer <key>` when the double has a key (else 401
//! `invalid_api_key`); `multipart/form-data` with `file` (a file name with one of OpenAI's
//! extensions and a content type) and `model`, optionally `language` (ISO-639-1), `prompt`,
//! `response_format` (`json`, `text`, `verbose_json`), `temperature`; any other field is
//! refused (400, as OpenAI refuses unknown arguments); files over 25 MB get 413. An `.ogg` /
//! `.opus` file must be valid OGG/Opus ([`ogg::parse_opus`]): its duration is recorded. The
//! answer carries the transcript the test set for that file
//! ([`AudioServer::set_transcript_for`]), else for any ([`AudioServer::set_transcript`]).
//!
//! Speech: JSON `model`, `input` (1–4096 characters), `voice`, `response_format` (only `opus`
//! is served: the test gives real OGG/Opus bytes with [`AudioServer::set_speech`]), optional
//! `instructions`, `speed`; the answer is `audio/ogg`.
//!
//! Faults: [`fail_next`](AudioServer::fail_next) queues an HTTP error (with `retry-after`) for
//! the next request of either endpoint; [`set_delay`](AudioServer::set_delay) holds every answer
//! (the service's own time). Every request that broke a rule is kept in
//! [`violations`](AudioServer::violations): a test asserts there were none.
#![warn(missing_docs)]

pub mod ogg;
pub mod speak;
mod transcriptions;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use ogg::{OggError, OpusInfo, parse_opus};
pub use transcriptions::Transcription;

/// Largest upload OpenAI transcribes (25 MB).
pub const MAX_UPLOAD: usize = 25 * 1024 * 1024;

/// One speech request as received.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeechRequest {
    /// `model`.
    pub model: String,
    /// `input`: the text to speak.
    pub input: String,
    /// `voice`.
    pub voice: String,
    /// `response_format`.
    pub response_format: String,
}

/// A queued HTTP error.
#[derive(Debug, Clone)]
struct Failure {
    status: u16,
    retry_after: Option<u64>,
}

#[derive(Debug, Default)]
struct State {
    transcript: String,
    /// Transcripts by the uploaded file's bytes (before `transcript`).
    by_file: Vec<(Vec<u8>, String)>,
    speech: Vec<u8>,
    failures: VecDeque<Failure>,
    delay: Duration,
    transcriptions: Vec<Transcription>,
    speeches: Vec<SpeechRequest>,
    violations: Vec<String>,
    requests: usize,
}

struct Shared {
    key: Option<String>,
    state: Mutex<State>,
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a broken rule and answers 400 with OpenAI's error shape.
    fn refuse(&self, what: String) -> Response {
        self.state().violations.push(what.clone());
        error(StatusCode::BAD_REQUEST, &what, "invalid_request_error")
    }

    /// The key check, the queued fault and the delay every endpoint goes through; `Some`: the
    /// answer instead of the endpoint's.
    async fn gate(&self, headers: &HeaderMap) -> Option<Response> {
        let (failure, delay) = {
            let mut s = self.state();
            s.requests += 1;
            (s.failures.pop_front(), s.delay)
        };
        tokio::time::sleep(delay).await;
        if let Some(key) = &self.key {
            let given = headers.get("authorization").and_then(|v| v.to_str().ok());
            if given != Some(&format!("Bearer {key}")) {
                return Some(error(
                    StatusCode::UNAUTHORIZED,
                    "Incorrect API key provided.",
                    "invalid_api_key",
                ));
            }
        }
        let failure = failure?;
        let status = StatusCode::from_u16(failure.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = error(status, "The double was told to fail this request.", "server_error");
        if let Some(secs) = failure.retry_after
            && let Ok(v) = secs.to_string().parse()
        {
            resp.headers_mut().insert("retry-after", v);
        }
        Some(resp)
    }
}

/// OpenAI's error body.
fn error(status: StatusCode, message: &str, code: &str) -> Response {
    let body = serde_json::json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": code}});
    (status, axum::Json(body)).into_response()
}

struct ServeTask(JoinHandle<()>);

impl Drop for ServeTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The audio API double. Cloning shares it; dropping the last clone stops it.
#[derive(Clone)]
pub struct AudioServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    _task: Arc<ServeTask>,
}

impl AudioServer {
    /// Binds `127.0.0.1:0`; requests must carry `Bearer <key>` when `key` is given.
    pub async fn start(key: Option<&str>) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            key: key.map(str::to_owned),
            state: Mutex::new(State::default()),
        });
        let app = Router::new()
            .route("/v1/audio/transcriptions", axum::routing::post(transcriptions::handle))
            .route("/v1/audio/speech", axum::routing::post(speech))
            .with_state(shared.clone())
            .layer(axum::extract::DefaultBodyLimit::max(MAX_UPLOAD * 2));
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::warn!(%error, "volcanic-testkit audio server stopped");
            }
        });
        Ok(AudioServer {
            shared,
            addr,
            _task: Arc::new(ServeTask(task)),
        })
    }

    /// The base URL clients append `/audio/...` to: `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// What the next transcriptions answer.
    pub fn set_transcript(&self, text: &str) {
        text.clone_into(&mut self.shared.state().transcript);
    }

    /// What a transcription of exactly `file` answers (before [`set_transcript`](Self::set_transcript)'s
    /// text): several notes, each heard as itself.
    pub fn set_transcript_for(&self, file: &[u8], text: &str) {
        self.shared.state().by_file.push((file.to_vec(), text.to_owned()));
    }

    /// The OGG/Opus bytes speech answers with.
    pub fn set_speech(&self, ogg: Vec<u8>) {
        self.shared.state().speech = ogg;
    }

    /// The next request (either endpoint) gets HTTP `status`, with `retry-after` when given.
    pub fn fail_next(&self, status: u16, retry_after: Option<u64>) {
        self.shared.state().failures.push_back(Failure { status, retry_after });
    }

    /// Every answer waits this long first (the service's own time).
    pub fn set_delay(&self, delay: Duration) {
        self.shared.state().delay = delay;
    }

    /// The transcriptions served, in order.
    pub fn transcriptions(&self) -> Vec<Transcription> {
        self.shared.state().transcriptions.clone()
    }

    /// The speech requests served, in order.
    pub fn speeches(&self) -> Vec<SpeechRequest> {
        self.shared.state().speeches.clone()
    }

    /// Requests received at either endpoint (served, refused or failed on purpose).
    pub fn requests(&self) -> usize {
        self.shared.state().requests
    }

    /// What broke the API's rules (empty when every request was well formed).
    pub fn violations(&self) -> Vec<String> {
        self.shared.state().violations.clone()
    }
}

/// `POST /v1/audio/speech`.
async fn speech(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Some(resp) = shared.gate(&headers).await {
        return resp;
    }
    if !headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
    {
        return shared.refuse("speech: the body must be application/json".into());
    }
    let Ok(serde_json::Value::Object(req)) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return shared.refuse("speech: the body is not a JSON object".into());
    };
    for key in req.keys() {
        if !["model", "input", "voice", "response_format", "instructions", "speed"].contains(&key.as_str()) {
            return shared.refuse(format!("speech: unrecognized request argument supplied: {key}"));
        }
    }
    let text = |k: &str| req.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_owned();
    let request = SpeechRequest {
        model: text("model"),
        input: text("input"),
        voice: text("voice"),
        response_format: req
            .get("response_format")
            .and_then(|v| v.as_str())
            .unwrap_or("mp3")
            .to_owned(),
    };
    if request.model.is_empty() || request.voice.is_empty() {
        return shared.refuse("speech: `model` and `voice` are required".into());
    }
    let chars = request.input.chars().count();
    if !(1..=4096).contains(&chars) {
        return shared.refuse(format!("speech: `input` has {chars} characters; 1 to 4096 allowed"));
    }
    if request.response_format != "opus" {
        return shared.refuse(format!(
            "speech: response_format `{}`: this double serves opus only",
            request.response_format
        ));
    }
    let audio = {
        let mut s = shared.state();
        s.speeches.push(request);
        s.speech.clone()
    };
    Response::builder()
        .header("content-type", "audio/ogg")
        .body(Body::from(audio))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn client() -> reqwest::Client {
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::new()
    }

    async fn speak(server: &AudioServer, key: &str, body: serde_json::Value) -> (u16, Vec<u8>) {
        let resp = client()
            .post(format!("{}/audio/speech", server.base_url()))
            .bearer_auth(key)
            .json(&body)
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), resp.bytes().await.unwrap().to_vec())
    }

    #[tokio::test]
    async fn speech_answers_the_given_audio_to_well_formed_requests_only() {
        let server = AudioServer::start(Some("k")).await.unwrap();
        server.set_speech(b"OggS audio".to_vec());
        let good = json!({"model": "gpt-4o-mini-tts", "input": "Hello", "voice": "alloy", "response_format": "opus"});
        assert_eq!(speak(&server, "k", good.clone()).await, (200, b"OggS audio".to_vec()));
        assert_eq!(speak(&server, "wrong", good.clone()).await.0, 401);
        assert!(server.violations().is_empty());
        let mp3 = json!({"model": "m", "input": "Hello", "voice": "alloy"});
        assert_eq!(speak(&server, "k", mp3).await.0, 400);
        let extra = json!({"model": "m", "input": "Hello", "voice": "alloy", "response_format": "opus", "pitch": 2});
        assert_eq!(speak(&server, "k", extra).await.0, 400);
        assert_eq!(server.violations().len(), 2, "{:?}", server.violations());
        server.fail_next(429, Some(7));
        let resp = client()
            .post(format!("{}/audio/speech", server.base_url()))
            .bearer_auth("k")
            .json(&good)
            .send()
            .await
            .unwrap();
        assert_eq!(
            (resp.status().as_u16(), resp.headers()["retry-after"].to_str().unwrap()),
            (429, "7")
        );
        assert_eq!(
            server.speeches(),
            vec![SpeechRequest {
                model: "gpt-4o-mini-tts".into(),
                input: "Hello".into(),
                voice: "alloy".into(),
                response_format: "opus".into()
            }]
        );
        assert_eq!(server.requests(), 5);
    }
}
