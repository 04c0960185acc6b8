//! The Telegram host under concurrency, crashes, restarts and Telegram's own failures: the real
//! binary against the Bot API double and the scripted model server. Each test asserts what the
//! user sees; "eventually" means within `T` (20 s, generous for a loaded 2-core machine), while
//! orderings and absences are asserted exactly.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::exactly_once::wait_tool_journaled;
use crate::support::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// Words of the form `w0000`..`w9999`, in order.
fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() == 5 && w.starts_with('w') && w[1..].bytes().all(|b| b.is_ascii_digit()))
        .map(str::to_owned)
        .collect()
}

// 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_chats_run_in_parallel() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("answer for A").delay(Duration::from_secs(3)));
    model.push(Turn::reply("answer for B"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    let (a, b) = (OWNER, FRIEND);
    tg.push_update(updates::text_message(a, a, "question from A"));
    // A's run holds the slow turn; only then does B write.
    let first = wait_requests(&model, 1, &bot).await;
    assert!(conversation(&first[0]).contains("question from A"));
    tg.push_update(updates::text_message(b, b, "question from B"));
    wait_text(&tg, b, "answer for B", &bot).await;
    // B did not wait for A's 3 s turn.
    assert_eq!(
        count(&tg, a, "answer for A"),
        0,
        "A answered before B: {:?}",
        texts(&tg, a)
    );
    // A was not held up by B either.
    wait_text(&tg, a, "answer for A", &bot).await;
    assert_eq!(texts(&tg, a), ["answer for A"]);
    assert_eq!(texts(&tg, b), ["answer for B"]);
    let second = &model.requests()[1];
    assert!(conversation(second).contains("question from B") && !conversation(second).contains("question from A"));
}

// 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_forum_topic_has_its_own_session() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("answer in topic five"));
    model.push(Turn::reply("answer in topic seven"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let group: i64 = -1_001_234_567_890;
    let env = Env::new(
        &model.url(),
        &telegram_config(&tg, &format!("allowed_chats = [{group}]")),
    );
    let bot = BotProcess::start(&env, TOKEN);
    let me = mention(&tg);
    tg.push_update(updates::topic_message(
        group,
        5,
        OWNER,
        &format!("{me} remember the word apricot"),
    ));
    wait_text(&tg, group, "answer in topic five", &bot).await;
    tg.push_update(updates::topic_message(
        group,
        7,
        OWNER,
        &format!("{me} which word was it?"),
    ));
    wait_text(&tg, group, "answer in topic seven", &bot).await;

    let by_thread = |needle: &str| {
        tg.messages(group)
            .into_iter()
            .filter(|m| m.visible_text.as_deref().unwrap_or_default().contains(needle))
            .map(|m| m.thread_id)
            .collect::<Vec<_>>()
    };
    assert_eq!(by_thread("answer in topic five"), [Some(5)]);
    assert_eq!(by_thread("answer in topic seven"), [Some(7)]);

    let sessions = env.dir.path().join("data/sessions/g1001234567890");
    assert_eq!(jsonl_files(&sessions.join("5")).len(), 1, "{}", bot.log());
    assert_eq!(jsonl_files(&sessions.join("7")).len(), 1, "{}", bot.log());
    // One workspace for the chat.
    assert!(env.dir.path().join("workspaces/g1001234567890").is_dir());

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(conversation(&requests[0]).contains("apricot"));
    let second = conversation(&requests[1]);
    assert!(second.contains("which word was it?"), "{second}");
    assert!(
        !second.contains("apricot") && !second.contains("answer in topic five"),
        "{second}"
    );
}

// 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migrated_group_keeps_workspace_settings_and_session() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call(
        "toolu_m1",
        "bash",
        json!({"command": "echo kept > notes.txt"}),
    ));
    model.push(Turn::reply("I wrote notes.txt"));
    model.push(Turn::reply("continuing in the supergroup"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (old, new): (i64, i64) = (-4242, -1_009_999);
    // Only the old id is listed: the config was written before the upgrade.
    let env = Env::new(&model.url(), &telegram_config(&tg, &format!("allowed_chats = [{old}]")));
    let bot = BotProcess::start(&env, TOKEN);
    let me = mention(&tg);
    tg.push_update(updates::group_message(
        old,
        OWNER,
        &format!("/tz{me} Europe/Berlin"),
        None,
    ));
    wait_text(&tg, old, "Time zone: Europe/Berlin", &bot).await;
    tg.push_update(updates::group_message(
        old,
        OWNER,
        &format!("{me} please write notes"),
        None,
    ));
    wait_text(&tg, old, "I wrote notes.txt", &bot).await;
    // The progress message is gone before the group moves.
    tg.wait_for(|s| s.messages(old).len() == 2, T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    let ws = env.dir.path().join("workspaces");
    assert_eq!(std::fs::read_to_string(ws.join("g4242/notes.txt")).unwrap(), "kept\n");

    // Telegram sends both service messages.
    tg.push_update(updates::migrate_to_chat(old, new, OWNER));
    tg.push_update(updates::migrate_from_chat(new, old, OWNER));
    eventually("the workspace to move", &bot, || {
        ws.join("g1009999/notes.txt").is_file() && !ws.join("g4242").exists()
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(ws.join("g1009999/notes.txt")).unwrap(),
        "kept\n"
    );

    tg.push_update(updates::group_message(new, OWNER, &format!("/tz{me}"), None));
    wait_text(&tg, new, "Time zone: Europe/Berlin (", &bot).await;
    tg.push_update(updates::group_message(
        new,
        OWNER,
        &format!("{me} what did you write?"),
        None,
    ));
    wait_text(&tg, new, "continuing in the supergroup", &bot).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let third = conversation(&requests[2]);
    assert!(
        third.contains("please write notes")
            && third.contains("I wrote notes.txt")
            && third.contains("what did you write?"),
        "{third}"
    );
    // The service messages themselves got no answer.
    let shown = texts(&tg, new);
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert!(shown[0].starts_with("Time zone: Europe/Berlin (") && shown[1] == "continuing in the supergroup");
}

// 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_markdown_reply_is_chunked_within_telegram_limits() {
    let mut md = String::new();
    let mut n = 0;
    let mut word = || {
        n += 1;
        format!("w{n:04}")
    };
    let mut section = 0;
    while md.chars().count() < 10_000 {
        section += 1;
        md.push_str(&format!("## Section {section} {}\n\n", word()));
        for _ in 0..3 {
            let para: Vec<String> = (0..12).map(|_| word()).collect();
            md.push_str(&format!(
                "Some **bold {}** and *italic* text: {}.\n\n",
                word(),
                para.join(" ")
            ));
        }
        for _ in 0..4 {
            md.push_str(&format!("- item {} with `code {}`\n", word(), word()));
        }
        md.push('\n');
        for i in 1..=3 {
            md.push_str(&format!("{i}. step {} then {}\n", word(), word()));
        }
        md.push_str("\n```rust\n");
        for _ in 0..6 {
            md.push_str(&format!("let {} = compute(\"{}\") < 3 && true;\n", word(), word()));
        }
        md.push_str("```\n\n");
    }
    let expected = tokens(&md);
    let last = expected.last().unwrap().clone();
    assert!(md.chars().count() >= 10_000 && expected.len() > 500);

    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply(md.clone()));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "write a lot"));
    wait_text(&tg, OWNER, &last, &bot).await;

    let calls = tg.calls("sendMessage");
    let failed: Vec<String> = calls.iter().filter_map(|c| c.error().map(|e| e.to_string())).collect();
    assert!(failed.is_empty(), "the double refused chunks: {failed:?}");
    let messages = tg.messages(OWNER);
    assert!(messages.len() >= 3, "{} messages", messages.len());
    let mut all = String::new();
    for m in &messages {
        let visible = m.visible_text.clone().unwrap_or_default();
        let units = visible.encode_utf16().count();
        assert!(units <= 4096, "a chunk of {units} UTF-16 units");
        assert_eq!(m.parse_mode.as_deref(), Some("HTML"));
        all.push_str(&visible);
        all.push('\n');
    }
    let got = tokens(&all);
    assert_eq!(got.len(), expected.len(), "words lost or repeated");
    assert!(got == expected, "the chunks do not hold the reply's words in order");
    // Code stayed code, across chunks too.
    assert!(messages.iter().all(|m| {
        let html = m.text.clone().unwrap_or_default();
        html.matches("<pre").count() == html.matches("</pre>").count()
    }));
    assert!(all.contains("compute(\"w") && all.contains("< 3 && true"));
}

