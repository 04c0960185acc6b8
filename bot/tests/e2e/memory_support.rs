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

/// `from` writes `text` in `chat` (private chats: `chat` is `from`; in a group the bot is
/// mentioned), the model answers `reply`; returns the model request of that answer.
pub async fn ask(
    tg: &BotApiServer,
    model: &ModelServer,
    bot: &BotProcess,
    (chat, from): (i64, i64),
    text: &str,
    reply: &str,
) -> RecordedRequest {
    let text = if chat < 0 {
        format!("{} {text}", mention(tg))
    } else {
        text.to_owned()
    };
    ask_with(tg, model, bot, chat, updates::text_message(chat, from, &text), reply).await
}

/// `update` (a message in `chat`) arrives, the model answers `reply`; returns the model request
/// of that answer.
pub async fn ask_with(
    tg: &BotApiServer,
    model: &ModelServer,
    bot: &BotProcess,
    chat: i64,
    update: volcanic_testkit::bot_api::MessageUpdate,
    reply: &str,
) -> RecordedRequest {
    let before = model.requests().len();
    model.push(Turn::reply(reply));
    tg.push_update(update);
    wait_text(tg, chat, reply, bot).await;
    let requests = wait_requests(model, before + 1, bot).await;
    let r = requests.last().unwrap().clone();
    assert!(!r.is_rejected(), "{:?}\n{}", r.rejection, bot.log());
    r
}

/// The owner writes each prompt of `turns` in their private chat and the model answers it.
pub async fn converse(tg: &BotApiServer, model: &ModelServer, bot: &BotProcess, turns: &[(&str, &str)]) {
    for (text, reply) in turns {
        ask(tg, model, bot, (OWNER, OWNER), text, reply).await;
    }
}

/// Checks that `r` is a curation call (its instructions, no tools) over a conversation holding
/// `said`.
pub fn assert_curation(r: &RecordedRequest, said: &str) {
    assert!(
        system(r).starts_with("You curate the long-term memory"),
        "{}",
        system(r)
    );
    assert!(conversation(r).contains(said), "{}", conversation(r));
    assert!(tool_names(r).is_empty(), "{:?}", tool_names(r));
}

/// Checks that `r` offers the `memory` tool and its system prompt shows nothing remembered yet
/// (a chat's first session).
pub fn assert_memory_offered_with_nothing_remembered(r: &RecordedRequest) {
    assert!(tool_names(r).contains(&"memory".to_owned()), "{:?}", tool_names(r));
    assert!(system(r).contains("(nothing remembered yet)"), "{}", system(r));
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
