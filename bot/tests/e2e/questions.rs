//! UI questions Telegram would refuse, through the real binary: a 6,000-character confirm
//! question is shown shortened with its whole text as a file and can be answered; a question
//! that cannot be shown is reported to the agent as "could not ask the user", not as a refusal.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::json;
use std::path::PathBuf;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// Telegram's limit for one message, in UTF-16 units.
const LIMIT: usize = 4096;

/// A `bash` command with `rm -rf` (the shipped `confirm-dangerous` extension asks before it
/// runs) whose question is about 6,000 characters.
fn long_command() -> String {
    format!("rm -rf build # {}", "x".repeat(6000))
}

struct Asked {
    model: ModelServer,
    tg: BotApiServer,
    build: PathBuf,
    bot: BotProcess,
    _env: Env,
}

/// The bot asked by the model to run [`long_command`], then to answer "finished".
async fn ask(prepare: impl FnOnce(&BotApiServer)) -> Asked {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call("toolu_01", "bash", json!({"command": long_command()})));
    model.push(Turn::reply("finished"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    prepare(&tg);
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let build = env.dir.path().join("workspaces").join(OWNER.to_string()).join("build");
    std::fs::create_dir_all(&build).unwrap();
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "clean up"));
    Asked {
        model,
        tg,
        build,
        bot,
        _env: env,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_6000_character_confirm_is_shortened_with_the_whole_text_as_a_file_and_answered() {
    let a = ask(|_| {}).await;
    let question = format!("Run `{}`?", long_command());
    a.tg.wait_for(|s| s.messages(OWNER).iter().any(|m| m.reply_markup.is_some()), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", a.bot.log()));
    let shown =
        a.tg.messages(OWNER)
            .into_iter()
            .find(|m| m.reply_markup.is_some())
            .unwrap();
    let text = shown.visible_text.clone().unwrap_or_default();
    assert!(text.encode_utf16().count() <= LIMIT, "{}", text.encode_utf16().count());
    assert!(text.starts_with("Run `rm -rf build # xxxx"), "{text}");
    assert!(
        text.ends_with("(shortened: the whole question is in question.txt above)"),
        "{text}"
    );
    // The whole question came just before, as a file.
    let file =
        a.tg.uploads()
            .into_iter()
            .find(|u| u.file_name.as_deref() == Some("question.txt"))
            .unwrap_or_else(|| panic!("no question.txt among {:?}", a.tg.calls("sendDocument")));
    assert_eq!(String::from_utf8_lossy(&file.bytes), question);
    let document = a.tg.messages(OWNER).into_iter().find(|m| m.file_id.is_some()).unwrap();
    assert!(document.message_id < shown.message_id);
    press_button(&a.tg, OWNER, "Allow").await;
    nth_text(&a.tg, OWNER, "finished", 1, &a.bot).await;
    assert!(!a.build.exists(), "the command ran once allowed");
    let output = a.model.requests()[1].tool_outputs()[0].1.clone();
    assert!(
        !output.contains("Blocked") && !output.contains("could not ask"),
        "{output}"
    );
    let answered =
        a.tg.messages(OWNER)
            .into_iter()
            .find(|m| m.message_id == shown.message_id)
            .unwrap();
    let answered = answered.visible_text.unwrap_or_default();
    assert!(answered.ends_with("→ Allow"), "{answered}");
    assert!(answered.encode_utf16().count() <= LIMIT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_that_cannot_be_shown_is_reported_to_the_agent_not_taken_as_a_refusal() {
    let a = ask(|tg| tg.fail_next("sendDocument", 400, "Bad Request: file must be non-empty", None)).await;
    nth_text(&a.tg, OWNER, "finished", 1, &a.bot).await;
    let output = a.model.requests()[1].tool_outputs()[0].1.clone();
    assert!(
        output.contains("could not ask the user") && output.contains("file must be non-empty"),
        "{output}"
    );
    assert!(!output.contains("Blocked by user"), "{output}");
    assert!(a.build.is_dir(), "the command did not run");
    assert!(
        a.tg.messages(OWNER).iter().all(|m| m.reply_markup.is_none()),
        "no question with buttons was left behind"
    );
}
