//! Following a task: `SubscribeToTask` / `tasks/resubscribe`, and push receivers registered with
//! `CreateTaskPushNotificationConfig` / `tasks/pushNotificationConfig/set`.

use std::time::Instant;

use axum::response::Response;
use serde_json::{Value, json};

use super::{PeerState, Shared, Wire, advance, lock, rpc_error, rpc_ok, sse, sse_later};

/// `SubscribeToTask` / `tasks/resubscribe`: the task now, then (for a running task) its
/// completion when the time comes.
pub(super) fn subscribe(shared: &Shared, id: Value, wire: Wire, task_id: &str) -> Response {
    let (snapshot, done_at, cut) = {
        let mut s = lock(shared);
        advance(&mut s, task_id);
        (
            s.tasks.get(task_id).cloned(),
            s.done_at.get(task_id).copied(),
            s.config.cut_streams,
        )
    };
    let Some(snapshot) = snapshot else {
        return rpc_error(&id, -32001, "Task not found");
    };
    if snapshot.state.is_final() {
        return rpc_error(&id, -32004, "the task is in a final state");
    }
    let mut events = vec![(None, snapshot.task_event(wire))];
    if cut || snapshot.state != PeerState::Working {
        return sse(id, events);
    }
    events.push((done_at, Value::String(task_id.to_owned())));
    sse_later(shared.clone(), id, wire, events)
}

/// Registers a push receiver for a task (push must be offered by the card).
pub(super) fn set_push(shared: &Shared, id: &Value, wire: Wire, params: &Value) -> Response {
    if !lock(shared).config.push {
        return rpc_error(id, -32003, "Push Notification is not supported");
    }
    let task_id = params["taskId"].as_str().unwrap_or_default().to_owned();
    let config = match wire {
        Wire::V1 => params.clone(),
        Wire::V03 => params["pushNotificationConfig"].clone(),
    };
    let (Some(url), token) = (config["url"].as_str(), config["token"].as_str()) else {
        return rpc_error(id, -32602, "no url");
    };
    let (url, token) = (url.to_owned(), token.map(str::to_owned));
    let done_at = {
        let s = lock(shared);
        if !s.tasks.contains_key(&task_id) {
            return rpc_error(id, -32001, "Task not found");
        }
        s.done_at.get(&task_id).copied()
    };
    let shared2 = shared.clone();
    let tid = task_id.clone();
    let (url2, token2) = (url.clone(), token.clone());
    tokio::spawn(async move {
        if let Some(at) = done_at {
            tokio::time::sleep(at.saturating_duration_since(Instant::now())).await;
        }
        let body = {
            let mut s = lock(&shared2);
            advance(&mut s, &tid);
            match s.tasks.get(&tid) {
                Some(t) => t.json(wire, 10),
                None => return,
            }
        };
        // reqwest is built without a default crypto provider.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut req = reqwest::Client::new().post(&url2).json(&body);
        if let Some(t) = &token2 {
            req = req.header("X-A2A-Notification-Token", t);
        }
        let status = match req.send().await {
            Ok(r) => r.status().as_u16(),
            Err(_) => 0,
        };
        lock(&shared2).pushes.push((url2, status));
    });
    let mut answer = json!({"taskId": task_id, "url": url, "id": "push-1"});
    if let Some(t) = token {
        answer["token"] = json!(t);
    }
    rpc_ok(id, answer)
}
