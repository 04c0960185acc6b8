//! The server-side conversions: 1.0 out as 0.3, 0.3 params in as 1.0.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

#[test]
fn a_task_goes_out_in_0_3_shape() {
    let v1 = json!({"id": "t", "contextId": "c",
        "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "which?"}]}},
        "artifacts": [{"artifactId": "a", "parts": [{"raw": "dGNr", "filename": "o.txt", "mediaType": "text/plain"}]}]});
    let v03 = task_to_03(v1.clone());
    assert_eq!(v03["kind"], "task");
    assert_eq!(v03["status"]["state"], "input-required");
    assert_eq!(v03["status"]["message"]["role"], "agent");
    assert_eq!(
        v03["artifacts"][0]["parts"][0],
        json!({"kind": "file", "file": {"bytes": "dGNr", "name": "o.txt", "mimeType": "text/plain"}})
    );
    // and back: the client's reading gives the same task
    assert_eq!(task_from_03(v03)["status"]["state"], v1["status"]["state"]);
}

#[test]
fn status_events_carry_final_in_0_3() {
    let event: StreamResponse = serde_json::from_value(json!({"statusUpdate": {"taskId": "t", "contextId": "c",
        "status": {"state": "TASK_STATE_COMPLETED"}}}))
    .unwrap_or_else(|e| panic!("{e}"));
    let v = event_to_03(&event, true);
    assert_eq!(v["kind"], "status-update");
    assert_eq!(v["final"], true);
    assert_eq!(v["status"]["state"], "completed");
}

#[test]
fn send_params_0_3_become_1_0() {
    let p = send_params_03_to_v1(json!({
        "message": {"kind": "message", "role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "hi"}]},
        "configuration": {"blocking": false, "pushNotificationConfig": {"url": "https://x/h", "token": "t",
            "authentication": {"schemes": ["Bearer"], "credentials": "s"}}}}));
    assert_eq!(p["message"]["role"], "ROLE_USER");
    assert_eq!(p["message"]["parts"][0], json!({"text": "hi"}));
    assert_eq!(p["configuration"]["returnImmediately"], true);
    assert_eq!(
        p["configuration"]["taskPushNotificationConfig"]["authentication"],
        json!({"scheme": "Bearer", "credentials": "s"})
    );
    let back = push_config_v1_to_03(json!({"taskId": "t", "id": "p", "url": "https://x/h",
        "authentication": {"scheme": "Bearer", "credentials": "s"}}));
    assert_eq!(
        back["pushNotificationConfig"]["authentication"]["schemes"],
        json!(["Bearer"])
    );
    assert_eq!(back["taskId"], "t");
}