// 5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_storm_is_waited_out_without_early_retries() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("warm-up answer"));
    model.push(Turn::reply("answer despite flood control"));
    model.push(Turn::reply("answer after the storm"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    // A warm session answers at once, so the answer is due inside the 2 s window.
    tg.push_update(updates::text_message(OWNER, OWNER, "hello"));
    wait_text(&tg, OWNER, "warm-up answer", &bot).await;

    tg.rate_limit("sendMessage", 2);
    let storm = Instant::now();
    tg.push_update(updates::text_message(OWNER, OWNER, "answer me during the storm"));
    wait_text(&tg, OWNER, "answer despite flood control", &bot).await;
    let refused = tg
        .calls("sendMessage")
        .iter()
        .filter(|c| c.error().is_some_and(|e| e.error_code == 429))
        .count();
    assert!(refused >= 1, "the answer never met the storm: {}", bot.log());
    assert!(
        storm.elapsed() >= Duration::from_millis(1900),
        "answered inside the window"
    );
    assert!(tg.early_retries().is_empty(), "{:?}", tg.early_retries());
    assert_eq!(count(&tg, OWNER, "answer despite flood control"), 1);

    tg.rate_limit("sendMessage", 0);
    tg.push_update(updates::text_message(OWNER, OWNER, "and now?"));
    wait_text(&tg, OWNER, "answer after the storm", &bot).await;
    assert!(tg.early_retries().is_empty());
    assert_eq!(
        texts(&tg, OWNER),
        [
            "warm-up answer",
            "answer despite flood control",
            "answer after the storm"
        ]
    );
}

// 6.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunk_telegram_cannot_parse_goes_out_as_plain_text() {
    let model = ModelServer::start().await.unwrap();
    let reply = "Here is **bold** and `code` for you";
    model.push(Turn::reply(reply));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.fail_next(
        "sendMessage",
        400,
        "Bad Request: can't parse entities: Unsupported start tag \"b\" at byte offset 8",
        None,
    );
    tg.push_update(updates::text_message(OWNER, OWNER, "format something"));
    wait_text(&tg, OWNER, "bold", &bot).await;
    let messages = tg.messages(OWNER);
    assert_eq!(messages.len(), 1, "{:?}", texts(&tg, OWNER));
    assert_eq!(messages[0].parse_mode, None);
    assert_eq!(messages[0].visible_text.as_deref(), Some(reply));
    let calls = tg.calls("sendMessage");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].param("parse_mode"), Some(&json!("HTML")));
    assert!(calls[0].error().is_some() && calls[1].is_ok());
}

