//! Messages without text or file through the real binary: they reach the model as a short
//! description (a sticker's emoji, a location's coordinates), never silence.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::Value;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, RecordedRequest, Turn};

/// The text of the last user message of a request.
pub(crate) fn last_user_text(request: &RecordedRequest) -> String {
    let last = request
        .messages()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap_or_default();
    match &last["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sticker_and_a_location_reach_the_model_as_descriptions() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("nice sticker"));
    model.push(Turn::reply("I see where you are"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::sticker_message(OWNER, OWNER, "😀"));
    nth_text(&tg, OWNER, "nice sticker", 1, &bot).await;
    let asked = last_user_text(&model.requests()[0]);
    assert!(asked.ends_with("\n[sticker 😀]"), "{asked}");
    tg.push_update(updates::location_message(OWNER, OWNER, 52.520008, 13.404954));
    nth_text(&tg, OWNER, "I see where you are", 1, &bot).await;
    let asked = last_user_text(&model.requests()[1]);
    assert!(asked.ends_with("\n[location 52.520008, 13.404954]"), "{asked}");
}
