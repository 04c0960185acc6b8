//! `POST /v1/audio/transcriptions`: the multipart request checked field by field.

use super::{MAX_UPLOAD, OpusInfo, Shared, parse_opus};
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// File extensions OpenAI transcribes.
const EXTENSIONS: &[&str] = &[
    "flac", "mp3", "mp4", "mpeg", "mpga", "m4a", "ogg", "opus", "wav", "webm",
];
/// Fields OpenAI takes besides `file`.
const FIELDS: &[&str] = &["model", "language", "prompt", "response_format", "temperature"];

/// One transcription request as received (and answered).
#[derive(Debug, Clone, PartialEq)]
pub struct Transcription {
    /// `model`.
    pub model: String,
    /// `language`, when given.
    pub language: Option<String>,
    /// `prompt`, when given.
    pub prompt: Option<String>,
    /// `response_format` (default `json`).
    pub response_format: String,
    /// The file part's name.
    pub file_name: String,
    /// The file part's content type.
    pub content_type: String,
    /// Bytes uploaded.
    pub size: usize,
    /// What the OGG/Opus file holds (`None` for other formats).
    pub opus: Option<OpusInfo>,
    /// What the double answered.
    pub transcript: String,
    /// When the request reached the handler (its head read, before the body and any delay).
    pub received: tokio::time::Instant,
    /// When the answer left the handler.
    pub answered: tokio::time::Instant,
}

pub(super) async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let received = tokio::time::Instant::now();
    if let Some(resp) = shared.gate(req.headers()).await {
        return resp;
    }
    let is_multipart = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data; boundary="));
    if !is_multipart {
        return shared.refuse("transcriptions: the body must be multipart/form-data with a boundary".into());
    }
    let mut form = match Multipart::from_request(req, &()).await {
        Ok(f) => f,
        Err(e) => return shared.refuse(format!("transcriptions: unreadable multipart body: {e}")),
    };
    let mut fields = std::collections::BTreeMap::new();
    let mut file = None;
    loop {
        let field = match form.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return shared.refuse(format!("transcriptions: broken multipart body: {e}")),
        };
        let name = field.name().unwrap_or_default().to_owned();
        if name == "file" {
            let file_name = field.file_name().unwrap_or_default().to_owned();
            let content_type = field.content_type().unwrap_or_default().to_owned();
            match field.bytes().await {
                Ok(b) => file = Some((file_name, content_type, b)),
                Err(e) => return shared.refuse(format!("transcriptions: file part: {e}")),
            }
        } else if FIELDS.contains(&name.as_str()) {
            match field.text().await {
                Ok(t) => {
                    fields.insert(name, t);
                }
                Err(e) => return shared.refuse(format!("transcriptions: field {name}: {e}")),
            }
        } else {
            return shared.refuse(format!(
                "transcriptions: unrecognized request argument supplied: {name}"
            ));
        }
    }
    let Some((file_name, content_type, bytes)) = file else {
        return shared.refuse("transcriptions: the `file` part is missing".into());
    };
    let Some(model) = fields.remove("model").filter(|m| !m.is_empty()) else {
        return shared.refuse("transcriptions: `model` is missing".into());
    };
    if let Some(problem) = check_file(&file_name, &content_type) {
        return shared.refuse(format!("transcriptions: {problem}"));
    }
    if bytes.len() > MAX_UPLOAD {
        return super::error(
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            "Maximum content size limit (26214400) exceeded.",
            "file_too_large",
        );
    }
    let language = fields.remove("language");
    if let Some(l) = language
        .as_deref()
        .filter(|l| l.len() != 2 || !l.bytes().all(|b| b.is_ascii_lowercase()))
    {
        return shared.refuse(format!("transcriptions: language `{l}` is not ISO-639-1"));
    }
    let response_format = fields.remove("response_format").unwrap_or_else(|| "json".into());
    let opus = if file_name.ends_with(".ogg") || file_name.ends_with(".opus") {
        match parse_opus(&bytes) {
            Ok(info) => Some(info),
            Err(e) => return shared.refuse(format!("transcriptions: {file_name}: {e}")),
        }
    } else {
        None
    };
    let transcript = {
        let s = shared.state();
        let own = s.by_file.iter().find(|(f, _)| f.as_slice() == bytes.as_ref());
        own.map_or_else(|| s.transcript.clone(), |(_, t)| t.clone())
    };
    let answer = match response_format.as_str() {
        "json" => axum::Json(serde_json::json!({"text": transcript})).into_response(),
        "verbose_json" => axum::Json(serde_json::json!({
            "task": "transcribe", "language": language.as_deref().unwrap_or("english"),
            "duration": opus.as_ref().map_or(0.0, |o| o.seconds), "text": transcript, "segments": []
        }))
        .into_response(),
        "text" => transcript.clone().into_response(),
        other => return shared.refuse(format!("transcriptions: response_format `{other}` is not served")),
    };
    shared.state().transcriptions.push(Transcription {
        model,
        language,
        prompt: fields.remove("prompt"),
        response_format,
        file_name,
        content_type,
        size: bytes.len(),
        opus,
        transcript,
        received,
        answered: tokio::time::Instant::now(),
    });
    answer
}

/// What is wrong with the file part's name or type, if anything.
fn check_file(name: &str, content_type: &str) -> Option<String> {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    if !ext.as_deref().is_some_and(|e| EXTENSIONS.contains(&e)) {
        return Some(format!(
            "file name `{name}`: the extension must be one of {EXTENSIONS:?} (OpenAI reads the format from it)"
        ));
    }
    if content_type.is_empty() || !content_type.contains('/') {
        return Some(format!("file part `{name}` has no content type"));
    }
    None
}
