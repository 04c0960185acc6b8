//! Recall through the real binary (issue 28, docs/memory.md "Recall"): the scripted model calls
//! the `recall` tool when a prompt's last line is `recall WORDS` and answers with what it got,
//! so each test reads the tool's output in the chat. A word said two `/new`s ago is found with
//! its date and session; a deleted and a corrupted index are rebuilt and answer the same; a
//! word planted in one chat is not found from another chat, a forum topic of another group or
//! an A2A caller (even one acting for that chat); a `kill -9` mid-indexing loses nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::a2a_server::{rpc, send, wait_card};
use crate::support::*;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Said, Transcript, Turn};

/// A group with forum topics that the bot serves.
const GROUP: i64 = -100_777;
const CAROL: &str = "carol-token-0123456789abcdef";

/// Answers `recall WORDS` (the last line of a prompt) by calling the tool, then says
/// `recall says: <its output>`; anything else gets `noted`.
pub(crate) fn recall_model(model: &ModelServer) {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    model.set_responder(|api, body| {
        let t = Transcript::of(api, body);
        if t.ends_with_tool_result() {
            let out = t.entries().iter().rev().find_map(|s| match s {
                Said::ToolResult { text, .. } => Some(text.clone()),
                _ => None,
            });
            return Some(Turn::reply(format!("recall says: {}", out.unwrap_or_default())));
        }
        let last = t.last_user_text()?.lines().last()?.to_owned();
        Some(match last.split_once("recall ") {
            Some((_, words)) => {
                let id = format!("call_{}", CALLS.fetch_add(1, Ordering::Relaxed));
                Turn::call(id, "recall", json!({"query": words.trim()}))
            }
            None => Turn::reply("noted"),
        })
    });
}

/// The recall index of `chat` in `env`'s state folder.
fn index_of(env: &Env, chat: &str) -> std::path::PathBuf {
    env.dir.path().join("data/recall").join(format!("{chat}.sqlite"))
}

/// The names in `env`'s recall index folder.
fn index_folder(env: &Env) -> Vec<String> {
    std::fs::read_dir(env.dir.path().join("data/recall"))
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect()
}

/// The session ids of `chat`'s main line, oldest first (file names start with the time).
fn session_ids(env: &Env, chat: &str) -> Vec<String> {
    jsonl_files(&env.dir.path().join("data/sessions").join(chat).join("main"))
        .iter()
        .filter_map(|p| p.file_stem()?.to_str()?.split_once('_').map(|(_, id)| id.to_owned()))
        .collect()
}

/// Sends `text` to the owner's chat and waits for the `n`th answer containing `needle`.
async fn ask(tg: &BotApiServer, bot: &BotProcess, text: &str, needle: &str, n: usize) {
    tg.push_update(updates::text_message(OWNER, OWNER, text));
    nth_text(tg, OWNER, needle, n, bot).await;
}

/// The text of the last tool result the model was sent (as the model reads it: the chat shows
/// the `**` marks as bold).
pub(crate) fn last_tool_output(model: &ModelServer) -> String {
    model
        .requests()
        .iter()
        .rev()
        .find_map(|r| r.tool_outputs().last().map(|(_, out)| out.clone()))
        .unwrap_or_default()
}

