//! Allowances through the real binary (issue 30): the model double bills known usage at the
//! test config's prices; the daily cap stops requests and tells the person and the owner, the
//! owner's top-up lets the next message through, the 80 % notice goes once, and the counts
//! survive `kill -9`; a scheduled job due in a spent chat makes no request, is recorded
//! skipped (never retried) and the chat is told once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// The default model priced so that one request's estimate is about $0.105 (1000 output tokens
/// at $100 per million, a few thousand input tokens at $1) and a reply billed 1000 + 1000 tokens
/// costs $0.101: with a $0.25 daily cap two requests fit and the third would cross it.
fn config(tg: &BotApiServer) -> String {
    priced_config(&telegram_config(tg, ""), "chat_daily_usd = 0.25")
}

/// `sections` (e.g. `[telegram]`), then `[allowance]` with its `allowance` lines, then the
/// default model priced as [`config`] says.
pub(crate) fn priced_config(sections: &str, allowance: &str) -> String {
    format!(
        "{sections}\n[allowance]\n{allowance}\n\n[[providers.anthropic.models]]\nid = \"claude-sonnet-4-5\"\n\
         context_window = 200000\nmax_tokens = 1000\ncost = {{ input = 1.0, output = 100.0, cache_read = 0.0, cache_write = 0.0 }}\n"
    )
}

pub(crate) fn billed(text: &str) -> Turn {
    Turn::reply(text).usage(1000, 1000, 0, 0)
}

/// The model double with `answers` billed 1000 + 1000 tokens each, the Bot API double, and the
/// bot on them with the priced config.
async fn start(answers: &[&str]) -> (ModelServer, BotApiServer, Env, BotProcess) {
    let model = ModelServer::start().await.unwrap();
    for t in answers {
        model.push(billed(t));
    }
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &config(&tg));
    let bot = BotProcess::start(&env, TOKEN);
    (model, tg, env, bot)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daily_cap_stops_requests_tells_the_person_and_the_owner_and_a_top_up_lets_the_next_through() {
    let (model, tg, _env, bot) = start(&["first answer", "second answer", "after the top-up"]).await;
    // The owner opened a private chat with the bot (where its top-up buttons go) and looks.
    tg.push_update(updates::text_message(OWNER, OWNER, "/allowance"));
    wait_text(
        &tg,
        OWNER,
        "This chat: daily $0.00 of $0.25; monthly $0.00 of no limit",
        &bot,
    )
    .await;
    tg.push_update(updates::text_message(FRIEND, FRIEND, "one"));
    wait_text(&tg, FRIEND, "first answer", &bot).await;
    tg.push_update(updates::text_message(FRIEND, FRIEND, "two"));
    wait_text(&tg, FRIEND, "second answer", &bot).await;
    wait_text(
        &tg,
        FRIEND,
        "This chat has used 80% of its daily allowance ($0.20 of $0.25).",
        &bot,
    )
    .await;

    tg.push_update(updates::text_message(FRIEND, FRIEND, "three"));
    wait_text(&tg, FRIEND, "This chat's daily allowance of $0.25 is reached", &bot).await;
    let sentence = texts(&tg, FRIEND)
        .into_iter()
        .find(|t| t.contains("is reached"))
        .unwrap();
    assert!(sentence.contains("it resets at 00:00 on"), "{sentence}");
    assert_eq!(model.requests().len(), 2, "the third request was not made");
    wait_text(&tg, OWNER, "Chat 1002 reached its daily allowance of $0.25", &bot).await;

    press_button(&tg, OWNER, "+$1").await;
    let toasted = |s: &BotApiServer| {
        s.calls("answerCallbackQuery").iter().any(|c| {
            c.params["text"]
                .as_str()
                .is_some_and(|t| t.contains("+$1 for chat:1002"))
        })
    };
    tg.wait_for(toasted, T)
        .await
        .unwrap_or_else(|e| panic!("no toast: {e}\n{}", bot.log()));
    tg.push_update(updates::text_message(FRIEND, FRIEND, "four"));
    wait_text(&tg, FRIEND, "after the top-up", &bot).await;
    assert_eq!(model.requests().len(), 3);
    assert_eq!(count(&tg, FRIEND, "80%"), 1, "the 80 % notice goes once per window");
    assert_eq!(
        count(&tg, FRIEND, "scheduled jobs are skipped"),
        0,
        "a person's refused message gets its own sentence, not the jobs' notice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spend_survives_kill_9_and_no_request_is_made_once_spent() {
    let (model, tg, env, bot) = start(&["first answer", "second answer", "never"]).await;
    tg.push_update(updates::text_message(FRIEND, FRIEND, "one"));
    wait_text(&tg, FRIEND, "first answer", &bot).await;
    tg.push_update(updates::text_message(FRIEND, FRIEND, "two"));
    wait_text(&tg, FRIEND, "second answer", &bot).await;
    bot.kill9();

    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(FRIEND, FRIEND, "three"));
    wait_text(&tg, FRIEND, "This chat's daily allowance of $0.25 is reached", &bot).await;
    assert_eq!(
        model.requests().len(),
        2,
        "after the restart the spent chat makes no request"
    );
}

