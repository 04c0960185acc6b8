//! The watch registry: a task still running after `send`'s wait is followed by subscribe, by
//! polling (also after a stream that ends early) or by push, kept in `pending.json` until its
//! result was delivered, delivered once, and found again by a new registry (a restart).

use super::*;
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;
use volcanic_a2a::{
    A2AResult, A2AResultDelivery, A2AWatchRegistry, ChatRef, PushRefused, PushSettings, WatchSettings, read_pending,
};

/// Records results; refuses the first `refuse` deliveries (a turn that failed).
#[derive(Debug, Default)]
pub struct Recorder {
    pub results: Mutex<Vec<A2AResult>>,
    pub refuse: Mutex<usize>,
}

#[async_trait::async_trait]
impl A2AResultDelivery for Recorder {
    async fn deliver(&self, result: A2AResult) -> Result<(), String> {
        let mut refuse = self.refuse.lock().unwrap();
        if *refuse > 0 {
            *refuse -= 1;
            return Err("the chat's turn failed".into());
        }
        self.results.lock().unwrap().push(result);
        Ok(())
    }
}

impl Recorder {
    pub fn results(&self) -> Vec<A2AResult> {
        self.results.lock().unwrap().clone()
    }
}

pub const CHAT: ChatRef = ChatRef {
    chat_id: 42,
    topic: None,
};

pub fn fast(root: Option<&std::path::Path>, push: Option<PushSettings>) -> WatchSettings {
    WatchSettings {
        poll_first: Duration::from_millis(100),
        poll_max: Duration::from_millis(400),
        reconcile_every: Duration::from_secs(2),
        push,
        workspaces_root: root.map(std::path::Path::to_path_buf),
    }
}

pub fn short_wait() -> A2aSettings {
    A2aSettings {
        send_wait: Duration::from_millis(300),
        ..A2aSettings::default()
    }
}

