//! Rendering an admitted turn as an HTTP response: delay, error bodies, SSE streams with
//! their scripted cuts, non-streaming bodies.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::Value;

use super::script::{Cut, Outcome, Turn, Usage};
use super::{Rejection, WireApi, anthropic, openai, responses};

/// Pause before aborting a connection, so the events already sent are flushed first.
const FLUSH_PAUSE: Duration = Duration::from_millis(20);

/// Everything a reply renderer needs besides the turn.
#[derive(Debug, Clone)]
pub(crate) struct ReplyContext {
    /// The `model` of the request, echoed back.
    pub(crate) model: String,
    /// Index of the turn, used in message and completion ids.
    pub(crate) seq: usize,
    /// Token counts to report.
    pub(crate) usage: Usage,
    /// OpenAI: the request set `stream_options.include_usage`.
    pub(crate) include_usage: bool,
    /// Unix seconds, for OpenAI's `created`.
    pub(crate) created: u64,
    /// Responses: the request asked for `reasoning.encrypted_content`.
    pub(crate) encrypted: bool,
}

/// One SSE event: an optional `event:` line, one `data:` line with compact JSON, a blank line.
pub(crate) fn sse_event(name: Option<&str>, data: &Value) -> Bytes {
    let data = data.to_string();
    match name {
        Some(name) => Bytes::from(format!("event: {name}\ndata: {data}\n\n")),
        None => sse_data(&data),
    }
}

/// One SSE event made of a raw `data:` line.
pub(crate) fn sse_data(data: &str) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

/// A request admitted to a turn.
#[derive(Debug)]
pub(crate) struct Served {
    /// The turn taken from the queue.
    pub(crate) turn: Turn,
    /// What the renderers need from the request.
    pub(crate) ctx: ReplyContext,
    /// The request has `"stream": true`.
    pub(crate) streaming: bool,
}

/// Waits the turn's delay, then answers with its error, its stream (cut as scripted) or its
/// non-streaming body. `extra` headers (the request id) go on every answer; `left` counts the
/// streams the client went away from before their scripted events were all sent.
pub(crate) async fn respond(
    api: WireApi,
    served: Served,
    extra: &[(&'static str, String)],
    left: &Arc<AtomicUsize>,
) -> Response {
    let Served { turn, ctx, streaming } = served;
    if !turn.delay.is_zero() {
        tokio::time::sleep(turn.delay).await;
    }
    match &turn.outcome {
        Outcome::Error { status, message } => error_response(api, &Rejection::for_status(api, *status, message), extra),
        Outcome::RateLimited { retry_after_secs } => {
            let rejection = Rejection::for_status(
                api,
                429,
                format!(
                    "Rate limit reached (volcanic-testkit scripted 429); retry after \
                     {retry_after_secs} s"
                ),
            );
            let mut extra = extra.to_vec();
            extra.push(("retry-after", retry_after_secs.to_string()));
            error_response(api, &rejection, &extra)
        }
        Outcome::Reply if streaming => stream_response(api, &turn, &ctx, extra, left.clone()),
        Outcome::Reply => {
            if turn.cut.is_some() {
                return body_response(
                    StatusCode::OK,
                    "application/json",
                    Body::from_stream(abort_stream()),
                    extra,
                );
            }
            let body = match api {
                WireApi::Anthropic => anthropic::message_body(&turn, &ctx),
                WireApi::OpenAi => openai::completion_body(&turn, &ctx),
                WireApi::Responses => responses::response_body(&turn, &ctx),
            };
            json_response(StatusCode::OK, &body, extra)
        }
    }
}

/// A response body as a stream of byte chunks.
type ByteStream = BoxStream<'static, Result<Bytes, io::Error>>;

/// A body that pauses (so earlier bytes get flushed) and then fails, which makes hyper drop the
/// connection mid-body.
fn abort_stream() -> ByteStream {
    stream::once(async {
        tokio::time::sleep(FLUSH_PAUSE).await;
        Err(io::Error::new(
            io::ErrorKind::ConnectionAborted,
            "volcanic-testkit: scripted connection drop",
        ))
    })
    .boxed()
}

/// Counts its stream as left by the client when dropped before [`sent`](Self::sent) was set.
struct LeftGuard {
    left: Arc<AtomicUsize>,
    sent: bool,
}

impl LeftGuard {
    fn mark_sent(&mut self) {
        self.sent = true;
    }
}

impl Drop for LeftGuard {
    fn drop(&mut self) {
        if !self.sent {
            self.left.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn stream_response(
    api: WireApi,
    turn: &Turn,
    ctx: &ReplyContext,
    extra: &[(&'static str, String)],
    left: Arc<AtomicUsize>,
) -> Response {
    let mut events = match api {
        WireApi::Anthropic => anthropic::stream_events(turn, ctx),
        WireApi::OpenAi => openai::stream_events(turn, ctx),
        WireApi::Responses => responses::stream_events(turn, ctx),
    };
    if let Some(message) = &turn.failure
        && api != WireApi::Responses
    {
        // The other formats have no failed status: their in-stream error replaces the terminal
        // event.
        events.pop();
        events.push(in_stream_error(api, message));
    }
    let tail: ByteStream = match &turn.cut {
        None => stream::empty().boxed(),
        Some(cut) => {
            events.truncate(cut.after());
            match cut {
                Cut::Abort(_) => abort_stream(),
                Cut::End(_) => stream::empty().boxed(),
                Cut::Stall(_) => stream::pending().boxed(),
                Cut::Fail(_, message) => {
                    let event = in_stream_error(api, message);
                    stream::once(async move { Ok(event) }).boxed()
                }
            }
        }
    };
    let gap = turn.gap;
    let mut guard = LeftGuard { left, sent: false };
    // Reached once every scripted event went out; yields nothing.
    let all_sent = stream::poll_fn(move |_| {
        // A method call, so the closure owns the guard, not a copy of its flag.
        guard.mark_sent();
        Poll::Ready(None)
    });
    let body = stream::iter(events.into_iter().enumerate())
        .then(move |(n, event)| async move {
            if n > 0 && !gap.is_zero() {
                tokio::time::sleep(gap).await;
            }
            Ok(event)
        })
        .chain(all_sent)
        .chain(tail);
    body_response(
        StatusCode::OK,
        "text/event-stream; charset=utf-8",
        Body::from_stream(body),
        extra,
    )
}

/// The format's in-stream error event carrying `message`.
fn in_stream_error(api: WireApi, message: &str) -> Bytes {
    match api {
        WireApi::Anthropic => anthropic::stream_error(message),
        WireApi::OpenAi => openai::stream_error(message),
        WireApi::Responses => responses::stream_error(message),
    }
}

/// The rejection in the format's own error body, with its status.
pub(crate) fn error_response(api: WireApi, rejection: &Rejection, extra: &[(&'static str, String)]) -> Response {
    let body = match api {
        WireApi::Anthropic => anthropic::error_body(rejection),
        WireApi::OpenAi | WireApi::Responses => openai::error_body(rejection),
    };
    let status = StatusCode::from_u16(rejection.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, &body, extra)
}

/// A JSON body with this status.
pub(crate) fn json_response(status: StatusCode, body: &Value, extra: &[(&'static str, String)]) -> Response {
    body_response(status, "application/json", Body::from(body.to_string()), extra)
}

fn body_response(
    status: StatusCode,
    content_type: &'static str,
    body: Body,
    extra: &[(&'static str, String)],
) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    for (name, value) in extra {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    response
}
