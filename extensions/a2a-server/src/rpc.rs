//! The JSON-RPC binding: `POST /a2a`, one request per body, answered in the dialect asked (A2A
//! 1.0 by `A2A-Version: 1.0` and PascalCase methods; 0.3 by its `message/send`-style names).
//! Errors carry the spec's codes (A2A 1.0 §5.4, §9.4) and never become an HTTP 500; a
//! notification (no `id`) gets no answer, only `204 No Content` (JSON-RPC 2.0 §4.1).

use std::convert::Infallible;
use std::sync::Arc;

use a2a::{A2AError, JsonRpcError, StreamResponse, TaskState, error_code, methods};
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;
use volcanic_a2a_dialect::{self as d, Dialect};

use crate::error::invalid_params;
use crate::runtime::{Started, Tenant, interrupted, trimmed};
use crate::{A2aServer, card};

/// Largest page of `ListTasks`.
pub const MAX_PAGE: usize = 100;
/// Page size when none is asked.
pub const DEFAULT_PAGE: usize = 50;

fn rpc_error(id: &Value, e: &A2AError) -> Value {
    let err: JsonRpcError = e.to_jsonrpc_error();
    json!({"jsonrpc": "2.0", "id": id, "error": err})
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}

fn error_response(id: &Value, e: &A2AError) -> Response {
    json_response(StatusCode::OK, &rpc_error(id, e))
}

/// A notification (a request without `id`): JSON-RPC 2.0 §4.1 says the server must not reply,
/// so the answer is `204 No Content` with no body. Every A2A method has a result its caller
/// needs (a task, a push config), so none is run for a caller that asked for no answer: an agent
/// run nobody hears of would only spend. Logged, so the caller's owner can find it.
fn notification(method: &str) -> Response {
    tracing::info!(
        method,
        "A2A JSON-RPC notification (no id) not run: A2A methods need an id"
    );
    StatusCode::NO_CONTENT.into_response()
}

/// Handles one JSON-RPC request.
pub(crate) async fn handle(State(server): State<Arc<A2aServer>>, headers: HeaderMap, body: Body) -> Response {
    let tenant = match server.caller_of(&headers) {
        Ok(Some(t)) => t.clone(),
        _ => {
            let mut r = json_response(
                StatusCode::UNAUTHORIZED,
                &json!({"error": "missing or wrong bearer token: send Authorization: Bearer <token> given by the agent's owner"}),
            );
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"a2a\""),
            );
            return r;
        }
    };
    let ctype = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mime = ctype.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if !(mime == "application/json" || mime.ends_with("+json")) {
        let e = A2AError::new(
            error_code::CONTENT_TYPE_NOT_SUPPORTED,
            format!("Content-Type {ctype:?} is not supported: send application/json"),
        );
        return json_response(StatusCode::UNSUPPORTED_MEDIA_TYPE, &rpc_error(&Value::Null, &e));
    }
    let limit = server.config.limits.max_body_bytes;
    let Ok(body) = axum::body::to_bytes(body, limit).await else {
        let e = A2AError::invalid_request(format!(
            "the request body is over {limit} bytes, this server's limit: send less (e.g. files by URL)"
        ));
        return json_response(StatusCode::PAYLOAD_TOO_LARGE, &rpc_error(&Value::Null, &e));
    };
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return error_response(&Value::Null, &A2AError::parse_error(format!("body is not JSON: {e}"))),
    };
    let Value::Object(request) = request else {
        return error_response(
            &Value::Null,
            &A2AError::invalid_request("a request must be one JSON object (batches are not supported)"),
        );
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    if !matches!(id, Value::Null | Value::String(_) | Value::Number(_)) {
        return error_response(
            &Value::Null,
            &A2AError::invalid_request("id must be a string, a number or null"),
        );
    }
    if request.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return error_response(&id, &A2AError::invalid_request("jsonrpc must be \"2.0\""));
    }
    let Some(method) = request.get("method").and_then(Value::as_str) else {
        return error_response(&id, &A2AError::invalid_request("method must be a string"));
    };
    if !request.contains_key("id") {
        return notification(method);
    }
    let version = headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim();
    let asked = if version.is_empty() || version.starts_with("0.3") {
        Dialect::V03
    } else if version == "1" || version == "1.0" || version.starts_with("1.0.") {
        Dialect::V1
    } else {
        let e = A2AError::version_not_supported(version);
        return error_response(
            &id,
            &A2AError::new(
                e.code,
                format!("A2A-Version {version:?} is not supported: use 1.0 or 0.3"),
            ),
        );
    };
    let dialect = if method.contains('/') {
        Dialect::V03
    } else {
        Dialect::V1
    };
    if dialect == Dialect::V1 && asked == Dialect::V03 && methods::is_valid(method) {
        let e = A2AError::new(
            error_code::VERSION_NOT_SUPPORTED,
            format!("{method} is an A2A 1.0 method: send the header A2A-Version: 1.0 (no header means 0.3)"),
        );
        return error_response(&id, &e);
    }
    let params = match request.get("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => camel_keys(m.clone()),
        Some(_) => return error_response(&id, &invalid_params("params must be an object")),
    };
    match dispatch(&server, &tenant, dialect, method, params).await {
        Ok(Reply::Result(v)) => json_response(StatusCode::OK, &json!({"jsonrpc": "2.0", "id": id, "result": v})),
        Ok(Reply::Stream(started, mode)) => sse(id, *started, mode, dialect),
        Err(e) => error_response(&id, &e),
    }
}

