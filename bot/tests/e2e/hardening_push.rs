//! A2A push notifications never go through a proxy, through the real binary: with
//! `HTTP_PROXY` / `HTTPS_PROXY` / `ALL_PROXY` set for the bot, a push is delivered straight to
//! its (checked) address and the proxy, a loopback listener, is never contacted. Through a
//! proxy the guarded resolver would never run: the proxy would resolve the name itself.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::a2a_server::{rpc, wait_card};
use crate::support::*;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use volcanic_testkit::bot_api::BotApiServer;
use volcanic_testkit::model_server::{ModelServer, Turn};

const ALICE: &str = "alice-token-0123456789abcdef";

/// A loopback listener that records the first bytes of each connection made to it (a proxied
/// request's line) and answers none.
async fn proxy_double() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let contacted = Arc::new(Mutex::new(Vec::new()));
    let record = contacted.clone();
    tokio::spawn(async move {
        while let Ok((mut c, _)) = listener.accept().await {
            let record = record.clone();
            tokio::spawn(async move {
                let mut first = vec![0u8; 200];
                let n = c.read(&mut first).await.unwrap_or(0);
                record
                    .lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&first[..n]).into_owned());
                // Held open, unanswered.
                let _ = c.read(&mut first).await;
            });
        }
    });
    (url, contacted)
}

/// A push receiver on 127.0.0.2 (loopback, but not the address `NO_PROXY` exempts) recording
/// the bodies it got.
async fn receiver() -> (String, Arc<Mutex<Vec<serde_json::Value>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.2:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let got = Arc::new(Mutex::new(Vec::new()));
    let record = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::Json<serde_json::Value>| {
            let record = record.clone();
            async move {
                record.lock().unwrap().push(body.0);
                "ok"
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, got)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_with_a_proxy_configured_goes_straight_to_its_address() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("pushed result").delay(Duration::from_secs(2)));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (proxy, contacted) = proxy_double().await;
    let (hook, got) = receiver().await;
    let port = free_port();
    let env = Env::new(
        &model.url(),
        &format!(
            "{}{}[a2a.server]\nname = \"Test assistant\"\nallow_loopback_push = true\n\
             [[a2a.server.callers]]\nname = \"alice\"\ntoken_env = \"E2E_ALICE\"\n",
            telegram_config(&tg, ""),
            http_section(port)
        ),
    );
    // Every proxy variable reqwest reads; the doubles on 127.0.0.1 are exempt, the push target
    // on 127.0.0.2 is not.
    let bot = BotProcess::start_with(
        &env,
        TOKEN,
        Some("info"),
        &[
            ("E2E_ALICE", ALICE),
            ("HTTP_PROXY", &proxy),
            ("HTTPS_PROXY", &proxy),
            ("ALL_PROXY", &proxy),
            ("http_proxy", &proxy),
            ("https_proxy", &proxy),
            ("NO_PROXY", "127.0.0.1"),
        ],
    );
    let base = format!("http://127.0.0.1:{port}");
    wait_card(&base, &bot).await;

    let message = json!({"role": "ROLE_USER", "messageId": "m-push", "parts": [{"text": "work on it"}]});
    let sent = rpc(
        &base,
        ALICE,
        "SendMessage",
        json!({"message": message, "configuration": {"returnImmediately": true}}),
    )
    .await;
    let task = sent["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{sent}"))
        .to_owned();
    let set = rpc(
        &base,
        ALICE,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "url": hook, "token": "t-1"}),
    )
    .await;
    assert!(set.get("error").is_none(), "{set}");

    let deadline = std::time::Instant::now() + T;
    while !got
        .lock()
        .unwrap()
        .iter()
        .any(|b| b.to_string().contains("pushed result"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no push delivered; the proxy was contacted: {:?}\n{}",
            contacted.lock().unwrap(),
            bot.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let contacted = contacted.lock().unwrap().clone();
    assert!(
        contacted.is_empty(),
        "the proxy was contacted: {contacted:?}\n{}",
        bot.log()
    );
}
