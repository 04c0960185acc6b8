//! Live answers in private chats through the real binary: drafts (`sendMessageDraft`) while the
//! model writes, Telegram's Stop button (`stopped_message_generation`) aborting the run, and a
//! long answer whose finished chunks go out while the rest is still drafted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::json;
use std::time::Duration;
use volcanic_testkit::bot_api::{ApiCall, BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// The model's pause between two streamed events: slow enough for several drafts.
const GAP: Duration = Duration::from_millis(250);

/// The bot polling both doubles, drafts paced at `interval_ms`.
async fn start(model: &ModelServer, tg: &BotApiServer, interval_ms: u64) -> (Env, BotProcess) {
    start_with(model, tg, &format!("stream_interval_ms = {interval_ms}")).await
}

/// The bot polling both doubles, with `extra` lines in its `[telegram]` section.
pub async fn start_with(model: &ModelServer, tg: &BotApiServer, extra: &str) -> (Env, BotProcess) {
    let env = Env::new(&model.url(), &telegram_config(tg, extra));
    let bot = BotProcess::start(&env, TOKEN);
    tg.wait_for(|s| !s.get_updates_calls().is_empty(), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    (env, bot)
}

fn drafts(tg: &BotApiServer, chat: i64) -> Vec<ApiCall> {
    tg.calls("sendMessageDraft")
        .into_iter()
        .filter(|c| c.chat_id() == Some(chat))
        .collect()
}

fn sends(tg: &BotApiServer, chat: i64) -> Vec<ApiCall> {
    tg.calls("sendMessage")
        .into_iter()
        .filter(|c| c.chat_id() == Some(chat) && c.is_ok())
        .collect()
}

/// A draft's text (`None`: the "Thinking…" placeholder).
fn draft_text(c: &ApiCall) -> Option<String> {
    c.text().map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_answer_is_drafted_as_it_is_written_then_sent_once() {
    let model = ModelServer::start().await.unwrap();
    let parts = [
        "The first sentence. ",
        "The second one follows. ",
        "And the third ends it.",
    ];
    let mut turn = Turn::new().pace(GAP);
    for p in parts {
        turn = turn.text(p);
    }
    model.push(turn);
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (_env, bot) = start(&model, &tg, 100).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "tell me"));
    let whole = parts.concat();
    nth_text(&tg, OWNER, "And the third ends it.", 1, &bot).await;

    let drafts = drafts(&tg, OWNER);
    assert!(drafts.iter().all(ApiCall::is_ok), "every draft was taken: {drafts:?}");
    assert_eq!(draft_text(&drafts[0]), None, "the first draft is \"Thinking…\"");
    let id = drafts[0].param("draft_id").and_then(|v| v.as_i64()).unwrap();
    assert_ne!(id, 0);
    for d in &drafts {
        assert_eq!(
            d.param("draft_id").and_then(|v| v.as_i64()),
            Some(id),
            "one draft_id per answer"
        );
        assert_eq!(
            d.param("can_stop").and_then(|v| v.as_bool()),
            Some(true),
            "Stop is offered"
        );
    }
    let texts: Vec<String> = drafts.iter().filter_map(draft_text).collect();
    assert!(texts.len() >= 2, "the text was drafted as it grew: {texts:?}");
    for pair in texts.windows(2) {
        assert!(pair[1].starts_with(&pair[0]), "drafts only grow: {texts:?}");
    }
    assert!(
        whole.starts_with(texts.last().unwrap()),
        "drafts show the answer: {texts:?}"
    );
    // Paced: never more drafts than steps of the stream (3 texts × 3 pieces) plus "Thinking…",
    // whatever the machine's speed.
    assert!(
        drafts.len() <= 1 + 9 + 2,
        "{} drafts for 9 pieces of text",
        drafts.len()
    );
    // The answer itself: once, whole, after every draft.
    let answers: Vec<ApiCall> = sends(&tg, OWNER)
        .into_iter()
        .filter(|c| c.text().is_some_and(|t| t.contains("first sentence")))
        .collect();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0].text(), Some(whole.as_str()));
    assert!(
        drafts.iter().all(|d| d.at <= answers[0].at),
        "no draft after the answer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegrams_stop_button_aborts_the_run_and_the_partial_answer_is_delivered_once() {
    let model = ModelServer::start().await.unwrap();
    // The first text block streams, then the model keeps the connection open and says nothing.
    model.push(
        Turn::new()
            .text("Partial words so far")
            .text(" and never this")
            .stall_after(6),
    );
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (_env, bot) = start(&model, &tg, 100).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "write a lot"));
    tg.wait_for(
        |s| {
            drafts(s, OWNER)
                .iter()
                .any(|d| d.text() == Some("Partial words so far"))
        },
        T,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    let id = drafts(&tg, OWNER)[0]
        .param("draft_id")
        .and_then(|v| v.as_i64())
        .unwrap();
    tg.push_update(updates::stopped_generation(OWNER, id));
    let stopped = nth_text(&tg, OWNER, "Partial words so far", 1, &bot).await;
    assert!(stopped.contains("Stopped"), "marked as stopped: {stopped:?}");
    assert!(!stopped.contains("never this"));
    // A second press on the finished draft is ignored quietly; the next message works.
    tg.push_update(updates::stopped_generation(OWNER, id));
    model.push(Turn::reply("The next answer."));
    tg.push_update(updates::text_message(OWNER, OWNER, "again"));
    nth_text(&tg, OWNER, "The next answer.", 1, &bot).await;
    assert_eq!(count(&tg, OWNER, "Partial words so far"), 1, "{:?}", texts(&tg, OWNER));
    assert_eq!(count(&tg, OWNER, "Stopped"), 1, "{:?}", texts(&tg, OWNER));
    // Confirmed by the bot's next poll, which may come after the answer.
    tg.wait_for(|s| s.pending_updates().is_empty(), T)
        .await
        .unwrap_or_else(|e| panic!("every update is confirmed: {e}"));
}