/// snake_case keys to lowerCamel (ProtoJSON parsers take both), at the levels that hold
/// field names: the params, `configuration`, its push config, `message`, `authentication`.
fn camel_keys(m: Map<String, Value>) -> Map<String, Value> {
    fn camel(k: &str) -> String {
        let mut out = String::with_capacity(k.len());
        let mut up = false;
        for c in k.chars() {
            if c == '_' {
                up = true;
            } else if up {
                out.extend(c.to_uppercase());
                up = false;
            } else {
                out.push(c);
            }
        }
        out
    }
    const NESTED: [&str; 6] = [
        "configuration",
        "taskPushNotificationConfig",
        "pushNotificationConfig",
        "message",
        "authentication",
        "config",
    ];
    m.into_iter()
        .map(|(k, v)| {
            let k = if k.contains('_') { camel(&k) } else { k };
            let v = match v {
                Value::Object(inner) if NESTED.contains(&k.as_str()) => Value::Object(camel_keys(inner)),
                other => other,
            };
            (k, v)
        })
        .collect()
}

enum Mode {
    /// A send stream: ends when the task settles or is interrupted; a direct message ends it.
    Send,
    /// A subscription: ends when the task is final.
    Subscribe,
}

enum Reply {
    Result(Value),
    Stream(Box<Started>, Mode),
}

fn parse<T: serde::de::DeserializeOwned>(params: Map<String, Value>, what: &str) -> Result<T, A2AError> {
    serde_json::from_value(Value::Object(params)).map_err(|e| invalid_params(format!("{what} params: {e}")))
}

fn req_str(params: &Map<String, Value>, key: &str) -> Result<String, A2AError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| invalid_params(format!("params.{key} is required (a string)")))
}

