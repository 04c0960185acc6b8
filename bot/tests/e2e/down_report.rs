//! "While I was down" through the real binary (docs/exactly-once.md): killed with `kill -9`
//! while one chat's run was in a tool and another's was streaming, with scheduled runs due while
//! it was down, the restarted bot sends each affected chat one report (what happened to each
//! message, a Retry button for the one not run again, what the catch-up rule did with each job);
//! a chat whose messages were all answered gets nothing; another kill and restart sends no report
//! twice. A report killed on its way (refused, waiting out a 429, or on the wire) or whose
//! request got no answer reaches the chat exactly once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::exactly_once::wait_tool_journaled;
use crate::scheduler::prompt_job;
use crate::support::*;
use chrono::Utc;
use serde_json::{Value, json};
use std::time::Duration;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// A third allowed user, whose chat is answered before the crash.
const THIRD: i64 = 1003;

/// The report's first line (`texts::down::HEADING`).
const HEADING: &str = "While I was down";

/// How long chats are watched for a report that must not come.
const WINDOW: Duration = Duration::from_secs(4);

fn config(tg: &BotApiServer) -> String {
    format!(
        "[telegram]\napi_url = \"{}\"\nallowed_users = [{OWNER}, {FRIEND}, {THIRD}]\nowners = [{OWNER}]\n",
        tg.url()
    )
}

