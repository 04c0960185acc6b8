//! Running as a service: one process per state directory (the lock: a second bot refuses to
//! start, naming the first; a stale lock after kill -9 is no obstacle), and Telegram's 409
//! Conflict when another process polls the same token, told once with what to do.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use std::time::Duration;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// What the host logs when another process polls its token (`poller::CONFLICT`'s start).
const CONFLICT_LINE: &str = "another process is polling this bot token";

/// Waits (up to `within`) for the process to exit; its exit code. Fails with its log.
pub async fn wait_exit(bot: &mut BotProcess, within: Duration) -> Option<i32> {
    let deadline = std::time::Instant::now() + within;
    loop {
        if let Some(status) = bot.child.try_wait().unwrap() {
            return status.code();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the bot did not exit within {within:?}\nlog:\n{}",
            bot.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn lock_file(env: &Env) -> std::path::PathBuf {
    env.dir.path().join("data").join("volcanic-bot.lock")
}

async fn wait_polling(tg: &BotApiServer, n: usize, bot: &BotProcess) {
    tg.wait_for(|s| s.get_updates_calls().len() >= n, T)
        .await
        .unwrap_or_else(|e| panic!("{e}\nbot log:\n{}", bot.log()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_bot_on_the_same_state_dir_refuses_to_start_naming_the_first() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let first = BotProcess::start(&env, TOKEN);
    // Polling comes after the lock (taken before anything else).
    wait_polling(&tg, 1, &first).await;
    let mut second = BotProcess::start(&env, TOKEN);
    assert_eq!(wait_exit(&mut second, T).await, Some(2), "{}", second.log());
    let log = second.log();
    assert!(
        log.contains(&format!("is in use by another volcanic-bot (PID {})", first.child.id())),
        "{log}"
    );
    assert!(
        log.contains(&env.dir.path().join("data").display().to_string()),
        "{log}"
    );
    // It refused before talking to Telegram, and the first one still serves.
    assert_eq!(tg.calls("getMe").len(), 1);
    model.push(Turn::reply("still here"));
    tg.push_update(updates::text_message(OWNER, OWNER, "hello"));
    wait_text(&tg, OWNER, "still here", &first).await;
    // Once the first has stopped, the lock is free again.
    assert_eq!(first.terminate(T), Some(0));
    let third = BotProcess::start(&env, TOKEN);
    tg.wait_for(|s| s.calls("getMe").len() == 2, T)
        .await
        .unwrap_or_else(|e| panic!("{e}\nbot log:\n{}", third.log()));
    let pid = format!("{}\n", third.child.id());
    eventually("the third bot's PID in the lock file", &third, || {
        std::fs::read_to_string(lock_file(&env)).unwrap_or_default() == pid
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_started_mid_run_is_refused_and_after_kill_9_the_next_one_takes_over() {
    let model = ModelServer::start().await.unwrap();
    // The first run's reply is held by the model server until the test is over.
    model.push(Turn::reply("never sent").delay(Duration::from_secs(600)));
    model.push(Turn::reply("answered after the restart"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let first = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "a long question"));
    wait_requests(&model, 1, &first).await;
    // Mid-run: a second process on the same state directory refuses, naming the first.
    let mut second = BotProcess::start(&env, TOKEN);
    assert_eq!(wait_exit(&mut second, T).await, Some(2), "{}", second.log());
    assert!(
        second.log().contains(&format!("(PID {})", first.child.id())),
        "{}",
        second.log()
    );
    assert_eq!(
        model.requests().len(),
        1,
        "the refused process sent nothing to the model"
    );
    // kill -9 leaves the lock file behind; the kernel dropped the lock with the process.
    let first_pid = first.child.id();
    first.kill9();
    assert_eq!(
        std::fs::read_to_string(lock_file(&env)).unwrap(),
        format!("{first_pid}\n")
    );
    let third = BotProcess::start(&env, TOKEN);
    // The interrupted run (no tool had started) is retried once by the new process.
    wait_text(&tg, OWNER, "answered after the restart", &third).await;
    assert_eq!(count(&tg, OWNER, "answered after the restart"), 1);
    assert_eq!(
        std::fs::read_to_string(lock_file(&env)).unwrap(),
        format!("{}\n", third.child.id())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_409_conflict_is_told_once_with_what_to_do_and_polling_goes_on() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("polling again"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    for _ in 0..3 {
        tg.fail_next(
            "getUpdates",
            409,
            "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
            None,
        );
    }
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "are you there?"));
    wait_text(&tg, OWNER, "polling again", &bot).await;
    let log = bot.log();
    assert_eq!(log.matches(CONFLICT_LINE).count(), 1, "{log}");
    assert!(log.contains("Stop the other one"), "{log}");
    assert!(log.contains("@BotFather"), "{log}");
    assert!(!log.contains("TEST-token"), "no token in the log: {log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_bots_polling_one_token_each_tell_the_conflict_once() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    // Two state directories (the lock does not see across them), one token.
    let env_a = Env::new(&model.url(), &telegram_config(&tg, ""));
    let env_b = Env::new(&model.url(), &telegram_config(&tg, ""));
    let a = BotProcess::start(&env_a, TOKEN);
    wait_polling(&tg, 1, &a).await;
    let b = BotProcess::start(&env_b, TOKEN);
    // Each new poll ends the other's with 409 Conflict, as Telegram does.
    for bot in [&a, &b] {
        eventually("the conflict in the log", bot, || bot.log().contains(CONFLICT_LINE)).await;
    }
    // Let them fight a few more rounds: still one line each.
    let polls = tg.get_updates_calls().len();
    wait_polling(&tg, polls + 4, &a).await;
    for bot in [&a, &b] {
        assert_eq!(bot.log().matches(CONFLICT_LINE).count(), 1, "{}", bot.log());
    }
}