// 7.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_aborts_the_run_and_its_late_answer_is_never_sent() {
    let model = ModelServer::start().await.unwrap();
    let delay = Duration::from_secs(5);
    model.push(Turn::reply("late answer that must not be sent").delay(delay));
    model.push(Turn::reply("still here"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "do something slow"));
    wait_requests(&model, 1, &bot).await;
    let asked = Instant::now();
    tg.push_update(updates::text_message(OWNER, OWNER, "/stop"));
    wait_text(&tg, OWNER, "Stopped.", &bot).await;
    // Past the turn's delay plus 2 s: the aborted answer never shows up.
    tokio::time::sleep((asked + delay + Duration::from_secs(2)).saturating_duration_since(Instant::now())).await;
    assert_eq!(count(&tg, OWNER, "late answer"), 0, "{:?}", texts(&tg, OWNER));
    assert_eq!(texts(&tg, OWNER), ["Stopped."]);
    // The session is still usable.
    tg.push_update(updates::text_message(OWNER, OWNER, "are you still there?"));
    wait_text(&tg, OWNER, "still here", &bot).await;
    assert_eq!(texts(&tg, OWNER), ["Stopped.", "still here"]);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(!conversation(&requests[1]).contains("late answer"));
}

// 8.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_during_a_run_is_a_follow_up() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("first answer").delay(Duration::from_secs(2)));
    model.push(Turn::reply("second answer"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "first question"));
    wait_requests(&model, 1, &bot).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "second question"));
    wait_text(&tg, OWNER, "second answer", &bot).await;
    assert_eq!(texts(&tg, OWNER), ["first answer", "second answer"]);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(!conversation(&requests[0]).contains("second question"));
    let second = conversation(&requests[1]);
    assert!(
        second.contains("first question") && second.contains("first answer") && second.contains("second question"),
        "{second}"
    );
    // One session file for the chat: the follow-up went into the same session.
    assert_eq!(jsonl_files(&env.dir.path().join("data/sessions/1001")).len(), 1);
}

