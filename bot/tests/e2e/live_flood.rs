//! Live answers under flood control, through the real binary: a 429 to a draft or a preview
//! holds only the chat's live updates (none is sent again before its `retry_after`), and the
//! final answer goes out as soon as it is written; under Telegram's own limits (imitated by the
//! double) drafts and previews keep each chat's pace, so they provoke no 429 and never delay an
//! answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use std::time::{Duration, Instant};
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// Far longer than the answer takes to write: a final that waited for it would be late.
const HOLD_SECS: u64 = 60;
const GROUP: i64 = -100_888;

fn paced_answer(parts: &[&str]) -> Turn {
    let mut turn = Turn::new().pace(Duration::from_millis(200));
    for p in parts {
        turn = turn.text(*p);
    }
    turn
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_on_drafts_holds_only_the_drafts_and_the_final_is_on_time() {
    let model = ModelServer::start().await.unwrap();
    let parts = ["Under flood control ", "the answer ", "still arrives ", "on time."];
    model.push(paced_answer(&parts));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, "stream_interval_ms = 100"));
    let bot = BotProcess::start(&env, TOKEN);
    tg.rate_limit("sendMessageDraft", HOLD_SECS);
    let asked = Instant::now();
    tg.push_update(updates::text_message(OWNER, OWNER, "hurry"));
    let answer = nth_text(&tg, OWNER, "on time.", 1, &bot).await;
    assert_eq!(answer, parts.concat());
    assert!(
        asked.elapsed() < Duration::from_secs(HOLD_SECS / 2),
        "the final waited for the drafts' hold: {:?}",
        asked.elapsed()
    );
    let drafts = tg.calls("sendMessageDraft");
    assert_eq!(drafts.len(), 1, "after the 429 no draft was tried again: {drafts:?}");
    assert!(tg.early_retries().is_empty(), "{:?}", tg.early_retries());
    assert_eq!(count(&tg, OWNER, "on time."), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_on_a_preview_edit_holds_only_the_preview_and_the_final_replaces_it() {
    let model = ModelServer::start().await.unwrap();
    let parts = ["A group ", "under flood ", "control gets ", "its answer."];
    model.push(paced_answer(&parts));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let extra = format!("allowed_chats = [{GROUP}]\nstream_interval_ms = 100");
    let env = Env::new(&model.url(), &telegram_config(&tg, &extra));
    let bot = BotProcess::start(&env, TOKEN);
    // The first preview edit is refused with a long retry_after.
    tg.fail_next_in(
        "editMessageText",
        GROUP,
        429,
        format!("Too Many Requests: retry after {HOLD_SECS}"),
        Some(HOLD_SECS),
    );
    let asked = Instant::now();
    tg.push_update(updates::group_message(
        GROUP,
        OWNER,
        &format!("{} hurry", mention(&tg)),
        None,
    ));
    tg.wait_for(
        |s| {
            s.messages(GROUP)
                .iter()
                .any(|m| m.visible_text.as_deref() == Some(parts.concat().as_str()) && m.reply_markup.is_none())
        },
        T,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{:?}\n{}", texts(&tg, GROUP), bot.log()));
    assert!(
        asked.elapsed() < Duration::from_secs(HOLD_SECS / 2),
        "{:?}",
        asked.elapsed()
    );
    let edits = tg.calls("editMessageText");
    assert_eq!(edits.len(), 2, "the refused edit, then only the final one: {edits:?}");
    assert_eq!(tg.messages(GROUP).len(), 1, "{:?}", texts(&tg, GROUP));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_telegrams_limits_a_burst_of_drafts_never_delays_a_final() {
    let model = ModelServer::start().await.unwrap();
    let parts: Vec<String> = (0..14).map(|n| format!("piece {n} of a long answer, ")).collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).chain(["all done."]).collect();
    let answer = parts.concat();
    for _ in 0..3 {
        model.push(paced_answer(&parts));
    }
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    tg.telegram_limits(true);
    // Drafts asked for ten times a second: far above Telegram's one message a second per chat.
    let extra = format!("allowed_chats = [{GROUP}]\nstream_interval_ms = 100");
    let env = Env::new(&model.url(), &telegram_config(&tg, &extra));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "write a lot"));
    tg.push_update(updates::text_message(FRIEND, FRIEND, "write a lot"));
    tg.push_update(updates::group_message(
        GROUP,
        OWNER,
        &format!("{} write a lot", mention(&tg)),
        None,
    ));
    for chat in [OWNER, FRIEND] {
        assert_eq!(nth_text(&tg, chat, "all done.", 1, &bot).await, answer);
    }
    tg.wait_for(
        |s| {
            s.messages(GROUP)
                .iter()
                .any(|m| m.visible_text.as_deref() == Some(answer.as_str()) && m.reply_markup.is_none())
        },
        T,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{:?}\n{}", texts(&tg, GROUP), bot.log()));
    // The drafts showed the answer growing, at the chat's pace, and nothing was refused: no
    // answer waited for a 429.
    let drafts: Vec<String> = tg
        .calls("sendMessageDraft")
        .iter()
        .filter(|c| c.chat_id() == Some(OWNER))
        .filter_map(|c| c.text().map(str::to_owned))
        .collect();
    assert!(drafts.len() >= 2, "{drafts:?}");
    let limited: Vec<_> = tg
        .sent()
        .into_iter()
        .filter(|c| c.error().is_some_and(|e| e.error_code == 429))
        .collect();
    assert!(limited.is_empty(), "429s: {limited:?}");
    assert!(tg.early_retries().is_empty(), "{:?}", tg.early_retries());
    for chat in [OWNER, FRIEND] {
        assert_eq!(count(&tg, chat, "all done."), 1);
    }
}