/// The doubles and the bot (started) for a spent chat ($0 cap) of `OWNER` whose one job
/// `job_id` (of `kind`, as `jobs.json` writes it; `script` written as `watch.sh` in the
/// workspace) is due every 30 s (the shortest period), first 3 s from now, given as well.
pub(crate) async fn spent_chat_with_job(
    job_id: &str,
    kind: serde_json::Value,
    script: &str,
) -> (
    ModelServer,
    BotApiServer,
    Env,
    BotProcess,
    chrono::DateTime<chrono::Utc>,
) {
    use crate::scheduler::prompt_job;
    use serde_json::json;
    let model = ModelServer::start().await.unwrap();
    model.push(billed("never"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    tg.add_chat(OWNER);
    let env = Env::new(
        &model.url(),
        &priced_config(&telegram_config(&tg, ""), "chat_daily_usd = 0"),
    );
    let ws = env.dir.path().join(format!("workspaces/{OWNER}"));
    std::fs::create_dir_all(ws.join(".volcanic/scheduler")).unwrap();
    std::fs::write(ws.join("watch.sh"), script).unwrap();
    let first = chrono::Utc::now() + chrono::Duration::seconds(3);
    let every = json!({"type": "every", "every_secs": 30, "anchor": first, "time_zone": "UTC"});
    let mut job = prompt_job(job_id, "", every, first);
    job["kind"] = kind;
    let file = json!({"version": 1, "jobs": [job]});
    let jobs = ws.join(".volcanic/scheduler/jobs.json");
    std::fs::write(jobs, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    let bot = BotProcess::start(&env, TOKEN);
    (model, tg, env, bot, first)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_due_in_a_spent_chat_is_skipped_makes_no_request_and_the_chat_is_told_once() {
    use crate::scheduler::jobs_file;
    let kind = serde_json::json!({"type": "prompt", "text": "Report the weather."});
    let (model, tg, env, bot, first) = spent_chat_with_job("spt001", kind, "").await;

    let told = "This chat's daily allowance of $0.00 is reached: its scheduled jobs are skipped";
    wait_text(&tg, OWNER, told, &bot).await;
    let second = first + chrono::Duration::seconds(30);
    let deadline = std::time::Instant::now() + T + std::time::Duration::from_secs(35);
    let jobs = loop {
        let jobs = jobs_file(&env, OWNER);
        let last = &jobs["jobs"][0]["last_run"];
        let at = chrono::DateTime::parse_from_rfc3339(last["slot"].as_str().unwrap_or_default());
        if last["status"] == "skipped" && at.is_ok_and(|a| a >= second) {
            break jobs;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no second skipped slot: {jobs:#}\n{}",
            bot.log()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let job = &jobs["jobs"][0];
    let runs: Vec<&serde_json::Value> = job["history"]
        .as_array()
        .unwrap()
        .iter()
        .chain([&job["last_run"]])
        .collect();
    assert!(runs.len() >= 2, "{job:#}");
    for run in &runs {
        assert_eq!(run["status"], "skipped", "{job:#}");
        assert_eq!(run["attempts"], 1, "a skipped slot is not retried: {job:#}");
        assert!(
            run["error"].as_str().unwrap_or_default().contains("is reached"),
            "{job:#}"
        );
    }
    assert_eq!(job["consecutive_failures"].as_u64().unwrap_or(0), 0, "{job:#}");
    assert_eq!(model.requests().len(), 0, "a spent chat's job makes no model request");
    assert_eq!(
        count(&tg, OWNER, "its scheduled jobs are skipped"),
        1,
        "the chat is told once per window"
    );

    // `/jobs` shows the skipped run.
    tg.push_update(updates::text_message(OWNER, OWNER, "/jobs"));
    wait_text(&tg, OWNER, "Last run: skipped: This chat's daily allowance", &bot).await;
}