/// Writes `jobs` as the owner's jobs file (the bot is down).
fn plant_jobs(env: &Env, jobs: Vec<Value>) {
    let dir = env.dir.path().join(format!("workspaces/{OWNER}/.volcanic/scheduler"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = json!({"version": 1, "jobs": jobs});
    std::fs::write(dir.join("jobs.json"), serde_json::to_vec_pretty(&file).unwrap()).unwrap();
}

/// The reports `chat` got.
fn reports(tg: &BotApiServer, chat: i64) -> Vec<String> {
    texts(tg, chat).into_iter().filter(|t| t.contains(HEADING)).collect()
}

/// Waits for `needle` in any of the chats; fails with the bot's log.
async fn wait_anywhere(tg: &BotApiServer, needle: &str, bot: &BotProcess) {
    let seen = |s: &BotApiServer| [OWNER, FRIEND].iter().any(|c| count(s, *c, needle) > 0);
    tg.wait_for(seen, T)
        .await
        .unwrap_or_else(|e| panic!("waiting for {needle:?}: {e}\nbot log:\n{}", bot.log()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_kill_each_affected_chat_gets_one_report_and_a_second_kill_sends_none_twice() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("hello, third"));
    model.push(Turn::call(
        "toolu_d1",
        "bash",
        json!({"command": "touch started.flag; sleep 30; echo done"}),
    ));
    model.push(Turn::reply("Roses are red,").stall_after(2));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &config(&tg));
    let bot = BotProcess::start(&env, TOKEN);
    // An untouched chat: answered before the crash.
    tg.push_update(updates::text_message(THIRD, THIRD, "hi"));
    wait_text(&tg, THIRD, "hello, third", &bot).await;
    // Mid-tool in the owner's chat, mid-run (streaming, no tool) in the friend's.
    tg.push_update(updates::text_message(OWNER, OWNER, "run the long job"));
    wait_tool_journaled(&env, &bot).await;
    tg.push_update(updates::text_message(FRIEND, FRIEND, "write a poem"));
    wait_requests(&model, 3, &bot).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    bot.kill9();

    // While it was down: a one-shot two days overdue (past its 24 h grace: skipped) and a job
    // every 2 min whose newest slot is 10 s old (within its 1 min grace: run now, coalesced).
    let now = Utc::now();
    let two_days_ago = now - chrono::Duration::days(2);
    let stale = json!({"type": "at", "at": two_days_ago, "time_zone": "Europe/Berlin"});
    let first = now - chrono::Duration::seconds(250);
    let every = json!({"type": "every", "every_secs": 120, "anchor": first, "time_zone": "Europe/Berlin"});
    plant_jobs(
        &env,
        vec![
            prompt_job("skp001", "Remind the user of the dentist.", stale, two_days_ago),
            prompt_job("cat001", "Check the backups.", every, first),
        ],
    );
    // The friend's cut-off run goes on, and the job runs: in either order.
    model.push(Turn::reply("first restart reply"));
    model.push(Turn::reply("second restart reply"));
    let bot = BotProcess::start(&env, TOKEN);
    nth_text(&tg, OWNER, HEADING, 1, &bot).await;
    nth_text(&tg, FRIEND, HEADING, 1, &bot).await;
    wait_anywhere(&tg, "first restart reply", &bot).await;
    wait_anywhere(&tg, "second restart reply", &bot).await;
    tokio::time::sleep(WINDOW).await;

    let owner = reports(&tg, OWNER);
    assert_eq!(owner.len(), 1, "{:?}", texts(&tg, OWNER));
    let report = &owner[0];
    assert!(
        report.contains("“run the long job”") && report.contains("not run again"),
        "{report}"
    );
    assert!(report.contains("Job skp001") && report.contains("skipped"), "{report}");
    assert!(
        report.contains("Job cat001") && report.contains("coalesced"),
        "{report}"
    );
    // Times in the job's zone (Berlin's CET/CEST).
    assert!(report.contains("CET") || report.contains("CEST"), "{report}");
    // The message not run again has its Retry button on the report.
    let with_button = tg
        .messages(OWNER)
        .into_iter()
        .find(|m| m.visible_text.as_deref().is_some_and(|t| t.contains(HEADING)))
        .unwrap();
    let button = &with_button.reply_markup.as_ref().unwrap()["inline_keyboard"][0][0];
    assert!(
        button["callback_data"].as_str().unwrap().starts_with("retry:"),
        "{button}"
    );
    assert!(
        button["text"].as_str().unwrap().contains("run the long job"),
        "{button}"
    );

    let friend = reports(&tg, FRIEND);
    assert_eq!(friend.len(), 1, "{:?}", texts(&tg, FRIEND));
    assert!(
        friend[0].contains("“write a poem”") && friend[0].contains("run again now"),
        "{}",
        friend[0]
    );
    assert!(
        !friend[0].contains("Job "),
        "the owner's jobs are not the friend's: {}",
        friend[0]
    );
    assert!(reports(&tg, THIRD).is_empty(), "{:?}", texts(&tg, THIRD));
    // The long job's message was not handed to the model again (the job's run, in the owner's
    // session, sees it once, in the history).
    let asked = model.requests();
    assert_eq!(asked.len(), 5, "{}", bot.log());
    assert!(
        asked[3..]
            .iter()
            .all(|r| conversation(r).matches("run the long job").count() <= 1)
    );

    // A second kill and start: nothing new happened, so no report comes again.
    bot.kill9();
    let bot = BotProcess::start(&env, TOKEN);
    tokio::time::sleep(WINDOW).await;
    assert_eq!(reports(&tg, OWNER).len(), 1, "{:?}", texts(&tg, OWNER));
    assert_eq!(reports(&tg, FRIEND).len(), 1, "{:?}", texts(&tg, FRIEND));
    assert!(reports(&tg, THIRD).is_empty());

    // The Retry on the report runs the message again; the report marks it.
    model.push(Turn::reply("retried the long job"));
    let data = button["callback_data"].as_str().unwrap().to_owned();
    tg.push_update(updates::callback_query(OWNER, with_button.message_id, OWNER, &data));
    wait_text(&tg, OWNER, "retried the long job", &bot).await;
    wait_text(&tg, OWNER, "🔁 Retrying", &bot).await;
    assert_eq!(reports(&tg, OWNER).len(), 1, "the report was edited, not sent again");
    drop(bot);
}

/// A one-shot prompt job `id` two days overdue, past its 24 h grace: the catch-up skips it and
/// reports "Job <id>: skipped".
fn stale_one_shot(id: &str, prompt: &str) -> Value {
    let two_days_ago = Utc::now() - chrono::Duration::days(2);
    let stale = json!({"type": "at", "at": two_days_ago, "time_zone": "UTC"});
    prompt_job(id, prompt, stale, two_days_ago)
}

/// After [`WINDOW`], the owner's sendMessage calls carrying `line` are `expected` (taken,
/// refused); fails with the chat's texts and the bot's log.
async fn settled_calls(tg: &BotApiServer, bot: &BotProcess, line: &str, expected: (usize, usize)) {
    tokio::time::sleep(WINDOW).await;
    assert_eq!(
        report_calls(tg, OWNER, line),
        expected,
        "{:?}\n{}",
        texts(tg, OWNER),
        bot.log()
    );
}

/// A model, Telegram knowing the owner's chat, and an env whose owner missed one-shot job `id`
/// ([`stale_one_shot`]) while the bot was down.
async fn one_missed_job(id: &str, prompt: &str) -> (ModelServer, BotApiServer, Env) {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    tg.add_chat(OWNER);
    let env = Env::new(&model.url(), &config(&tg));
    plant_jobs(&env, vec![stale_one_shot(id, prompt)]);
    (model, tg, env)
}

/// Starts the bot, waits for Telegram to refuse a report carrying `line` and for the owner's
/// record to be `gathering` again (not counted as shown), then kills it with `kill -9`.
async fn kill_once_refused(tg: &BotApiServer, env: &Env, line: &str) {
    let bot = BotProcess::start(env, TOKEN);
    tg.wait_for(|s| report_calls(s, OWNER, line).1 >= 1, T)
        .await
        .unwrap_or_else(|e| panic!("the refused report: {e}\n{}", bot.log()));
    let record = env.dir.path().join(format!("data/down-reports/{OWNER}.json"));
    eventually("the refused report noted as gathering again", &bot, || {
        std::fs::read_to_string(&record).is_ok_and(|r| r.contains("\"gathering\""))
    })
    .await;
    bot.kill9();
}

/// The sendMessage calls that carried `needle` to `chat`: `(taken, refused)`.
fn report_calls(tg: &BotApiServer, chat: i64, needle: &str) -> (usize, usize) {
    let calls: Vec<_> = tg
        .calls("sendMessage")
        .into_iter()
        .filter(|c| c.chat_id() == Some(chat) && c.text().is_some_and(|t| t.contains(needle)))
        .collect();
    let taken = calls.iter().filter(|c| c.is_ok()).count();
    (taken, calls.len() - taken)
}

/// A report the bot could not send (refused) goes out after a `kill -9` and restart; killed
/// again with that report on the wire (its record `sending`, Telegram gets the whole request),
/// the next start does not send it again: its lines reach the chat exactly once, and a report of
/// what that start adds carries only the new lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_cut_off_by_a_kill_reaches_the_chat_exactly_once() {
    let (model, tg, env) = one_missed_job("skp001", "Water the plants.").await;

    // Refused: the record stays gathering, for the next start.
    tg.fail_next("sendMessage", 500, "Internal Server Error", None);
    kill_once_refused(&tg, &env, "Job skp001").await;
    assert_eq!(count(&tg, OWNER, HEADING), 0);

    // The next start sends it; killed with it on the wire, Telegram took the whole request.
    tg.hold_next("sendMessage", |p| {
        p["text"].as_str().is_some_and(|t| t.contains(HEADING))
    });
    let bot = BotProcess::start(&env, TOKEN);
    eventually("the report held on the wire", &bot, || !tg.held_calls().is_empty()).await;
    bot.kill9();
    assert_eq!(tg.release_held(true), 1);
    tg.wait_for(|s| report_calls(s, OWNER, "Job skp001") == (1, 1), T)
        .await
        .unwrap_or_else(|e| panic!("the held report served: {e}"));

    // Another job missed meanwhile: the next start reports it, and only it.
    plant_jobs(&env, vec![stale_one_shot("skp002", "Feed the cat.")]);
    let bot = BotProcess::start(&env, TOKEN);
    let second = nth_text(&tg, OWNER, HEADING, 2, &bot).await;
    assert!(
        second.contains("Job skp002") && !second.contains("Job skp001"),
        "{second}"
    );
    settled_calls(&tg, &bot, "Job skp001", (1, 1)).await;
    assert_eq!(count(&tg, OWNER, "Job skp001"), 1, "{:?}", texts(&tg, OWNER));
    assert_eq!(reports(&tg, OWNER).len(), 2, "{:?}", texts(&tg, OWNER));
    assert!(model.requests().is_empty(), "a skipped job asks no model");
    drop(bot);
}

/// A report waiting out a 429 is not on its way yet: killed during the wait (its record back to
/// `gathering` after the 429), the next start sends it, and it reaches the chat exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_killed_while_it_waits_out_a_429_is_sent_after_the_restart_once() {
    let (_model, tg, env) = one_missed_job("skp003", "Call the bank.").await;

    // Every sendMessage gets a 429 for a minute: the report waits out its retry_after.
    tg.rate_limit("sendMessage", 60);
    kill_once_refused(&tg, &env, "Job skp003").await;
    let (taken, refused) = report_calls(&tg, OWNER, "Job skp003");
    assert_eq!(taken, 0, "the 429 window let the report through");

    tg.rate_limit("sendMessage", 0);
    let bot = BotProcess::start(&env, TOKEN);
    let report = nth_text(&tg, OWNER, HEADING, 1, &bot).await;
    assert!(report.contains("Job skp003") && report.contains("skipped"), "{report}");
    settled_calls(&tg, &bot, "Job skp003", (1, refused)).await;
    assert_eq!(reports(&tg, OWNER).len(), 1, "{:?}", texts(&tg, OWNER));
    drop(bot);
}

