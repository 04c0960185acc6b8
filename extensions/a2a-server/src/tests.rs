//! The server through its router: auth, tenancy, errors, durability, push address checks, the
//! card. The executor seam is tested in `executor_tests.rs`.

use std::sync::Arc;

use a2a::{Part, TaskState};
use async_trait::async_trait;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;

struct Echo;

#[async_trait]
impl Executor for Echo {
    async fn execute(&self, req: ExecRequest, ev: TaskEvents) {
        let text = req.message.text().unwrap_or_default().to_owned();
        if text == "slow" {
            ev.status(TaskState::Working, None).await;
            req.cancel.cancelled().await;
            return;
        }
        let artifact = a2a::Artifact {
            artifact_id: "a1".into(),
            name: None,
            description: None,
            parts: vec![Part::text(format!("echo: {text}"))],
            metadata: None,
            extensions: None,
        };
        ev.artifact(artifact, false, true).await;
        ev.status(TaskState::Completed, None).await;
    }
}

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";

fn config(state: Option<std::path::PathBuf>) -> ServerConfig {
    ServerConfig {
        callers: vec![
            Caller {
                name: "alice".into(),
                token: ALICE.into(),
            },
            Caller {
                name: "bob".into(),
                token: BOB.into(),
            },
        ],
        state_dir: state,
        ..ServerConfig::default()
    }
}

async fn call(server: &Arc<A2aServer>, token: Option<&str>, ctype: &str, body: Value) -> (StatusCode, Value, String) {
    let mut req = Request::post("/a2a")
        .header("content-type", ctype)
        .header("a2a-version", "1.0");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let resp = match server
        .router()
        .oneshot(req.body(Body::from(body.to_string())).unwrap_or_default())
        .await
    {
        Ok(r) => r,
        Err(e) => match e {},
    };
    let status = resp.status();
    let auth = resp
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null), auth)
}

/// The body of `call` as the caller with `token`, content type JSON.
async fn rpc_as(server: &Arc<A2aServer>, token: &str, body: Value) -> Value {
    call(server, Some(token), "application/json", body).await.1
}

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

/// `SendMessage` of `text` answered at once (`returnImmediately`), before the task settles.
fn send_later(text: &str) -> Value {
    rpc(
        "SendMessage",
        json!({"message": {"role": "ROLE_USER", "messageId": format!("m-{text}"), "parts": [{"text": text}]},
               "configuration": {"returnImmediately": true}}),
    )
}

/// `request` with the fields of `extra` added to its message (`taskId`, `contextId`).
fn with_message(mut request: Value, extra: Value) -> Value {
    if let (Some(m), Some(e)) = (request["params"]["message"].as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    request
}

fn send(text: &str) -> Value {
    rpc(
        "SendMessage",
        json!({"message": {"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": text}]}}),
    )
}

#[tokio::test]
async fn a_missing_or_wrong_token_is_401_with_www_authenticate() {
    let server = A2aServer::new(config(None), Arc::new(Echo)).unwrap_or_else(|e| panic!("{e}"));
    for token in [None, Some("not-the-token-at-all-xx")] {
        let (status, _, auth) = call(&server, token, "application/json", send("hi")).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(auth.starts_with("Bearer"), "{auth}");
    }
    let (status, body, _) = call(&server, Some(ALICE), "application/json", send("hi")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{body}"
    );
    assert_eq!(body["result"]["task"]["artifacts"][0]["parts"][0]["text"], "echo: hi");
}

#[tokio::test]
async fn one_callers_tasks_are_not_found_for_another() {
    let server = A2aServer::new(config(None), Arc::new(Echo)).unwrap_or_else(|e| panic!("{e}"));
    let (_, body, _) = call(&server, Some(ALICE), "application/json", send_later("slow")).await;
    let id = body["result"]["task"]["id"].as_str().unwrap_or_default().to_owned();
    assert!(!id.is_empty(), "{body}");
    for method in ["GetTask", "CancelTask", "SubscribeToTask"] {
        let b = rpc_as(&server, BOB, rpc(method, json!({"id": id}))).await;
        assert_eq!(b["error"]["code"], -32001, "{method}: {b}");
    }
    let b = rpc_as(&server, BOB, rpc("ListTasks", json!({}))).await;
    assert_eq!(b["result"]["tasks"], json!([]), "{b}");
    let b = rpc_as(&server, ALICE, rpc("GetTask", json!({"id": id}))).await;
    assert_eq!(b["result"]["id"], id.as_str(), "{b}");
    let b = rpc_as(&server, ALICE, rpc("CancelTask", json!({"id": id}))).await;
    assert_eq!(b["result"]["status"]["state"], "TASK_STATE_CANCELED", "{b}");
}

