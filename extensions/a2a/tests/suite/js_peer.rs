//! A second peer written by others: the official JavaScript SDK (`@a2a-js/sdk` 1.3.0 with
//! express) serving the scripted agent of `tests/peers/a2a_js_peer.cjs`; our client completes a
//! task with it, at once and as a long task followed by subscribe.

use super::sdk_peer::{run, started, tool_on};
use super::watch::{CHAT, Recorder, delivered, fast, short_wait};
use super::*;
use std::process::Command;
use tokio_util::sync::CancellationToken;
use volcanic_a2a::A2AWatchRegistry;
use volcanic_testkit::testdeps;

async fn js_peer() -> super::sdk_peer::SdkPeer {
    let node = testdeps::path("node_modules/node/bin/node").unwrap_or_else(|e| panic!("{e}"));
    let modules = testdeps::path("node_modules/@a2a-js/sdk")
        .and_then(|_| testdeps::path("node_modules/express"))
        .and_then(|_| testdeps::path("node_modules"))
        .unwrap_or_else(|e| panic!("{e}"));
    let script = testdeps::repo_root().join("tests/peers/a2a_js_peer.cjs");
    started(|port| {
        let mut c = Command::new(&node);
        c.arg(&script).arg(port.to_string()).arg(&modules);
        c
    })
    .await
}

#[tokio::test]
async fn our_client_completes_tasks_with_the_javascript_sdk() {
    let peer = js_peer().await;
    let (tool, dir) = tool_on(&peer.url, quick());
    let agents = run(&tool, dir.path(), args(Action::Agents)).await.unwrap();
    assert!(agents.contains("js peer") && agents.contains("A2A 1.0"), "{agents}");
    let out = run(&tool, dir.path(), send("hello from rust")).await.unwrap();
    assert!(
        out.contains("answer: hello from rust") && out.contains("state: completed"),
        "{out}"
    );

    // A long task: handed to the registry, followed by subscribe, delivered once.
    let rec = Arc::new(Recorder::default());
    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();
    let client = A2aClient::new(short_wait()).unwrap();
    let registry = A2AWatchRegistry::new(client.clone(), rec.clone(), fast(None, None), stop);
    let tool = A2aTool::watched(client, Arc::default(), registry, CHAT);
    let out = tool
        .call(send("run 2 the js job"), dir.path())
        .await
        .unwrap()
        .text_content();
    assert!(out.contains("followed (subscribe)"), "{out}");
    let got = delivered(&rec, 1).await;
    assert_eq!(got[0].state, "completed");
    assert!(got[0].prompt.contains("done: run 2 the js job"), "{}", got[0].prompt);
}
