//! Button presses obey the access rules of messages (issue 25), tried as the attacks: an allowed
//! user presses a menu button (or an answer preview's Stop) in a group no longer allowed, a press
//! arrives without a message (inline mode), and in a group one member answers the guard question
//! (or a command's question) asked for another, or presses it from another topic. Each is
//! answered with a toast and changes nothing; the person asked and an owner still answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::{Value, json};
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// The group the config lists.
const LISTED: i64 = -1_001_000_000_001;
/// A group the config does not list (removed from `allowed_chats`).
const UNLISTED: i64 = -1_001_000_000_002;
/// An allowed member who is not an owner, besides `FRIEND`.
const MEMBER: i64 = 1003;

/// The toasts of the bot's texts module, as users see them.
const REFUSED: &str = "This button does not work here.";
const ELSEWHERE: &str = "This question was asked in another topic.";

fn config(tg: &BotApiServer) -> String {
    format!(
        "[telegram]\napi_url = \"{}\"\nallowed_users = [{OWNER}, {FRIEND}, {MEMBER}]\nowners = [{OWNER}]\n\
         allowed_chats = [{LISTED}]\n",
        tg.url()
    )
}

/// Waits until a press was answered with `toast`; fails with the bot's log.
async fn wait_toast(tg: &BotApiServer, toast: &str, bot: &BotProcess) {
    let shown = |tg: &BotApiServer| {
        tg.calls("answerCallbackQuery")
            .iter()
            .any(|c| c.param("text") == Some(&json!(toast)))
    };
    tg.wait_for(shown, T)
        .await
        .unwrap_or_else(|e| panic!("waiting for the toast {toast:?}: {e}\n{}", bot.log()));
}

/// The calls the bot made about `chat` (anything sent, edited or shown there).
fn calls_in(tg: &BotApiServer, chat: i64) -> Vec<String> {
    [
        "sendMessage",
        "editMessageText",
        "editMessageReplyMarkup",
        "sendChatAction",
        "deleteMessage",
    ]
    .into_iter()
    .flat_map(|m| tg.calls(m).into_iter().map(move |c| (m, c)))
    .filter(|(_, c)| c.chat_id() == Some(chat))
    .map(|(m, _)| m.to_owned())
    .collect()
}

fn settings(env: &Env) -> Option<String> {
    std::fs::read_to_string(env.dir.path().join("data/chat-settings.json")).ok()
}

/// Sends `/thinking` in the owner's private chat and waits for its menu: every update before it
/// has been handled by then.
async fn barrier(tg: &BotApiServer, bot: &BotProcess) {
    tg.push_update(updates::text_message(OWNER, OWNER, "/thinking"));
    wait_text(tg, OWNER, "Thinking level:", bot).await;
}

