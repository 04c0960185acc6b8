//! Exactly once, message by message, through the real binary killed with `kill -9`: a follow-up
//! queued behind a running run keeps its own journal progress, an answer held back by a crash is
//! delivered from the transcript without asking the model again, a pressed Retry survives a
//! crash of its own run, and an answer recovered after a crash still replaces its message's 👀.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::json;
use std::time::Duration;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// Waits until the owner's tool started (its command touched `started.flag` in the owner's
/// workspace) and the journal marked its update `tool` (so a kill now finds it cut off after a
/// tool); fails with the bot's log.
pub(crate) async fn wait_tool_journaled(env: &Env, bot: &BotProcess) {
    let flag = env.dir.path().join(format!("workspaces/{OWNER}/started.flag"));
    let journal = env.dir.path().join("data/inbound.jsonl");
    eventually("the tool to start", bot, || {
        flag.exists()
            && std::fs::read_to_string(&journal)
                .unwrap_or_default()
                .contains("\"tool\"")
    })
    .await;
}

/// The messages of `chat` with a Retry button, their texts.
fn retry_notices(tg: &BotApiServer, chat: i64) -> Vec<String> {
    tg.messages(chat)
        .into_iter()
        .filter(|m| {
            m.reply_markup
                .as_ref()
                .is_some_and(|k| k.to_string().contains("retry:"))
        })
        .map(|m| m.visible_text.unwrap_or_default())
        .collect()
}

