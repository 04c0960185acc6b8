//! The axum side: paths (`/bot<token>/<method>`, `/file/bot<token>/<path>`), parameters from
//! the query string and a JSON, form or multipart body, the token and fault gates, dispatch,
//! recording, and Telegram's response shapes.

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRequest, Multipart, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::methods::{self, Method};
use super::params::{Params, form_pairs, percent_decode};
use super::polling;
use super::state::Shared;
use super::{ApiCall, ApiError, UploadedFile};

/// Largest request body read (uploads above 50 MB get 413 from the method).
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// Every path goes through one handler, which parses the path itself.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .fallback(route)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(shared)
}

async fn route(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let arrived = Instant::now();
    let path = request.uri().path().to_owned();
    if let Some(rest) = path.strip_prefix("/file/bot") {
        return download(&shared, rest);
    }
    let Some(rest) = path.strip_prefix("/bot") else {
        return error_response(&ApiError::new(404, "Not Found"));
    };
    let (token, method) = rest.split_once('/').unwrap_or((rest, ""));
    let (token, method) = (token.to_owned(), method.to_ascii_lowercase());
    if method == "getupdates" {
        // A long poll ends with its client.
        return handle(&shared, &token, method, request, arrived).await;
    }
    // In a task of its own: a call the server has whole is applied (and recorded) even when its
    // client goes away meanwhile, as Telegram does; only its answer is lost.
    let handled = tokio::spawn(async move { handle(&shared, &token, method, request, arrived).await });
    handled
        .await
        .unwrap_or_else(|_| error_response(&ApiError::new(500, "Internal Server Error")))
}

async fn handle(shared: &Shared, token: &str, method: String, request: Request, arrived: Instant) -> Response {
    let (params, outcome) = match read_params(request).await {
        Ok(params) => {
            let outcome = serve(shared, token, &method, &params, arrived).await;
            (params, outcome)
        }
        Err(error) => (Params::default(), Err(error)),
    };
    let response = match &outcome {
        Ok(result) if method == "getupdates" => super::raw::updates_response(result),
        Ok(result) => (StatusCode::OK, Json(json!({"ok": true, "result": result}))).into_response(),
        Err(error) => error_response(error),
    };
    let call = ApiCall {
        method,
        params: params.to_value(),
        files: params.files,
        at: arrived,
        outcome,
    };
    shared.lock().calls.push(call);
    shared.notify();
    response
}

async fn serve(
    shared: &Shared,
    token: &str,
    method: &str,
    params: &Params,
    arrived: Instant,
) -> Result<Value, ApiError> {
    let authorised = shared.lock().token == token;
    if !authorised {
        return Err(ApiError::new(401, "Unauthorized"));
    }
    match methods::lookup(method) {
        None => Err(ApiError::new(404, "Not Found: method not found")),
        Some(Method::GetUpdates) => polling::get_updates(shared, params, arrived).await,
        Some(Method::Sync(run)) => {
            super::hold::pass(shared, method, params, arrived).await?;
            let mut state = shared.lock();
            match state.faults.gate(method, params.chat_scope(), arrived) {
                Some(error) => Err(error),
                None => run(&mut state, params),
            }
        }
    }
}

fn error_response(error: &ApiError) -> Response {
    let status = StatusCode::from_u16(error.error_code).unwrap_or(StatusCode::BAD_REQUEST);
    (status, Json(error.to_json())).into_response()
}

/// Query string, then the body (multipart, JSON, or form-urlencoded) on top.
async fn read_params(request: Request) -> Result<Params, ApiError> {
    let mut params = Params::default();
    for (name, value) in form_pairs(request.uri().query().unwrap_or("")) {
        params.insert_text(name, value);
    }
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if content_type.starts_with("multipart/form-data") {
        read_multipart(request, &mut params).await?;
        return Ok(params);
    }
    let body = Bytes::from_request(request, &())
        .await
        .map_err(|_| ApiError::new(413, "Request Entity Too Large"))?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(params);
    }
    let json_body = content_type.starts_with("application/json")
        || (content_type.is_empty() && body.trim_ascii_start().starts_with(b"{"));
    if json_body {
        match serde_json::from_slice(&body) {
            Ok(Value::Object(object)) => params.extend_json(object),
            _ => {
                return Err(ApiError::bad_request(
                    "can't parse request body: a JSON object was expected",
                ));
            }
        }
    } else {
        for (name, value) in form_pairs(&String::from_utf8_lossy(&body)) {
            params.insert_text(name, value);
        }
    }
    Ok(params)
}

/// Text parts become parameters; parts with a file name (or a non-text type) are files.
async fn read_multipart(request: Request, params: &mut Params) -> Result<(), ApiError> {
    let bad =
        |error: &dyn std::fmt::Display| ApiError::bad_request(format!("can't parse multipart/form-data body: {error}"));
    let mut multipart = Multipart::from_request(request, &())
        .await
        .map_err(|error| bad(&error))?;
    while let Some(field) = multipart.next_field().await.map_err(|error| bad(&error))? {
        let name = field.name().unwrap_or("").to_owned();
        let file_name = field.file_name().map(str::to_owned);
        let content_type = field.content_type().map(str::to_owned);
        let bytes = field.bytes().await.map_err(|error| bad(&error))?;
        let is_file = file_name.is_some()
            || content_type
                .as_deref()
                .is_some_and(|kind| !kind.starts_with("text/plain"));
        if is_file {
            params.files.push(UploadedFile {
                field: name,
                file_name,
                content_type,
                bytes,
            });
        } else {
            params.insert_text(name, String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    Ok(())
}

/// `GET /file/bot<token>/<file_path>`: the file's bytes, or Telegram's 404. The path may
/// come percent-encoded as one segment (teloxide sends `documents%2Ffile_1.pdf`).
fn download(shared: &Shared, rest: &str) -> Response {
    let mut state = shared.lock();
    let found = rest
        .split_once('/')
        .filter(|(token, _)| *token == state.token)
        .and_then(|(_, path)| state.files.by_path(&percent_decode(path, false)))
        .map(|file| (file.file_path.clone(), file.bytes.clone()));
    let Some((path, bytes)) = found else {
        return error_response(&ApiError::new(404, "Not Found"));
    };
    state.downloads.push(path);
    drop(state);
    shared.notify();
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/octet-stream")],
        bytes,
    )
        .into_response()
}