/// A long answer: 24 paragraphs of about 260 characters (two messages' worth), streamed one
/// paragraph per `pace`.
pub fn long_answer(pace: Duration) -> Turn {
    let mut turn = Turn::new().pace(pace);
    for n in 1..=24 {
        let words = "words that fill the line ".repeat(10);
        turn = turn.text(format!("Paragraph {n:02}: {}\n\n", words.trim_end()));
    }
    turn
}

/// Asserts that the chat's text `joined` shows each paragraph of [`long_answer`] once, in order.
pub fn each_paragraph_once_in_order(joined: &str) {
    let mut at = 0;
    for n in 1..=24 {
        let tag = format!("Paragraph {n:02}:");
        assert_eq!(joined.matches(&tag).count(), 1, "{tag} once");
        let found = joined.find(&tag).unwrap();
        assert!(found >= at, "{tag} in order");
        at = found;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_answer_sends_its_finished_chunks_while_the_rest_is_drafted() {
    let model = ModelServer::start().await.unwrap();
    model.push(long_answer(Duration::from_millis(60)));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (_env, bot) = start(&model, &tg, 100).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "a long one"));
    nth_text(&tg, OWNER, "Paragraph 24:", 1, &bot).await;
    let messages = texts(&tg, OWNER);
    let answer: Vec<&String> = messages.iter().filter(|t| t.contains("Paragraph")).collect();
    assert!(answer.len() >= 2, "{answer:?}");
    each_paragraph_once_in_order(&answer.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n"));
    // The first chunk went out while the answer was still being drafted.
    let first_chunk = sends(&tg, OWNER)
        .into_iter()
        .find(|c| c.text().is_some_and(|t| t.contains("Paragraph 01:")))
        .unwrap();
    let later_drafts = drafts(&tg, OWNER).into_iter().filter(|d| d.at > first_chunk.at).count();
    assert!(later_drafts >= 1, "the rest was drafted after the first chunk was sent");
    for d in drafts(&tg, OWNER).iter().filter(|d| d.at > first_chunk.at) {
        assert!(
            !d.text().unwrap_or_default().contains("Paragraph 01:"),
            "a sent chunk is not drafted again"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_stop_mid_answer_is_told_once_by_the_marked_partial_answer() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::new().text("Some words already").stall_after(6));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (_env, bot) = start(&model, &tg, 100).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "write a lot"));
    tg.wait_for(
        |s| drafts(s, OWNER).iter().any(|d| d.text() == Some("Some words already")),
        T,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    tg.push_update(updates::text_message(OWNER, OWNER, "/stop"));
    let stopped = nth_text(&tg, OWNER, "Some words already", 1, &bot).await;
    assert!(stopped.ends_with("⏹ Stopped."), "{stopped:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(texts(&tg, OWNER), [stopped], "one outcome, no second \"Stopped.\"");
    // Nothing running now: /stop says so.
    tg.push_update(updates::text_message(OWNER, OWNER, "/stop"));
    nth_text(&tg, OWNER, "Nothing is running.", 1, &bot).await;
}

/// Text the model writes before a tool call can go out early (a chunk finished while drafted);
/// it is not the answer. A crash while the final answer is held back must not count those early
/// chunks as the final's: after the restart the final is delivered, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_sent_early_before_a_tool_call_do_not_hide_the_final_after_a_crash() {
    let model = ModelServer::start().await.unwrap();
    // Over one message of text (its first chunk goes out early), then a tool call.
    let call = json!({"command": "echo looked"});
    model.push(long_answer(Duration::from_millis(20)).tool_call("call_1", "bash", call));
    model.push(Turn::reply("THE FINAL ANSWER after the tool").delay(Duration::from_millis(500)));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (env, bot) = start(&model, &tg, 100).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "look it up"));
    nth_text(&tg, OWNER, "Paragraph 01:", 1, &bot).await;
    // Telegram holds the final back for a minute: the bot waits, and dies meanwhile.
    tg.fail_next_in("sendMessage", OWNER, 429, "Too Many Requests: retry after 60", Some(60));
    let journal = env.dir.path().join("data/inbound.jsonl");
    let read = || std::fs::read_to_string(&journal).unwrap_or_default();
    eventually("the final's refusal to be journaled", &bot, || {
        read().contains("\"refused\"")
    })
    .await;
    assert!(
        read().contains("\"dropped\""),
        "the early chunk was forgotten: {}",
        read()
    );
    assert_eq!(count(&tg, OWNER, "THE FINAL ANSWER"), 0);
    bot.kill9();

    let bot = BotProcess::start(&env, TOKEN);
    wait_text(&tg, OWNER, "THE FINAL ANSWER after the tool", &bot).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(count(&tg, OWNER, "THE FINAL ANSWER"), 1);
    assert_eq!(
        count(&tg, OWNER, "Paragraph 01:"),
        1,
        "the early chunk was not sent again"
    );
    assert_eq!(
        model.requests().len(),
        2,
        "the model was not asked again\n{}",
        bot.log()
    );
}
