//! The thin JSON-RPC + SSE client: one process-wide [`A2aClient`] (HTTP client and card cache),
//! calls in the agent's dialect, and `send`'s bounded wait for a settled task.

use std::sync::Arc;
use std::time::Duration;

use a2a::{Message, SendMessageResponse, StreamResponse, Task, TaskState};
use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::time::Instant;
use url::Url;
use volcanic_a2a_dialect::{Call, Dialect};

use crate::card::{AgentCardInfo, CardCache};
use crate::config::{A2aSettings, origin_of};
use crate::error::{A2aError, Result, rpc_code_name};
use crate::http::{Http, MAX_BODY, MAX_STREAM, Request, bounded, capped_stream, read_capped};

/// How many history messages `status` asks for.
pub const HISTORY_TAIL: i32 = 5;

/// The A2A client of the process: HTTP (credentials by origin, no automatic redirects) and the
/// card cache. Cheap to share (`Arc`).
#[derive(Debug)]
pub struct A2aClient {
    http: Http,
    cards: CardCache,
}

/// Whether a task has reached a state where `send` stops waiting: final (completed, failed,
/// canceled, rejected) or interrupted (input-required, auth-required).
pub fn is_settled(state: &TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

impl A2aClient {
    /// A client with `settings`.
    ///
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn new(settings: A2aSettings) -> Result<Arc<Self>> {
        Ok(Arc::new(Self {
            http: Http::new(Arc::new(settings))?,
            cards: CardCache::default(),
        }))
    }

    /// The settings in use.
    pub fn settings(&self) -> &A2aSettings {
        self.http.settings()
    }

    /// The card of the agent at `base` (cached; fetched again when older than an hour, or when
    /// `refresh`).
    ///
    /// # Errors
    /// [`A2aError::Card`] when it cannot be fetched or used, with the reason.
    pub async fn card(&self, base: &Url, refresh: bool) -> Result<AgentCardInfo> {
        self.cards.card(&self.http, base, refresh).await
    }

    /// Sends `message` and waits up to `wait` for the task to settle ([`is_settled`]): by
    /// streaming when the card offers it, else by a non-blocking send and polling `GetTask`.
    /// A task still running at the deadline is returned as it is (its id lets the caller ask
    /// again).
    ///
    /// # Errors
    /// Transport, HTTP, JSON-RPC and shape errors, each saying what the agent did.
    pub async fn send(&self, card: &AgentCardInfo, message: &Message, wait: Duration) -> Result<SendMessageResponse> {
        let deadline = Instant::now() + wait;
        let snapshot = if card.streaming {
            match self.send_streaming(card, message, deadline).await? {
                Streamed::Message(m) => return Ok(SendMessageResponse::Message(m)),
                Streamed::Task(t) => t,
            }
        } else {
            let params = card.dialect.send_params(message, false)?;
            match card.dialect.send_result(self.rpc(card, Call::Send, params).await?)? {
                SendMessageResponse::Message(m) => return Ok(SendMessageResponse::Message(m)),
                SendMessageResponse::Task(t) => t,
            }
        };
        Ok(SendMessageResponse::Task(self.poll(card, snapshot, deadline).await?))
    }

    /// `GetTask` with the last [`HISTORY_TAIL`] messages.
    ///
    /// # Errors
    /// As [`A2aClient::send`]; an unknown task is JSON-RPC error -32001 (TaskNotFound).
    pub async fn get_task(&self, card: &AgentCardInfo, id: &str) -> Result<Task> {
        let v = self
            .rpc(card, Call::Get, card.dialect.get_params(id, HISTORY_TAIL))
            .await?;
        Ok(card.dialect.task(v)?)
    }

    /// `CancelTask`.
    ///
    /// # Errors
    /// As [`A2aClient::send`]; a task past cancelling is -32002 (TaskNotCancelable).
    pub async fn cancel_task(&self, card: &AgentCardInfo, id: &str) -> Result<Task> {
        let v = self.rpc(card, Call::Cancel, json!({"id": id})).await?;
        Ok(card.dialect.task(v)?)
    }

    /// Polls `GetTask` (0.5 s doubling to 4 s) until the task settles or `deadline` passes.
    async fn poll(&self, card: &AgentCardInfo, mut task: Task, deadline: Instant) -> Result<Task> {
        let mut pause = Duration::from_millis(500);
        while !is_settled(&task.status.state) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(Duration::from_secs(4));
            if Instant::now() >= deadline {
                break;
            }
            task = self.get_task(card, &task.id).await?;
        }
        Ok(task)
    }

    fn request(&self, card: &AgentCardInfo, method: &str, params: Value, accept: &'static str) -> Result<Request> {
        let body = json!({
            "jsonrpc": "2.0",
            "id": uuid::Uuid::new_v4().to_string(),
            "method": method,
            "params": params,
        });
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        if card.dialect == Dialect::V1 {
            headers.insert(a2a::SVC_PARAM_VERSION, HeaderValue::from_static(a2a::VERSION));
        }
        Ok(Request {
            method: Method::POST,
            url: card.endpoint.clone(),
            headers,
            body: Some(serde_json::to_vec(&body).map_err(|e| A2aError::Invalid(e.to_string()))?),
        })
    }

    /// One JSON-RPC call; its `result`.
    async fn rpc(&self, card: &AgentCardInfo, call: Call, params: Value) -> Result<Value> {
        self.rpc_named(card, card.dialect.method(call), params).await
    }

    /// One JSON-RPC call of `method` (a name of the card's dialect); its `result`.
    pub(crate) async fn rpc_named(&self, card: &AgentCardInfo, method: &str, params: Value) -> Result<Value> {
        let req = self.request(card, method, params, "application/json")?;
        let (url, status, _, body) = self.http.fetch(req, MAX_BODY).await?;
        let parsed: Option<Value> = serde_json::from_slice(&body).ok();
        if let Some(v) = &parsed
            && let Some(e) = rpc_error(v)
        {
            return Err(e);
        }
        if !status.is_success() {
            return Err(status_error(&url, status));
        }
        let v = parsed.ok_or_else(|| A2aError::Malformed(format!("{url}: the body is not JSON")))?;
        response_result(v)
    }

    /// A streaming send: reads events until the task settles, the stream ends or `deadline`.
    async fn send_streaming(&self, card: &AgentCardInfo, message: &Message, deadline: Instant) -> Result<Streamed> {
        let params = card.dialect.send_params(message, true)?;
        self.stream_named(card, card.dialect.method(Call::Stream), params, deadline)
            .await
    }

    /// Follows a task by the streaming call `method` (subscribe) until it settles
    /// ([`is_settled`]), the stream ends, or `deadline`; the task as last seen, which is not
    /// settled when the stream ended early (polling takes over then).
    ///
    /// # Errors
    /// As [`A2aClient::send`]; a stream that brings no task is [`A2aError::Malformed`].
    pub(crate) async fn follow_stream(
        &self,
        card: &AgentCardInfo,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Task> {
        match self.stream_named(card, method, params, deadline).await? {
            Streamed::Task(t) => Ok(t),
            Streamed::Message(_) => Err(A2aError::Malformed(
                "a subscription answered with a message instead of the task".into(),
            )),
        }
    }

    /// A streaming JSON-RPC call: reads events until the task settles, the stream ends or
    /// `deadline`.
    async fn stream_named(
        &self,
        card: &AgentCardInfo,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Streamed> {
        let req = self.request(card, method, params, "text/event-stream")?;
        let shown = req.url.to_string();
        let connect = self.http.settings().call_timeout;
        let (url, resp) = bounded(connect, &shown, self.http.send(req)).await?;
        let status = resp.status();
        let is_sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            // An error (or a server that answers at once) comes as a plain JSON-RPC body.
            let body = bounded(connect, &shown, read_capped(&url, resp, MAX_BODY)).await?;
            if let Some(e) = serde_json::from_slice::<Value>(&body).ok().as_ref().and_then(rpc_error) {
                return Err(e);
            }
            if !status.is_success() {
                return Err(status_error(&url, status));
            }
            let v: Value = serde_json::from_slice(&body)
                .map_err(|_| A2aError::Malformed(format!("{url}: neither an event stream nor JSON")))?;
            return Ok(match card.dialect.send_result(response_result(v)?)? {
                SendMessageResponse::Task(t) => Streamed::Task(t),
                SendMessageResponse::Message(m) => Streamed::Message(m),
            });
        }
        let events = events(card.dialect, capped_stream(url.clone(), resp, MAX_STREAM));
        let mut events = std::pin::pin!(events);
        let mut task: Option<Task> = None;
        loop {
            let next = match tokio::time::timeout_at(deadline, events.next()).await {
                Ok(Some(Ok(next))) => next,
                // A broken stream of a known task: polling takes over.
                Ok(Some(Err(e))) if task.is_some() => {
                    tracing::debug!(error = %e, "A2A stream broke; polling the task");
                    break;
                }
                Ok(Some(Err(e))) => return Err(e),
                // Ended, or out of time: what we have (polling takes over while time is left).
                Ok(None) | Err(_) => break,
            };
            let (event, last) = next;
            match event {
                StreamResponse::Message(m) if task.is_none() => return Ok(Streamed::Message(m)),
                StreamResponse::Message(m) => {
                    if let Some(t) = task.as_mut() {
                        t.history.get_or_insert_with(Vec::new).push(m);
                    }
                }
                StreamResponse::Task(t) => task = Some(t),
                StreamResponse::StatusUpdate(e) => match task.as_mut() {
                    Some(t) => t.status = e.status,
                    None => {
                        task = Some(Task {
                            id: e.task_id,
                            context_id: e.context_id,
                            status: e.status,
                            artifacts: None,
                            history: None,
                            metadata: None,
                        })
                    }
                },
                StreamResponse::ArtifactUpdate(e) => {
                    // An answer to a task that asked for input may start with its artifacts
                    // (a2a-sdk 1.3 sends no task event then): the task is made from the event.
                    let t = task.get_or_insert_with(|| Task {
                        id: e.task_id.clone(),
                        context_id: e.context_id.clone(),
                        status: a2a::TaskStatus {
                            state: TaskState::Working,
                            message: None,
                            timestamp: None,
                        },
                        artifacts: None,
                        history: None,
                        metadata: None,
                    });
                    merge_artifact(t, e.artifact, e.append.unwrap_or(false));
                }
            }
            if last || task.as_ref().is_some_and(|t| is_settled(&t.status.state)) {
                break;
            }
        }
        task.map(Streamed::Task)
            .ok_or_else(|| A2aError::Malformed(format!("{url}: the stream ended without a task or a message")))
    }
}

enum Streamed {
    Task(Task),
    Message(Message),
}

/// A streamed artifact chunk into the task: appended to the artifact of the same id when
/// `append`, else replacing it.
fn merge_artifact(task: &mut Task, artifact: a2a::Artifact, append: bool) {
    let list = task.artifacts.get_or_insert_with(Vec::new);
    match list.iter_mut().find(|a| a.artifact_id == artifact.artifact_id) {
        Some(existing) if append => existing.parts.extend(artifact.parts),
        Some(existing) => *existing = artifact,
        None => list.push(artifact),
    }
}

/// SSE events as (event, final) in `dialect`; each event's data is a JSON-RPC response.
fn events(
    dialect: Dialect,
    bytes: impl Stream<Item = std::result::Result<bytes::Bytes, A2aError>> + Send + 'static,
) -> impl Stream<Item = Result<(StreamResponse, bool)>> {
    bytes.eventsource().filter_map(move |e| async move {
        let e = match e {
            Ok(e) => e,
            Err(eventsource_stream::EventStreamError::Transport(t)) => return Some(Err(t)),
            Err(other) => return Some(Err(A2aError::Malformed(format!("event stream: {other}")))),
        };
        if e.data.trim().is_empty() {
            return None;
        }
        let v: Value = match serde_json::from_str(&e.data) {
            Ok(v) => v,
            Err(err) => return Some(Err(A2aError::Malformed(format!("a stream event is not JSON: {err}")))),
        };
        if let Some(err) = rpc_error(&v) {
            return Some(Err(err));
        }
        Some(response_result(v).and_then(|r| Ok(dialect.event(r)?)))
    })
}

/// The JSON-RPC error object of a response, if it has one.
fn rpc_error(v: &Value) -> Option<A2aError> {
    let e = v.get("error").filter(|e| e.is_object())?;
    let code = e.get("code").and_then(Value::as_i64).unwrap_or(0);
    let message: String = e
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("(no message)")
        .chars()
        .take(500)
        .collect();
    Some(A2aError::Rpc {
        code,
        name: rpc_code_name(code),
        message,
    })
}

/// The `result` of a JSON-RPC response (`null` is a result, absence is not).
fn response_result(v: Value) -> Result<Value> {
    match v {
        Value::Object(mut m) if m.contains_key("result") => Ok(m.remove("result").unwrap_or(Value::Null)),
        _ => Err(A2aError::Malformed(
            "a JSON-RPC response without `result` or `error`".into(),
        )),
    }
}

fn status_error(url: &Url, status: StatusCode) -> A2aError {
    let hint = match status.as_u16() {
        401 | 403 => format!(
            " (the agent wants credentials: the host config binds them to its origin, \
             [a2a.credentials.\"{}\"]; ask the bot's operator)",
            origin_of(url).unwrap_or_default()
        ),
        _ => String::new(),
    };
    A2aError::Status {
        url: url.to_string(),
        status: status.as_u16(),
        hint,
    }
}