// 9a.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_before_any_tool_retries_the_message_once() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("slow answer from the killed process").delay(Duration::from_secs(3)));
    model.push(Turn::reply("answer after the restart"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "please survive a crash"));
    wait_requests(&model, 1, &bot).await;
    bot.kill9();

    let bot = BotProcess::start(&env, TOKEN);
    wait_text(&tg, OWNER, "answer after the restart", &bot).await;
    let requests = wait_requests(&model, 2, &bot).await;
    // The retry asks the model again, continuing from the prompt the killed run had persisted:
    // the message is in the conversation exactly once.
    assert_eq!(
        conversation(&requests[1]).matches("please survive a crash").count(),
        1,
        "{}",
        conversation(&requests[1])
    );
    // Another restart must not answer it again.
    assert_eq!(bot.terminate(T), Some(0));
    let polls = tg.get_updates_calls().len();
    let bot = BotProcess::start(&env, TOKEN);
    tg.wait_for(|s| s.get_updates_calls().len() > polls, T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Besides the answer, only the first restart's "while I was down" report, saying so.
    let (reports, others): (Vec<String>, Vec<String>) = texts(&tg, OWNER)
        .into_iter()
        .partition(|t| t.contains("While I was down"));
    assert_eq!(others, ["answer after the restart"]);
    assert!(reports.len() <= 1, "{reports:?}");
    assert!(
        reports
            .iter()
            .all(|r| r.contains("“please survive a crash” — cut off before any tool ran: run again now")),
        "{reports:?}"
    );
    assert_eq!(model.requests().len(), 2, "the model was asked again");
    drop(bot);
}

