//! Live answers in groups through the real binary: a preview message sent silently and edited
//! as the model writes, with a Stop button for the person who asked; the final answer replaces
//! it (or it becomes the first chunk of a long one); a `kill -9` mid-preview leaves no stale
//! preview.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::live_drafts::{each_paragraph_once_in_order, long_answer, start_with};
use crate::support::*;
use serde_json::Value;
use std::time::Duration;
use volcanic_testkit::bot_api::{ApiCall, BotApiServer, ChatMessage, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

const GROUP: i64 = -100_777;
/// Not an allowed user: may not stop another's answer.
const STRANGER: i64 = 7777;

async fn start(model: &ModelServer, tg: &BotApiServer) -> (Env, BotProcess) {
    start_with(
        model,
        tg,
        &format!("allowed_chats = [{GROUP}]\nstream_interval_ms = 100"),
    )
    .await
}

fn ask(tg: &BotApiServer, from: i64, text: &str) {
    let text = format!("{} {text}", mention(tg));
    tg.push_update(updates::group_message(GROUP, from, &text, None));
}

fn preview_sends(tg: &BotApiServer) -> Vec<ApiCall> {
    tg.calls("sendMessage")
        .into_iter()
        .filter(|c| c.chat_id() == Some(GROUP) && c.is_ok() && c.param("reply_markup").is_some())
        .collect()
}

/// The Stop button's callback data of the preview `m`.
fn stop_data(m: &ChatMessage) -> String {
    m.reply_markup.as_ref().unwrap()["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn wait_preview(tg: &BotApiServer, needle: &str, bot: &BotProcess) -> ChatMessage {
    tg.wait_for(
        |s| {
            s.messages(GROUP)
                .iter()
                .any(|m| m.reply_markup.is_some() && m.visible_text.as_deref().unwrap_or_default().contains(needle))
        },
        T,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{:?}\n{}", texts(tg, GROUP), bot.log()));
    tg.messages(GROUP)
        .into_iter()
        .find(|m| m.reply_markup.is_some())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_answer_streams_into_a_silent_preview_that_becomes_the_answer() {
    let model = ModelServer::start().await.unwrap();
    let parts = ["Groups see ", "the answer ", "grow in place."];
    let mut turn = Turn::new().pace(Duration::from_millis(250));
    for p in parts {
        turn = turn.text(p);
    }
    model.push(turn);
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (_env, bot) = start(&model, &tg).await;
    ask(&tg, OWNER, "show me");
    wait_text(&tg, GROUP, "grow in place.", &bot).await;
    tg.wait_for(|s| s.messages(GROUP).iter().all(|m| m.reply_markup.is_none()), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{:?}", tg.messages(GROUP)));
    let messages = tg.messages(GROUP);
    assert_eq!(
        messages.len(),
        1,
        "the preview became the answer: {:?}",
        texts(&tg, GROUP)
    );
    assert_eq!(messages[0].visible_text.as_deref(), Some(parts.concat().as_str()));
    assert!(
        messages[0].edits >= 2,
        "edited as it grew, then into the answer: {}",
        messages[0].edits
    );
    let sends = preview_sends(&tg);
    assert_eq!(sends.len(), 1, "one preview");
    assert_eq!(sends[0].param("disable_notification"), Some(&Value::Bool(true)));
    let first = sends[0].text().unwrap_or_default();
    assert!(!first.is_empty() && parts.concat().starts_with(first), "{sends:?}");
    let edits: Vec<ApiCall> = tg.calls("editMessageText").into_iter().filter(ApiCall::is_ok).collect();
    let last = edits.last().unwrap();
    assert!(last.param("reply_markup").is_none(), "the answer has no Stop button");
    assert!(edits.iter().rev().skip(1).all(|e| e.param("reply_markup").is_some()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_group_answer_keeps_the_preview_as_its_first_chunk() {
    let model = ModelServer::start().await.unwrap();
    model.push(long_answer(Duration::from_millis(40)));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (_env, bot) = start(&model, &tg).await;
    ask(&tg, OWNER, "a long one");
    nth_text(&tg, GROUP, "Paragraph 24:", 1, &bot).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let messages = tg.messages(GROUP);
    assert!(messages.len() >= 2, "{:?}", texts(&tg, GROUP));
    assert!(messages.iter().all(|m| m.reply_markup.is_none()), "no preview left");
    assert_eq!(
        preview_sends(&tg)[0].param("disable_notification"),
        Some(&Value::Bool(true))
    );
    assert!(
        messages[0]
            .visible_text
            .as_deref()
            .unwrap_or_default()
            .starts_with("Paragraph 01:"),
        "the preview is the first chunk"
    );
    each_paragraph_once_in_order(&texts(&tg, GROUP).join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_asker_may_press_stop_on_a_preview() {
    let model = ModelServer::start().await.unwrap();
    model.push(
        Turn::new()
            .text("Half an answer")
            .text(" and never this")
            .stall_after(6),
    );
    model.push(Turn::reply("The next answer."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (_env, bot) = start(&model, &tg).await;
    ask(&tg, FRIEND, "write a lot");
    let preview = wait_preview(&tg, "Half an answer", &bot).await;
    let data = stop_data(&preview);
    // Someone else presses: refused with a toast, the run goes on.
    tg.push_update(updates::callback_query(STRANGER, preview.message_id, GROUP, &data));
    let toast = |s: &BotApiServer, needle: &str| {
        s.calls("answerCallbackQuery").iter().any(|c| {
            c.param("text")
                .and_then(Value::as_str)
                .is_some_and(|t| t.contains(needle))
        })
    };
    // Refused by the rule every press obeys (an allowed user) before the Stop's own.
    tg.wait_for(|s| toast(s, "This button does not work here"), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    assert_eq!(count(&tg, GROUP, "Stopped"), 0);
    // The asker presses: stopped, the preview becomes the partial answer, marked once.
    tg.push_update(updates::callback_query(FRIEND, preview.message_id, GROUP, &data));
    nth_text(&tg, GROUP, "Stopped", 1, &bot).await;
    tg.wait_for(|s| toast(s, "Stopping"), T).await.unwrap();
    let messages = tg.messages(GROUP);
    let answer = messages.iter().find(|m| m.message_id == preview.message_id).unwrap();
    let shown = answer.visible_text.as_deref().unwrap_or_default();
    assert!(
        shown.starts_with("Half an answer") && shown.contains("Stopped"),
        "{shown}"
    );
    assert!(answer.reply_markup.is_none());
    // A late press on the finished preview is told so; the next question works.
    tg.push_update(updates::callback_query(FRIEND, preview.message_id, GROUP, &data));
    tg.wait_for(|s| toast(s, "already finished"), T).await.unwrap();
    ask(&tg, FRIEND, "again");
    nth_text(&tg, GROUP, "The next answer.", 1, &bot).await;
    assert_eq!(count(&tg, GROUP, "Stopped"), 1, "{:?}", texts(&tg, GROUP));
    assert_eq!(count(&tg, GROUP, "Half an answer"), 1, "{:?}", texts(&tg, GROUP));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_mid_preview_leaves_no_stale_preview() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::new().text("Words before the crash").stall_after(6));
    model.push(Turn::reply("Answered after the restart."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (env, bot) = start(&model, &tg).await;
    ask(&tg, OWNER, "start and crash");
    wait_preview(&tg, "Words before the crash", &bot).await;
    let mark = env.dir.path().join(format!("data/progress/{GROUP}_0"));
    eventually("the preview mark", &bot, || mark.exists()).await;
    bot.kill9();
    let bot = BotProcess::start(&env, TOKEN);
    tg.wait_for(|s| count(s, GROUP, "Words before the crash") == 0, T)
        .await
        .unwrap_or_else(|e| panic!("the stale preview stayed: {e}\n{:?}\n{}", texts(&tg, GROUP), bot.log()));
    // Recovery as today: the message (nothing of its answer was delivered) is answered again.
    nth_text(&tg, GROUP, "Answered after the restart.", 1, &bot).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        tg.messages(GROUP).iter().all(|m| m.reply_markup.is_none()),
        "{:?}",
        tg.messages(GROUP)
    );
    assert_eq!(count(&tg, GROUP, "Answered after the restart."), 1);
    assert!(!mark.exists());
}
