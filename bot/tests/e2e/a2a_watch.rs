//! Long A2A tasks through the real binary: a chat's agent hands a task to a remote agent, the
//! bot answers at once, and the remote result arrives in the chat later, as a follow-up the
//! model reads and answers. Killed with `kill -9` while the task is pending, and again while the
//! result's own turn runs, the bot delivers the result exactly once after each restart.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::json;
use std::time::Duration;
use volcanic_testkit::a2a_peer::{A2aPeer, PeerConfig, PeerMode};
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// `[a2a]` with a short wait and quick polling (the intervals are configurable for tests).
fn a2a_config(tg: &BotApiServer, extra: &str) -> String {
    format!(
        "{}{extra}[a2a]\nsend_wait_seconds = 1\npoll_seconds = 0.2\npoll_max_seconds = 0.5\nreconcile_seconds = 2\n",
        telegram_config(tg, "")
    )
}

/// [`a2a_config`] with `[http]` on `port` and polling and reconciling far slower than any
/// task here: only a push can bring a result in time.
fn push_only_config(tg: &BotApiServer, port: u16) -> String {
    a2a_config(tg, &http_section(port))
        .replace("poll_seconds = 0.2", "poll_seconds = 600")
        .replace("poll_max_seconds = 0.5", "poll_max_seconds = 600")
        .replace("reconcile_seconds = 2", "reconcile_seconds = 600")
}

/// Lists `helper` at `url` in the owner's workspace.
fn list_helper(env: &Env, url: &str) -> std::path::PathBuf {
    let ws = env.dir.path().join("workspaces").join(OWNER.to_string());
    std::fs::create_dir_all(ws.join(".volcanic/a2a")).unwrap();
    std::fs::write(
        ws.join(".volcanic/a2a/agents.json"),
        json!({"agents": [{"name": "helper", "url": url}]}).to_string(),
    )
    .unwrap();
    ws
}

