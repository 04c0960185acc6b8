//! The Telegram `UserInterface` and `ChatChannel` through the real binary: the seed example's
//! "Run `rm -rf …`? Allow / Block" as buttons, and the `send` tool delivering a file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::json;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// Runs the dangerous command, presses `choice` on the question, returns what the model got back.
async fn dangerous_command(choice: &str) -> (Env, String) {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call("toolu_01", "bash", json!({"command": "rm -rf build"})));
    model.push(Turn::reply("finished"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let build = env.dir.path().join("workspaces").join(OWNER.to_string()).join("build");
    std::fs::create_dir_all(&build).unwrap();
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "clean up"));
    tg.wait_for(|s| s.messages(OWNER).iter().any(|m| m.reply_markup.is_some()), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    let question = tg
        .messages(OWNER)
        .into_iter()
        .find(|m| m.reply_markup.is_some())
        .unwrap();
    assert_eq!(question.visible_text.as_deref(), Some("Run `rm -rf build`?"));
    let markup = question.reply_markup.clone().unwrap();
    let buttons: Vec<(String, String)> = markup["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter())
        .map(|b| {
            (
                b["text"].as_str().unwrap().to_owned(),
                b["callback_data"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        buttons.iter().map(|b| b.0.as_str()).collect::<Vec<_>>(),
        vec!["Allow", "Block"]
    );
    let data = &buttons.iter().find(|b| b.0 == choice).unwrap().1;
    tg.push_update(updates::callback_query(OWNER, question.message_id, OWNER, data));
    tg.wait_for(
        |s| {
            s.messages(OWNER)
                .iter()
                .any(|m| m.visible_text.as_deref() == Some("finished"))
        },
        T,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    // The question now shows the answer, without buttons; the press was answered.
    let q = tg
        .messages(OWNER)
        .into_iter()
        .find(|m| m.message_id == question.message_id)
        .unwrap();
    assert!(q.visible_text.unwrap_or_default().ends_with(&format!("→ {choice}")));
    assert!(q.reply_markup.is_none());
    assert_eq!(tg.calls("answerCallbackQuery").len(), 1);
    let tool_output = model.requests()[1].tool_outputs()[0].1.clone();
    drop(bot);
    (env, tool_output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_button_stops_the_dangerous_command() {
    let (env, output) = dangerous_command("Block").await;
    assert!(output.contains("Blocked by user"), "{output}");
    assert!(
        env.dir
            .path()
            .join("workspaces")
            .join(OWNER.to_string())
            .join("build")
            .is_dir()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_button_runs_the_dangerous_command() {
    let (env, output) = dangerous_command("Allow").await;
    assert!(!output.contains("Blocked"), "{output}");
    assert!(
        !env.dir
            .path()
            .join("workspaces")
            .join(OWNER.to_string())
            .join("build")
            .exists()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_tool_delivers_a_file_and_a_photo() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call(
        "toolu_01",
        "bash",
        json!({"command": "printf 'quarterly numbers' > report.txt && printf '\\x89PNG\\r\\n\\x1a\\n' > dot.png"}),
    ));
    model.push(
        Turn::call(
            "toolu_02",
            "send",
            json!({"path": "report.txt", "caption": "the report"}),
        )
        .tool_call("toolu_03", "send", json!({"path": "dot.png"})),
    );
    model.push(Turn::reply("sent both"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "send me the report"));
    tg.wait_for(
        |s| {
            s.messages(OWNER)
                .iter()
                .any(|m| m.visible_text.as_deref() == Some("sent both"))
        },
        T,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    let uploads = tg.uploads();
    let doc = uploads
        .iter()
        .find(|u| u.file_name.as_deref() == Some("report.txt"))
        .unwrap();
    assert_eq!(&doc.bytes[..], b"quarterly numbers");
    assert!(
        tg.calls("sendDocument")
            .iter()
            .any(|c| c.param("caption") == Some(&json!("the report")))
    );
    // The PNG went as a photo (the double checks the signature; a bad image is refused).
    let photos = tg.calls("sendPhoto");
    assert!(!photos.is_empty());
    let results = model.requests()[2].tool_outputs();
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[1].1, "Sent file report.txt");
    // Whatever Telegram said about the photo, the model was told.
    let photo_result = &results[2].1;
    assert_eq!(
        photos[0].is_ok(),
        photo_result == "Sent photo dot.png",
        "{photo_result}"
    );
}

async fn press(tg: &BotApiServer, label: &str) {
    press_button(tg, OWNER, label).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_ui_method_works_on_telegram() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let ws = env
        .dir
        .path()
        .join("workspaces")
        .join(OWNER.to_string())
        .join(".volcanic");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("settings.json"), r#"{"extensions": ["ask"]}"#).unwrap();
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "/ask"));
    // confirm → buttons Yes / No
    press(&tg, "Yes").await;
    // select → one button per option
    press(&tg, "green").await;
    // input → the user's next message
    tg.wait_for(
        |s| {
            s.messages(OWNER).iter().any(|m| {
                m.visible_text
                    .as_deref()
                    .unwrap_or_default()
                    .starts_with("What is your name?")
            })
        },
        T,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    tg.push_update(updates::text_message(OWNER, OWNER, "Ada Lovelace"));
    // notify → a message; status → a chat action
    tg.wait_for(
        |s| {
            s.messages(OWNER)
                .iter()
                .any(|m| m.visible_text.as_deref() == Some("ℹ️ Hello Ada Lovelace, you picked green."))
        },
        T,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    assert!(!tg.calls("sendChatAction").is_empty());
    // The answers were UI answers, not prompts: the model was never called.
    assert!(model.requests().is_empty());
    let texts: Vec<String> = tg.messages(OWNER).into_iter().filter_map(|m| m.visible_text).collect();
    assert!(
        texts.iter().any(|t| t.ends_with("→ Yes")) && texts.iter().any(|t| t.ends_with("→ green")),
        "{texts:?}"
    );
}