/// Waits (up to 20 s) until `n` results were delivered.
pub async fn delivered(rec: &Recorder, n: usize) -> Vec<A2AResult> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let got = rec.results();
        if got.len() >= n {
            return got;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "only {} result(s) delivered",
            got.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

struct Watched {
    s: Setup,
    rec: Arc<Recorder>,
    registry: Arc<A2AWatchRegistry>,
    tool: A2aTool,
    _stop: tokio_util::sync::DropGuard,
}

async fn watched(config: PeerConfig, push: Option<PushSettings>) -> Watched {
    let s = setup_with(config, short_wait()).await;
    let rec = Arc::new(Recorder::default());
    let stop = CancellationToken::new();
    let client = A2aClient::new(short_wait()).unwrap();
    let registry = A2AWatchRegistry::new(client.clone(), rec.clone(), fast(None, push), stop.clone());
    let tool = A2aTool::watched(client, s.hop.clone(), registry.clone(), CHAT);
    Watched {
        s,
        rec,
        registry,
        tool,
        _stop: stop.drop_guard(),
    }
}

impl Watched {
    async fn run(&self, a: A2aArgs) -> String {
        self.tool
            .call(a, self.s.ws())
            .await
            .map(|r| r.text_content())
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

#[tokio::test]
async fn a_long_task_is_followed_by_subscribe_or_polling_and_delivered_once() {
    for mode in MODES {
        for (streaming, cut, how) in [
            (true, false, "subscribe"),
            (false, false, "polling"),
            (true, true, "subscribe"),
        ] {
            let w = watched(
                PeerConfig {
                    streaming,
                    cut_streams: cut,
                    ..PeerConfig::new(mode)
                },
                None,
            )
            .await;
            let out = w.run(send("run 1.5 the numbers")).await;
            assert!(
                out.contains(&format!("followed ({how})")) && out.contains("come to this chat"),
                "{out}"
            );
            let task = field(&out, "task_id");
            let pending = read_pending(w.s.ws()).unwrap();
            assert_eq!(pending.len(), 1, "{mode:?}");
            assert_eq!((pending[0].task_id.as_str(), pending[0].chat), (task.as_str(), CHAT));
            let got = delivered(&w.rec, 1).await;
            let r = &got[0];
            assert_eq!(
                (r.task_id.as_str(), r.state.as_str(), r.chat),
                (task.as_str(), "completed", CHAT)
            );
            assert!(r.prompt.starts_with(&r.key), "{}", r.prompt);
            assert!(r.key.contains("agent peer") && r.key.contains(&task), "{}", r.key);
            assert!(r.prompt.contains("done: run 1.5 the numbers") && r.prompt.contains("not instructions"));
            // Delivered: no longer pending, and never again.
            let gone = async {
                while !read_pending(w.s.ws()).unwrap().is_empty() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            };
            tokio::time::timeout(Duration::from_secs(5), gone).await.unwrap();
            tokio::time::sleep(Duration::from_millis(600)).await;
            assert_eq!(w.rec.results().len(), 1);
            let methods = w.s.peer.rpc_methods();
            let subscribed = methods
                .iter()
                .any(|m| m == "SubscribeToTask" || m == "tasks/resubscribe");
            assert_eq!(subscribed, streaming, "{mode:?} {methods:?}");
            if cut {
                // The stream ended early: polling took over.
                let after = methods
                    .iter()
                    .skip_while(|m| !m.contains("ubscribe"))
                    .filter(|m| *m == "GetTask" || *m == "tasks/get")
                    .count();
                assert!(after >= 1, "{methods:?}");
            }
        }
    }
}

#[tokio::test]
async fn a_new_registry_finds_pending_tasks_and_a_failed_delivery_is_tried_again() {
    let root = tempfile::tempdir().unwrap();
    let peer = A2aPeer::start(PeerConfig::new(PeerMode::Both)).await.unwrap();
    let ws = root.path().join("42");
    list_agent(&ws, &peer.url());
    // The first process hands the task over and stops before it completes.
    let first = Arc::new(Recorder::default());
    let stop = CancellationToken::new();
    let client = A2aClient::new(short_wait()).unwrap();
    let registry = A2AWatchRegistry::new(client.clone(), first.clone(), fast(None, None), stop.clone());
    let tool = A2aTool::watched(client, Arc::default(), registry, CHAT);
    let out = tool.call(send("run 1 slowly"), &ws).await.unwrap().text_content();
    let task = field(&out, "task_id");
    stop.cancel();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(first.results().is_empty());
    assert_eq!(read_pending(&ws).unwrap().len(), 1);

    // The next process: reconciled at start; its first delivery fails and is tried again.
    let next = Arc::new(Recorder {
        refuse: Mutex::new(1),
        ..Recorder::default()
    });
    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();
    let client = A2aClient::new(short_wait()).unwrap();
    let registry = A2AWatchRegistry::new(client, next.clone(), fast(Some(root.path()), None), stop);
    registry.start();
    let got = delivered(&next, 1).await;
    assert_eq!(
        (got[0].task_id.as_str(), got[0].state.as_str()),
        (task.as_str(), "completed")
    );
    assert_eq!(*next.refuse.lock().unwrap(), 0, "the first attempt was refused");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(next.results().len(), 1);
    assert!(read_pending(&ws).unwrap().is_empty());
}

#[tokio::test]
async fn a_task_the_agent_forgot_is_reported_to_the_chat() {
    let root = tempfile::tempdir().unwrap();
    let peer = A2aPeer::start(PeerConfig::new(PeerMode::V1Only)).await.unwrap();
    let ws = root.path().join("42");
    list_agent(&ws, &peer.url());
    volcanic_a2a::write_pending(
        &ws,
        &[volcanic_a2a::PendingTask {
            agent: "peer".into(),
            url: peer.url(),
            task_id: "task-gone".into(),
            context_id: String::new(),
            chat: CHAT,
            state: "working".into(),
            since: 0,
            push_id: None,
        }],
    )
    .unwrap();
    let rec = Arc::new(Recorder::default());
    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();
    let registry = A2AWatchRegistry::new(
        A2aClient::new(quick()).unwrap(),
        rec.clone(),
        fast(Some(root.path()), None),
        stop,
    );
    registry.start();
    let got = delivered(&rec, 1).await;
    assert_eq!(got[0].state, "not-found");
    assert!(got[0].prompt.contains("TaskNotFound"), "{}", got[0].prompt);
}

#[tokio::test]
async fn a_push_wakes_the_follower_and_a_wrong_token_is_refused() {
    for mode in MODES {
        // Our receiver: a listener that hands each push to the registry.
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let public = format!("http://{}/", listener.local_addr().unwrap());
        let push = PushSettings {
            public_url: url::Url::parse(&public).unwrap(),
            key: vec![7; 32],
        };
        let w = watched(
            PeerConfig {
                push: true,
                streaming: false,
                ..PeerConfig::new(mode)
            },
            Some(push),
        )
        .await;
        let registry = w.registry.clone();
        let seen: Arc<Mutex<Vec<Result<(), PushRefused>>>> = Arc::default();
        let seen2 = seen.clone();
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
                    let r = registry.on_push(&id, &[token], &body);
                    seen2.lock().unwrap().push(r);
                    if r.is_ok() {
                        axum::http::StatusCode::OK
                    } else {
                        axum::http::StatusCode::UNAUTHORIZED
                    }
                },
            ),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        let out = w.run(send("run 1 pushed")).await;
        assert!(out.contains("followed (push)"), "{mode:?}: {out}");
        let pending = read_pending(w.s.ws()).unwrap();
        let id = pending[0].push_id.clone().unwrap();
        assert!(
            !std::fs::read_to_string(w.s.ws().join(volcanic_a2a::PENDING_FILE))
                .unwrap()
                .contains("token")
        );
        // A forged push is refused; the real one is taken and the result confirmed by GetTask.
        assert_eq!(w.registry.on_push(&id, &["forged"], b"{}"), Err(PushRefused::Token));
        assert_eq!(
            w.registry.on_push("nobody", &["forged"], b"{}"),
            Err(PushRefused::Token)
        );
        let got = delivered(&w.rec, 1).await;
        assert!(got[0].prompt.contains("done: run 1 pushed"), "{}", got[0].prompt);
        assert_eq!(w.s.peer.pushes().len(), 1);
        assert_eq!(w.s.peer.pushes()[0].1, 200, "{:?}", w.s.peer.pushes());
        assert_eq!(*seen.lock().unwrap(), vec![Ok(())]);
        // Push, not polling: the slow timer is 2 s, so at most the one GetTask that confirmed it.
        let gets =
            w.s.peer
                .rpc_methods()
                .iter()
                .filter(|m| *m == "GetTask" || *m == "tasks/get")
                .count();
        assert!(gets <= 2, "{mode:?}: {:?}", w.s.peer.rpc_methods());
    }
}