fn history_len(v: Option<i32>) -> Result<Option<usize>, A2AError> {
    match v {
        Some(n) if n < 0 => Err(invalid_params(format!("historyLength must be 0 or more, got {n}"))),
        Some(n) => Ok(Some(n as usize)),
        None => Ok(None),
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_default()
}

async fn dispatch(
    server: &A2aServer,
    tenant: &Arc<Tenant>,
    dialect: Dialect,
    method: &str,
    mut params: Map<String, Value>,
) -> Result<Reply, A2AError> {
    let v03 = dialect == Dialect::V03;
    let task_out = |t: &a2a::Task| if v03 { d::task_to_03(to_value(t)) } else { to_value(t) };
    match method {
        methods::SEND_MESSAGE
        | methods::SEND_STREAMING_MESSAGE
        | d::methods::SEND_MESSAGE
        | d::methods::SEND_STREAMING_MESSAGE => {
            if v03 {
                params = match d::send_params_03_to_v1(Value::Object(params)) {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
            }
            if !params.contains_key("message") {
                return Err(invalid_params("params.message is required"));
            }
            let req: a2a::SendMessageRequest = parse(params, "SendMessage")?;
            let conf = req.configuration.clone();
            let history = history_len(conf.as_ref().and_then(|c| c.history_length))?;
            let immediate = conf.as_ref().and_then(|c| c.return_immediately).unwrap_or(false);
            let mut started = tenant.send(req, v03)?;
            if method == methods::SEND_STREAMING_MESSAGE || method == d::methods::SEND_STREAMING_MESSAGE {
                return Ok(Reply::Stream(Box::new(started), Mode::Send));
            }
            let result = if immediate {
                a2a::SendMessageResponse::Task(trimmed(&started.task, history, true))
            } else {
                match wait_settled(&mut started).await {
                    Some(message) => a2a::SendMessageResponse::Message(message),
                    None => a2a::SendMessageResponse::Task(tenant.get(&started.task.id, history)?),
                }
            };
            Ok(Reply::Result(if v03 {
                d::send_result_to_03(&result)
            } else {
                to_value(&result)
            }))
        }
        methods::GET_TASK | d::methods::GET_TASK => {
            let id = req_str(&params, "id")?;
            let history = history_len(params.get("historyLength").and_then(Value::as_i64).map(|n| n as i32))?;
            Ok(Reply::Result(task_out(&tenant.get(&id, history)?)))
        }
        methods::LIST_TASKS | d::methods::LIST_TASKS => list(tenant, params, v03).map(Reply::Result),
        methods::CANCEL_TASK | d::methods::CANCEL_TASK => {
            let id = req_str(&params, "id")?;
            Ok(Reply::Result(task_out(&tenant.cancel(&id)?)))
        }
        methods::SUBSCRIBE_TO_TASK | d::methods::SUBSCRIBE_TO_TASK => {
            let id = req_str(&params, "id")?;
            Ok(Reply::Stream(Box::new(tenant.subscribe(&id)?), Mode::Subscribe))
        }
        methods::CREATE_PUSH_CONFIG | d::methods::CREATE_PUSH_CONFIG => {
            let cfg: a2a::TaskPushNotificationConfig = if v03 {
                let task_id = req_str(&params, "taskId")?;
                let inner = params
                    .get("pushNotificationConfig")
                    .ok_or_else(|| invalid_params("params.pushNotificationConfig is required"))?;
                serde_json::from_value(d::push_config_03_to_v1(inner, &task_id))
                    .map_err(|e| invalid_params(format!("pushNotificationConfig: {e}")))?
            } else {
                if let Some(Value::Object(inner)) = params.remove("config") {
                    params.extend(camel_keys(inner));
                }
                parse(params, "CreateTaskPushNotificationConfig")?
            };
            let saved = tenant.set_push(cfg, v03)?;
            Ok(Reply::Result(if v03 {
                d::push_config_v1_to_03(to_value(&saved))
            } else {
                to_value(&saved)
            }))
        }
        methods::GET_PUSH_CONFIG | d::methods::GET_PUSH_CONFIG => {
            let (task_id, id) = if v03 {
                let t = req_str(&params, "id")?;
                let c = params
                    .get("pushNotificationConfigId")
                    .and_then(Value::as_str)
                    .unwrap_or(&t)
                    .to_owned();
                (t, c)
            } else {
                (req_str(&params, "taskId")?, req_str(&params, "id")?)
            };
            let found = tenant
                .push_configs(&task_id)?
                .into_iter()
                .find(|c| c.id.as_deref() == Some(id.as_str()))
                .ok_or_else(|| {
                    A2AError::new(
                        error_code::TASK_NOT_FOUND,
                        format!("task {task_id} has no push config {id:?}"),
                    )
                })?;
            Ok(Reply::Result(if v03 {
                d::push_config_v1_to_03(to_value(&found))
            } else {
                to_value(&found)
            }))
        }
        methods::LIST_PUSH_CONFIGS | d::methods::LIST_PUSH_CONFIGS => {
            let task_id = req_str(&params, if v03 { "id" } else { "taskId" })?;
            let configs = tenant.push_configs(&task_id)?;
            Ok(Reply::Result(if v03 {
                Value::Array(configs.iter().map(|c| d::push_config_v1_to_03(to_value(c))).collect())
            } else {
                json!({"configs": configs, "nextPageToken": ""})
            }))
        }
        methods::DELETE_PUSH_CONFIG | d::methods::DELETE_PUSH_CONFIG => {
            let (task_id, id) = if v03 {
                (req_str(&params, "id")?, req_str(&params, "pushNotificationConfigId")?)
            } else {
                (req_str(&params, "taskId")?, req_str(&params, "id")?)
            };
            tenant.delete_push(&task_id, &id)?;
            Ok(Reply::Result(if v03 { Value::Null } else { json!({}) }))
        }
        methods::GET_EXTENDED_AGENT_CARD | d::methods::GET_EXTENDED_AGENT_CARD => {
            if server.config.card.extended_description.is_none() {
                return Err(A2AError::extended_card_not_configured());
            }
            let base = server.config.card.public_url.clone().unwrap_or_default();
            Ok(Reply::Result(card::card_json(
                &server.config.card,
                base.trim_end_matches('/'),
                true,
                v03,
            )))
        }
        other => Err(A2AError::method_not_found(other)),
    }
}

fn list(tenant: &Tenant, params: Map<String, Value>, v03: bool) -> Result<Value, A2AError> {
    let req: a2a::ListTasksRequest = parse(params, "ListTasks")?;
    let size = match req.page_size {
        None | Some(0) => DEFAULT_PAGE,
        Some(n) if n < 0 || n as usize > MAX_PAGE => {
            return Err(invalid_params(format!("pageSize must be 1 to {MAX_PAGE}, got {n}")));
        }
        Some(n) => n as usize,
    };
    let offset = match req.page_token.as_deref().filter(|t| !t.is_empty()) {
        None => 0,
        Some(t) => t
            .parse::<usize>()
            .map_err(|_| invalid_params(format!("pageToken {t:?} is not one this server gave")))?,
    };
    let history = history_len(req.history_length)?;
    let all = tenant.list(
        req.context_id.as_deref(),
        req.status.as_ref(),
        req.status_timestamp_after,
    );
    let total = all.len();
    let artifacts = req.include_artifacts.unwrap_or(false);
    let page: Vec<Value> = all
        .iter()
        .skip(offset)
        .take(size)
        .map(|t| {
            let t = trimmed(t, history, artifacts);
            if v03 { d::task_to_03(to_value(&t)) } else { to_value(&t) }
        })
        .collect();
    let next = if offset + size < total {
        (offset + size).to_string()
    } else {
        String::new()
    };
    Ok(json!({"tasks": page, "nextPageToken": next, "pageSize": size, "totalSize": total}))
}

/// Waits until the task settles or is interrupted (`None`), or answers with a message.
async fn wait_settled(started: &mut Started) -> Option<a2a::Message> {
    loop {
        match started.events.recv().await {
            Ok(StreamResponse::Message(m)) => return Some(m),
            Ok(StreamResponse::StatusUpdate(s)) if ends_send(&s.status.state) => return None,
            Ok(_) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => return None,
        }
    }
}

fn ends_send(s: &TaskState) -> bool {
    s.is_terminal() || interrupted(s)
}

fn sse(id: Value, started: Started, mode: Mode, dialect: Dialect) -> Response {
    let stream = event_stream(id, started, mode, dialect);
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}

fn frame(id: &Value, event: &StreamResponse, last: bool, dialect: Dialect) -> Result<Event, Infallible> {
    let result = match dialect {
        Dialect::V1 => to_value(event),
        Dialect::V03 => d::event_to_03(event, last),
    };
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
    Ok(Event::default().data(body.to_string()))
}

fn event_stream(
    id: Value,
    mut started: Started,
    mode: Mode,
    dialect: Dialect,
) -> impl Stream<Item = Result<Event, Infallible>> {
    async_stream(move |tx| async move {
        let mut first = true;
        if matches!(mode, Mode::Subscribe) {
            let snapshot = StreamResponse::Task(started.task.clone());
            let _ = tx.send(frame(&id, &snapshot, false, dialect)).await;
            first = false;
        }
        loop {
            let event = match started.events.recv().await {
                Ok(e) => e,
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            };
            if let StreamResponse::Message(_) = &event {
                let _ = tx.send(frame(&id, &event, true, dialect)).await;
                return;
            }
            if first {
                first = false;
                let snapshot = StreamResponse::Task(started.task.clone());
                if tx.send(frame(&id, &snapshot, false, dialect)).await.is_err() {
                    return;
                }
            }
            let last = match &event {
                StreamResponse::StatusUpdate(s) => match mode {
                    Mode::Send => ends_send(&s.status.state),
                    Mode::Subscribe => s.status.state.is_terminal(),
                },
                _ => false,
            };
            if tx.send(frame(&id, &event, last, dialect)).await.is_err() || last {
                return;
            }
        }
    })
}

/// A stream fed by a task: `f` gets a sender; the stream ends when `f` returns.
fn async_stream<F, Fut>(f: F) -> impl Stream<Item = Result<Event, Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<Event, Infallible>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(f(tx));
    tokio_stream::wrappers::ReceiverStream::new(rx)
}