const NO_HITS: &str = "No hits for \"xenolithic\" in this chat's past conversations.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_finds_a_word_said_two_new_sessions_ago_and_survives_a_lost_or_corrupt_index() {
    let model = ModelServer::start().await.unwrap();
    recall_model(&model);
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    ask(&tg, &bot, "my locker word is quetzal", "noted", 1).await;
    ask(&tg, &bot, "/new", "New session started", 1).await;
    ask(&tg, &bot, "hi", "noted", 2).await;
    ask(&tg, &bot, "/new", "New session started", 2).await;
    let first = session_ids(&env, "1001").first().cloned().unwrap();
    assert_eq!(session_ids(&env, "1001").len(), 3);

    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let hit = format!("session {first} · user: my locker word is **quetzal**");
    ask(&tg, &bot, "recall quetzal", "recall says", 1).await;
    let answer = last_tool_output(&model);
    assert!(
        answer.contains(&format!("1. {today} ")) && answer.contains(&hit),
        "{answer}"
    );
    assert!(index_of(&env, "1001").exists());

    // The index deleted under the running bot: the next search builds it again.
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", index_of(&env, "1001").display()));
    }
    // Later searches also find the questions asked since (and the model's echo of the
    // answer); the hit of the word said then must be the same line.
    let hit_line = |out: &str| {
        out.lines()
            .find(|l| l.contains(&hit))
            .and_then(|l| l.split_once(". "))
            .map(|(_, rest)| rest.to_owned())
    };
    let said_then = hit_line(&answer);
    assert!(said_then.is_some(), "{answer}");
    ask(&tg, &bot, "recall quetzal", "recall says", 2).await;
    let rebuilt = last_tool_output(&model);
    assert_eq!(hit_line(&rebuilt), said_then, "{rebuilt}");

    // Damaged while the bot was down (a crash, a disk error): set aside at the next start's
    // first use, rebuilt, the same hit.
    bot.kill9();
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", index_of(&env, "1001").display()));
    }
    std::fs::write(index_of(&env, "1001"), vec![0x5a_u8; 8192]).unwrap();
    let bot = BotProcess::start(&env, TOKEN);
    ask(&tg, &bot, "recall quetzal", "recall says", 3).await;
    let rebuilt = last_tool_output(&model);
    assert_eq!(hit_line(&rebuilt), said_then, "{rebuilt}");
    let mut aside = index_folder(&env);
    aside.retain(|n| n.starts_with("1001.sqlite.corrupt-"));
    assert_eq!(aside.len(), 1, "{aside:?}\n{}", bot.log());
    assert!(bot.log().contains("recall index unreadable"), "{}", bot.log());

    // `doctor` reports the index (beside the running bot; only its recall line matters here).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_volcanic-bot"))
        .arg("--config")
        .arg(env.dir.path().join("volcanic.toml"))
        .arg("doctor")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", env.home())
        .output()
        .unwrap();
    let text = stdout(&out);
    let recall_line = text.lines().find(|l| l.contains(" recall ")).unwrap_or_default();
    let expected = format!(
        "[ok]   recall          1 chat index(es) in {}, ",
        env.dir.path().join("data/recall").display()
    );
    assert!(
        recall_line.starts_with(&expected) && recall_line.contains(&format!("last indexed {today} ")),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_word_planted_in_one_chat_is_found_from_no_other_chat_topic_or_caller() {
    let model = ModelServer::start().await.unwrap();
    recall_model(&model);
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let config = format!(
        "{}{}[a2a.server]\nname = \"Test assistant\"\n\
         [[a2a.server.callers]]\nname = \"carol\"\ntoken_env = \"E2E_CAROL\"\nchat = {OWNER}\n",
        telegram_config(&tg, &format!("allowed_chats = [{GROUP}]")),
        http_section(port)
    );
    let env = Env::new(&model.url(), &config);
    let bot = BotProcess::start_with(&env, TOKEN, Some("info"), &[("E2E_CAROL", CAROL)]);
    ask(&tg, &bot, "the vault phrase is xenolithic", "noted", 1).await;
    ask(&tg, &bot, "recall xenolithic", "recall says", 1).await;
    let found = last_tool_output(&model);
    assert!(
        found.contains("user: the vault phrase is **xenolithic**"),
        "planted and found in its own chat: {found}"
    );

    // Another private chat.
    tg.push_update(updates::text_message(FRIEND, FRIEND, "recall xenolithic"));
    nth_text(&tg, FRIEND, "recall says", 1, &bot).await;
    assert_eq!(last_tool_output(&model), NO_HITS);

    // A forum topic of another group.
    let me = mention(&tg);
    tg.push_update(updates::topic_message(
        GROUP,
        5,
        OWNER,
        &format!("{me} recall xenolithic"),
    ));
    nth_text(&tg, GROUP, "recall says", 1, &bot).await;
    assert_eq!(last_tool_output(&model), NO_HITS);

    // An A2A caller acting for the very chat the word was said in: its own sessions only.
    let base = format!("http://127.0.0.1:{port}");
    wait_card(&base, &bot).await;
    let r = rpc(&base, CAROL, "SendMessage", send("recall xenolithic", json!({}), false)).await;
    let answer = r["result"]["task"]["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(answer, format!("recall says: {NO_HITS}"), "{r}\n{}", bot.log());
    assert_eq!(last_tool_output(&model), NO_HITS);
    let indexes = index_folder(&env);
    for key in ["1001.sqlite", "1002.sqlite", "g100777.sqlite", "a2a-carol.sqlite"] {
        assert!(indexes.iter().any(|n| n == key), "{key} missing from {indexes:?}");
    }
}
