//! Failures the user can act on get a sentence saying what to do, and doing it lets the chat go
//! on: the model provider refusing the bot's key, and a conversation file another program changed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_refusing_the_key_is_explained_and_the_chat_goes_on() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::error(401, "invalid x-api-key"));
    model.push(Turn::reply("back in business"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "hello?"));
    wait_text(&tg, OWNER, "refused this bot's credentials", &bot).await;
    let notice = texts(&tg, OWNER)
        .into_iter()
        .find(|t| t.contains("refused this bot's credentials"))
        .unwrap();
    assert!(
        notice.starts_with("⚠️ The model provider refused this bot's credentials (401 ")
            && notice.contains("invalid x-api-key")
            && notice.contains("check the provider's API key"),
        "{notice}"
    );
    // Not retried (a refusal is not transient), and the chat still works.
    assert_eq!(model.requests().len(), 1);
    tg.push_update(updates::text_message(OWNER, OWNER, "and now?"));
    wait_text(&tg, OWNER, "back in business", &bot).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_file_another_program_changed_is_explained_and_new_goes_on() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("first answer"));
    model.push(Turn::reply("fresh start"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "hello"));
    wait_text(&tg, OWNER, "first answer", &bot).await;
    let files = jsonl_files(&env.dir.path().join(format!("data/sessions/{OWNER}/main")));
    assert_eq!(files.len(), 1, "{files:?}");
    // Another program writes to the open conversation file.
    let mut text = std::fs::read_to_string(&files[0]).unwrap();
    text.push_str("{\"type\":\"custom\",\"note\":\"written by someone else\"}\n");
    std::fs::write(&files[0], &text).unwrap();
    tg.push_update(updates::text_message(OWNER, OWNER, "still there?"));
    wait_text(
        &tg,
        OWNER,
        "Another program changed this chat's conversation file",
        &bot,
    )
    .await;
    let notice = texts(&tg, OWNER)
        .into_iter()
        .find(|t| t.contains("Another program changed"))
        .unwrap();
    assert!(
        notice.contains(&files[0].display().to_string()) && notice.contains("Send /new"),
        "{notice}"
    );
    // The file keeps what the other program wrote, and nothing of ours after it.
    assert_eq!(std::fs::read_to_string(&files[0]).unwrap(), text);
    // Doing what the notice says lets the chat go on.
    tg.push_update(updates::text_message(OWNER, OWNER, "/new"));
    wait_text(&tg, OWNER, "New session started", &bot).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "hello again"));
    wait_text(&tg, OWNER, "fresh start", &bot).await;
    assert_eq!(model.requests().len(), 2);
}
