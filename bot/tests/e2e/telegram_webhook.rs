//! Webhook mode through the real binary: the bot registers `<public_url>/telegram/webhook` with
//! a secret, the Bot API double delivers updates to it as Telegram does, forged posts are
//! refused; and polling mode clears a webhook left over.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use std::time::Duration;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_mode_receives_updates_from_telegram_and_refuses_forged_ones() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("hello over the webhook"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let env = Env::new(
        &model.url(),
        &format!(
            "{}[http]\nlisten = \"127.0.0.1:{port}\"\npublic_url = \"https://bot.example.org\"\n",
            telegram_config(&tg, "mode = \"webhook\"")
        ),
    );
    let bot = BotProcess::start(&env, TOKEN);
    tg.wait_for(|s| s.webhook().is_some(), T)
        .await
        .unwrap_or_else(|e| panic!("no setWebhook: {e}\n{}", bot.log()));
    let (url, secret) = tg.webhook().unwrap();
    assert_eq!(url, "https://bot.example.org/telegram/webhook");
    assert!(secret.len() >= 32, "{secret}");

    // A forged post (no or a wrong secret) never reaches the journal or the model.
    let client = client();
    let local = format!("http://127.0.0.1:{port}/telegram/webhook");
    let forged = updates::text_message(OWNER, OWNER, "forged").message();
    let forged = serde_json::json!({"update_id": 999, "message": forged});
    let no_secret = client.post(&local).json(&forged).send().await.unwrap();
    assert_eq!(no_secret.status(), 401);
    let wrong = client
        .post(&local)
        .header("X-Telegram-Bot-Api-Secret-Token", "not-the-secret")
        .json(&forged)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);

    tg.deliver_webhooks_via(&format!("http://127.0.0.1:{port}"));
    let pushed = tg.push_update(updates::text_message(OWNER, OWNER, "hi via webhook"));
    nth_text(&tg, OWNER, "hello over the webhook", 1, &bot).await;
    let id = pushed["update_id"].as_i64().unwrap();
    // The 200 waits for the journal's sync, which a busy disk can make later than the answer.
    let deadline = std::time::Instant::now() + T;
    while tg.webhook_attempts().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(tg.webhook_attempts(), vec![(id, 200)], "acknowledged once");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(model.requests().len(), 1, "the forged update never reached the model");
    assert!(
        !serde_json::to_string(model.requests()[0].messages())
            .unwrap()
            .contains("forged")
    );
    assert_eq!(texts(&tg, OWNER), ["hello over the webhook"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polling_mode_removes_a_webhook_left_over_and_gets_its_updates() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("polling again"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let set = client()
        .post(format!("{}/bot{TOKEN}/setWebhook", tg.url()))
        .json(&serde_json::json!({"url": "https://old.example.org/telegram/webhook"}))
        .send()
        .await
        .unwrap();
    assert_eq!(set.status(), 200);
    tg.push_update(updates::text_message(OWNER, OWNER, "sent while the webhook was set"));
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    nth_text(&tg, OWNER, "polling again", 1, &bot).await;
    assert!(tg.webhook().is_none());
    assert!(bot.log().contains("deleting it to poll"), "{}", bot.log());
}
