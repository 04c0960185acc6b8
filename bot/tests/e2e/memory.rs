//! Curated memory through the real binary (issue 28): the `memory` tool keeps a fact that the
//! next session's system prompt shows after `/new`; `/memory` lists the chat's entries and its
//! buttons delete them; `/forget` clears them after a confirmation; the cap refuses with a
//! request to consolidate; a corrupt file is set aside and reported; `enabled = false` leaves
//! no trace in the request.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::memory_support::*;
use crate::support::*;
use serde_json::json;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

const CHAT: i64 = OWNER;
const KEY: &str = "1001";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fact_kept_with_the_tool_is_in_the_next_sessions_prompt_and_listed_with_delete_buttons() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &config(&tg, "auto = false"));
    let bot = BotProcess::start(&env, TOKEN);

    model.push(Turn::new().tool_call(
        "m1",
        "memory",
        json!({"action": "add", "text": "The user's cat is called Miso"}),
    ));
    let first = ask(&tg, &model, &bot, (CHAT, CHAT), "my cat is Miso, remember it", "Noted.").await;
    assert_memory_offered_with_nothing_remembered(&first);
    let outputs = model.requests().last().unwrap().tool_outputs();
    assert!(
        outputs.iter().any(|(_, o)| o.contains("Remembered as entry 1")),
        "{outputs:?}"
    );
    assert_eq!(stored(&env, KEY), ["The user's cat is called Miso"]);
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(memory_file(&env, KEY)).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);

    // The same session keeps its prompt; the next one shows the fact with its date.
    tg.push_update(updates::text_message(CHAT, CHAT, "/new"));
    wait_text(&tg, CHAT, "New session started.", &bot).await;
    let next = ask(&tg, &model, &bot, (CHAT, CHAT), "what is my cat called?", "Miso.").await;
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert!(
        system(&next).contains(&format!("- [1] {today}: The user's cat is called Miso")),
        "{}",
        system(&next)
    );

    // /memory lists it; its delete button deletes it and the list shows what is left.
    tg.push_update(updates::text_message(CHAT, CHAT, "/memory"));
    wait_text(&tg, CHAT, "1. ", &bot).await;
    let listed = texts(&tg, CHAT)
        .into_iter()
        .rev()
        .find(|t| t.starts_with("Memory of this chat"))
        .unwrap();
    assert!(
        listed.contains(&format!("1. {today} — The user's cat is called Miso")),
        "{listed}"
    );
    press_as(&tg, CHAT, CHAT, "Delete 1").await;
    wait_toast(&tg, "Deleted: The user's cat is called Miso", &bot).await;
    wait_stored(&env, KEY, &[], &bot).await;
    wait_text(&tg, CHAT, "(nothing yet)", &bot).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_clears_the_chats_memory_only_after_its_button() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &config(&tg, "auto = false"));
    seed(&env, KEY, &["Prefers short answers", "Works nights"]);
    seed(&env, "1002", &["The friend's fact"]);
    let bot = BotProcess::start(&env, TOKEN);

    tg.push_update(updates::text_message(CHAT, CHAT, "/forget"));
    wait_text(&tg, CHAT, "Forget all 2 entries", &bot).await;
    press_as(&tg, CHAT, CHAT, "Keep").await;
    wait_text(&tg, CHAT, "Kept: nothing was forgotten.", &bot).await;
    assert_eq!(stored(&env, KEY), ["Prefers short answers", "Works nights"]);

    tg.push_update(updates::text_message(CHAT, CHAT, "/forget"));
    eventually("a second question", &bot, || {
        count(&tg, CHAT, "Forget all 2 entries") == 1
    })
    .await;
    press_as(&tg, CHAT, CHAT, "Forget all").await;
    wait_text(&tg, CHAT, "Forgot 2 entries", &bot).await;
    wait_stored(&env, KEY, &[], &bot).await;
    assert_eq!(
        stored(&env, "1002"),
        ["The friend's fact"],
        "another chat's memory stays"
    );
    let next = ask(&tg, &model, &bot, (CHAT, CHAT), "hello", "Hi.").await;
    assert!(!system(&next).contains("Works nights"), "{}", system(&next));
    tg.push_update(updates::text_message(CHAT, CHAT, "/forget"));
    wait_text(&tg, CHAT, "nothing to forget", &bot).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_memory_refuses_an_add_and_asks_to_consolidate() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &config(&tg, "auto = false\nmax_chars = 40"));
    seed(&env, KEY, &["Lives in Lisbon, works in Porto"]);
    let bot = BotProcess::start(&env, TOKEN);

    model.push(Turn::new().tool_call("m1", "memory", json!({"action": "add", "text": "Has two dogs"})));
    let r = ask(
        &tg,
        &model,
        &bot,
        (CHAT, CHAT),
        "I have two dogs",
        "I could not keep it.",
    )
    .await;
    let outputs = r.tool_outputs();
    let refusal = outputs
        .iter()
        .map(|(_, o)| o.as_str())
        .find(|o| o.contains("memory is full"))
        .unwrap_or_else(|| panic!("{outputs:?}"));
    assert!(refusal.contains("31 of 40 characters"), "{refusal}");
    assert!(refusal.contains("Consolidate first"), "{refusal}");
    assert_eq!(
        stored(&env, KEY),
        ["Lives in Lisbon, works in Porto"],
        "nothing dropped, nothing added"
    );
    assert!(
        system(&r).contains("Memory used: 31 of 40 characters."),
        "{}",
        system(&r)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_memory_file_is_set_aside_and_reported() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &config(&tg, "auto = false"));
    seed(&env, KEY, &["x"]);
    std::fs::write(memory_file(&env, KEY), b"{\"entries\": [tor").unwrap();
    let bot = BotProcess::start(&env, TOKEN);

    let r = ask(&tg, &model, &bot, (CHAT, CHAT), "hello", "Hello!").await;
    assert!(system(&r).contains("(nothing remembered yet)"), "{}", system(&r));
    wait_text(
        &tg,
        CHAT,
        "The memory file could not be read; it was set aside as 1001.json.corrupt-",
        &bot,
    )
    .await;
    let folder = memory_file(&env, KEY).parent().unwrap().to_owned();
    let aside: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("1001.json.corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(std::fs::read(folder.join(&aside[0])).unwrap(), b"{\"entries\": [tor");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_memory_offers_no_tool_and_no_prompt_block() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &config(&tg, "enabled = false"));
    seed(&env, KEY, &["A seeded fact"]);
    let bot = BotProcess::start(&env, TOKEN);

    let r = ask(&tg, &model, &bot, (CHAT, CHAT), "hello", "Hello!").await;
    assert!(!tool_names(&r).contains(&"memory".to_owned()), "{:?}", tool_names(&r));
    assert!(!system(&r).contains("A seeded fact"), "{}", system(&r));
}