/// Presses the Retry button of the newest notice in `chat`.
async fn press_retry(tg: &BotApiServer, chat: i64) {
    let notice = tg
        .messages(chat)
        .into_iter()
        .rev()
        .find(|m| {
            m.reply_markup
                .as_ref()
                .is_some_and(|k| k.to_string().contains("retry:"))
        })
        .expect("a notice with a Retry button");
    let data = notice.reply_markup.as_ref().unwrap()["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();
    tg.push_update(json!({
        "callback_query": {
            "id": format!("q{}", notice.message_id),
            "from": updates::user(OWNER),
            "chat_instance": "ci",
            "data": data,
            "message": {
                "message_id": notice.message_id,
                "date": 1_700_000_000,
                "chat": {"id": chat, "type": "private"},
                "from": {"id": tg.bot_id(), "is_bot": true, "first_name": "bot"},
                "text": notice.visible_text.clone().unwrap_or_default(),
            },
        }
    }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_queued_behind_a_run_keeps_its_own_progress() {
    let model = ModelServer::start().await.unwrap();
    // The first message's turn streams slowly, then runs a long tool.
    model.push(
        Turn::call(
            "toolu_f1",
            "bash",
            json!({"command": "touch started.flag; sleep 8; echo done"}),
        )
        .delay(Duration::from_secs(2)),
    );
    model.push(Turn::reply("answer to the follow-up"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "run the long job"));
    wait_requests(&model, 1, &bot).await;
    // Sent while the first is still streaming, before its tool: queued as a follow-up.
    tg.push_update(updates::text_message(OWNER, OWNER, "and then this follow-up"));
    let flag = env.dir.path().join("workspaces/1001/started.flag");
    eventually("the tool to start", &bot, || flag.exists()).await;
    bot.kill9();

    let bot = BotProcess::start(&env, TOKEN);
    wait_text(&tg, OWNER, "answer to the follow-up", &bot).await;
    wait_text(&tg, OWNER, "I was restarted", &bot).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    // One report: a Retry only for the message whose tool ran; the follow-up never reached the
    // model, so it ran (once) instead, as the report says.
    let notices = retry_notices(&tg, OWNER);
    assert_eq!(notices.len(), 1, "{:?}", texts(&tg, OWNER));
    assert!(
        notices[0].contains("“run the long job” — I was restarted"),
        "{}",
        notices[0]
    );
    assert!(
        notices[0].contains("“and then this follow-up” — it had not reached me yet: answered now"),
        "{}",
        notices[0]
    );
    let report = tg
        .messages(OWNER)
        .into_iter()
        .find(|m| m.reply_markup.is_some())
        .unwrap();
    assert_eq!(
        report.reply_markup.unwrap()["inline_keyboard"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(count(&tg, OWNER, "answer to the follow-up"), 1);
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "{}", bot.log());
    assert_eq!(conversation(&requests[1]).matches("and then this follow-up").count(), 1);
    drop(bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_a_crash_held_back_is_delivered_from_the_transcript() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("the answer that was held back"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    // Telegram holds the answer back for a minute: the bot waits, and dies meanwhile.
    tg.fail_next("sendMessage", 429, "Too Many Requests: retry after 60", Some(60));
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "what is the answer?"));
    tg.wait_for_calls("sendMessage", 1, T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    let journal = env.dir.path().join("data/inbound.jsonl");
    let read = || std::fs::read_to_string(&journal).unwrap_or_default();
    eventually("the refusal to be journaled", &bot, || read().contains("\"refused\"")).await;
    assert!(!read().contains("\"done\""), "{}", read());
    bot.kill9();

    let bot = BotProcess::start(&env, TOKEN);
    // Delivered from the session's transcript, once, without asking the model again.
    wait_text(&tg, OWNER, "the answer that was held back", &bot).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(count(&tg, OWNER, "the answer that was held back"), 1);
    assert_eq!(model.requests().len(), 1, "the model was asked again\n{}", bot.log());
    // And a further restart has nothing left to do.
    assert_eq!(bot.terminate(T), Some(0));
    let bot = BotProcess::start(&env, TOKEN);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(count(&tg, OWNER, "the answer that was held back"), 1);
    assert_eq!(model.requests().len(), 1);
    drop(bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pressed_retry_survives_a_crash_of_its_own_run() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call(
        "toolu_r1",
        "bash",
        json!({"command": "touch started.flag; sleep 8; echo done"}),
    ));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "deploy the thing"));
    let flag = env.dir.path().join("workspaces/1001/started.flag");
    eventually("the tool to start", &bot, || flag.exists()).await;
    bot.kill9();
    let bot = BotProcess::start(&env, TOKEN);
    wait_text(&tg, OWNER, "I was restarted", &bot).await;

    // The retried run is killed too, while the model streams (before any tool).
    model.push(Turn::reply("never delivered").delay(Duration::from_secs(5)));
    press_retry(&tg, OWNER).await;
    // The notice turned into "Retrying" (sent after a journal sync, which a busy disk slows)
    // before the kill: what is checked below is that it is not told twice.
    wait_text(&tg, OWNER, "Retrying", &bot).await;
    wait_requests(&model, 2, &bot).await;
    bot.kill9();

    model.push(Turn::reply("the retried answer"));
    let bot = BotProcess::start(&env, TOKEN);
    wait_text(&tg, OWNER, "the retried answer", &bot).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(count(&tg, OWNER, "the retried answer"), 1);
    assert_eq!(count(&tg, OWNER, "never delivered"), 0);
    // The first report's line was marked "Retrying" (its button gone); no second Retry came (no
    // tool ran in the retried run): the second report says it was run again.
    assert_eq!(retry_notices(&tg, OWNER).len(), 0, "{:?}", texts(&tg, OWNER));
    assert_eq!(count(&tg, OWNER, "I was restarted"), 1, "{:?}", texts(&tg, OWNER));
    assert_eq!(
        count(
            &tg,
            OWNER,
            "“deploy the thing” — cut off before any tool ran: run again now"
        ),
        1,
        "{:?}",
        texts(&tg, OWNER)
    );
    assert_eq!(count(&tg, OWNER, "Retrying"), 1, "{:?}", texts(&tg, OWNER));
    // The retried prompt is in the conversation once, after the first one.
    let requests = wait_requests(&model, 3, &bot).await;
    assert_eq!(requests.len(), 3, "{}", bot.log());
    assert_eq!(conversation(&requests[2]).matches("deploy the thing").count(), 2);
    // A further restart repeats nothing.
    assert_eq!(bot.terminate(T), Some(0));
    let bot = BotProcess::start(&env, TOKEN);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(count(&tg, OWNER, "the retried answer"), 1);
    assert_eq!(model.requests().len(), 3);
    drop(bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_bytes_in_the_journal_are_set_aside_and_the_bot_starts() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("answered before the damage"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "first message"));
    wait_text(&tg, OWNER, "answered before the damage", &bot).await;
    bot.kill9();
    // A disk or a crash left invalid UTF-8 and a torn record in the middle of the journal.
    let journal = env.dir.path().join("data/inbound.jsonl");
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes.extend_from_slice(b"\xff\xfe\x00junk\n{\"t\":\"state\",\"id\":99,\"s\":\"do\n");
    bytes.extend_from_slice(b"{\"t\":\"seen\",\"id\":1}\n");
    std::fs::write(&journal, &bytes).unwrap();

    model.push(Turn::reply("answered after the damage"));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "second message"));
    wait_text(&tg, OWNER, "answered after the damage", &bot).await;
    let aside: Vec<std::path::PathBuf> = std::fs::read_dir(env.dir.path().join("data"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains("inbound.jsonl.corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}\n{}", bot.log());
    assert_eq!(
        std::fs::read(&aside[0]).unwrap(),
        bytes,
        "the copy is the damaged file as it was"
    );
    let log = bot.log();
    assert!(log.contains("unreadable line"), "{log}");
    // Nothing was answered twice: the first message stayed done.
    assert_eq!(count(&tg, OWNER, "answered before the damage"), 1);
    assert_eq!(model.requests().len(), 2);
    drop(bot);
}

/// A run cut off before its tools goes on from the transcript after the restart, ahead of a
/// message that was waiting at Telegram: that message gets a run of its own (it is not taken
/// into the resumed run, which would answer both and then the first again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_run_starts_before_a_message_waiting_at_restart() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("never delivered").stall_after(2));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "first question"));
    wait_requests(&model, 1, &bot).await;
    bot.kill9();

    // The next message waits at Telegram: the first getUpdates after the restart returns it.
    tg.push_update(updates::text_message(OWNER, OWNER, "second question"));
    model.push(Turn::reply("answer to the first").delay(Duration::from_millis(300)));
    model.push(Turn::reply("answer to the second"));
    let bot = BotProcess::start(&env, TOKEN);
    wait_text(&tg, OWNER, "answer to the second", &bot).await;
    let requests = wait_requests(&model, 3, &bot).await;
    let resumed = conversation(&requests[1]);
    assert!(
        resumed.contains("first question") && !resumed.contains("second question"),
        "the resumed run took the waiting message: {resumed}"
    );
    assert!(conversation(&requests[2]).contains("answer to the first"));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(model.requests().len(), 3, "{}", bot.log());
    assert_eq!(count(&tg, OWNER, "answer to the first"), 1);
    assert_eq!(count(&tg, OWNER, "answer to the second"), 1);
    drop(bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_recovered_after_a_crash_replaces_the_accepted_reaction() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::new().text("Words before the crash").stall_after(6));
    model.push(Turn::reply("Answered after the restart."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    let pushed = tg.push_update(updates::text_message(OWNER, OWNER, "start and crash"));
    let id = pushed["message"]["message_id"].as_i64().unwrap();
    tg.wait_for(|s| s.reaction(OWNER, id).as_deref() == Some("👀"), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    wait_requests(&model, 1, &bot).await;
    bot.kill9();
    // The restart continues the run from the transcript; its answer is the message's outcome.
    let bot = BotProcess::start(&env, TOKEN);
    nth_text(&tg, OWNER, "Answered after the restart.", 1, &bot).await;
    tg.wait_for(|s| s.reaction(OWNER, id).as_deref() == Some("👍"), T)
        .await
        .unwrap_or_else(|e| panic!("the 👀 stayed: {e}\n{}", bot.log()));
}

/// A caller's job killed with its answer on the wire, which Telegram never took: after the
/// restart the slot's answer is told from the job's transcript, once, without asking the model
/// again (as for the chat's own jobs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_job_answer_cut_off_by_a_crash_is_told_once_without_asking_again() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("Carol's report: all good."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    tg.add_chat(OWNER);
    tg.hold_next("sendMessage", |p| {
        p["text"].as_str().is_some_and(|t| t.contains("Carol's report"))
    });
    let config = format!(
        "{}{}[a2a.server]\n[[a2a.server.callers]]\nname = \"carol\"\ntoken_env = \"E2E_CAROL\"\nchat = {OWNER}\n",
        telegram_config(&tg, ""),
        http_section(free_port())
    );
    let env = Env::new(&model.url(), &config);
    let at = chrono::Utc::now() + chrono::Duration::seconds(3);
    let job = json!({
        "id": "car001",
        "target": {"chat_id": OWNER},
        "kind": {"type": "prompt", "text": "Report on the backup."},
        "schedule": {"type": "at", "at": at, "time_zone": "UTC"},
        "enabled": true,
        "created": chrono::Utc::now(),
        "next_run": at,
        "origin": {"type": "caller", "name": "carol"},
    });
    let jobs = env.dir.path().join("workspaces/a2a-carol/.volcanic/scheduler");
    std::fs::create_dir_all(&jobs).unwrap();
    std::fs::write(
        jobs.join("jobs.json"),
        serde_json::to_vec(&json!({"version": 1, "jobs": [job]})).unwrap(),
    )
    .unwrap();
    let carol = [("E2E_CAROL", "carol-token-0123456789abcdef")];

    let bot = BotProcess::start_with(&env, TOKEN, Some("info"), &carol);
    eventually("the answer held on the wire", &bot, || !tg.held_calls().is_empty()).await;
    bot.kill9();
    // Dropped: Telegram never took it.
    assert_eq!(tg.release_held(false), 1);
    assert_eq!(count(&tg, OWNER, "Carol's report"), 0);

    let bot = BotProcess::start_with(&env, TOKEN, Some("info"), &carol);
    nth_text(&tg, OWNER, "Carol's report: all good.", 1, &bot).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(count(&tg, OWNER, "Carol's report"), 1, "{:?}", texts(&tg, OWNER));
    assert_eq!(model.requests().len(), 1, "the model was asked again\n{}", bot.log());
}