#[tokio::test]
async fn protocol_errors_carry_the_spec_codes() {
    let server = A2aServer::new(config(None), Arc::new(Echo)).unwrap_or_else(|e| panic!("{e}"));
    let (status, b, _) = call(&server, Some(ALICE), "text/plain", send("hi")).await;
    assert_eq!(
        (status, b["error"]["code"].clone()),
        (StatusCode::UNSUPPORTED_MEDIA_TYPE, json!(-32005))
    );
    let b = rpc_as(&server, ALICE, rpc("SendMessage", json!({}))).await;
    assert_eq!(b["error"]["code"], -32602, "{b}");
    let b = rpc_as(&server, ALICE, rpc("NoSuchMethod", json!({}))).await;
    assert_eq!(b["error"]["code"], -32601, "{b}");
    let b = rpc_as(&server, ALICE, json!([1, 2])).await;
    assert_eq!(b["error"]["code"], -32600, "{b}");
    let b = rpc_as(&server, ALICE, rpc("GetTask", json!({"id": "nope"}))).await;
    assert_eq!(b["error"]["code"], -32001, "{b}");
    assert_eq!(b["error"]["data"][0]["reason"], "TASK_NOT_FOUND", "{b}");
    let big = "x".repeat(2 * 1024 * 1024);
    let (status, b, _) = call(&server, Some(ALICE), "application/json", send(&big)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(b["error"]["code"], -32600, "{b}");
    let many: Vec<Value> = (0..40).map(|i| json!({"text": i.to_string()})).collect();
    let b = rpc_as(
        &server,
        ALICE,
        rpc(
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": many}}),
        ),
    )
    .await;
    assert_eq!(b["error"]["code"], -32602, "{b}");
    assert!(
        b["error"]["message"].as_str().unwrap_or("").contains("at most 32"),
        "{b}"
    );
}

#[tokio::test]
async fn a_notification_gets_no_answer_and_is_not_run() {
    let server = A2aServer::new(config(None), Arc::new(Echo)).unwrap_or_else(|e| panic!("{e}"));
    for method in ["SendMessage", "NoSuchMethod"] {
        let mut request = send("hi");
        request["method"] = json!(method);
        let Some(fields) = request.as_object_mut() else {
            panic!("{request}")
        };
        fields.remove("id");
        let (status, body, _) = call(&server, Some(ALICE), "application/json", request).await;
        assert_eq!((status, body), (StatusCode::NO_CONTENT, Value::Null), "{method}");
    }
    let b = rpc_as(&server, ALICE, rpc("ListTasks", json!({}))).await;
    assert_eq!(b["result"]["tasks"], json!([]), "{b}");
    // A request whose id is null is not a notification: it is answered.
    let mut request = send("hi");
    request["id"] = Value::Null;
    let b = rpc_as(&server, ALICE, request).await;
    assert_eq!(b["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{b}");
    assert_eq!(b["id"], Value::Null, "{b}");
}

#[tokio::test]
async fn a_push_config_to_loopback_is_refused_without_the_switch() {
    let server = A2aServer::new(config(None), Arc::new(Echo)).unwrap_or_else(|e| panic!("{e}"));
    let b = rpc_as(&server, ALICE, send("hi")).await;
    let id = b["result"]["task"]["id"].clone();
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://169.254.169.254/",
        "http://10.1.2.3/",
    ] {
        let b = rpc_as(
            &server,
            ALICE,
            rpc("CreateTaskPushNotificationConfig", json!({"taskId": id, "url": url})),
        )
        .await;
        assert_eq!(b["error"]["code"], -32602, "{url}: {b}");
    }
    let b = rpc_as(
        &server,
        ALICE,
        rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": "https://example.com/hook"}),
        ),
    )
    .await;
    assert_eq!(b["result"]["id"], id, "a config without id gets the task's id: {b}");
}

#[test]
fn the_loopback_switch_allows_loopback_only() {
    assert!(push::check_url("http://127.0.0.1:8080/x", true).is_ok());
    assert!(push::check_url("http://localhost:8080/x", true).is_ok());
    assert!(push::check_url("http://192.168.1.1/x", true).is_err());
    assert!(push::check_url("http://[fe80::1]/x", true).is_err());
    assert!(push::check_url("http://[::ffff:10.0.0.1]/x", true).is_err());
    assert!(push::check_url("ftp://example.com/x", false).is_err());
}

