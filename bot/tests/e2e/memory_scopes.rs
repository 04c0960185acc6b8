//! Memory scopes and curation through the real binary (issue 28): a chat's memory never reaches
//! another chat's prompt (private, group, forum topic of another group); a fact becomes global
//! only by an owner's press (a non-owner's press is refused), on `/memory` or on the question the
//! tool's `scope: "global"` sends the owners; automatic curation after `/new` shows
//! "Remembered: …" and the next session has it; a session of one prompt is not curated; an A2A
//! caller's memory is its own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::memory_support::*;
use crate::support::*;
use serde_json::json;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

const OTHER_GROUP: i64 = -1_001_555_000_222;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chats_memory_stays_in_that_chat() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let extra = format!("allowed_chats = [{GROUP}, {OTHER_GROUP}]");
    let env = Env::new(
        &model.url(),
        &format!("{}\n[memory]\nauto = false\n", telegram_config(&tg, &extra)),
    );
    seed(&env, "1001", &["The secret word is quokkalantern"]);
    seed(&env, GROUP_KEY, &["The group's word is marzipanorbit"]);
    let bot = BotProcess::start(&env, TOKEN);

    let own = ask(&tg, &model, &bot, (OWNER, OWNER), "hello", "Hi owner.").await;
    assert!(system(&own).contains("quokkalantern"), "{}", system(&own));
    assert!(!system(&own).contains("marzipanorbit"), "{}", system(&own));
    let friend = ask(&tg, &model, &bot, (FRIEND, FRIEND), "hello", "Hi friend.").await;
    assert!(!system(&friend).contains("quokkalantern"), "{}", system(&friend));
    let group = ask(&tg, &model, &bot, (GROUP, OWNER), "hello", "Hi group.").await;
    assert!(system(&group).contains("marzipanorbit"), "{}", system(&group));
    assert!(!system(&group).contains("quokkalantern"), "{}", system(&group));

    // A forum topic shares its group's memory; another group's topic has none of it.
    let hello = format!("{} hello", mention(&tg));
    let other = updates::topic_message(OTHER_GROUP, 9, OWNER, &hello);
    let topic = ask_with(&tg, &model, &bot, OTHER_GROUP, other, "Hi topic.").await;
    assert!(!system(&topic).contains("quokkalantern"), "{}", system(&topic));
    assert!(!system(&topic).contains("marzipanorbit"), "{}", system(&topic));
    let own = updates::topic_message(GROUP, 4, OWNER, &hello);
    let own_topic = ask_with(&tg, &model, &bot, GROUP, own, "Hi own topic.").await;
    assert!(system(&own_topic).contains("marzipanorbit"), "{}", system(&own_topic));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_an_owners_press_shares_a_fact_with_every_chat() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &config(&tg, "auto = false"));
    seed(&env, GROUP_KEY, &["Standup is at 9:30"]);
    let bot = BotProcess::start(&env, TOKEN);

    // The owner's /memory in the group offers "share everywhere"; a friend's press is refused.
    let me = tg.bot_username();
    tg.push_update(updates::text_message(GROUP, OWNER, &format!("/memory@{me}")));
    wait_text(&tg, GROUP, "Standup is at 9:30", &bot).await;
    press_as(&tg, GROUP, FRIEND, "Share everywhere 1").await;
    wait_toast(&tg, "Only an owner can do this.", &bot).await;
    assert_eq!(stored(&env, GROUP_KEY), ["Standup is at 9:30"]);
    assert!(stored(&env, "global").is_empty());

    press_as(&tg, GROUP, OWNER, "Share everywhere 1").await;
    wait_toast(&tg, "Shared with every chat: Standup is at 9:30", &bot).await;
    wait_stored(&env, "global", &["Standup is at 9:30"], &bot).await;
    assert!(stored(&env, GROUP_KEY).is_empty());
    let friend = ask(&tg, &model, &bot, (FRIEND, FRIEND), "hello", "Hi friend.").await;
    assert!(
        system(&friend).contains("- [g1] 2026-11-30 (global, every chat): Standup is at 9:30"),
        "{}",
        system(&friend)
    );

    // The tool's `scope: "global"` asks the owners (in their private chats, which they opened)
    // and waits: declined, then agreed.
    ask(&tg, &model, &bot, (OWNER, OWNER), "hello", "Hi owner.").await;
    model.push(Turn::new().tool_call(
        "g1",
        "memory",
        json!({"action": "add", "text": "Invoices go out on Fridays", "scope": "global"}),
    ));
    model.push(Turn::reply("Asked."));
    tg.push_update(updates::text_message(
        FRIEND,
        FRIEND,
        "share the invoice day with everyone",
    ));
    wait_text(&tg, OWNER, "asks to remember this in every chat", &bot).await;
    press_as(&tg, OWNER, FRIEND, "Don't share").await;
    wait_toast(&tg, "Only an owner decides", &bot).await;
    press_as(&tg, OWNER, OWNER, "Don't share").await;
    wait_text(&tg, FRIEND, "Asked.", &bot).await;
    let outputs = model.requests().last().unwrap().tool_outputs();
    assert!(
        outputs.iter().any(|(_, o)| o.contains("An owner declined")),
        "{outputs:?}"
    );
    wait_text(
        &tg,
        OWNER,
        "Not shared: \u{201c}Invoices go out on Fridays\u{201d}",
        &bot,
    )
    .await;

    model.push(Turn::new().tool_call(
        "g2",
        "memory",
        json!({"action": "add", "text": "Invoices go out on Fridays", "scope": "global"}),
    ));
    model.push(Turn::reply("Shared now."));
    tg.push_update(updates::text_message(FRIEND, FRIEND, "please try again"));
    eventually("a second question", &bot, || {
        count(&tg, OWNER, "asks to remember this in every chat") == 1
    })
    .await;
    press_as(&tg, OWNER, OWNER, "Share everywhere").await;
    wait_text(&tg, FRIEND, "Shared now.", &bot).await;
    wait_stored(
        &env,
        "global",
        &["Standup is at 9:30", "Invoices go out on Fridays"],
        &bot,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn automatic_curation_after_new_remembers_and_the_next_session_has_it() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);

    let turns = [
        ("I moved to Lisbon last month", "Welcome to Lisbon!"),
        ("any café tips?", "Try the one by the river."),
    ];
    converse(&tg, &model, &bot, &turns).await;
    let before = model.requests().len();
    model.push(Turn::reply("{\"add\": [\"Lives in Lisbon (moved recently)\"]}"));
    tg.push_update(updates::text_message(OWNER, OWNER, "/new"));
    wait_text(&tg, OWNER, "Remembered: Lives in Lisbon (moved recently)", &bot).await;
    wait_text(&tg, OWNER, "New session started.", &bot).await;
    let curation = wait_requests(&model, before + 1, &bot).await[before].clone();
    assert_curation(&curation, "I moved to Lisbon last month");
    assert_eq!(stored(&env, "1001"), ["Lives in Lisbon (moved recently)"]);

    let next = ask(&tg, &model, &bot, (OWNER, OWNER), "where do I live?", "In Lisbon.").await;
    assert!(
        system(&next).contains("Lives in Lisbon (moved recently)"),
        "{}",
        system(&next)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_curates_what_it_summarises() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);

    let turns = [
        ("my daughter is called Ines", "Lovely name."),
        ("she starts school in May", "Noted."),
        ("what should I pack?", "A lunch box."),
    ];
    converse(&tg, &model, &bot, &turns).await;
    let before = model.requests().len();
    model.push(Turn::reply(
        "{\"add\": [\"Has a daughter, Ines, starting school in May\"]}",
    ));
    model.push(Turn::reply(
        "## Goal\nHelp with school.\n\n## Progress\n### Done\n- talked",
    ));
    tg.push_update(updates::text_message(OWNER, OWNER, "/compact"));
    wait_text(
        &tg,
        OWNER,
        "Remembered: Has a daughter, Ines, starting school in May",
        &bot,
    )
    .await;
    let curation = wait_requests(&model, before + 1, &bot).await[before].clone();
    assert_curation(&curation, "my daughter is called Ines");
    assert_eq!(stored(&env, "1001"), ["Has a daughter, Ines, starting school in May"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_auto_new_makes_no_curation_call() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &config(&tg, "auto = false"));
    let bot = BotProcess::start(&env, TOKEN);

    let turns = [("I moved to Lisbon", "Welcome!"), ("any café tips?", "By the river.")];
    converse(&tg, &model, &bot, &turns).await;
    let before = model.requests().len();
    tg.push_update(updates::text_message(OWNER, OWNER, "/new"));
    wait_text(&tg, OWNER, "New session started.", &bot).await;
    assert_eq!(model.requests().len(), before, "no model call on /new");
    assert!(stored(&env, "1001").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_of_one_prompt_is_not_curated() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &config(&tg, "auto = true"));
    let bot = BotProcess::start(&env, TOKEN);

    ask(&tg, &model, &bot, (OWNER, OWNER), "hello", "Hello!").await;
    let before = model.requests().len();
    tg.push_update(updates::text_message(OWNER, OWNER, "/new"));
    wait_text(&tg, OWNER, "New session started.", &bot).await;
    assert_eq!(model.requests().len(), before, "no curation call for one prompt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_a2a_callers_memory_is_its_own_even_when_it_acts_for_a_chat() {
    use crate::a2a_server::{rpc, send, wait_card};
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let extra = format!(
        "{}[a2a.server]\nname = \"Test assistant\"\n\
         [[a2a.server.callers]]\nname = \"carol\"\ntoken_env = \"E2E_CAROL\"\nchat = {OWNER}\n\
         [memory]\nauto = false\n",
        http_section(port)
    );
    let env = Env::new(&model.url(), &format!("{}{extra}", telegram_config(&tg, "")));
    seed(&env, "1001", &["The secret word is quokkalantern"]);
    seed(&env, "global", &["The shared word is heliotropewhale"]);
    let token = "carol-token-0123456789abcdef";
    let bot = BotProcess::start_with(&env, TOKEN, Some("info"), &[("E2E_CAROL", token)]);
    let base = format!("http://127.0.0.1:{port}");
    wait_card(&base, &bot).await;

    model.push(Turn::new().tool_call(
        "c1",
        "memory",
        json!({"action": "add", "text": "Carol reviews releases"}),
    ));
    model.push(Turn::reply("Kept."));
    let r = rpc(
        &base,
        token,
        "SendMessage",
        send("remember that I review releases", json!({}), false),
    )
    .await;
    assert_eq!(
        r["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{r}\n{}",
        bot.log()
    );
    let requests = model.requests();
    for req in &requests {
        let prompt = system(req);
        assert!(prompt.contains("(nothing remembered yet)"), "{prompt}");
        assert!(
            !prompt.contains("quokkalantern") && !prompt.contains("heliotropewhale"),
            "{prompt}"
        );
    }
    assert_eq!(stored(&env, "a2a-carol"), ["Carol reviews releases"]);
    assert_eq!(stored(&env, "1001"), ["The secret word is quokkalantern"]);

    // The chat it acts for does not see the caller's fact either.
    let own = ask(&tg, &model, &bot, (OWNER, OWNER), "hello", "Hi owner.").await;
    assert!(!system(&own).contains("Carol reviews releases"), "{}", system(&own));
    assert!(system(&own).contains("quokkalantern"), "{}", system(&own));
}