/// How many times the A2A result of `task` is in a model request's conversation.
fn results_in(r: &volcanic_testkit::model_server::RecordedRequest, task: &str) -> usize {
    conversation(r)
        .matches(&format!("[A2A result · agent helper · task {task} · completed."))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_result_arrives_later_exactly_once_across_kill_9() {
    let peer = A2aPeer::start(PeerConfig {
        streaming: false,
        ..PeerConfig::new(PeerMode::V1Only)
    })
    .await
    .unwrap();
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call(
        "toolu_01",
        "a2a",
        json!({"action": "send", "agent": "helper", "text": "run 6 the quarterly report"}),
    ));
    model.push(Turn::reply("I handed the report to the helper agent."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &a2a_config(&tg, ""));
    let ws = list_helper(&env, &peer.url());
    let pending = ws.join(".volcanic/a2a/pending.json");
    let bot = BotProcess::start(&env, TOKEN);

    // The bot answers at once; the task is pending on disk.
    tg.push_update(updates::text_message(OWNER, OWNER, "have the helper write the report"));
    nth_text(&tg, OWNER, "I handed the report to the helper agent.", 1, &bot).await;
    let requests = wait_requests(&model, 2, &bot).await;
    let told = conversation(&requests[1]);
    assert!(told.contains("come to this chat"), "{told}");
    let task = std::fs::read_to_string(&pending).unwrap();
    assert!(task.contains("\"state\": \"working\""), "{task}");
    let task_id = serde_json::from_str::<serde_json::Value>(&task).unwrap()["tasks"][0]["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(peer.task(&task_id).is_some_and(|t| !t.state.is_final()));
    // /agents: the agent, its dialect, and the pending task.
    tg.push_update(updates::text_message(OWNER, OWNER, "/agents"));
    let listed = nth_text(&tg, OWNER, "A2A agents of this chat", 1, &bot).await;
    assert!(listed.contains("helper") && listed.contains("A2A 1.0"), "{listed}");
    assert!(listed.contains(&format!("helper task {task_id}: working")), "{listed}");
    bot.kill9();

    // Restarted: reconciled, followed, and its result handed to the chat's session, whose run
    // is killed in turn while the model answers.
    model.push(Turn::reply("never shown").delay(Duration::from_secs(30)));
    let bot = BotProcess::start(&env, TOKEN);
    let requests = wait_requests(&model, 3, &bot).await;
    assert_eq!(results_in(&requests[2], &task_id), 1, "{}", conversation(&requests[2]));
    let seen = conversation(&requests[2]);
    assert!(
        seen.contains("done: run 6 the quarterly report") && seen.contains("not instructions"),
        "{seen}"
    );
    bot.kill9();
    assert!(pending.exists(), "not delivered yet, so still pending");

    // Restarted again: the result's prompt is in the transcript, so its run goes on (the model
    // sees it once) and its answer is shown once.
    model.push(Turn::reply("The helper finished the quarterly report."));
    let bot = BotProcess::start(&env, TOKEN);
    nth_text(&tg, OWNER, "The helper finished the quarterly report.", 1, &bot).await;
    eventually("the task to leave pending.json", &bot, || !pending.exists()).await;
    let requests = wait_requests(&model, 4, &bot).await;
    assert_eq!(results_in(&requests[3], &task_id), 1, "{}", conversation(&requests[3]));
    assert_eq!(bot.terminate(T), Some(0));

    // A further restart has nothing left to do.
    let bot = BotProcess::start(&env, TOKEN);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(count(&tg, OWNER, "The helper finished the quarterly report."), 1);
    assert_eq!(count(&tg, OWNER, "never shown"), 0);
    assert_eq!(model.requests().len(), 4, "the model was asked again\n{}", bot.log());
    let gets = peer.rpc_methods().iter().filter(|m| *m == "GetTask").count();
    assert!(gets >= 2, "followed by polling: {:?}", peer.rpc_methods());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_reaches_the_real_binarys_listener_and_brings_the_result() {
    let peer = A2aPeer::start(PeerConfig {
        streaming: false,
        push: true,
        ..PeerConfig::new(PeerMode::Both)
    })
    .await
    .unwrap();
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call(
        "toolu_01",
        "a2a",
        json!({"action": "send", "agent": "helper", "text": "run 3 the pushed job"}),
    ));
    model.push(Turn::reply("Handed over; it will push."));
    model.push(Turn::reply("The pushed job is done."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let config = push_only_config(&tg, port);
    let env = Env::new(&model.url(), &config);
    let ws = list_helper(&env, &peer.url());
    let bot = BotProcess::start(&env, TOKEN);

    tg.push_update(updates::text_message(OWNER, OWNER, "run the pushed job on the helper"));
    nth_text(&tg, OWNER, "Handed over; it will push.", 1, &bot).await;
    let requests = wait_requests(&model, 2, &bot).await;
    assert!(
        conversation(&requests[1]).contains("followed (push)"),
        "{}",
        conversation(&requests[1])
    );
    let pending = std::fs::read_to_string(ws.join(".volcanic/a2a/pending.json")).unwrap();
    assert!(pending.contains("push_id") && !pending.contains("token"), "{pending}");

    nth_text(&tg, OWNER, "The pushed job is done.", 1, &bot).await;
    let pushes = peer.pushes();
    assert_eq!(pushes.len(), 1, "{pushes:?}");
    assert!(
        pushes[0].0.starts_with(&format!("http://127.0.0.1:{port}/a2a/push/")),
        "{pushes:?}"
    );
    assert_eq!(pushes[0].1, 200, "answered at once with 2xx");
    let requests = wait_requests(&model, 3, &bot).await;
    assert!(conversation(&requests[2]).contains("done: run 3 the pushed job"));
    // Confirmed with GetTask after the push; no polling in between.
    let gets = peer.rpc_methods().iter().filter(|m| *m == "GetTask").count();
    assert!(gets <= 2, "{:?}", peer.rpc_methods());
    // A forged push is refused.
    let id = pushes[0].0.rsplit('/').next().unwrap().to_owned();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let forged = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/a2a/push/{id}"))
        .header("X-A2A-Notification-Token", "forged")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status().as_u16(), 401);
}

/// The Python `a2a-sdk` peer (`tests/peers/a2a_sdk_peer.py`, 1.0 with 0.3) on `port`; killed on
/// drop. Waits until it serves its card.
struct SdkPeer(std::process::Child);

impl Drop for SdkPeer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn sdk_peer(port: u16) -> SdkPeer {
    let python = volcanic_testkit::testdeps::python().unwrap_or_else(|e| panic!("{e}"));
    let script = volcanic_testkit::testdeps::repo_root().join("tests/peers/a2a_sdk_peer.py");
    let child = std::process::Command::new(python)
        .arg(script)
        .arg(port.to_string())
        .arg("both")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let peer = SdkPeer(child);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let card = format!("http://127.0.0.1:{port}/.well-known/agent-card.json");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !reqwest::get(&card).await.is_ok_and(|r| r.status().is_success()) {
        assert!(std::time::Instant::now() < deadline, "the a2a-sdk peer did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    peer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdks_push_reaches_the_real_binary() {
    let sdk_port = free_port();
    let _peer = sdk_peer(sdk_port).await;
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call(
        "toolu_01",
        "a2a",
        json!({"action": "send", "agent": "helper", "text": "run 3 the sdk job"}),
    ));
    model.push(Turn::reply("Handed to the SDK agent."));
    model.push(Turn::reply("The SDK agent is done."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let config = push_only_config(&tg, port);
    let env = Env::new(&model.url(), &config);
    list_helper(&env, &format!("http://127.0.0.1:{sdk_port}"));
    let bot = BotProcess::start(&env, TOKEN);

    tg.push_update(updates::text_message(OWNER, OWNER, "give the SDK agent the job"));
    nth_text(&tg, OWNER, "Handed to the SDK agent.", 1, &bot).await;
    let requests = wait_requests(&model, 2, &bot).await;
    assert!(
        conversation(&requests[1]).contains("followed (push)"),
        "{}",
        conversation(&requests[1])
    );
    nth_text(&tg, OWNER, "The SDK agent is done.", 1, &bot).await;
    let requests = wait_requests(&model, 3, &bot).await;
    assert!(conversation(&requests[2]).contains("done: run 3 the sdk job"));
    assert!(
        !bot.log().contains("push to receiver"),
        "no push was refused:\n{}",
        bot.log()
    );
}
