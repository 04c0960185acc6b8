//! The axum side: routes, shared state, admission of a request (auth, checks, context window,
//! next turn) and rendering of the chosen turn as an HTTP response.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::Response;
use axum::routing::post;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::checks::{check_anthropic, check_openai, estimated_tokens};
use super::script::{Cut, Outcome, Turn, Usage};
use super::{RecordedRequest, Rejection, WireApi, anthropic, openai};

/// Largest request body accepted, in bytes (Anthropic's limit is 32 MB).
const BODY_LIMIT: usize = 32 * 1024 * 1024;
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

/// Mutable state behind the [`ModelServer`](super::ModelServer) handle.
#[derive(Debug)]
pub(crate) struct ServerState {
    /// Queued turns with their index (position in push order).
    pub(crate) turns: VecDeque<(usize, Turn)>,
    /// Turns pushed so far.
    pub(crate) pushed: usize,
    /// Every request seen, in arrival order.
    pub(crate) requests: Vec<RecordedRequest>,
    /// Context window in tokens, when set.
    pub(crate) context_window: Option<u64>,
    /// Reject requests without an API key.
    pub(crate) require_api_key: bool,
    /// Reject Anthropic thinking blocks whose signature this server did not issue.
    pub(crate) verify_signatures: bool,
    /// Thinking signatures issued by served turns.
    pub(crate) signatures: HashSet<String>,
}

/// State shared by the handle and the handlers.
#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<ServerState>,
    /// Number of recorded requests, for waiters.
    pub(crate) recorded: watch::Sender<usize>,
}

impl Shared {
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(ServerState {
                turns: VecDeque::new(),
                pushed: 0,
                requests: Vec::new(),
                context_window: None,
                require_api_key: true,
                verify_signatures: true,
                signatures: HashSet::new(),
            }),
            recorded: watch::Sender::new(0),
        }
    }

    /// Locks the state; a panic in another holder does not make the state unusable.
    pub(crate) fn lock(&self) -> MutexGuard<'_, ServerState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a request and updates the waiters.
    fn record(&self, state: &mut ServerState, request: RecordedRequest) {
        state.requests.push(request);
        let count = state.requests.len();
        self.recorded.send_modify(|recorded| *recorded = count);
    }
}

/// A request admitted to a turn.
#[derive(Debug)]
struct Served {
    turn: Turn,
    ctx: ReplyContext,
    streaming: bool,
}

/// The router serving both wire APIs, plus a recording 404 for anything else.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/messages", post(anthropic_route))
        .route("/v1/chat/completions", post(openai_route))
        .fallback(unknown_route)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(shared)
}

async fn anthropic_route(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(&shared, WireApi::Anthropic, &uri, &headers, &body).await
}

async fn openai_route(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(&shared, WireApi::OpenAi, &uri, &headers, &body).await
}

async fn unknown_route(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let message = format!(
        "volcanic-testkit: no route for {method} {}; the model server serves POST /v1/messages \
         (Anthropic) and POST /v1/chat/completions (OpenAI)",
        uri.path()
    );
    let rejection = Rejection::new(404, "not_found_error", None, message.clone());
    let mut state = shared.lock();
    shared.record(
        &mut state,
        RecordedRequest {
            api: None,
            method: method.to_string(),
            path: uri.path().to_owned(),
            headers: header_map(&headers),
            body: parse_body(&body).unwrap_or_else(|_| lossy(&body)),
            turn_index: None,
            rejection: Some(rejection),
        },
    );
    drop(state);
    json_response(
        StatusCode::NOT_FOUND,
        &json!({"error": {"type": "not_found_error", "message": message}}),
        &[],
    )
}

fn header_map(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut map: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        map.entry(name.as_str().to_ascii_lowercase())
            .and_modify(|existing| {
                existing.push_str(", ");
                existing.push_str(&value);
            })
            .or_insert(value);
    }
    map
}

fn parse_body(raw: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice(raw)
}

fn lossy(raw: &[u8]) -> Value {
    Value::String(String::from_utf8_lossy(raw).into_owned())
}

async fn handle(
    shared: &Shared,
    api: WireApi,
    uri: &Uri,
    headers: &HeaderMap,
    raw: &[u8],
) -> Response {
    let headers = header_map(headers);
    let parsed = parse_body(raw);
    let body = parsed.as_ref().cloned().unwrap_or_else(|_| lossy(raw));
    let mut state = shared.lock();
    let request_id = format!("req_testkit_{:04}", state.requests.len() + 1);
    let verdict = admit(&mut state, api, &headers, parsed.as_ref());
    let (turn_index, rejection) = match &verdict {
        Ok(served) => (Some(served.ctx.seq), None),
        Err(rejection) => (None, Some(rejection.clone())),
    };
    shared.record(
        &mut state,
        RecordedRequest {
            api: Some(api),
            method: Method::POST.to_string(),
            path: uri.path().to_owned(),
            headers,
            body,
            turn_index,
            rejection,
        },
    );
    drop(state);
    let extra = [(request_id_header(api), request_id)];
    match verdict {
        Ok(served) => respond(api, served, &extra).await,
        Err(rejection) => error_response(api, &rejection, &extra),
    }
}

fn request_id_header(api: WireApi) -> &'static str {
    match api {
        WireApi::Anthropic => "request-id",
        WireApi::OpenAi => "x-request-id",
    }
}

