//! The axum side: routes, shared state, and admission of a request (auth, checks, context
//! window, next turn); `respond.rs` renders the chosen turn.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use axum::routing::post;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::checks::{check_anthropic, check_openai, check_responses, estimated_tokens};
use super::respond::{ReplyContext, Served, error_response, json_response, respond};
use super::script::Turn;
use super::{RecordedRequest, Rejection, WireApi};

/// Largest request body accepted, in bytes (Anthropic's limit is 32 MB).
const BODY_LIMIT: usize = 32 * 1024 * 1024;

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
    /// Responses: encrypted reasoning issued by served turns, with the model it was issued to.
    pub(crate) reasoning: HashMap<String, String>,
    /// Answers requests before the queue is consulted.
    pub(crate) responder: Option<super::Responder>,
}

/// State shared by the handle and the handlers.
#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<ServerState>,
    /// Number of recorded requests, for waiters.
    pub(crate) recorded: watch::Sender<usize>,
    /// Number of streamed replies the client went away from before their last event.
    pub(crate) streams_left: Arc<AtomicUsize>,
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
                reasoning: HashMap::new(),
                responder: None,
            }),
            recorded: watch::Sender::new(0),
            streams_left: Arc::new(AtomicUsize::new(0)),
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

/// The router serving both wire APIs, plus a recording 404 for anything else.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(
            "/v1/messages",
            post(api_route).layer(axum::Extension(WireApi::Anthropic)),
        )
        .route(
            "/v1/chat/completions",
            post(api_route).layer(axum::Extension(WireApi::OpenAi)),
        )
        .route(
            "/v1/responses",
            post(api_route).layer(axum::Extension(WireApi::Responses)),
        )
        .fallback(unknown_route)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn(stamp_arrival))
        .with_state(shared)
}

/// When a request's head arrived (hyper parsed it; the body is still unread).
#[derive(Debug, Clone, Copy)]
struct Arrived(tokio::time::Instant);

async fn stamp_arrival(mut request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    request.extensions_mut().insert(Arrived(tokio::time::Instant::now()));
    next.run(request).await
}

fn arrived(extension: Option<axum::Extension<Arrived>>) -> tokio::time::Instant {
    extension.map_or_else(tokio::time::Instant::now, |axum::Extension(Arrived(at))| at)
}

/// `POST` on an API's path; the route's layer says which API.
async fn api_route(
    State(shared): State<Arc<Shared>>,
    axum::Extension(api): axum::Extension<WireApi>,
    at: Option<axum::Extension<Arrived>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(&shared, api, &uri, &headers, &body, arrived(at)).await
}

async fn unknown_route(
    State(shared): State<Arc<Shared>>,
    at: Option<axum::Extension<Arrived>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let message = format!(
        "volcanic-testkit: no route for {method} {}; the model server serves POST /v1/messages \
         (Anthropic), POST /v1/chat/completions (OpenAI) and POST /v1/responses (OpenAI Responses)",
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
            at: tokio::time::Instant::now(),
            first_byte: arrived(at),
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
    first_byte: tokio::time::Instant,
) -> Response {
    let (request_id, verdict) = admit_and_record(shared, api, uri, headers, raw, first_byte);
    let extra = [(request_id_header(api), request_id)];
    match verdict {
        Ok(served) => respond(api, served, &extra, &shared.streams_left).await,
        Err(rejection) => error_response(api, &rejection, &extra),
    }
}

/// Admits a request under the state lock and records it; returns its request id and verdict.
fn admit_and_record(
    shared: &Shared,
    api: WireApi,
    uri: &Uri,
    headers: &HeaderMap,
    raw: &[u8],
    first_byte: tokio::time::Instant,
) -> (String, Result<Served, Rejection>) {
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
            at: tokio::time::Instant::now(),
            first_byte,
        },
    );
    (request_id, verdict)
}

fn request_id_header(api: WireApi) -> &'static str {
    match api {
        WireApi::Anthropic => "request-id",
        WireApi::OpenAi | WireApi::Responses => "x-request-id",
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
                return Err(Rejection::for_status(api, 401, "x-api-key header is required"));
            }
            if !present("anthropic-version") {
                return Err(Rejection::invalid_request("anthropic-version: header is required"));
            }
        }
        WireApi::OpenAi | WireApi::Responses => {
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
    let body =
        body.map_err(|error| Rejection::invalid_request(format!("There was an error parsing the body: {error}")))?;
    match api {
        WireApi::Anthropic => {
            check_anthropic(body, state.verify_signatures.then_some(&state.signatures))?;
        }
        WireApi::OpenAi => check_openai(body)?,
        WireApi::Responses => check_responses(body, &state.reasoning)?,
    }
    let tokens = estimated_tokens(api, body);
    if let Some(window) = state.context_window
        && tokens > window
    {
        return Err(context_rejection(api, tokens, window));
    }
    let answered = state.responder.as_ref().and_then(|r| (r.0)(api, body));
    let next = match answered {
        Some(turn) => {
            let index = state.pushed;
            state.pushed += 1;
            Some((index, turn))
        }
        None => state.turns.pop_front(),
    };
    let Some((index, turn)) = next else {
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
    state.signatures.extend(turn.signatures().map(str::to_owned));
    let model = body.get("model").and_then(Value::as_str).unwrap_or("").to_owned();
    let encrypted = api == WireApi::Responses
        && body
            .get("include")
            .and_then(Value::as_array)
            .is_some_and(|include| include.iter().any(|i| i == "reasoning.encrypted_content"));
    if encrypted {
        for blob in super::responses::issued_reasoning(&turn, index) {
            state.reasoning.insert(blob, model.clone());
        }
    }
    let include_usage = body.pointer("/stream_options/include_usage").and_then(Value::as_bool) == Some(true);
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0);
    let ctx = ReplyContext {
        model,
        seq: index,
        usage: turn.effective_usage(tokens),
        include_usage: api == WireApi::OpenAi && include_usage,
        created,
        encrypted,
    };
    Ok(Served {
        streaming: body.get("stream").and_then(Value::as_bool) == Some(true),
        turn,
        ctx,
    })
}

fn context_rejection(api: WireApi, tokens: u64, window: u64) -> Rejection {
    match api {
        WireApi::Anthropic => {
            Rejection::invalid_request(format!("prompt is too long: {tokens} tokens > {window} maximum"))
        }
        WireApi::OpenAi | WireApi::Responses => Rejection::new(
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
