//! What the binary says about itself and its start: `--version`, `--help` (the environment
//! variables), a `getMe` that fails for the network or for the token, and chat settings that
//! do not check out.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::service::wait_exit;
use crate::support::*;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

fn run_binary(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_volcanic-bot"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .unwrap()
}

/// The `error: ` line of a log (the binary's last word on a failed start).
fn error_line(log: &str) -> &str {
    log.lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {log}"))
}

#[test]
fn version_and_help_say_what_it_is_and_which_variables_it_reads() {
    let out = run_binary(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), format!("volcanic-bot {}\n", env!("CARGO_PKG_VERSION")));
    let help = stdout(&run_binary(&["--help"]));
    for needle in ["VOLCANIC_LOG", "VOLCANIC_CONFIG", "TELEGRAM_BOT_TOKEN", "doctor"] {
        assert!(help.contains(needle), "{needle} missing from --help:\n{help}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_me_without_a_connection_says_it_cannot_reach_telegram_at_the_url() {
    let model = ModelServer::start().await.unwrap();
    let url = format!("http://127.0.0.1:{}", free_port());
    let env = Env::new(
        &model.url(),
        &format!("[telegram]\napi_url = \"{url}\"\nallowed_users = [{OWNER}]\n"),
    );
    let mut bot = BotProcess::start(&env, TOKEN);
    assert_eq!(wait_exit(&mut bot, T).await, Some(2));
    let log = bot.log();
    let line = error_line(&log);
    assert!(
        line.starts_with(&format!("error: cannot reach Telegram at {url}: ")),
        "{line}"
    );
    assert!(line.to_lowercase().contains("connect"), "the cause is given: {line}");
    assert!(!line.contains("token"), "nothing about the token: {line}");
    assert!(!log.contains("TEST-token"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_is_said_in_one_sentence() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let mut bot = BotProcess::start(&env, "999:WRONG-token");
    assert_eq!(wait_exit(&mut bot, T).await, Some(2));
    let log = bot.log();
    let line = error_line(&log);
    assert_eq!(
        line,
        format!(
            "error: Telegram at {} refused the bot token: copy it again from @BotFather into \
             TELEGRAM_BOT_TOKEN (or [telegram] token)",
            tg.url()
        )
    );
    assert!(!log.contains("WRONG-token"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_settings_that_do_not_check_out_are_reported_and_never_applied() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("hello back"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let file = env.dir.path().join("data").join("chat-settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let written = format!(r#"{{"{OWNER}": {{"time_zone": "Mars/Olympus", "model": "nope/none"}}}}"#);
    std::fs::write(&file, &written).unwrap();
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "/tz"));
    wait_text(&tg, OWNER, "Time zone: UTC", &bot).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "hi"));
    wait_text(&tg, OWNER, "hello back", &bot).await;
    // The config's model, not the chat's unknown one.
    assert_eq!(model.requests()[0].body["model"], "claude-sonnet-4-5");
    let log = bot.log();
    assert!(
        log.contains(&format!(
            "chat {OWNER}: ignoring time_zone `Mars/Olympus` (not an IANA time zone)"
        )),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "chat {OWNER}: ignoring model `nope/none` (no such model is configured)"
        )),
        "{log}"
    );
    // Nothing the user wrote is lost: the file is as it was.
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved, serde_json::from_str::<serde_json::Value>(&written).unwrap());
}

/// At the default level (no `VOLCANIC_LOG`) the start says, a line each, which config file was
/// read, which bot this is in which mode with how many known chats, the scheduled jobs, and the
/// listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_says_what_it_is_doing_at_the_default_level() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let env = Env::new(
        &model.url(),
        &telegram_config(
            &tg,
            &format!("\n[http]\nlisten = \"127.0.0.1:{port}\"\npublic_url = \"https://bot.example\"\n"),
        ),
    );
    std::fs::create_dir_all(env.dir.path().join("workspaces/1001")).unwrap();
    std::fs::create_dir_all(env.dir.path().join("workspaces/g42")).unwrap();
    std::fs::create_dir_all(env.dir.path().join("workspaces/notes")).unwrap();
    let bot = BotProcess::start_logging(&env, TOKEN, None);
    let want = [
        format!("config file: {}", env.dir.path().join("volcanic.toml").display()),
        format!("Telegram bot @{} (id ", tg.bot_username()),
        "polling mode; 2 known chat(s)".to_owned(),
        "scheduled jobs loaded".to_owned(),
        format!("HTTP listener on 127.0.0.1:{port} (public URL: https://bot.example)"),
        "polling started".to_owned(),
    ];
    let deadline = std::time::Instant::now() + T;
    while want.iter().any(|w| !bot.log().contains(w.as_str())) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let log = bot.log();
    for w in &want {
        assert!(log.contains(w.as_str()), "{w:?} missing from the start's log:\n{log}");
    }
    assert!(!log.contains(TOKEN), "{log}");
    assert_eq!(bot.terminate(T), Some(0));
}
