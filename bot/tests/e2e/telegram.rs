//! The Telegram host, end to end: the real binary against the Bot API double and the scripted
//! model server, each test asserting what the user would see.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::json;
use std::time::Duration;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_conversation_with_a_tool_call() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call(
        "toolu_01",
        "bash",
        json!({"command": "echo hello > out.txt; sleep 0.3"}),
    ));
    model.push(Turn::reply("Done: **wrote** `out.txt`"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "please make a file"));
    tg.wait_for(|s| texts(s, OWNER).iter().any(|t| t.contains("wrote")), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\nbot log:\n{}", bot.log()));
    let answer = tg
        .messages(OWNER)
        .into_iter()
        .find(|m| m.visible_text.as_deref().unwrap_or_default().contains("wrote"))
        .unwrap();
    assert_eq!(answer.visible_text.as_deref(), Some("Done: wrote out.txt"));
    assert_eq!(answer.parse_mode.as_deref(), Some("HTML"));
    let html = answer.text.clone().unwrap_or_default();
    assert!(
        html.contains("<b>wrote</b>") && html.contains("<code>out.txt</code>"),
        "{html}"
    );
    let ws = env.dir.path().join("workspaces").join(OWNER.to_string());
    assert_eq!(std::fs::read_to_string(ws.join("out.txt")).unwrap(), "hello\n");
    // Typing was shown, and the progress message is gone once the answer is there.
    assert!(!tg.calls("sendChatAction").is_empty());
    tg.wait_for(|s| s.messages(OWNER).len() == 1, T)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // The envelope gave the model the local time.
    let first = &model.requests()[0];
    let user_text = first.messages()[0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        user_text.starts_with('[') && user_text.ends_with("please make a file"),
        "{user_text}"
    );
    // The update was acknowledged only after it was journaled.
    assert!(
        std::fs::read_to_string(env.dir.path().join("data/inbound.jsonl"))
            .unwrap()
            .contains("please make a file")
    );
    // The commands were announced (Telegram accepted every name).
    tg.wait_for(|s| !s.commands().is_empty(), T)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = tg.commands().into_iter().map(|c| c.command).collect();
    for c in [
        "start", "help", "new", "stop", "compact", "model", "thinking", "tz", "session", "allow", "deny",
    ] {
        assert!(names.iter().any(|n| n == c), "{c} missing from {names:?}");
    }
    drop(bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_gets_one_short_reply_and_nothing_else() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    let stranger = 5555;
    tg.push_update(updates::text_message(stranger, stranger, "hi, who are you?"));
    tg.push_update(updates::text_message(stranger, stranger, "run rm -rf / please"));
    tg.wait_for(|s| !s.messages(stranger).is_empty(), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    // Let the second message be handled too.
    tg.wait_for(|s| s.confirmed_offset().unwrap_or(0) >= 2, T)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let msgs = texts(&tg, stranger);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(msgs[0].contains("5555"), "{}", msgs[0]);
    assert!(model.requests().is_empty());
    assert!(!env.dir.path().join("workspaces").join("5555").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_answer_only_when_listed_and_addressed() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("hello group"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let listed = -100_200;
    let unlisted = -100_300;
    let env = Env::new(
        &model.url(),
        &telegram_config(&tg, &format!("allowed_chats = [{listed}]")),
    );
    let bot = BotProcess::start(&env, TOKEN);
    let me = format!("@{}", tg.bot_username());
    tg.push_update(updates::group_message(unlisted, OWNER, &format!("{me} hi"), None));
    tg.push_update(updates::group_message(
        listed,
        OWNER,
        "just chatting, not to the bot",
        None,
    ));
    tg.push_update(updates::group_message(listed, 7777, &format!("{me} let me in"), None));
    tg.push_update(updates::group_message(listed, OWNER, &format!("{me} hi"), None));
    // The stranger's refusal goes out on its own task: it may come after the answer.
    tg.wait_for(
        |s| {
            let shown = texts(s, listed);
            shown.iter().any(|t| t == "hello group") && shown.iter().any(|t| t.contains("7777"))
        },
        T,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    assert!(tg.messages(unlisted).is_empty(), "an unlisted group stays silent");
    let listed_texts = texts(&tg, listed);
    assert_eq!(
        listed_texts.iter().filter(|t| t.contains("7777")).count(),
        1,
        "{listed_texts:?}"
    );
    // Only the addressed message from an allowed user reached the model.
    assert_eq!(model.requests().len(), 1);
    let sent = model.requests()[0].messages()[0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(sent.contains("hi") && !sent.contains(&me), "{sent}");
    let group_ws = env.dir.path().join("workspaces").join("g100200");
    assert!(group_ws.is_dir());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_zone_survives_a_restart_and_sigterm_exits_zero() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "/tz Mars/Olympus"));
    tg.push_update(updates::text_message(OWNER, OWNER, "/tz Europe/Berlin"));
    tg.wait_for(
        |s| {
            let t = texts(s, OWNER);
            t.iter().any(|t| t == "Time zone: Europe/Berlin") && t.iter().any(|t| t.contains("not an IANA time zone"))
        },
        T,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    assert_eq!(bot.terminate(Duration::from_secs(15)), Some(0));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "/tz"));
    tg.wait_for(
        |s| {
            texts(s, OWNER)
                .iter()
                .any(|t| t.starts_with("Time zone: Europe/Berlin ("))
        },
        T,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    let settings = std::fs::read_to_string(env.dir.path().join("data/chat-settings.json")).unwrap();
    assert!(settings.contains("Europe/Berlin"));
}

/// Commands and messages of a chat are handled in the order they were sent: two quick `/tz`
/// apply (and answer) in order, and a question sent right after them runs in the zone they set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_and_messages_of_a_chat_apply_in_order() {
    use chrono::TimeZone;
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("It is late."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "/tz Asia/Tokyo"));
    tg.push_update(updates::text_message(OWNER, OWNER, "/tz Europe/Berlin"));
    let question = tg.push_update(updates::text_message(OWNER, OWNER, "what time is it?"));
    tg.wait_for(|s| texts(s, OWNER).iter().any(|t| t == "It is late."), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\nbot log:\n{}", bot.log()));
    let seen: Vec<String> = tg
        .messages(OWNER)
        .into_iter()
        .filter_map(|m| m.visible_text)
        .filter(|t| t.starts_with("Time zone:") || t == "It is late.")
        .collect();
    assert_eq!(
        seen,
        ["Time zone: Asia/Tokyo", "Time zone: Europe/Berlin", "It is late."],
        "{}",
        bot.log()
    );
    // The envelope gives the message's local time in Berlin (Tokyo is 7-8 hours ahead).
    let date = question["message"]["date"].as_i64().unwrap();
    let berlin = chrono_tz::Europe::Berlin
        .timestamp_opt(date, 0)
        .single()
        .unwrap()
        .format("[%a %Y-%m-%d %H:%M]")
        .to_string();
    let sent = model.requests()[0].messages()[0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(sent.starts_with(&berlin), "expected {berlin}: {sent}");
    let settings = std::fs::read_to_string(env.dir.path().join("data/chat-settings.json")).unwrap();
    assert!(settings.contains("Europe/Berlin"), "{settings}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_token_names_the_variable() {
    let model = ModelServer::start().await.unwrap();
    let env = Env::new(&model.url(), "");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_volcanic-bot"))
        .arg("--config")
        .arg(env.dir.path().join("volcanic.toml"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", env.home())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("TELEGRAM_BOT_TOKEN"), "{}", stderr(&out));
}
