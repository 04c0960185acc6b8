//! The two A2A wire dialects, for the A2A client (`volcanic-a2a`) and server
//! (`volcanic-a2a-server`) alike. A2A 1.0 is read and written with `a2a-lf`'s types; A2A 0.3
//! (lowercase states, `kind`-tagged unions, bare results, `final` on status events) is translated
//! to and from the 1.0 shapes here, so everything above works on one model.
//!
//! - [`Dialect`]: which one an agent speaks, with the client's calls written and read in it.
//! - The server's side: 1.0 results and events out in 0.3's shapes ([`task_to_03`],
//!   [`send_result_to_03`], [`event_to_03`], [`push_config_v1_to_03`]), 0.3 params in as 1.0's
//!   ([`send_params_03_to_v1`], [`push_config_03_to_v1`]).
//! - [`methods`]: 0.3's method names; [`CARD_PATH`] and [`LEGACY_CARD_PATH`]: where cards are.

mod error;
pub mod methods;

use a2a::{Message, SendMessageResponse, StreamResponse, Task};
use serde_json::{Map, Value, json};

pub use error::{DialectError, Result};

/// Where 1.0 (and current 0.3) agents serve their card.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";
/// Where older 0.3 agents serve it.
pub const LEGACY_CARD_PATH: &str = "/.well-known/agent.json";

/// A wire dialect of an agent, chosen from its card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// A2A 1.0 (`SendMessage`, `TASK_STATE_*`, header `A2A-Version: 1.0`).
    V1,
    /// A2A 0.3 (`message/send`, `completed`, `kind` tags).
    V03,
}

/// The calls the client makes.
#[derive(Debug, Clone, Copy)]
pub enum Call {
    /// Send a message and get a task or a message back.
    Send,
    /// Send a message and follow the task's events.
    Stream,
    /// Read a task.
    Get,
    /// Cancel a task.
    Cancel,
}

