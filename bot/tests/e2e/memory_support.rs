//! Helpers of the memory tests: memory files seeded and read in the bot's `state_dir/memory/`,
//! a chat turn with its model request, presses by any user.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use volcanic_testkit::RecordedRequest;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// A group allowed in the memory tests.
pub const GROUP: i64 = -1_001_555_000_111;
/// Its memory key (`chat_key`).
pub const GROUP_KEY: &str = "g1001555000111";

/// The memory file of `key`.
pub fn memory_file(env: &Env, key: &str) -> PathBuf {
    env.dir.path().join("data").join("memory").join(format!("{key}.json"))
}

/// Writes the memory file of `key` with `texts` as chat entries 1, 2, … learned on 2026-11-30.
pub fn seed(env: &Env, key: &str, texts: &[&str]) {
    let entries: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({"id": i + 1, "text": t, "learned_at": "2026-11-30T08:00:00Z",
                   "session": "seeded", "scope": "chat"})
        })
        .collect();
    let path = memory_file(env, key);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let body = json!({"next_id": texts.len(), "entries": entries});
    std::fs::write(path, serde_json::to_vec(&body).unwrap()).unwrap();
}

/// The texts of the entries in the memory file of `key` (none when it is missing).
pub fn stored(env: &Env, key: &str) -> Vec<String> {
    let Ok(bytes) = std::fs::read(memory_file(env, key)) else {
        return Vec::new();
    };
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap().to_owned())
        .collect()
}

/// The config of the memory tests: `GROUP` allowed, `memory` lines as its `[memory]` section.
pub fn config(tg: &BotApiServer, memory: &str) -> String {
    format!(
        "{}\n[memory]\n{memory}\n",
        telegram_config(tg, &format!("allowed_chats = [{GROUP}]"))
    )
}

/// `from` writes `text` in `chat` (private chats: `chat` is `from`), the model answers `reply`;
/// returns the model request of that answer.
pub async fn ask(
    tg: &BotApiServer,
    model: &ModelServer,
    bot: &BotProcess,
    (chat, from): (i64, i64),
    text: &str,
    reply: &str,
) -> RecordedRequest {
    let before = model.requests().len();
    model.push(Turn::reply(reply));
    let text = if chat < 0 {
        format!("{} {text}", mention(tg))
    } else {
        text.to_owned()
    };
    tg.push_update(updates::text_message(chat, from, &text));
    wait_text(tg, chat, reply, bot).await;
    let requests = wait_requests(model, before + 1, bot).await;
    let r = requests.last().unwrap().clone();
    assert!(!r.is_rejected(), "{:?}\n{}", r.rejection, bot.log());
    r
}

/// The system prompt of `r`.
pub fn system(r: &RecordedRequest) -> String {
    r.system_prompt().unwrap_or_default()
}

/// The names of the tools offered in `r`.
pub fn tool_names(r: &RecordedRequest) -> Vec<String> {
    r.body["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// `from` presses the button labelled `label` on the newest message of `chat` that has one.
pub async fn press_as(tg: &BotApiServer, chat: i64, from: i64, label: &str) {
    let has = |m: &volcanic_testkit::bot_api::ChatMessage| {
        m.reply_markup
            .as_ref()
            .is_some_and(|k| k.to_string().contains(&format!("\"text\":\"{label}\"")))
    };
    tg.wait_for(|s| s.messages(chat).iter().rev().any(has), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\nmessages: {:?}", tg.messages(chat)));
    let m = tg.messages(chat).into_iter().rev().find(|m| has(m)).unwrap();
    let data = m.reply_markup.as_ref().unwrap()["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r.as_array().unwrap().iter())
        .find(|b| b["text"] == label)
        .unwrap()["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();
    tg.push_update(updates::callback_query(from, m.message_id, chat, &data));
}

/// Waits until a press was answered with a toast containing `needle`.
pub async fn wait_toast(tg: &BotApiServer, needle: &str, bot: &BotProcess) {
    let shown = |tg: &BotApiServer| {
        tg.calls("answerCallbackQuery").iter().any(|c| {
            c.param("text")
                .and_then(Value::as_str)
                .is_some_and(|t| t.contains(needle))
        })
    };
    tg.wait_for(shown, T)
        .await
        .unwrap_or_else(|e| panic!("waiting for the toast {needle:?}: {e}\n{}", bot.log()));
}

/// Waits until the memory file of `key` holds exactly `texts`.
pub async fn wait_stored(env: &Env, key: &str, texts: &[&str], bot: &BotProcess) {
    eventually(&format!("memory {key} = {texts:?}"), bot, || stored(env, key) == texts).await;
}
