//! A chat's messages reach the model in the order sent, even when an extension's `input`
//! handler awaits (the `slow-input` example, chosen by the workspace's settings).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_input_handler_keeps_a_chats_messages_in_the_order_sent() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("answer one"));
    model.push(Turn::reply("answer two"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let settings = env
        .dir
        .path()
        .join("workspaces")
        .join(OWNER.to_string())
        .join(".volcanic");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(settings.join("settings.json"), r#"{"extensions": ["slow-input"]}"#).unwrap();
    let bot = BotProcess::start(&env, TOKEN);
    // The first message's `input` handler holds it 1.5 s; the second follows at once.
    tg.push_update(updates::text_message(OWNER, OWNER, "[wait 1500ms] message one"));
    tg.push_update(updates::text_message(OWNER, OWNER, "message two"));
    nth_text(&tg, OWNER, "answer two", 1, &bot).await;
    let requests = wait_requests(&model, 2, &bot).await;
    let first = conversation(&requests[0]);
    assert!(
        first.contains("message one") && !first.contains("message two"),
        "the first request carries the first message only: {first}"
    );
    let second = conversation(&requests[1]);
    let (one, two) = (second.find("message one"), second.find("message two"));
    assert!(
        matches!((one, two), (Some(a), Some(b)) if a < b),
        "the second request carries both, in the order sent: {second}"
    );
    assert_eq!(
        texts(&tg, OWNER)
            .into_iter()
            .filter(|t| t.starts_with("answer"))
            .collect::<Vec<_>>(),
        ["answer one", "answer two"]
    );
}
