//! A scripted A2A agent on `127.0.0.1`, speaking JSON-RPC and SSE in A2A 1.0, 0.3, or both
//! ([`PeerMode`]), written from the specs apart from our client.
//!
//! Cards: 1.0 at `/.well-known/agent-card.json` (with `supportedInterfaces`; in [`PeerMode::Both`]
//! a 0.3 interface too and the 0.3 top-level fields), 0.3 at `/.well-known/agent.json` only (so
//! a 0.3-only client must fall back to it). Cards carry an `ETag` and answer 304 to
//! `If-None-Match`. JSON-RPC at `POST /`: `SendMessage`, `SendStreamingMessage`, `GetTask`,
//! `CancelTask`, `SubscribeToTask`, `CreateTaskPushNotificationConfig` (1.0; without the
//! `A2A-Version: 1.0` header -32009, as `a2a-sdk` does) and `message/send`, `message/stream`,
//! `tasks/get`, `tasks/cancel`, `tasks/resubscribe`, `tasks/pushNotificationConfig/set` (0.3); a
//! method of a dialect not served is -32601. With [`PeerConfig::push`], a task's final state is
//! posted to its registered URL (body: the task, in the dialect the config was set in; header
//! `X-A2A-Notification-Token`); [`A2aPeer::pushes`] lists what was posted and the answer.
//!
//! What a task does is chosen by the first text of the message:
//! - `run N …`: works N seconds, then completes with the artifact `done: …`;
//! - `ask …`: asks for input (`input-required`, status message `which one?`); the answer, sent with
//!   the task's id, completes it with `thanks: <answer>`;
//! - `fail …`: fails with the status message `failed on purpose`;
//! - `echo …`: completes with the text, every file received (name and size), the hop found in
//!   the message's metadata (`volcanic.hop`) as a data part, and the text back as a file
//!   `echo.txt`;
//! - `message …`: answers with a direct message (no task);
//! - anything else: completes at once with the artifact `answer: <text>`.
//!
//! [`PeerConfig`] adds a bearer token or an API-key header every JSON-RPC call must carry (401
//! otherwise), a redirect (307) of every JSON-RPC call to another URL, streams cut after their
//! first event, and card faults. Every request is recorded with its headers
//! ([`A2aPeer::requests`]).

mod card;
mod follow;
mod wire;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::serve::{self, ServeTask};

pub use wire::{PeerMessage, PeerPart, PeerState, PeerTask, Wire};

/// Which dialects the peer serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerMode {
    /// A2A 1.0 only.
    V1Only,
    /// A2A 1.0 with 0.3 compatibility.
    Both,
    /// A2A 0.3 only.
    V03Only,
}

/// What is wrong with the card.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CardFault {
    /// Nothing.
    #[default]
    None,
    /// The card is not JSON.
    Broken,
    /// The card names this URL (another origin) as its endpoint.
    Endpoint(String),
}

/// How the peer behaves.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    /// Its dialects.
    pub mode: PeerMode,
    /// Whether its card offers streaming (then clients stream sends).
    pub streaming: bool,
    /// A bearer token every JSON-RPC call must carry.
    pub bearer: Option<String>,
    /// An API key every JSON-RPC call must carry: header name (lowercase) and value.
    pub api_key: Option<(String, String)>,
    /// Answers every JSON-RPC call with a 307 to this URL.
    pub redirect_to: Option<String>,
    /// A fault of its card.
    pub card: CardFault,
    /// Streams end after the first event (the task), without a final state.
    pub cut_streams: bool,
    /// Whether its card offers push notifications (then it takes push configs and posts each
    /// task's final state to the registered URL with the registered token).
    pub push: bool,
}

impl PeerConfig {
    /// A well-behaved peer in `mode`, streaming.
    pub fn new(mode: PeerMode) -> Self {
        Self {
            mode,
            streaming: true,
            bearer: None,
            api_key: None,
            redirect_to: None,
            card: CardFault::None,
            cut_streams: false,
            push: false,
        }
    }
}

/// One request the peer saw.
#[derive(Debug, Clone)]
pub struct PeerRequest {
    /// HTTP method.
    pub method: String,
    /// Path.
    pub path: String,
    /// Headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The JSON-RPC method, for calls.
    pub rpc: Option<String>,
    /// The JSON body (`null` when none or not JSON).
    pub body: Value,
}