// 9b.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_after_a_tool_started_tells_the_chat_and_does_not_retry() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call(
        "toolu_k1",
        "bash",
        json!({"command": "touch started.flag; sleep 5; echo done"}),
    ));
    model.push(Turn::reply("answer to the later message"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    // The progress message (not a draft, which shows the tools with live answers on).
    let env = Env::new(&model.url(), &telegram_config(&tg, "streaming = \"off\""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "run the long job"));
    wait_tool_journaled(&env, &bot).await;
    // The progress message is on screen when the process dies, and remembered (the mark is
    // written when Telegram's reply with its id is read, a moment after the double shows it).
    wait_text(&tg, OWNER, "⚙️ bash", &bot).await;
    let mark = env.dir.path().join(format!("data/progress/{OWNER}_0"));
    eventually("the progress mark", &bot, || mark.exists()).await;
    bot.kill9();
    // Written while the bot was down.
    tg.push_update(updates::text_message(OWNER, OWNER, "are you there?"));

    let bot = BotProcess::start(&env, TOKEN);
    wait_text(&tg, OWNER, "I was restarted while working on your message", &bot).await;
    // The new process deleted the dead one's progress message.
    tg.wait_for(|s| count(s, OWNER, "⚙️") == 0, T)
        .await
        .unwrap_or_else(|e| panic!("the old progress message stayed: {e}\n{:?}", texts(&tg, OWNER)));
    wait_text(&tg, OWNER, "answer to the later message", &bot).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let notice: Vec<String> = texts(&tg, OWNER)
        .into_iter()
        .filter(|t| t.contains("I was restarted"))
        .collect();
    assert_eq!(notice.len(), 1, "{:?}", texts(&tg, OWNER));
    assert!(notice[0].contains("run the long job"), "{}", notice[0]);
    assert_eq!(count(&tg, OWNER, "answer to the later message"), 1);
    // The interrupted message was not sent to the model again; the later one was, once.
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "{}", bot.log());
    let second = conversation(&requests[1]);
    assert!(second.contains("are you there?"), "{second}");
    assert_eq!(second.matches("run the long job").count(), 1, "{second}");

    // The notice carries a Retry button; pressing it runs the message again, once.
    model.push(Turn::reply("retried the long job"));
    let with_button = tg
        .messages(OWNER)
        .into_iter()
        .find(|m| {
            m.visible_text
                .as_deref()
                .unwrap_or_default()
                .contains("I was restarted")
        })
        .unwrap();
    let data = with_button.reply_markup.as_ref().unwrap()["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(data.starts_with("retry:"), "{data}");
    tg.push_update(updates::callback_query(OWNER, with_button.message_id, OWNER, &data));
    wait_text(&tg, OWNER, "retried the long job", &bot).await;
    // A second press finds nothing left to retry.
    tg.push_update(updates::callback_query(OWNER, with_button.message_id, OWNER, &data));
    wait_text(&tg, OWNER, "already retried", &bot).await;
    assert_eq!(model.requests().len(), 3);
    assert_eq!(count(&tg, OWNER, "retried the long job"), 1);
}

// 10.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_runs_finish_then_aborts_and_exits_zero() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("finished before shutdown").delay(Duration::from_secs(2)));
    model.push(Turn::call(
        "toolu_t1",
        "bash",
        json!({"command": "touch started.flag; sleep 60"}),
    ));
    model.push(Turn::reply("after the second restart"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));

    // A run that ends inside the grace period is finished and its answer delivered.
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "a short job"));
    wait_requests(&model, 1, &bot).await;
    let log = bot.log.clone();
    assert_eq!(
        bot.terminate(T),
        Some(0),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert_eq!(
        texts(&tg, OWNER),
        ["finished before shutdown"],
        "{}\n{:?}",
        std::fs::read_to_string(&log).unwrap_or_default(),
        tg.sent()
            .iter()
            .map(|c| (c.method.clone(), c.outcome.is_ok()))
            .collect::<Vec<_>>()
    );

    // A run longer than the grace period (10 s) is aborted; the process exits 0.
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "a very long job"));
    let flag = env.dir.path().join("workspaces/1001/started.flag");
    eventually("the tool to start", &bot, || flag.exists()).await;
    let log = bot.log.clone();
    let started = Instant::now();
    // 10 s grace + up to 5 s for the aborted run to settle + 5 s slack.
    let code = bot.terminate(Duration::from_secs(20));
    let took = started.elapsed();
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(code, Some(0), "after {took:?}\n{log}");
    assert!(
        took >= Duration::from_secs(9),
        "aborted without a grace period: {took:?}\n{log}"
    );
    // The aborted run's progress message was cleaned up before the exit.
    assert_eq!(texts(&tg, OWNER), ["finished before shutdown"]);

    // The session file is intact: every line is JSON.
    let files = jsonl_files(&env.dir.path().join("data/sessions/1001"));
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.ends_with('\n'));
    for line in text.lines() {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert!(last.is_object());

    // And it resumes.
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "still with me?"));
    wait_text(&tg, OWNER, "after the second restart", &bot).await;
    let third = conversation(&model.requests()[2]);
    assert!(
        third.contains("a short job") && third.contains("finished before shutdown"),
        "{third}"
    );
}

// 11.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_update_id_is_answered_once() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("only once"));
    model.push(Turn::reply("this must not be sent"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let mut update: Value = updates::text_message(OWNER, OWNER, "say it once").into();
    update["update_id"] = json!(77);
    // Both copies wait in the queue, so they come in one getUpdates batch.
    tg.push_update(update.clone());
    tg.push_update(update);
    assert_eq!(tg.pending_updates().len(), 2);
    let bot = BotProcess::start(&env, TOKEN);
    wait_text(&tg, OWNER, "only once", &bot).await;
    tg.wait_for(|s| s.confirmed_offset().unwrap_or(0) >= 78, T)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(texts(&tg, OWNER), ["only once"]);
    assert_eq!(model.requests().len(), 1);
}
