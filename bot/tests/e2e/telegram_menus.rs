//! `/model` and `/thinking` as buttons through the real binary: the menu lists the configured
//! models by provider, a press switches as the typed command would, the menu's buttons give way
//! to the choice, and the chat then runs on each of three wire APIs (Responses with the chosen
//! reasoning effort, Chat Completions, Anthropic Messages), every request accepted by the strict
//! model server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use volcanic_testkit::bot_api::{BotApiServer, ChatMessage, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

const CHAT: i64 = OWNER;

/// The labels of a message's buttons, row by row.
fn labels(m: &ChatMessage) -> Vec<Vec<String>> {
    m.reply_markup.as_ref().map_or_else(Vec::new, |k| {
        k["inline_keyboard"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r.as_array()
                    .unwrap()
                    .iter()
                    .map(|b| b["text"].as_str().unwrap().to_owned())
                    .collect()
            })
            .collect()
    })
}

/// Sends `text`, waits for the answer `reply` and returns the request the model got for it.
async fn ask(
    tg: &BotApiServer,
    model: &ModelServer,
    bot: &BotProcess,
    text: &str,
    reply: &str,
) -> volcanic_testkit::RecordedRequest {
    let before = model.requests().len();
    model.push(Turn::reply(reply));
    tg.push_update(updates::text_message(CHAT, CHAT, text));
    wait_text(tg, CHAT, reply, bot).await;
    let requests = wait_requests(model, before + 1, bot).await;
    let r = requests[before].clone();
    assert!(!r.is_rejected(), "{:?}\n{}", r.rejection, bot.log());
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_and_thinking_menus_switch_the_chat_between_three_wire_apis() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);

    // The menu: one block per provider, the current model marked.
    tg.push_update(updates::text_message(CHAT, CHAT, "/model"));
    wait_text(&tg, CHAT, "Choose one", &bot).await;
    let menu = tg
        .messages(CHAT)
        .into_iter()
        .find(|m| m.reply_markup.is_some())
        .unwrap();
    let rows = labels(&menu);
    assert_eq!(rows[0], ["— anthropic —"], "{rows:?}");
    assert!(rows.iter().flatten().any(|l| l == "▸ claude-sonnet-4-5"), "{rows:?}");
    assert!(rows.iter().any(|r| r == &["— openai —"]), "{rows:?}");
    assert!(rows.iter().flatten().any(|l| l == "gpt-5-mini"), "{rows:?}");

    // A press switches, and the menu shows the choice in place of its buttons.
    press_button(&tg, CHAT, "gpt-5-mini").await;
    wait_text(&tg, CHAT, "Model: openai/gpt-5-mini", &bot).await;
    let edited = tg
        .messages(CHAT)
        .into_iter()
        .find(|m| m.message_id == menu.message_id)
        .unwrap();
    assert!(edited.reply_markup.is_none(), "{edited:?}");
    assert!(
        edited
            .visible_text
            .as_deref()
            .unwrap_or_default()
            .ends_with("→ /model openai/gpt-5-mini"),
        "{edited:?}"
    );

    tg.push_update(updates::text_message(CHAT, CHAT, "/thinking"));
    wait_text(&tg, CHAT, "Thinking level: off\nChoose one", &bot).await;
    press_button(&tg, CHAT, "high").await;
    wait_text(&tg, CHAT, "Thinking level: high", &bot).await;

    let r = ask(&tg, &model, &bot, "first on Responses", "answer from responses").await;
    assert_eq!(r.path, "/v1/responses");
    assert_eq!(r.body["model"], "gpt-5-mini");
    assert_eq!(r.body["reasoning"]["effort"], "high");

    // Chat Completions: a model that does not reason gets a menu with `off` only.
    tg.push_update(updates::text_message(CHAT, CHAT, "/model"));
    nth_text(&tg, CHAT, "Choose one (or send /model", 2, &bot).await;
    press_button(&tg, CHAT, "gpt-4.1").await;
    wait_text(&tg, CHAT, "Model: openai/gpt-4.1", &bot).await;
    tg.push_update(updates::text_message(CHAT, CHAT, "/thinking"));
    wait_text(&tg, CHAT, "openai/gpt-4.1 does not reason", &bot).await;
    let newest = tg
        .messages(CHAT)
        .into_iter()
        .rev()
        .find(|m| m.reply_markup.is_some())
        .unwrap();
    assert_eq!(labels(&newest), [["off"]]);
    let r = ask(&tg, &model, &bot, "then on Chat Completions", "answer from completions").await;
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.body["model"], "gpt-4.1");

    // Back to Anthropic Messages, with the whole conversation.
    tg.push_update(updates::text_message(CHAT, CHAT, "/model"));
    nth_text(&tg, CHAT, "Choose one (or send /model", 3, &bot).await;
    press_button(&tg, CHAT, "claude-sonnet-4-5").await;
    nth_text(&tg, CHAT, "Model: anthropic/claude-sonnet-4-5", 1, &bot).await;
    let r = ask(&tg, &model, &bot, "and back to Anthropic", "answer from anthropic").await;
    assert_eq!(r.path, "/v1/messages");
    let sent = r.body.to_string();
    for earlier in ["first on Responses", "answer from responses", "answer from completions"] {
        assert!(sent.contains(earlier), "{earlier} missing from {sent}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_menu_button_runs_only_its_own_commands_and_only_for_allowed_users() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(CHAT, CHAT, "/model"));
    wait_text(&tg, CHAT, "Choose one", &bot).await;
    let menu = tg
        .messages(CHAT)
        .into_iter()
        .find(|m| m.reply_markup.is_some())
        .unwrap();
    // Forged data naming another command runs nothing; a stranger's press changes nothing.
    tg.push_update(updates::callback_query(
        CHAT,
        menu.message_id,
        CHAT,
        &format!("cmd:/deny {FRIEND}"),
    ));
    tg.push_update(updates::callback_query(
        777,
        menu.message_id,
        CHAT,
        "cmd:/model openai/gpt-4.1",
    ));
    tg.push_update(updates::text_message(CHAT, CHAT, "/session"));
    wait_text(&tg, CHAT, "Session file", &bot).await;
    let all = texts(&tg, CHAT);
    assert!(
        all.iter().any(|t| t.contains("Model: anthropic/claude-sonnet-4-5")),
        "{all:?}"
    );
    assert!(!all.iter().any(|t| t.contains("openai/gpt-4.1")), "{all:?}");
    assert!(!all.iter().any(|t| t.contains(&FRIEND.to_string())), "{all:?}");
}