impl PeerRequest {
    /// The value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// The card's ETag.
pub const CARD_ETAG: &str = "\"card-1\"";

#[derive(Debug)]
struct Inner {
    config: PeerConfig,
    addr: SocketAddr,
    requests: Vec<PeerRequest>,
    tasks: HashMap<String, PeerTask>,
    /// When each running task completes.
    done_at: HashMap<String, Instant>,
    next: u64,
    /// Push notifications posted: URL and the HTTP status answered (0: no answer).
    pushes: Vec<(String, u16)>,
}

type Shared = Arc<Mutex<Inner>>;

fn lock(s: &Shared) -> MutexGuard<'_, Inner> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running peer; cheap to clone, all clones share one server.
#[derive(Debug, Clone)]
pub struct A2aPeer {
    shared: Shared,
    addr: SocketAddr,
    _task: Arc<ServeTask>,
}

impl A2aPeer {
    /// Binds `127.0.0.1:0` and serves until the last handle drops.
    pub async fn start(config: PeerConfig) -> std::io::Result<Self> {
        let (listener, addr) = serve::bind_loopback().await?;
        let shared = Arc::new(Mutex::new(Inner {
            config,
            addr,
            requests: Vec::new(),
            tasks: HashMap::new(),
            done_at: HashMap::new(),
            next: 0,
            pushes: Vec::new(),
        }));
        let app = Router::new().fallback(serve).with_state(shared.clone());
        Ok(Self {
            shared,
            addr,
            _task: serve::spawn("A2A peer", listener, app),
        })
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request seen, in order.
    pub fn requests(&self) -> Vec<PeerRequest> {
        lock(&self.shared).requests.clone()
    }

    /// The JSON-RPC methods called, in order.
    pub fn rpc_methods(&self) -> Vec<String> {
        self.requests().into_iter().filter_map(|r| r.rpc).collect()
    }

    /// The push notifications posted so far: URL and the HTTP status answered (0: none).
    pub fn pushes(&self) -> Vec<(String, u16)> {
        lock(&self.shared).pushes.clone()
    }

    /// A task as the peer has it now.
    pub fn task(&self, id: &str) -> Option<PeerTask> {
        let mut s = lock(&self.shared);
        advance(&mut s, id);
        s.tasks.get(id).cloned()
    }
}

async fn serve(State(shared): State<Shared>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = uri.path().to_owned();
    let config = {
        let mut s = lock(&shared);
        s.requests.push(PeerRequest {
            method: method.to_string(),
            path: path.clone(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
                .collect(),
            rpc: parsed.get("method").and_then(Value::as_str).map(str::to_owned),
            body: parsed.clone(),
        });
        s.config.clone()
    };
    match (method, path.as_str()) {
        (Method::GET, "/.well-known/agent-card.json") if config.mode != PeerMode::V03Only => {
            card::card(&shared, &headers, Wire::V1)
        }
        (Method::GET, "/.well-known/agent.json") if config.mode != PeerMode::V1Only => {
            card::card(&shared, &headers, Wire::V03)
        }
        (Method::POST, "/") => {
            if let Some(to) = &config.redirect_to {
                return (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, to.clone())]).into_response();
            }
            if let Some(token) = &config.bearer {
                let sent = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
                if sent != Some(&format!("Bearer {token}")) {
                    return (
                        StatusCode::UNAUTHORIZED,
                        [(header::WWW_AUTHENTICATE, "Bearer")],
                        "unauthorized",
                    )
                        .into_response();
                }
            }
            if let Some((name, value)) = &config.api_key
                && headers.get(name.as_str()).and_then(|v| v.to_str().ok()) != Some(value.as_str())
            {
                return (StatusCode::UNAUTHORIZED, "missing API key").into_response();
            }
            rpc(shared, &headers, parsed).await
        }
        _ => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}

fn rpc_error(id: &Value, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn rpc_ok(id: &Value, result: Value) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn rpc(shared: Shared, headers: &HeaderMap, body: Value) -> Response {
    let id = body.get("id").cloned().unwrap_or(Value::Null);
    let Some(method) = body.get("method").and_then(Value::as_str) else {
        return rpc_error(&id, -32600, "not a JSON-RPC request");
    };
    let mode = lock(&shared).config.mode;
    let (wire, call) = match method {
        "SendMessage" => (Wire::V1, "send"),
        "SendStreamingMessage" => (Wire::V1, "stream"),
        "GetTask" => (Wire::V1, "get"),
        "CancelTask" => (Wire::V1, "cancel"),
        "SubscribeToTask" => (Wire::V1, "subscribe"),
        "CreateTaskPushNotificationConfig" => (Wire::V1, "push"),
        "tasks/resubscribe" => (Wire::V03, "subscribe"),
        "tasks/pushNotificationConfig/set" => (Wire::V03, "push"),
        "message/send" => (Wire::V03, "send"),
        "message/stream" => (Wire::V03, "stream"),
        "tasks/get" => (Wire::V03, "get"),
        "tasks/cancel" => (Wire::V03, "cancel"),
        _ => return rpc_error(&id, -32601, "Method not found"),
    };
    let served = match wire {
        Wire::V1 => mode != PeerMode::V03Only,
        Wire::V03 => mode != PeerMode::V1Only,
    };
    if !served {
        return rpc_error(&id, -32601, "Method not found");
    }
    if wire == Wire::V1 && headers.get("a2a-version").and_then(|v| v.to_str().ok()) != Some("1.0") {
        return rpc_error(&id, -32009, "A2A-Version header missing or not supported");
    }
    let params = body.get("params").cloned().unwrap_or(Value::Null);
    let task_id = params.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
    match call {
        "get" => {
            let history = params.get("historyLength").and_then(Value::as_u64).unwrap_or(10) as usize;
            let mut s = lock(&shared);
            advance(&mut s, &task_id);
            match s.tasks.get(&task_id) {
                Some(t) => rpc_ok(&id, t.json(wire, history)),
                None => rpc_error(&id, -32001, "Task not found"),
            }
        }
        "cancel" => {
            let mut s = lock(&shared);
            advance(&mut s, &task_id);
            match s.tasks.get_mut(&task_id) {
                None => rpc_error(&id, -32001, "Task not found"),
                Some(t) if t.state.is_final() => rpc_error(&id, -32002, "Task cannot be canceled"),
                Some(t) => {
                    t.state = PeerState::Canceled;
                    t.status_text = None;
                    let v = t.json(wire, 10);
                    s.done_at.remove(&task_id);
                    rpc_ok(&id, v)
                }
            }
        }
        "subscribe" => follow::subscribe(&shared, id, wire, &task_id),
        "push" => follow::set_push(&shared, &id, wire, &params),
        _ => send(shared, id, wire, params, call == "stream").await,
    }
}

/// Completes a `run` task whose time has come.
fn advance(s: &mut Inner, id: &str) {
    if s.done_at.get(id).is_some_and(|at| Instant::now() >= *at) {
        s.done_at.remove(id);
        if let Some(t) = s.tasks.get_mut(id)
            && t.state == PeerState::Working
        {
            let text = first_text(&t.history[0].parts);
            t.state = PeerState::Completed;
            t.artifacts
                .push(("result".into(), vec![PeerPart::Text(format!("done: {text}"))]));
        }
    }
}

fn first_text(parts: &[PeerPart]) -> String {
    parts
        .iter()
        .find_map(|p| match p {
            PeerPart::Text(t) => Some(t.clone()),
            PeerPart::File(..) | PeerPart::Data(_) => None,
        })
        .unwrap_or_default()
}

async fn send(shared: Shared, id: Value, wire: Wire, params: Value, stream: bool) -> Response {
    let message = params.get("message").cloned().unwrap_or(Value::Null);
    let parts: Vec<PeerPart> = message
        .get("parts")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(|p| PeerPart::parse(p, wire)).collect())
        .unwrap_or_default();
    if parts.is_empty() {
        return rpc_error(&id, -32602, "a message with no readable part");
    }
    let blocking = match wire {
        Wire::V1 => !params["configuration"]["returnImmediately"].as_bool().unwrap_or(false),
        Wire::V03 => params["configuration"]["blocking"].as_bool().unwrap_or(true),
    };
    let hop = message["metadata"]["volcanic.hop"].clone();
    let text = first_text(&parts);
    let user = PeerMessage {
        agent: false,
        parts: parts.clone(),
    };
    let task_id = {
        let mut s = lock(&shared);
        if let Some(existing) = message.get("taskId").and_then(Value::as_str) {
            let Some(t) = s.tasks.get_mut(existing) else {
                return rpc_error(&id, -32001, "Task not found");
            };
            if t.state != PeerState::InputRequired {
                return rpc_error(&id, -32602, "the task does not wait for input");
            }
            t.history.push(user);
            t.state = PeerState::Completed;
            t.status_text = None;
            t.artifacts
                .push(("result".into(), vec![PeerPart::Text(format!("thanks: {text}"))]));
            existing.to_owned()
        } else {
            let context = message
                .get("contextId")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| format!("ctx-{}", s.next));
            if let Some(rest) = text.strip_prefix("message") {
                let answer = format!("direct:{rest}");
                return if stream {
                    sse(id, vec![(None, wire::direct_message(&answer, &context, wire))])
                } else {
                    rpc_ok(&id, wire::direct_message(&answer, &context, wire))
                };
            }
            s.next += 1;
            let task_id = format!("task-{}", s.next);
            let mut task = PeerTask {
                id: task_id.clone(),
                context_id: context,
                state: PeerState::Completed,
                status_text: None,
                history: vec![user],
                artifacts: Vec::new(),
            };
            script(&mut task, &text, &parts, &hop, &mut s.done_at);
            s.tasks.insert(task_id.clone(), task);
            task_id
        }
    };
    let done_at = lock(&shared).done_at.get(&task_id).copied();
    if stream {
        let snapshot = lock(&shared).tasks[&task_id].clone();
        let mut events = vec![(None, snapshot.task_event(wire))];
        if lock(&shared).config.cut_streams {
            return sse(id, events);
        }
        if snapshot.state == PeerState::Working {
            events.push((None, snapshot.status_event(wire)));
            let shared = shared.clone();
            let tid = task_id.clone();
            events.push((
                done_at,
                Value::String(tid), // replaced when the time comes
            ));
            return sse_later(shared, id, wire, events);
        }
        for i in 0..snapshot.artifacts.len() {
            events.push((None, snapshot.artifact_event(i, wire)));
        }
        events.push((None, snapshot.status_event(wire)));
        return sse(id, events);
    }
    if blocking && let Some(at) = done_at {
        tokio::time::sleep(at.saturating_duration_since(Instant::now())).await;
    }
    let mut s = lock(&shared);
    advance(&mut s, &task_id);
    rpc_ok(&id, s.tasks[&task_id].result(wire))
}

/// Sets up a new task by its first text.
fn script(task: &mut PeerTask, text: &str, parts: &[PeerPart], hop: &Value, done_at: &mut HashMap<String, Instant>) {
    let word = text.split_whitespace().next().unwrap_or_default();
    match word {
        "run" => {
            let secs: f64 = text
                .split_whitespace()
                .nth(1)
                .and_then(|n| n.parse().ok())
                .unwrap_or(1.0);
            task.state = PeerState::Working;
            done_at.insert(task.id.clone(), Instant::now() + Duration::from_secs_f64(secs));
        }
        "ask" => {
            task.state = PeerState::InputRequired;
            task.status_text = Some("which one?".into());
        }
        "fail" => {
            task.state = PeerState::Failed;
            task.status_text = Some("failed on purpose".into());
        }
        "echo" => {
            let mut out = vec![PeerPart::Text(text.to_owned())];
            for p in parts {
                if let PeerPart::File(name, bytes) = p {
                    out.push(PeerPart::Text(format!("got file {name} ({} bytes)", bytes.len())));
                }
            }
            out.push(PeerPart::Data(json!({"hop": hop})));
            task.artifacts.push(("echo".into(), out));
            task.artifacts.push((
                "file".into(),
                vec![PeerPart::File("echo.txt".into(), text.as_bytes().to_vec())],
            ));
        }
        _ => task
            .artifacts
            .push(("result".into(), vec![PeerPart::Text(format!("answer: {text}"))])),
    }
}

fn sse_frame(id: &Value, result: &Value) -> Bytes {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
    Bytes::from(format!("data: {body}\n\n"))
}

fn sse_response(body: Body) -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

/// Every event at once.
fn sse(id: Value, events: Vec<(Option<Instant>, Value)>) -> Response {
    let frames: Vec<Result<Bytes, std::io::Error>> = events.iter().map(|(_, e)| Ok(sse_frame(&id, e))).collect();
    sse_response(Body::from_stream(futures::stream::iter(frames)))
}

/// The events before the last at once; at the last one's time, the task's completion.
fn sse_later(shared: Shared, id: Value, wire: Wire, mut events: Vec<(Option<Instant>, Value)>) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(16);
    let (at, tid) = events.pop().unwrap_or((None, Value::Null));
    let tid = tid.as_str().unwrap_or_default().to_owned();
    tokio::spawn(async move {
        for (_, e) in &events {
            if tx.send(Ok(sse_frame(&id, e))).await.is_err() {
                return;
            }
        }
        if let Some(at) = at {
            tokio::time::sleep(at.saturating_duration_since(Instant::now())).await;
        }
        let done = {
            let mut s = lock(&shared);
            advance(&mut s, &tid);
            s.tasks.get(&tid).cloned()
        };
        if let Some(t) = done {
            for i in 0..t.artifacts.len() {
                let _ = tx.send(Ok(sse_frame(&id, &t.artifact_event(i, wire)))).await;
            }
            let _ = tx.send(Ok(sse_frame(&id, &t.status_event(wire)))).await;
        }
    });
    sse_response(Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx)))
}
