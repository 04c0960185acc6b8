//! A chat's sessions in memory: `/tz` reaches every loaded topic of a forum, and an idle session
//! leaves memory and resumes from its file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use std::time::{Duration, Instant};
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tz_in_one_topic_applies_to_every_loaded_topic_of_the_chat() {
    let model = ModelServer::start().await.unwrap();
    for t in ["five", "seven", "seven again"] {
        model.push(Turn::reply(format!("answer in topic {t}")));
    }
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let group: i64 = -1_001_234_567_890;
    let env = Env::new(
        &model.url(),
        &telegram_config(&tg, &format!("allowed_chats = [{group}]")),
    );
    let bot = BotProcess::start(&env, TOKEN);
    let me = format!("@{}", tg.bot_username());
    tg.push_update(updates::topic_message(group, 5, OWNER, &format!("{me} hello")));
    nth_text(&tg, group, "answer in topic five", 1, &bot).await;
    tg.push_update(updates::topic_message(group, 7, OWNER, &format!("{me} hello")));
    nth_text(&tg, group, "answer in topic seven", 1, &bot).await;
    assert!(!model.requests()[1].system_prompt().unwrap().contains("Asia/Tokyo"));

    // Both topics' sessions are loaded; the zone is set in topic 5 only.
    tg.push_update(updates::topic_message(group, 5, OWNER, &format!("/tz{me} Asia/Tokyo")));
    nth_text(&tg, group, "Time zone: Asia/Tokyo", 1, &bot).await;
    tg.push_update(updates::topic_message(
        group,
        7,
        OWNER,
        &format!("{me} what time is it?"),
    ));
    nth_text(&tg, group, "answer in topic seven again", 1, &bot).await;
    let system = model.requests()[2].system_prompt().unwrap();
    assert!(system.contains("Time zone: Asia/Tokyo"), "{system}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_leaves_memory_and_resumes_from_its_file() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("noted"));
    model.push(Turn::reply("it was apricot"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    // 0.02 minutes = 1.2 s.
    let env = Env::new(
        &model.url(),
        &format!("session_idle_minutes = 0.02\n{}", telegram_config(&tg, "")),
    );
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "remember the word apricot"));
    nth_text(&tg, OWNER, "noted", 1, &bot).await;
    let deadline = Instant::now() + T;
    while !bot.log().contains("session evicted from memory") {
        assert!(Instant::now() < deadline, "never evicted; bot log:\n{}", bot.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tg.push_update(updates::text_message(OWNER, OWNER, "which word was it?"));
    nth_text(&tg, OWNER, "it was apricot", 1, &bot).await;
    let second = serde_json::to_string(model.requests()[1].messages()).unwrap();
    assert!(second.contains("apricot") && second.contains("noted"), "{second}");
    let files = jsonl_files(&env.dir.path().join("data/sessions"));
    assert_eq!(files.len(), 1, "resumed the same file, no new one: {files:?}");
}