/// A report whose request got no answer (held on the wire past the HTTP client's 17 s timeout:
/// a network error after it left) stays `sending`, counted as shown: Telegram applies it late,
/// and a restart does not send it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_that_got_no_answer_is_not_sent_again() {
    let (_model, tg, env) = one_missed_job("skp004", "Renew the passport.").await;
    tg.hold_next("sendMessage", |p| {
        p["text"].as_str().is_some_and(|t| t.contains(HEADING))
    });
    let bot = BotProcess::start(&env, TOKEN);
    eventually("the report held on the wire", &bot, || !tg.held_calls().is_empty()).await;
    // Most of the client's 17 s timeout; `eventually` waits up to `T` more.
    tokio::time::sleep(Duration::from_secs(15)).await;
    eventually("the bot's request timed out", &bot, || {
        bot.log().contains("no answer to the down report")
    })
    .await;
    let record = env.dir.path().join(format!("data/down-reports/{OWNER}.json"));
    let noted = std::fs::read_to_string(&record).unwrap();
    assert!(noted.contains("\"sending\""), "{noted}");
    // Telegram had it after all.
    assert_eq!(tg.release_held(true), 1);
    bot.kill9();

    let bot = BotProcess::start(&env, TOKEN);
    settled_calls(&tg, &bot, "Job skp004", (1, 0)).await;
    assert_eq!(reports(&tg, OWNER).len(), 1, "{:?}", texts(&tg, OWNER));
    drop(bot);
}
