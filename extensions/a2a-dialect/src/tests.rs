use super::*;
use a2a::{PartContent, Role, TaskState};
use pretty_assertions::assert_eq;

#[test]
fn a_03_task_reads_as_the_1_0_model() {
    let wire = json!({
        "kind": "task", "id": "t1", "contextId": "c1",
        "status": {"state": "input-required", "message": {"kind": "message", "messageId": "m1",
            "role": "agent", "parts": [{"kind": "text", "text": "which city?"}]}},
        "artifacts": [{"artifactId": "a1", "name": "out", "parts": [
            {"kind": "file", "file": {"bytes": "aGk=", "name": "hi.txt", "mimeType": "text/plain"}},
            {"kind": "file", "file": {"uri": "https://x.example/f"}},
            {"kind": "data", "data": {"k": 1}}]}]
    });
    let task = Dialect::V03.task(wire).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(task.status.state, TaskState::InputRequired);
    let msg = task.status.message.unwrap_or_else(|| panic!("no message"));
    assert_eq!((&msg.role, msg.text()), (&Role::Agent, Some("which city?")));
    let parts = &task.artifacts.unwrap_or_default()[0].parts;
    assert_eq!(parts[0].content, PartContent::Raw(b"hi".to_vec()));
    assert_eq!(parts[0].filename.as_deref(), Some("hi.txt"));
    assert_eq!(parts[1].content, PartContent::Url("https://x.example/f".into()));
    assert_eq!(parts[2].content, PartContent::Data(json!({"k": 1})));
}

#[test]
fn an_outgoing_message_is_written_in_each_dialect() {
    let mut m = Message::new(
        Role::User,
        vec![
            a2a::Part::text("hi"),
            a2a::Part::raw(b"x".to_vec()).with_filename("a.txt"),
        ],
    );
    m.message_id = "m1".into();
    let v1 = Dialect::V1.send_params(&m, false).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v1["message"]["role"], "ROLE_USER");
    assert_eq!(v1["message"]["parts"][1], json!({"raw": "eA==", "filename": "a.txt"}));
    assert_eq!(v1["configuration"], json!({"returnImmediately": true}));
    let v03 = Dialect::V03.send_params(&m, true).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        v03["message"],
        json!({"kind": "message", "messageId": "m1", "role": "user", "parts": [
            {"kind": "text", "text": "hi"},
            {"kind": "file", "file": {"bytes": "eA==", "name": "a.txt"}}]})
    );
    assert_eq!(v03["configuration"], json!({"blocking": true}));
    assert_eq!(Dialect::V03.method(Call::Send), "message/send");
    assert_eq!(Dialect::V1.method(Call::Cancel), "CancelTask");
}

#[test]
fn stream_events_of_both_dialects_parse_and_bad_ones_are_refused() {
    let (e, last) = Dialect::V03
        .event(json!({"kind": "status-update", "taskId": "t", "contextId": "c",
            "status": {"state": "completed"}, "final": true}))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(last);
    assert!(matches!(e, StreamResponse::StatusUpdate(s) if s.status.state == TaskState::Completed));
    let (e, _) = Dialect::V1
        .event(json!({"artifactUpdate": {"taskId": "t", "contextId": "c",
            "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}}}))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(e, StreamResponse::ArtifactUpdate(_)));
    for bad in [json!({"kind": "nonsense"}), json!(42), json!({"kind": "task", "id": 5})] {
        assert!(Dialect::V03.event(bad).is_err());
    }
    assert!(Dialect::V1.event(json!({"statusUpdate": {"taskId": []}})).is_err());
    assert!(Dialect::V1.send_result(json!(null)).is_err());
}
