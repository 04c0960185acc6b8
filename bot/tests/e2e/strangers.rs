//! The stranger reply limit through the real binary: one short reply per hour, also across a
//! restart.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

const STRANGER: i64 = 5656;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strangers_second_message_after_a_restart_gets_no_second_reply() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("owner answered"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(STRANGER, STRANGER, "hi, who are you?"));
    let reply = nth_text(&tg, STRANGER, &STRANGER.to_string(), 1, &bot).await;
    assert!(reply.contains("private assistant"), "{reply}");
    assert!(env.dir.path().join("data").join("strangers.json").is_file());
    assert_eq!(bot.terminate(T), Some(0));

    let bot = BotProcess::start(&env, TOKEN);
    let second = tg.push_update(updates::text_message(STRANGER, STRANGER, "hello again"));
    // Updates are handled in order: once the owner's later message is answered, the
    // stranger's was handled.
    tg.push_update(updates::text_message(OWNER, OWNER, "and me?"));
    nth_text(&tg, OWNER, "owner answered", 1, &bot).await;
    // Confirmed by the next getUpdates, which may come a moment after the answer.
    let deadline = std::time::Instant::now() + T;
    while tg.confirmed_offset() <= second["update_id"].as_i64() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(tg.confirmed_offset() > second["update_id"].as_i64());
    assert_eq!(
        texts(&tg, STRANGER),
        [reply],
        "one reply within the hour, restart or not"
    );
    assert_eq!(model.requests().len(), 1, "the stranger reached no model");
}