impl Dialect {
    /// How it is shown.
    pub fn label(self) -> &'static str {
        match self {
            Dialect::V1 => "A2A 1.0",
            Dialect::V03 => "A2A 0.3",
        }
    }

    /// The JSON-RPC method of `call`.
    pub fn method(self, call: Call) -> &'static str {
        match (self, call) {
            (Dialect::V1, Call::Send) => a2a::methods::SEND_MESSAGE,
            (Dialect::V1, Call::Stream) => a2a::methods::SEND_STREAMING_MESSAGE,
            (Dialect::V1, Call::Get) => a2a::methods::GET_TASK,
            (Dialect::V1, Call::Cancel) => a2a::methods::CANCEL_TASK,
            (Dialect::V03, Call::Send) => methods::SEND_MESSAGE,
            (Dialect::V03, Call::Stream) => methods::SEND_STREAMING_MESSAGE,
            (Dialect::V03, Call::Get) => methods::GET_TASK,
            (Dialect::V03, Call::Cancel) => methods::CANCEL_TASK,
        }
    }

    /// Params of a send: the message, and whether the server may hold the answer until the task
    /// settles (`blocking`); 1.0 says it the other way round (`returnImmediately`).
    pub fn send_params(self, message: &Message, blocking: bool) -> Result<Value> {
        let wire = serde_json::to_value(message).map_err(|e| DialectError::Invalid(format!("message: {e}")))?;
        Ok(match self {
            Dialect::V1 => json!({"message": wire, "configuration": {"returnImmediately": !blocking}}),
            Dialect::V03 => json!({"message": message_to_03(wire), "configuration": {"blocking": blocking}}),
        })
    }

    /// Params of `GetTask` with the last `history` messages.
    pub fn get_params(self, id: &str, history: i32) -> Value {
        json!({"id": id, "historyLength": history})
    }

    /// The result of a send: a task or a direct message.
    pub fn send_result(self, v: Value) -> Result<SendMessageResponse> {
        match self {
            Dialect::V1 => parse(v, "SendMessage result"),
            Dialect::V03 => match kind(&v) {
                Some("task") => Ok(SendMessageResponse::Task(parse(task_from_03(v), "task")?)),
                Some("message") => Ok(SendMessageResponse::Message(parse(message_from_03(v), "message")?)),
                other => Err(DialectError::Malformed(format!(
                    "message/send result of kind {other:?}"
                ))),
            },
        }
    }

    /// A task (the result of get and cancel).
    pub fn task(self, v: Value) -> Result<Task> {
        match self {
            Dialect::V1 => parse(v, "task"),
            Dialect::V03 => parse(task_from_03(v), "task"),
        }
    }

    /// One event of a stream; `final` is 0.3's end-of-stream mark (1.0 ends the stream).
    pub fn event(self, v: Value) -> Result<(StreamResponse, bool)> {
        match self {
            Dialect::V1 => Ok((parse(v, "stream event")?, false)),
            Dialect::V03 => {
                let last = v.get("final").and_then(Value::as_bool).unwrap_or(false);
                let event = match kind(&v) {
                    Some("task") => StreamResponse::Task(parse(task_from_03(v), "task")?),
                    Some("message") => StreamResponse::Message(parse(message_from_03(v), "message")?),
                    Some("status-update") => {
                        StreamResponse::StatusUpdate(parse(status_event_from_03(v), "status-update")?)
                    }
                    Some("artifact-update") => {
                        StreamResponse::ArtifactUpdate(parse(artifact_event_from_03(v), "artifact-update")?)
                    }
                    other => return Err(DialectError::Malformed(format!("stream event of kind {other:?}"))),
                };
                Ok((event, last))
            }
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(v: Value, what: &str) -> Result<T> {
    serde_json::from_value(v).map_err(|e| DialectError::Malformed(format!("{what} does not have A2A's shape: {e}")))
}

fn kind(v: &Value) -> Option<&str> {
    v.get("kind").and_then(Value::as_str)
}

/// Copies the listed keys of `from` that are present.
fn pick(from: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    keys.iter()
        .filter_map(|k| {
            from.get(*k)
                .filter(|v| !v.is_null())
                .map(|v| ((*k).to_owned(), v.clone()))
        })
        .collect()
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// 0.3 state names to 1.0's (`input-required` → `TASK_STATE_INPUT_REQUIRED`).
fn state_from_03(s: &str) -> String {
    match s {
        "unknown" | "" => "TASK_STATE_UNSPECIFIED".to_owned(),
        other => format!("TASK_STATE_{}", other.replace('-', "_").to_ascii_uppercase()),
    }
}

fn parts_from_03(v: Option<&Value>) -> Value {
    let parts = v.and_then(Value::as_array).cloned().unwrap_or_default();
    Value::Array(parts.into_iter().map(|p| part_from_03(obj(p))).collect())
}

fn part_from_03(p: Map<String, Value>) -> Value {
    let mut out = pick(&p, &["metadata"]);
    match p.get("kind").and_then(Value::as_str) {
        Some("file") => {
            let file = p.get("file").cloned().map(obj).unwrap_or_default();
            if let Some(bytes) = file.get("bytes") {
                out.insert("raw".into(), bytes.clone());
            } else if let Some(uri) = file.get("uri") {
                out.insert("url".into(), uri.clone());
            }
            if let Some(name) = file.get("name") {
                out.insert("filename".into(), name.clone());
            }
            if let Some(mime) = file.get("mimeType") {
                out.insert("mediaType".into(), mime.clone());
            }
        }
        Some("data") => {
            out.insert("data".into(), p.get("data").cloned().unwrap_or(Value::Null));
        }
        _ => {
            out.insert("text".into(), p.get("text").cloned().unwrap_or(Value::Null));
        }
    }
    Value::Object(out)
}

/// A message's fields that are the same in both dialects.
const MESSAGE_FIELDS: &[&str] = &[
    "messageId",
    "contextId",
    "taskId",
    "metadata",
    "extensions",
    "referenceTaskIds",
];

fn message_from_03(v: Value) -> Value {
    let m = obj(v);
    let mut out = pick(&m, MESSAGE_FIELDS);
    let role = match m.get("role").and_then(Value::as_str) {
        Some("user") => "ROLE_USER",
        Some("agent") => "ROLE_AGENT",
        _ => "ROLE_UNSPECIFIED",
    };
    out.insert("role".into(), json!(role));
    out.insert("parts".into(), parts_from_03(m.get("parts")));
    Value::Object(out)
}

fn status_from_03(v: Option<&Value>) -> Value {
    let s = obj(v.cloned().unwrap_or(Value::Null));
    let mut out = pick(&s, &["timestamp"]);
    let state = s.get("state").and_then(Value::as_str).unwrap_or("unknown");
    out.insert("state".into(), json!(state_from_03(state)));
    if let Some(message) = s.get("message").filter(|m| m.is_object()) {
        out.insert("message".into(), message_from_03(message.clone()));
    }
    Value::Object(out)
}

fn artifact_from_03(v: Value) -> Value {
    let a = obj(v);
    let mut out = pick(&a, &["artifactId", "name", "description", "metadata", "extensions"]);
    out.insert("parts".into(), parts_from_03(a.get("parts")));
    Value::Object(out)
}

fn task_from_03(v: Value) -> Value {
    let t = obj(v);
    let mut out = pick(&t, &["id", "contextId", "metadata"]);
    out.insert("status".into(), status_from_03(t.get("status")));
    if let Some(Value::Array(list)) = t.get("artifacts") {
        out.insert("artifacts".into(), list.iter().cloned().map(artifact_from_03).collect());
    }
    if let Some(Value::Array(list)) = t.get("history") {
        out.insert("history".into(), list.iter().cloned().map(message_from_03).collect());
    }
    Value::Object(out)
}

fn status_event_from_03(v: Value) -> Value {
    let e = obj(v);
    let mut out = pick(&e, &["taskId", "contextId", "metadata"]);
    out.insert("status".into(), status_from_03(e.get("status")));
    Value::Object(out)
}

fn artifact_event_from_03(v: Value) -> Value {
    let e = obj(v);
    let mut out = pick(&e, &["taskId", "contextId", "append", "lastChunk", "metadata"]);
    out.insert(
        "artifact".into(),
        artifact_from_03(e.get("artifact").cloned().unwrap_or(Value::Null)),
    );
    Value::Object(out)
}

/// A 1.0 message (as JSON) in 0.3's shape.
fn message_to_03(v: Value) -> Value {
    let m = obj(v);
    let mut out = pick(&m, MESSAGE_FIELDS);
    out.insert("kind".into(), json!("message"));
    let role = if m.get("role").and_then(Value::as_str) == Some("ROLE_AGENT") {
        "agent"
    } else {
        "user"
    };
    out.insert("role".into(), json!(role));
    let parts = m.get("parts").and_then(Value::as_array).cloned().unwrap_or_default();
    out.insert("parts".into(), parts.into_iter().map(|p| part_to_03(obj(p))).collect());
    Value::Object(out)
}

fn part_to_03(p: Map<String, Value>) -> Value {
    let mut out = pick(&p, &["metadata"]);
    if let Some(text) = p.get("text") {
        out.insert("kind".into(), json!("text"));
        out.insert("text".into(), text.clone());
    } else if let Some(data) = p.get("data") {
        out.insert("kind".into(), json!("data"));
        out.insert("data".into(), data.clone());
    } else {
        let mut file = Map::new();
        if let Some(raw) = p.get("raw") {
            file.insert("bytes".into(), raw.clone());
        } else if let Some(url) = p.get("url") {
            file.insert("uri".into(), url.clone());
        }
        if let Some(name) = p.get("filename") {
            file.insert("name".into(), name.clone());
        }
        if let Some(mime) = p.get("mediaType") {
            file.insert("mimeType".into(), mime.clone());
        }
        out.insert("kind".into(), json!("file"));
        out.insert("file".into(), Value::Object(file));
    }
    Value::Object(out)
}

// ---- The server side: 1.0 results and events out in 0.3's shapes, 0.3 params in as 1.0's. ----

/// 1.0 state names to 0.3's (`TASK_STATE_INPUT_REQUIRED` → `input-required`).
fn state_to_03(s: &str) -> String {
    match s.strip_prefix("TASK_STATE_") {
        Some("UNSPECIFIED") | None => "unknown".to_owned(),
        Some(rest) => rest.to_ascii_lowercase().replace('_', "-"),
    }
}

fn status_to_03(v: Option<&Value>) -> Value {
    let s = obj(v.cloned().unwrap_or(Value::Null));
    let mut out = pick(&s, &["timestamp"]);
    let state = s.get("state").and_then(Value::as_str).unwrap_or("");
    out.insert("state".into(), json!(state_to_03(state)));
    if let Some(message) = s.get("message").filter(|m| m.is_object()) {
        out.insert("message".into(), message_to_03(message.clone()));
    }
    Value::Object(out)
}

fn artifact_to_03(v: Value) -> Value {
    let a = obj(v);
    let mut out = pick(&a, &["artifactId", "name", "description", "metadata", "extensions"]);
    let parts = a.get("parts").and_then(Value::as_array).cloned().unwrap_or_default();
    out.insert("parts".into(), parts.into_iter().map(|p| part_to_03(obj(p))).collect());
    Value::Object(out)
}

/// A 1.0 task (as JSON) in 0.3's shape: `kind: "task"`, lowercase states, `kind`-tagged parts.
pub fn task_to_03(v: Value) -> Value {
    let t = obj(v);
    let mut out = pick(&t, &["id", "contextId", "metadata"]);
    out.insert("kind".into(), json!("task"));
    out.insert("status".into(), status_to_03(t.get("status")));
    if let Some(Value::Array(list)) = t.get("artifacts") {
        out.insert("artifacts".into(), list.iter().cloned().map(artifact_to_03).collect());
    }
    if let Some(Value::Array(list)) = t.get("history") {
        out.insert("history".into(), list.iter().cloned().map(message_to_03).collect());
    }
    Value::Object(out)
}

/// A 1.0 message (as JSON) in 0.3's shape (`kind: "message"`, `role: "agent"`, tagged parts).
pub fn message_v1_to_03(v: Value) -> Value {
    message_to_03(v)
}

/// A 0.3 message (as JSON) in 1.0's shape, ready for `a2a::Message`.
pub fn message_03_to_v1(v: Value) -> Value {
    message_from_03(v)
}

/// A 1.0 `SendMessage` result (`{"task"}` / `{"message"}`) as 0.3's bare, `kind`-tagged result.
pub fn send_result_to_03(result: &SendMessageResponse) -> Value {
    match result {
        SendMessageResponse::Task(t) => task_to_03(serde_json::to_value(t).unwrap_or_default()),
        SendMessageResponse::Message(m) => message_to_03(serde_json::to_value(m).unwrap_or_default()),
    }
}

/// One 1.0 stream event as a 0.3 event: bare and `kind`-tagged; status updates carry `final`
/// (true when the stream ends after it).
pub fn event_to_03(event: &StreamResponse, last: bool) -> Value {
    match event {
        StreamResponse::Task(t) => task_to_03(serde_json::to_value(t).unwrap_or_default()),
        StreamResponse::Message(m) => message_to_03(serde_json::to_value(m).unwrap_or_default()),
        StreamResponse::StatusUpdate(e) => {
            let e = obj(serde_json::to_value(e).unwrap_or_default());
            let mut out = pick(&e, &["taskId", "contextId", "metadata"]);
            out.insert("kind".into(), json!("status-update"));
            out.insert("status".into(), status_to_03(e.get("status")));
            out.insert("final".into(), json!(last));
            Value::Object(out)
        }
        StreamResponse::ArtifactUpdate(e) => {
            let e = obj(serde_json::to_value(e).unwrap_or_default());
            let mut out = pick(&e, &["taskId", "contextId", "append", "lastChunk", "metadata"]);
            out.insert("kind".into(), json!("artifact-update"));
            out.insert(
                "artifact".into(),
                artifact_to_03(e.get("artifact").cloned().unwrap_or(Value::Null)),
            );
            Value::Object(out)
        }
    }
}

/// 0.3 push authentication (`{"schemes": ["Bearer"], "credentials"}`) as 1.0's
/// (`{"scheme", "credentials"}`), and back.
fn auth_from_03(v: &Value) -> Value {
    let scheme = v
        .get("schemes")
        .and_then(Value::as_array)
        .and_then(|s| s.first())
        .cloned()
        .unwrap_or(json!("Bearer"));
    let mut out = Map::new();
    out.insert("scheme".into(), scheme);
    if let Some(c) = v.get("credentials").filter(|c| !c.is_null()) {
        out.insert("credentials".into(), c.clone());
    }
    Value::Object(out)
}

fn auth_to_03(v: &Value) -> Value {
    let mut out = Map::new();
    out.insert(
        "schemes".into(),
        json!([v.get("scheme").cloned().unwrap_or(json!("Bearer"))]),
    );
    if let Some(c) = v.get("credentials").filter(|c| !c.is_null()) {
        out.insert("credentials".into(), c.clone());
    }
    Value::Object(out)
}

/// A 0.3 `PushNotificationConfig` (`{id?, url, token?, authentication?}`) for task `task_id` as a
/// 1.0 `TaskPushNotificationConfig` (JSON).
pub fn push_config_03_to_v1(v: &Value, task_id: &str) -> Value {
    let c = obj(v.clone());
    let mut out = pick(&c, &["id", "url", "token"]);
    out.insert("taskId".into(), json!(task_id));
    if let Some(a) = c.get("authentication").filter(|a| a.is_object()) {
        out.insert("authentication".into(), auth_from_03(a));
    }
    Value::Object(out)
}

/// A 1.0 `TaskPushNotificationConfig` (JSON) as 0.3's `{taskId, pushNotificationConfig}`.
pub fn push_config_v1_to_03(v: Value) -> Value {
    let c = obj(v);
    let mut inner = pick(&c, &["id", "url", "token"]);
    if let Some(a) = c.get("authentication").filter(|a| a.is_object()) {
        inner.insert("authentication".into(), auth_to_03(a));
    }
    json!({"taskId": c.get("taskId").cloned().unwrap_or(Value::Null), "pushNotificationConfig": inner})
}

/// 0.3 `message/send` / `message/stream` params as 1.0 `SendMessageRequest` params: the message
/// translated, `blocking` turned into `returnImmediately`, the push config carried over.
pub fn send_params_03_to_v1(v: Value) -> Value {
    let p = obj(v);
    let mut out = pick(&p, &["metadata"]);
    if let Some(m) = p.get("message") {
        out.insert("message".into(), message_from_03(m.clone()));
    }
    if let Some(Value::Object(c)) = p.get("configuration") {
        let mut conf = pick(c, &["acceptedOutputModes", "historyLength"]);
        if let Some(b) = c.get("blocking").and_then(Value::as_bool) {
            conf.insert("returnImmediately".into(), json!(!b));
        }
        if let Some(push) = c.get("pushNotificationConfig").filter(|x| x.is_object()) {
            conf.insert("taskPushNotificationConfig".into(), push_config_03_to_v1(push, ""));
        }
        out.insert("configuration".into(), Value::Object(conf));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod server_tests;
