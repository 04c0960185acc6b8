//! Reactions through the real binary (`[telegram] reactions`, on by default): an accepted
//! message is marked 👀, then 👍 once its answer is delivered (😢 when it failed); a reaction
//! Telegram refuses is dropped, never tried again, and the answer goes out as always.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::Value;
use std::time::Duration;
use volcanic_testkit::bot_api::{ApiCall, BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// The `setMessageReaction` calls for message `id` in `chat`, in order, as `(emoji, ok)`.
fn reactions(tg: &BotApiServer, chat: i64, id: i64) -> Vec<(String, bool)> {
    tg.calls("setMessageReaction")
        .iter()
        .filter(|c| c.chat_id() == Some(chat) && c.param("message_id").and_then(Value::as_i64) == Some(id))
        .map(|c| (emoji(c), c.is_ok()))
        .collect()
}

fn emoji(c: &ApiCall) -> String {
    let reaction = match c.param("reaction") {
        Some(Value::String(text)) => serde_json::from_str(text).unwrap_or(Value::Null),
        Some(v) => v.clone(),
        None => Value::Null,
    };
    reaction[0]["emoji"].as_str().unwrap_or_default().to_owned()
}

/// Pushes a private message from [`OWNER`] and returns its message id.
fn ask(tg: &BotApiServer, text: &str) -> i64 {
    let pushed = tg.push_update(updates::text_message(OWNER, OWNER, text));
    pushed["message"]["message_id"].as_i64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_message_is_marked_then_marked_answered() {
    let model = ModelServer::start().await.unwrap();
    // Slow enough that the accepted mark shows before the answer.
    model.push(
        Turn::new()
            .pace(Duration::from_millis(300))
            .text("Seen ")
            .text("and answered."),
    );
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    let id = ask(&tg, "hello");
    tg.wait_for(|s| s.reaction(OWNER, id).as_deref() == Some("👀"), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    assert_eq!(count(&tg, OWNER, "and answered."), 0, "marked before the answer");
    nth_text(&tg, OWNER, "and answered.", 1, &bot).await;
    tg.wait_for(|s| s.reaction(OWNER, id).as_deref() == Some("👍"), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{:?}", reactions(&tg, OWNER, id)));
    assert_eq!(
        reactions(&tg, OWNER, id),
        vec![("👀".to_owned(), true), ("👍".to_owned(), true)],
        "one call per change"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_reaction_is_dropped_and_the_answer_arrives() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::new().text("Answered without reactions."));
    model.push(Turn::new().text("The next one too."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.fail_next("setMessageReaction", 400, "Bad Request: REACTION_INVALID", None);
    let id = ask(&tg, "hello");
    nth_text(&tg, OWNER, "Answered without reactions.", 1, &bot).await;
    // A second answer delivered after the first: any retry or outcome reaction for the first
    // message would have been sent by now (the delivery of one chat is in order).
    let next = ask(&tg, "again");
    nth_text(&tg, OWNER, "The next one too.", 1, &bot).await;
    tg.wait_for(|s| s.reaction(OWNER, next).as_deref() == Some("👍"), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{:?}", reactions(&tg, OWNER, next)));
    assert_eq!(
        reactions(&tg, OWNER, id),
        vec![("👀".to_owned(), false)],
        "refused once, never tried again, no outcome reaction"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reactions_off_sends_none() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::new().text("No marks here."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, "reactions = false"));
    let bot = BotProcess::start(&env, TOKEN);
    ask(&tg, "hello");
    nth_text(&tg, OWNER, "No marks here.", 1, &bot).await;
    assert!(tg.calls("setMessageReaction").is_empty());
}