#[tokio::test]
async fn a_task_working_at_a_crash_is_failed_after_a_restart() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let id = {
        let server = A2aServer::new(config(Some(dir.path().into())), Arc::new(Echo)).unwrap_or_else(|e| panic!("{e}"));
        let b = rpc_as(&server, ALICE, send_later("slow")).await;
        b["result"]["task"]["id"].as_str().unwrap_or_default().to_owned()
    };
    assert!(dir.path().join("a2a/alice/tasks").join(format!("{id}.json")).exists());
    let server = A2aServer::new(config(Some(dir.path().into())), Arc::new(Echo)).unwrap_or_else(|e| panic!("{e}"));
    let b = rpc_as(&server, ALICE, rpc("GetTask", json!({"id": id}))).await;
    assert_eq!(b["result"]["status"]["state"], "TASK_STATE_FAILED", "{b}");
    assert_eq!(b["result"]["status"]["message"]["parts"][0]["text"], INTERRUPTED);
    let b = rpc_as(&server, BOB, rpc("GetTask", json!({"id": id}))).await;
    assert_eq!(b["error"]["code"], -32001, "{b}");
}

#[test]
fn bad_callers_are_refused_at_start() {
    let mut c = config(None);
    c.callers[1].token = "short".into();
    assert!(matches!(
        A2aServer::new(c, Arc::new(Echo)),
        Err(ServerError::WeakToken(_))
    ));
    let mut c = config(None);
    c.callers[1].name = "../x".into();
    assert!(matches!(
        A2aServer::new(c, Arc::new(Echo)),
        Err(ServerError::CallerName(_))
    ));
    let mut c = config(None);
    c.callers[1].token = ALICE.into();
    assert!(matches!(
        A2aServer::new(c, Arc::new(Echo)),
        Err(ServerError::Duplicate(_))
    ));
}

async fn card(server: &Arc<A2aServer>, path: &str) -> Value {
    let resp = match server
        .router()
        .oneshot(Request::get(path).body(Body::empty()).unwrap_or_default())
        .await
    {
        Ok(r) => r,
        Err(e) => match e {},
    };
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

#[tokio::test]
async fn the_card_carries_the_0_3_fields_unless_strict() {
    let mut cfg = config(None);
    cfg.card.public_url = Some("https://bot.example.org".into());
    let server = A2aServer::new(cfg.clone(), Arc::new(Echo)).unwrap_or_else(|e| panic!("{e}"));
    for path in ["/.well-known/agent-card.json", "/.well-known/agent.json"] {
        let c = card(&server, path).await;
        assert_eq!(c["url"], "https://bot.example.org/a2a", "{path}: {c}");
        assert_eq!(c["protocolVersion"], "0.3.0");
        assert_eq!(c["securitySchemes"]["bearer"]["type"], "http");
        assert_eq!(
            c["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
            "Bearer"
        );
        assert_eq!(c["supportedInterfaces"][0]["protocolVersion"], "1.0");
    }
    cfg.card.strict = true;
    let server = A2aServer::new(cfg, Arc::new(Echo)).unwrap_or_else(|e| panic!("{e}"));
    let c = card(&server, "/.well-known/agent-card.json").await;
    assert!(
        c.get("url").is_none() && c["securitySchemes"]["bearer"].get("type").is_none(),
        "{c}"
    );
    assert_eq!(
        card(&server, "/.well-known/agent.json").await["url"],
        "https://bot.example.org/a2a"
    );
}

#[tokio::test]
async fn the_card_answers_304_to_a_weak_etag_and_to_if_modified_since() {
    let server = A2aServer::new(config(None), Arc::new(Echo)).unwrap_or_else(|e| panic!("{e}"));
    let get = |name: &'static str, value: String| {
        let server = server.clone();
        async move {
            let mut req = Request::get("/.well-known/agent-card.json");
            if !name.is_empty() {
                req = req.header(name, value);
            }
            match server
                .router()
                .oneshot(req.body(Body::empty()).unwrap_or_default())
                .await
            {
                Ok(r) => r,
                Err(e) => match e {},
            }
        }
    };
    let first = get("", String::new()).await;
    let header = |n: &str| {
        first
            .headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let (etag, modified) = (header("etag"), header("last-modified"));
    assert_eq!(
        get("if-none-match", format!("W/{etag}")).await.status(),
        StatusCode::NOT_MODIFIED
    );
    assert_eq!(
        get("if-modified-since", modified).await.status(),
        StatusCode::NOT_MODIFIED
    );
    let old = "Mon, 01 Jan 2001 00:00:00 GMT".to_owned();
    assert_eq!(get("if-modified-since", old).await.status(), StatusCode::OK);
    assert_eq!(get("if-none-match", "\"other\"".into()).await.status(), StatusCode::OK);
}

#[path = "executor_tests.rs"]
mod executor;
