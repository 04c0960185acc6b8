//! Flood control through the real binary: a 429 holds only the chat that got it, an answer is
//! retried for as long as Telegram says to wait, and an answer Telegram refuses for good is
//! reported to the chat once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use std::time::Duration;
use volcanic_testkit::bot_api::{ApiCall, BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// The bot against both doubles, polling.
async fn start(model: &ModelServer, tg: &BotApiServer) -> (Env, BotProcess) {
    let env = Env::new(&model.url(), &telegram_config(tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.wait_for(|s| !s.get_updates_calls().is_empty(), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    (env, bot)
}

/// `sendMessage` calls to `chat`, in order.
fn sends(tg: &BotApiServer, chat: i64) -> Vec<ApiCall> {
    tg.calls("sendMessage")
        .into_iter()
        .filter(|c| c.chat_id() == Some(chat))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_in_one_chat_does_not_delay_another_chat() {
    const WAIT: u64 = 10;
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("answer for the owner"));
    model.push(Turn::reply("answer for the friend"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (_env, bot) = start(&model, &tg).await;
    tg.fail_next_in(
        "sendMessage",
        OWNER,
        429,
        format!("Too Many Requests: retry after {WAIT}"),
        Some(WAIT),
    );
    tg.push_update(updates::text_message(OWNER, OWNER, "hello"));
    tg.wait_for(|s| sends(s, OWNER).iter().any(|c| !c.is_ok()), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    let limited = sends(&tg, OWNER)[0].clone();
    assert_eq!(limited.error().map(|e| e.error_code), Some(429));
    let lifts = limited.at + Duration::from_secs(WAIT);
    // The friend writes while the owner's chat waits: the answer comes at once.
    tg.push_update(updates::text_message(FRIEND, FRIEND, "hi"));
    nth_text(&tg, FRIEND, "answer for the friend", 1, &bot).await;
    let friend_answer = sends(&tg, FRIEND).into_iter().find(|c| c.is_ok()).unwrap();
    assert!(
        friend_answer.at < lifts,
        "the friend's answer waited for the owner's flood control ({:?} after it lifted)",
        friend_answer.at - lifts
    );
    // The owner's answer comes once the wait ran out, not before, and only once.
    tg.wait_for(
        |s| texts(s, OWNER).iter().any(|t| t == "answer for the owner"),
        T + Duration::from_secs(WAIT),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    let delivered = sends(&tg, OWNER).into_iter().find(|c| c.is_ok()).unwrap();
    assert!(delivered.at >= lifts);
    assert_eq!(texts(&tg, OWNER), ["answer for the owner"]);
    assert!(tg.early_retries().is_empty(), "{:?}", tg.early_retries());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seven_429s_in_a_row_still_deliver_the_answer() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("delivered in the end"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (_env, bot) = start(&model, &tg).await;
    for _ in 0..7 {
        tg.fail_next_in("sendMessage", OWNER, 429, "Too Many Requests: retry after 1", Some(1));
    }
    tg.push_update(updates::text_message(OWNER, OWNER, "hello"));
    tg.wait_for(
        |s| texts(s, OWNER).iter().any(|t| t == "delivered in the end"),
        T + Duration::from_secs(10),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    let calls = sends(&tg, OWNER);
    let refused = calls.iter().filter(|c| !c.is_ok()).count();
    assert_eq!((refused, calls.len()), (7, 8), "seven 429s, then the answer");
    assert_eq!(texts(&tg, OWNER), ["delivered in the end"]);
    assert!(tg.early_retries().is_empty(), "{:?}", tg.early_retries());
    assert!(bot.log().contains("Telegram flood control: this chat waits"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_telegram_refuses_is_reported_to_the_chat_once() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("an answer Telegram will refuse"));
    model.push(Turn::reply("short and fine"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (_env, bot) = start(&model, &tg).await;
    tg.fail_next_in("sendMessage", OWNER, 400, "Bad Request: message is too long", None);
    tg.push_update(updates::text_message(OWNER, OWNER, "tell me a lot"));
    let notice = nth_text(&tg, OWNER, "could not be delivered", 1, &bot).await;
    assert!(notice.contains("Bad Request: message is too long"), "{notice}");
    // The next answer goes through, and the notice was given once.
    tg.push_update(updates::text_message(OWNER, OWNER, "and now?"));
    nth_text(&tg, OWNER, "short and fine", 1, &bot).await;
    let shown = texts(&tg, OWNER);
    assert_eq!(
        shown.iter().filter(|t| t.contains("could not be delivered")).count(),
        1,
        "{shown:?}"
    );
    assert!(!shown.iter().any(|t| t.contains("will refuse")), "{shown:?}");
    assert_eq!(sends(&tg, OWNER).iter().filter(|c| !c.is_ok()).count(), 1);
}
