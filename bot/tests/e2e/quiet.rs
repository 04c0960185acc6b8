//! Quiet check-ins through the real binary (docs/scheduling.md, "Quiet check-ins"): a quiet
//! job whose model answers `NOTHING` sends nothing to the chat (no message, no typing, no
//! draft, over a window after its run is recorded), one whose model finds something sends it,
//! and both runs are recorded in `jobs.json`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::scheduler::jobs_file;
use crate::support::*;
use serde_json::{Value, json};
use std::time::Duration;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// How long the chat is watched for anything after a quiet run is recorded.
const QUIET_WINDOW: Duration = Duration::from_secs(3);

/// The job whose prompt contains `text`.
fn job<'a>(all: &'a Value, text: &str) -> Option<&'a Value> {
    all["jobs"]
        .as_array()?
        .iter()
        .find(|j| j["kind"]["text"].as_str().is_some_and(|t| t.contains(text)))
}

/// Every Bot API call aimed at the owner's chat so far, but reactions (they mark the user's
/// own messages as answered, and a check-in answers none: one may land late for the turn
/// before).
fn calls_to_chat(tg: &BotApiServer) -> Vec<String> {
    tg.sent()
        .into_iter()
        .filter(|c| c.chat_id() == Some(OWNER) && c.method != "setmessagereaction")
        .map(|c| format!("{} {}", c.method, c.text().unwrap_or_default()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_check_in_that_finds_nothing_sends_nothing_and_one_that_finds_something_sends_it() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call(
        "call_1",
        "schedule",
        json!({"action": "add", "in": "3s", "quiet": true, "text": "Check the inbox; tell the user only if something is urgent."}),
    ));
    model.push(Turn::reply("Set up a quiet inbox check."));
    model.push(Turn::call(
        "call_2",
        "schedule",
        json!({"action": "add", "in": "9s", "quiet": true, "text": "Check the deploys; tell the user only if one failed."}),
    ));
    model.push(Turn::reply("Set up a quiet deploy check."));
    // The inbox check's run, then the deploy check's.
    model.push(Turn::reply("NOTHING"));
    model.push(Turn::reply(
        "The 14:00 deploy failed: the database migration timed out.",
    ));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(
        OWNER,
        OWNER,
        "check my inbox, tell me only if urgent",
    ));
    nth_text(&tg, OWNER, "quiet inbox check", 1, &bot).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "and the deploys, only failures"));
    nth_text(&tg, OWNER, "quiet deploy check", 1, &bot).await;
    let stored = jobs_file(&env, OWNER);
    assert_eq!(
        job(&stored, "inbox").map(|j| j["quiet"].clone()),
        Some(json!(true)),
        "{stored:#}"
    );

    // The inbox check runs and says NOTHING: recorded quiet, and the chat sees nothing at all.
    let before = calls_to_chat(&tg);
    let mut recorded = Value::Null;
    eventually("the inbox check recorded quiet", &bot, || {
        recorded = jobs_file(&env, OWNER);
        job(&recorded, "inbox").is_some_and(|j| j["last_run"]["status"] == "quiet")
    })
    .await;
    let inbox = job(&recorded, "inbox").unwrap();
    assert_eq!(
        inbox["last_run"]["delivery"], "nothing to say (quiet): nothing sent",
        "{inbox:#}"
    );
    let asked = model.requests()[4].messages().to_vec();
    let asked = serde_json::to_string(&asked).unwrap();
    assert!(
        asked.contains("quiet check-in") && asked.contains("exactly NOTHING") && asked.contains("Check the inbox"),
        "{asked}"
    );
    tokio::time::sleep(QUIET_WINDOW).await;
    let during: Vec<String> = calls_to_chat(&tg).split_off(before.len());
    assert!(during.is_empty(), "a quiet run that found nothing sent: {during:?}");

    // The deploy check finds something: it is sent, and recorded `ok`.
    let told = nth_text(&tg, OWNER, "deploy failed", 1, &bot).await;
    assert!(told.contains("Check-in"), "{told}");
    eventually("the deploy check recorded ok", &bot, || {
        job(&jobs_file(&env, OWNER), "deploys").is_some_and(|j| j["last_run"]["status"] == "ok")
    })
    .await;
    assert_eq!(count(&tg, OWNER, "NOTHING"), 0);
    // The chat's own conversation holds neither check-in: they ran in sessions of their own.
    let chat_requests = model
        .requests()
        .iter()
        .filter(|r| conversation(r).contains("check my inbox"))
        .count();
    assert_eq!(
        chat_requests, 4,
        "only the chat's own four turns carry its conversation"
    );
    assert_eq!(bot.terminate(Duration::from_secs(15)), Some(0));
}
