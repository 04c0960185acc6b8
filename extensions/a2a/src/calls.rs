//! The calls the watch registry makes besides send/get/cancel, in each dialect: subscribing to a
//! task's events and registering a push receiver (A2A 1.0 `SubscribeToTask`,
//! `CreateTaskPushNotificationConfig`; A2A 0.3 `tasks/resubscribe`,
//! `tasks/pushNotificationConfig/set`).

use serde_json::{Value, json};
use volcanic_a2a_dialect::{Dialect, methods};

/// The method that streams a task's events from now on.
pub(crate) fn subscribe_method(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::V1 => a2a::methods::SUBSCRIBE_TO_TASK,
        Dialect::V03 => methods::SUBSCRIBE_TO_TASK,
    }
}

/// Params of the subscription to task `id`.
pub(crate) fn subscribe_params(id: &str) -> Value {
    json!({"id": id})
}

/// The method that registers a push receiver for a task.
pub(crate) fn push_method(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::V1 => a2a::methods::CREATE_PUSH_CONFIG,
        Dialect::V03 => methods::CREATE_PUSH_CONFIG,
    }
}

/// Params registering `url` (with `token`, which the agent sends back in
/// `X-A2A-Notification-Token`) for task `id`.
pub(crate) fn push_params(dialect: Dialect, id: &str, url: &str, token: &str) -> Value {
    match dialect {
        Dialect::V1 => json!({"taskId": id, "url": url, "token": token}),
        Dialect::V03 => json!({"taskId": id, "pushNotificationConfig": {"url": url, "token": token}}),
    }
}

/// The task id a push notification body names, in either dialect: a 1.0 `StreamResponse`
/// (`{"task": …}`, `{"statusUpdate": …}`, `{"artifactUpdate": …}`), a bare task (0.3 and some
/// 1.0 senders), or a 0.3 event (`taskId`).
pub(crate) fn pushed_task_id(body: &Value) -> Option<String> {
    let direct = |v: &Value| {
        v.get("taskId")
            .or_else(|| v.get("id").filter(|_| v.get("status").is_some()))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    ["task", "statusUpdate", "artifactUpdate", "message"]
        .iter()
        .find_map(|k| body.get(*k).and_then(direct))
        .or_else(|| direct(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushed_bodies_name_their_task_in_both_dialects() {
        let v1_task = json!({"task": {"id": "t1", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}});
        let v1_status =
            json!({"statusUpdate": {"taskId": "t2", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}});
        let v03_task = json!({"kind": "task", "id": "t3", "contextId": "c", "status": {"state": "completed"}});
        let v03_event = json!({"kind": "status-update", "taskId": "t4", "status": {"state": "failed"}, "final": true});
        assert_eq!(pushed_task_id(&v1_task).as_deref(), Some("t1"));
        assert_eq!(pushed_task_id(&v1_status).as_deref(), Some("t2"));
        assert_eq!(pushed_task_id(&v03_task).as_deref(), Some("t3"));
        assert_eq!(pushed_task_id(&v03_event).as_deref(), Some("t4"));
        assert_eq!(pushed_task_id(&json!({"hello": 1})), None);
        assert_eq!(subscribe_method(Dialect::V03), "tasks/resubscribe");
        assert_eq!(
            push_params(Dialect::V03, "t", "u", "k")["pushNotificationConfig"]["token"],
            "k"
        );
    }
}