/// The console has memory as a chat has: its working directory's, kept in the Volcanic home
/// (`~/.volcanic/agent/memory/<the directory's session folder name>.json`), shown in the next
/// session's system prompt; no global facts (no owner to ask).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_keeps_its_working_directorys_memory_for_the_next_session() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::new().tool_call(
        "m1",
        "memory",
        json!({"action": "add", "text": "Prefers tabs over spaces"}),
    ));
    model.push(Turn::reply("Noted."));
    let env = Env::new(&model.url(), "");
    let out = env.console(&["-p", "I prefer tabs, remember it"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "Noted.\n");
    let first = model.requests().remove(0);
    assert_memory_offered_with_nothing_remembered(&first);

    // A new console session (no --session) in the same directory is shown the fact.
    model.push(Turn::reply("Tabs."));
    let out = env.console(&["-p", "tabs or spaces?"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let next = model.requests().pop().unwrap();
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert!(
        system(&next).contains(&format!("- [1] {today}: Prefers tabs over spaces")),
        "{}",
        system(&next)
    );
    assert!(!system(&next).contains("global, every chat"), "{}", system(&next));
    let folder = env.home().join(".volcanic/agent/memory");
    let workspace = std::fs::canonicalize(env.workspace()).unwrap();
    let scope = volcanic_core::sessions::cwd_scope(&workspace);
    let names: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect();
    assert_eq!(names, vec![format!("{scope}.json")]);
}
