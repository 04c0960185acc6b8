//! Our client against the official Python `a2a-sdk` (1.3.0) serving the scripted agent of
//! `tests/peers/a2a_sdk_peer.py`, in three modes (1.0 only, 1.0 with 0.3, a card offering 0.3
//! only): send and answer, a long task followed by polling, by subscribe and by push, cancel,
//! input-required answered, a failed task, and a bearer-protected agent.

use super::watch::{CHAT, Recorder, delivered, fast, short_wait};
use super::*;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;
use volcanic_a2a::{A2AWatchRegistry, Credential, PushSettings};
use volcanic_testkit::testdeps;

const SDK_MODES: [&str; 3] = ["v1", "both", "v03"];

/// A peer process on a free port; killed on drop.
pub struct SdkPeer {
    child: Child,
    pub url: String,
}

impl Drop for SdkPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn sdk_peer(mode: &str, flags: &str) -> SdkPeer {
    let python = testdeps::python().unwrap_or_else(|e| panic!("{e}"));
    let script = testdeps::repo_root().join("tests/peers/a2a_sdk_peer.py");
    started(|port| {
        let mut c = Command::new(&python);
        c.arg(&script).arg(port.to_string()).arg(mode).arg(flags);
        c
    })
    .await
}

/// Starts `command(port)` on a free port and waits (up to 60 s) until it serves its card.
pub async fn started(command: impl FnOnce(u16) -> Command) -> SdkPeer {
    // reqwest is built without a default crypto provider (the client installs ring's too).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = command(port).stdout(Stdio::null()).spawn().unwrap();
    let peer = SdkPeer {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let card = format!("{}/.well-known/agent-card.json", peer.url);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if reqwest::get(&card).await.is_ok_and(|r| r.status().is_success()) {
            return peer;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the peer at {} did not start",
            peer.url
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn tool_on(url: &str, settings: A2aSettings) -> (A2aTool, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    list_agent(dir.path(), url);
    (A2aTool::new(A2aClient::new(settings).unwrap(), Arc::default()), dir)
}

pub async fn run(tool: &A2aTool, ws: &std::path::Path, a: A2aArgs) -> Result<String, String> {
    tool.call(a, ws)
        .await
        .map(|r| r.text_content())
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn send_input_required_fail_and_cancel_against_the_python_sdk() {
    for mode in SDK_MODES {
        let peer = sdk_peer(mode, "").await;
        let (tool, dir) = tool_on(&peer.url, quick());
        let ws = dir.path();
        let agents = run(&tool, ws, args(Action::Agents)).await.unwrap();
        let label = if mode == "v03" { "A2A 0.3" } else { "A2A 1.0" };
        assert!(agents.contains(label), "{mode}: {agents}");
        let out = run(&tool, ws, send("hello sdk")).await.unwrap();
        assert!(
            out.contains("answer: hello sdk") && out.contains("state: completed"),
            "{mode}: {out}"
        );
        let asked = run(&tool, ws, send("ask for a colour")).await.unwrap();
        assert!(
            asked.contains("input-required") && asked.contains("which one?"),
            "{mode}: {asked}"
        );
        let answer = A2aArgs {
            task_id: Some(field(&asked, "task_id")),
            ..send("the blue one")
        };
        let done = run(&tool, ws, answer).await.unwrap();
        assert!(done.contains("thanks: the blue one"), "{mode}: {done}");
        let failed = run(&tool, ws, send("fail now")).await.unwrap();
        assert!(
            failed.contains("state: failed") && failed.contains("failed on purpose"),
            "{mode}: {failed}"
        );
        // A long task outlives a short wait, then is cancelled.
        let (tool, _d) = tool_on(&peer.url, short_wait());
        list_agent(ws, &peer.url);
        let long = run(&tool, ws, send("run 30 slowly")).await.unwrap();
        let id = field(&long, "task_id");
        let canceled = run(
            &tool,
            ws,
            A2aArgs {
                task_id: Some(id),
                ..args(Action::Cancel)
            },
        )
        .await
        .unwrap();
        assert_eq!(field(&canceled, "state"), "canceled", "{mode}: {canceled}");
    }
}

#[tokio::test]
async fn a_bearer_protected_sdk_agent_takes_the_token_bound_to_its_origin() {
    let peer = sdk_peer("both", "bearer=sdk-secret").await;
    let mut settings = quick();
    settings
        .add_credential(&peer.url, Credential::Bearer("sdk-secret".into()))
        .unwrap();
    let (tool, dir) = tool_on(&peer.url, settings);
    let out = run(&tool, dir.path(), send("hello")).await.unwrap();
    assert!(out.contains("answer: hello"), "{out}");
    let (bare, dir) = tool_on(&peer.url, quick());
    let e = run(&bare, dir.path(), send("hello")).await.unwrap_err();
    assert!(e.contains("HTTP 401") && e.contains("a2a.credentials"), "{e}");
}

#[tokio::test]
async fn long_sdk_tasks_are_followed_by_polling_subscribe_and_push() {
    for mode in SDK_MODES {
        for (flags, how) in [("nostream,nopush", "polling"), ("nopush", "subscribe"), ("", "push")] {
            let peer = sdk_peer(mode, flags).await;
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
            let public = format!("http://{}/", listener.local_addr().unwrap());
            let push = PushSettings {
                public_url: url::Url::parse(&public).unwrap(),
                key: vec![9; 32],
            };
            let rec = Arc::new(Recorder::default());
            let stop = CancellationToken::new();
            let _guard = stop.clone().drop_guard();
            let client = A2aClient::new(short_wait()).unwrap();
            let registry = A2AWatchRegistry::new(client.clone(), rec.clone(), fast(None, Some(push)), stop);
            let pushes: Arc<Mutex<usize>> = Arc::default();
            let (r2, p2) = (registry.clone(), pushes.clone());
            let app = axum::Router::new().route(
                "/a2a/push/{id}",
                axum::routing::post(
                    move |axum::extract::Path(id): axum::extract::Path<String>,
                          headers: axum::http::HeaderMap,
                          body: axum::body::Bytes| async move {
                        let token = headers
                            .get("x-a2a-notification-token")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default();
                        let ok = r2.on_push(&id, &[token], &body).is_ok();
                        if ok {
                            *p2.lock().unwrap() += 1;
                        }
                        if ok {
                            axum::http::StatusCode::OK
                        } else {
                            axum::http::StatusCode::UNAUTHORIZED
                        }
                    },
                ),
            );
            tokio::spawn(async move { axum::serve(listener, app).await });
            let dir = tempfile::tempdir().unwrap();
            list_agent(dir.path(), &peer.url);
            let tool = A2aTool::watched(client, Arc::default(), registry, CHAT);
            let out = tool
                .call(send("run 2 the sums"), dir.path())
                .await
                .unwrap()
                .text_content();
            assert!(out.contains(&format!("followed ({how})")), "{mode} {flags}: {out}");
            let got = delivered(&rec, 1).await;
            assert_eq!(got[0].state, "completed", "{mode} {flags}");
            assert!(got[0].prompt.contains("done: run 2 the sums"), "{}", got[0].prompt);
            if how == "push" {
                assert!(
                    *pushes.lock().unwrap() >= 1,
                    "{mode}: the SDK's push reached the receiver"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_long_task_that_asks_for_input_is_delivered_then_answered() {
    let peer = sdk_peer("both", "nopush").await;
    let rec = Arc::new(Recorder::default());
    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();
    let client = A2aClient::new(short_wait()).unwrap();
    let registry = A2AWatchRegistry::new(client.clone(), rec.clone(), fast(None, None), stop);
    let dir = tempfile::tempdir().unwrap();
    list_agent(dir.path(), &peer.url);
    let tool = A2aTool::watched(client, Arc::default(), registry, CHAT);
    let out = tool
        .call(send("later 1 pick"), dir.path())
        .await
        .unwrap()
        .text_content();
    assert!(out.contains("followed (subscribe)"), "{out}");
    let got = delivered(&rec, 1).await;
    assert_eq!(got[0].state, "input-required");
    assert!(got[0].key.contains("· round "), "{}", got[0].key);
    assert!(
        got[0].prompt.contains("which one?") && got[0].prompt.contains("action send"),
        "{}",
        got[0].prompt
    );
    let answer = A2aArgs {
        task_id: Some(got[0].task_id.clone()),
        ..send("the green one")
    };
    let done = tool.call(answer, dir.path()).await.unwrap().text_content();
    assert!(done.contains("thanks: the green one"), "{done}");
}