/// Decides what a request gets: a turn, or the rejection the real API would give.
fn admit(
    state: &mut ServerState,
    api: WireApi,
    headers: &BTreeMap<String, String>,
    body: Result<&Value, &serde_json::Error>,
) -> Result<Served, Rejection> {
    let present = |name: &str| headers.get(name).is_some_and(|v| !v.trim().is_empty());
    match api {
        WireApi::Anthropic => {
            if state.require_api_key && !present("x-api-key") {
                return Err(Rejection::for_status(
                    api,
                    401,
                    "x-api-key header is required",
                ));
            }
            if !present("anthropic-version") {
                return Err(Rejection::invalid_request(
                    "anthropic-version: header is required",
                ));
            }
        }
        WireApi::OpenAi => {
            let bearer = headers
                .get("authorization")
                .and_then(|value| value.strip_prefix("Bearer "))
                .is_some_and(|key| !key.trim().is_empty());
            if state.require_api_key && !bearer {
                return Err(Rejection::new(
                    401,
                    "invalid_request_error",
                    None,
                    "You didn't provide an API key. You need to provide your API key in an \
                     Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                ));
            }
        }
    }
    let body = body.map_err(|error| {
        Rejection::invalid_request(format!("There was an error parsing the body: {error}"))
    })?;
    match api {
        WireApi::Anthropic => {
            check_anthropic(body, state.verify_signatures.then_some(&state.signatures))?;
        }
        WireApi::OpenAi => check_openai(body)?,
    }
    let tokens = estimated_tokens(api, body);
    if let Some(window) = state.context_window
        && tokens > window
    {
        return Err(context_rejection(api, tokens, window));
    }
    let Some((index, turn)) = state.turns.pop_front() else {
        return Err(Rejection::for_status(
            api,
            500,
            format!(
                "volcanic-testkit: no scripted turn left ({} turns were pushed and all were \
                 used); push another Turn before this request",
                state.pushed
            ),
        ));
    };
    state
        .signatures
        .extend(turn.signatures().map(str::to_owned));
    let include_usage = body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        == Some(true);
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0);
    let ctx = ReplyContext {
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        seq: index,
        usage: turn.effective_usage(tokens),
        include_usage: api == WireApi::OpenAi && include_usage,
        created,
    };
    Ok(Served {
        streaming: body.get("stream").and_then(Value::as_bool) == Some(true),
        turn,
        ctx,
    })
}

fn context_rejection(api: WireApi, tokens: u64, window: u64) -> Rejection {
    match api {
        WireApi::Anthropic => Rejection::invalid_request(format!(
            "prompt is too long: {tokens} tokens > {window} maximum"
        )),
        WireApi::OpenAi => Rejection::new(
            400,
            "invalid_request_error",
            Some("context_length_exceeded"),
            format!(
                "This model's maximum context length is {window} tokens. However, your messages \
                 resulted in {tokens} tokens."
            ),
        ),
    }
}

async fn respond(api: WireApi, served: Served, extra: &[(&'static str, String)]) -> Response {
    let Served {
        turn,
        ctx,
        streaming,
    } = served;
    if !turn.delay.is_zero() {
        tokio::time::sleep(turn.delay).await;
    }
    match &turn.outcome {
        Outcome::Error { status, message } => {
            error_response(api, &Rejection::for_status(api, *status, message), extra)
        }
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
        Outcome::Reply if streaming => stream_response(api, &turn, &ctx, extra),
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
            };
            json_response(StatusCode::OK, &body, extra)
        }
    }
}

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

fn stream_response(
    api: WireApi,
    turn: &Turn,
    ctx: &ReplyContext,
    extra: &[(&'static str, String)],
) -> Response {
    let mut events = match api {
        WireApi::Anthropic => anthropic::stream_events(turn, ctx),
        WireApi::OpenAi => openai::stream_events(turn, ctx),
    };
    let tail: ByteStream = match &turn.cut {
        None => stream::empty().boxed(),
        Some(cut) => {
            events.truncate(cut.after());
            match cut {
                Cut::Abort(_) => abort_stream(),
                Cut::End(_) => stream::empty().boxed(),
                Cut::Stall(_) => stream::pending().boxed(),
                Cut::Fail(_, message) => {
                    let event = match api {
                        WireApi::Anthropic => anthropic::stream_error(message),
                        WireApi::OpenAi => openai::stream_error(message),
                    };
                    stream::once(async move { Ok(event) }).boxed()
                }
            }
        }
    };
    let body = stream::iter(events.into_iter().map(Ok)).chain(tail);
    body_response(
        StatusCode::OK,
        "text/event-stream; charset=utf-8",
        Body::from_stream(body),
        extra,
    )
}

fn error_response(
    api: WireApi,
    rejection: &Rejection,
    extra: &[(&'static str, String)],
) -> Response {
    let body = match api {
        WireApi::Anthropic => anthropic::error_body(rejection),
        WireApi::OpenAi => openai::error_body(rejection),
    };
    let status = StatusCode::from_u16(rejection.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, &body, extra)
}

fn json_response(status: StatusCode, body: &Value, extra: &[(&'static str, String)]) -> Response {
    body_response(
        status,
        "application/json",
        Body::from(body.to_string()),
        extra,
    )
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