/// Starts the bot, pushes `press`, waits for its toast [`REFUSED`] and for every update before
/// [`barrier`]; checks that no chat's settings changed and no model was asked.
async fn refused_press(press: Value) -> (Env, BotApiServer, BotProcess) {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &config(&tg));
    let bot = BotProcess::start(&env, TOKEN);
    let before = settings(&env);
    tg.push_update(press);
    wait_toast(&tg, REFUSED, &bot).await;
    barrier(&tg, &bot).await;
    assert_eq!(settings(&env), before, "the chats' settings are unchanged");
    assert!(model.requests().is_empty());
    (env, tg, bot)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_press_in_a_group_no_longer_allowed_changes_nothing_and_posts_nothing() {
    // The owner (an allowed user) presses an old `/thinking` menu left in the unlisted group.
    let press = updates::callback_query(OWNER, 77, UNLISTED, "cmd:/thinking high");
    let (env, tg, _bot) = refused_press(press).await;
    assert_eq!(calls_in(&tg, UNLISTED), Vec::<String>::new(), "nothing posted there");
    assert!(!env.dir.path().join("workspaces/g1001000000002").exists());
    assert!(!env.dir.path().join("data/sessions/g1001000000002").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_stop_in_a_group_no_longer_allowed_is_refused_like_any_press() {
    // FRIEND presses the Stop of an answer preview asked by FRIEND, in the unlisted group: the
    // chat rule refuses it before the Stop's own asker rule is asked.
    let press = updates::callback_query(FRIEND, 78, UNLISTED, &format!("live-stop:{FRIEND}"));
    let (_env, tg, _bot) = refused_press(press).await;
    assert_eq!(calls_in(&tg, UNLISTED), Vec::<String>::new(), "nothing posted there");
    let toasts: Vec<_> = tg
        .calls("answerCallbackQuery")
        .iter()
        .filter_map(|c| c.param("text").cloned())
        .collect();
    assert_eq!(toasts, [json!(REFUSED)], "one toast, the chat rule's");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_press_without_a_message_is_answered_and_creates_nothing() {
    // An inline-mode button: `inline_message_id`, no `message`, so no chat.
    let press = json!({"callback_query": {
        "from": updates::user(OWNER),
        "inline_message_id": "AgAAAAAAAAAAAAAA",
        "chat_instance": "testkit_inline",
        "data": "cmd:/thinking high",
    }});
    let (env, tg, _bot) = refused_press(press).await;
    assert!(!env.dir.path().join("workspaces/0").exists(), "no ws/0");
    assert!(!env.dir.path().join("data/sessions/0").exists());
    assert_eq!(calls_in(&tg, 0), Vec::<String>::new());
}

/// The open guard question in the listed group's topic 5: its message and its Allow button's data.
/// Found by its first button (a live answer's preview carries a Stop button meanwhile).
async fn question(tg: &BotApiServer, bot: &BotProcess) -> (i64, String) {
    let first_button = |m: &volcanic_testkit::bot_api::ChatMessage| {
        m.reply_markup
            .as_ref()
            .map(|k| k["inline_keyboard"][0][0]["text"].clone())
    };
    let asked = |tg: &BotApiServer| {
        tg.messages(LISTED)
            .into_iter()
            .find(|m| first_button(m).is_some_and(|t| t == "Allow"))
    };
    tg.wait_for(|s| asked(s).is_some(), T)
        .await
        .unwrap_or_else(|e| panic!("waiting for the question: {e}\n{}", bot.log()));
    let q = asked(tg).unwrap();
    assert_eq!(q.visible_text.as_deref(), Some("Run `rm -rf build`?"));
    assert_eq!(q.thread_id, Some(5), "asked in the topic");
    let data = q.reply_markup.as_ref().unwrap()["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        q.reply_markup.as_ref().unwrap()["inline_keyboard"][0][0]["text"] == "Allow",
        "{:?}",
        q.reply_markup
    );
    (q.message_id, data)
}

/// A press on the question message by `from` (the double fills in the message as sent).
fn press(from: i64, message_id: i64, data: &str) -> Value {
    updates::callback_query(from, message_id, LISTED, data)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_question_is_answered_only_by_its_asker_or_an_owner_in_its_topic() {
    let model = ModelServer::start().await.unwrap();
    for (id, reply) in [("toolu_rm1", "first done"), ("toolu_rm2", "second done")] {
        model.push(Turn::call(id, "bash", json!({"command": "rm -rf build"})));
        model.push(Turn::reply(reply));
    }
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &config(&tg));
    let build = env.dir.path().join("workspaces/g1001000000001/build");
    std::fs::create_dir_all(&build).unwrap();
    let bot = BotProcess::start(&env, TOKEN);
    let me = mention(&tg);
    tg.push_update(updates::topic_message(LISTED, 5, FRIEND, &format!("{me} clean up")));
    let (q1, allow) = question(&tg, &bot).await;

    // Another member presses Allow on the question asked for FRIEND: refused, still open.
    tg.push_update(press(MEMBER, q1, &allow));
    wait_toast(&tg, &format!("This question is for User {FRIEND}."), &bot).await;
    // FRIEND's own press, but on a message of another topic: refused as well.
    let mut elsewhere = updates::callback_query(FRIEND, 999_999, LISTED, &allow);
    elsewhere["callback_query"]["message"]["is_topic_message"] = json!(true);
    elsewhere["callback_query"]["message"]["message_thread_id"] = json!(9);
    tg.push_update(elsewhere);
    wait_toast(&tg, ELSEWHERE, &bot).await;
    let open = tg.messages(LISTED).into_iter().find(|m| m.message_id == q1).unwrap();
    assert!(
        open.reply_markup.is_some() && open.edits == 0,
        "the question stays open"
    );
    assert!(build.is_dir(), "the command did not run");
    assert_eq!(model.requests().len(), 1, "the run still waits for its answer");

    // FRIEND answers: the command runs.
    tg.push_update(press(FRIEND, q1, &allow));
    wait_text(&tg, LISTED, "first done", &bot).await;
    assert!(!build.exists(), "FRIEND's Allow ran it");
    let out = model.requests()[1].tool_outputs()[0].1.clone();
    assert!(!out.contains("Blocked"), "{out}");

    // A second question asked for FRIEND: an owner may answer it.
    std::fs::create_dir_all(&build).unwrap();
    tg.push_update(updates::topic_message(LISTED, 5, FRIEND, &format!("{me} once more")));
    let (q2, allow) = question(&tg, &bot).await;
    assert_ne!(q1, q2);
    tg.push_update(press(OWNER, q2, &allow));
    wait_text(&tg, LISTED, "second done", &bot).await;
    assert!(!build.exists(), "the owner's Allow ran it");
    let toasts: Vec<_> = tg
        .calls("answerCallbackQuery")
        .iter()
        .filter_map(|c| c.param("text").cloned())
        .collect();
    assert_eq!(toasts.len(), 2, "only the refused presses got a toast: {toasts:?}");
}

/// The open question with a first button labelled `first` in the listed group: its message id
/// and the data of that button.
async fn buttons_of(tg: &BotApiServer, first: &str, bot: &BotProcess) -> (i64, String) {
    let asked = |tg: &BotApiServer| {
        tg.messages(LISTED).into_iter().find(|m| {
            m.reply_markup
                .as_ref()
                .is_some_and(|k| k["inline_keyboard"][0][0]["text"] == first)
        })
    };
    tg.wait_for(|s| asked(s).is_some(), T)
        .await
        .unwrap_or_else(|e| panic!("waiting for the question with {first:?}: {e}\n{}", bot.log()));
    let q = asked(tg).unwrap();
    let data = q.reply_markup.as_ref().unwrap()["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();
    (q.message_id, data)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commands_question_in_a_group_is_answered_only_by_its_sender_or_an_owner() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &config(&tg));
    // The `ask` extension's `/ask` asks a yes/no question, then which colour.
    let ws = env.dir.path().join("workspaces/g1001000000001/.volcanic");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("settings.json"), r#"{"extensions": ["ask"]}"#).unwrap();
    let bot = BotProcess::start(&env, TOKEN);
    let me = mention(&tg);
    tg.push_update(updates::group_message(LISTED, FRIEND, &format!("/ask{me}"), None));
    let (q, yes) = buttons_of(&tg, "Yes", &bot).await;

    // Another member presses Yes on FRIEND's command's question: refused, still open.
    tg.push_update(press(MEMBER, q, &yes));
    wait_toast(&tg, &format!("This question is for User {FRIEND}."), &bot).await;
    let open = tg.messages(LISTED).into_iter().find(|m| m.message_id == q).unwrap();
    assert!(
        open.reply_markup.is_some() && open.edits == 0,
        "the question stays open"
    );

    // FRIEND answers it; the next question is FRIEND's too, and an owner may answer it.
    tg.push_update(press(FRIEND, q, &yes));
    let (colour, red) = buttons_of(&tg, "red", &bot).await;
    tg.push_update(press(MEMBER, colour, &red));
    let not_for = json!(format!("This question is for User {FRIEND}."));
    let refused_twice = |tg: &BotApiServer| {
        let toasts = tg.calls("answerCallbackQuery");
        toasts.iter().filter(|c| c.param("text") == Some(&not_for)).count() == 2
    };
    tg.wait_for(refused_twice, T)
        .await
        .unwrap_or_else(|e| panic!("waiting for the second refusal: {e}\n{}", bot.log()));
    tg.push_update(press(OWNER, colour, &red));
    wait_text(&tg, LISTED, "What is your name?", &bot).await;
    assert!(model.requests().is_empty(), "a command, not a prompt");
}
