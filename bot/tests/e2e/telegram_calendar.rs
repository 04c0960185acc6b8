//! Google Calendar end to end: the real binary against the Bot API double, the scripted model
//! server and the Google double. Both sign-in flows, the `calendar` tool in a chat in
//! Asia/Tokyo, refresh, `invalid_grant`, disconnect, and the refusals.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::json;
use volcanic_testkit::GoogleServer;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

const CLIENT_ID: &str = "e2e-client.apps.googleusercontent.com";
const CLIENT_SECRET: &str = "e2e-client-secret";

async fn google() -> GoogleServer {
    let g = GoogleServer::start(CLIENT_ID, CLIENT_SECRET).await.unwrap();
    g.set_email("ann@example.com");
    g.set_time_zone("Asia/Tokyo");
    g
}

/// The public URL and an `[http]` section serving it on a free port, its callback registered
/// with the double.
fn callback_http(g: &GoogleServer) -> (String, String) {
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}");
    g.register_redirect_uri(&format!("{public}/oauth/google/callback"));
    let http = format!("[http]\nlisten = \"127.0.0.1:{port}\"\npublic_url = \"{public}\"\n");
    (public, http)
}

fn google_config(g: &GoogleServer) -> String {
    format!(
        "[google]\nclient_id = \"{CLIENT_ID}\"\nclient_secret = \"{CLIENT_SECRET}\"\nauth_url = \"{}\"\n\
         token_url = \"{}\"\nrevoke_url = \"{}\"\napi_base_url = \"{}\"\n",
        g.auth_url(),
        g.token_url(),
        g.revoke_url(),
        g.api_base_url()
    )
}

/// Sends `/calendar connect` in `chat` as `user` and returns the URL of the button.
async fn connect_link(tg: &BotApiServer, chat: i64, user: i64, bot: &BotProcess) -> String {
    let before = tg.messages(chat).len();
    tg.push_update(updates::text_message(chat, user, "/calendar connect"));
    tg.wait_for(
        |s| s.messages(chat).iter().skip(before).any(|m| m.reply_markup.is_some()),
        T,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\nbot log:\n{}", bot.log()));
    let m = tg
        .messages(chat)
        .into_iter()
        .skip(before)
        .find(|m| m.reply_markup.is_some())
        .unwrap();
    m.reply_markup.unwrap()["inline_keyboard"][0][0]["url"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn model_saw(model: &ModelServer, needle: &str) -> bool {
    model.requests().iter().any(|r| r.body.to_string().contains(needle))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calendar_by_paste_back_in_tokyo_with_refresh_and_invalid_grant() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let g = google().await;
    g.set_token_lifetime(30); // under a minute: every tool call refreshes
    let env = Env::new(
        &model.url(),
        &format!("{}{}", telegram_config(&tg, ""), google_config(&g)),
    );
    let bot = BotProcess::start(&env, TOKEN);
    tg.add_chat(FRIEND);

    // Not connected: the tool tells the model to have the user run /calendar connect.
    model.push(Turn::call("toolu_c0", "calendar", json!({"action": "list_calendars"})));
    model.push(Turn::reply("not yet"));
    tg.push_update(updates::text_message(OWNER, OWNER, "what is in my calendar?"));
    nth_text(&tg, OWNER, "not yet", 1, &bot).await;
    assert!(model_saw(&model, "run /calendar connect"));

    tg.push_update(updates::text_message(OWNER, OWNER, "/tz Asia/Tokyo"));
    nth_text(&tg, OWNER, "Asia/Tokyo", 1, &bot).await;

    // A pasted address from another chat is refused, and cancels that sign-in.
    let url = connect_link(&tg, OWNER, OWNER, &bot).await;
    let landed = g.consent(&url).await.unwrap();
    assert!(landed.starts_with("http://127.0.0.1:53682/"), "{landed}");
    // (and a paste that cannot be deleted asks the user to delete it)
    tg.fail_next("deleteMessage", 400, "Bad Request: message can't be deleted", None);
    tg.push_update(updates::text_message(FRIEND, FRIEND, &landed));
    let refused = nth_text(&tg, FRIEND, "another chat", 1, &bot).await;
    assert!(refused.contains("delete it yourself"), "{refused}");
    tg.push_update(updates::text_message(OWNER, OWNER, &landed));
    nth_text(&tg, OWNER, "unknown or was already used", 1, &bot).await;

    // The real paste-back, with words around it and without its scheme: taken before the
    // session, deleted from the chat, confirmed.
    let url = connect_link(&tg, OWNER, OWNER, &bot).await;
    let landed = g.consent(&url).await.unwrap();
    let message = format!("here: {}", landed.trim_start_matches("http://"));
    let pasted = tg.push_update(updates::text_message(OWNER, OWNER, &message));
    let confirmed = nth_text(&tg, OWNER, "Google Calendar connected", 1, &bot).await;
    assert!(confirmed.contains("ann@example.com"), "{confirmed}");
    let pasted_id = pasted["message"]["message_id"].as_i64().unwrap();
    assert!(
        tg.calls("deleteMessage")
            .iter()
            .any(|c| c.params["message_id"].as_i64() == Some(pasted_id)),
        "the pasted address is deleted from the chat"
    );
    assert!(
        !model_saw(&model, "code="),
        "the pasted address never reaches the model"
    );
    let token_file = env.dir.path().join("data/google").join(format!("{OWNER}.json"));
    let stored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&token_file).unwrap()).unwrap();
    let refresh_token = stored["refresh_token"].as_str().unwrap().to_owned();
    let workspace = env.dir.path().join("workspaces");
    assert!(!workspace.join(OWNER.to_string()).join("google").exists());

    // An all-day event, a weekly one, then the list in the chat's zone.
    model.push(Turn::call(
        "toolu_c1",
        "calendar",
        json!({"action": "create_event", "summary": "Trip", "start": "2030-03-10", "all_day": true}),
    ));
    model.push(Turn::call(
        "toolu_c2",
        "calendar",
        json!({"action": "create_event", "summary": "Standup", "start": "2030-03-04 09:00", "duration": "15m",
               "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=3"]}),
    ));
    model.push(Turn::call(
        "toolu_c3",
        "calendar",
        json!({"action": "list_events", "from": "2030-03-01", "to": "2030-04-01"}),
    ));
    model.push(Turn::reply("all set"));
    tg.push_update(updates::text_message(OWNER, OWNER, "plan my march"));
    nth_text(&tg, OWNER, "all set", 1, &bot).await;
    let trip = g.events().into_iter().find(|e| e["summary"] == "Trip").unwrap();
    assert_eq!(trip["end"]["date"], "2030-03-11", "all-day ends are exclusive");
    let standup = g.events().into_iter().find(|e| e["summary"] == "Standup").unwrap();
    assert_eq!(standup["start"]["timeZone"], "Asia/Tokyo");
    let outputs: Vec<String> = model
        .requests()
        .iter()
        .flat_map(|r| r.tool_outputs())
        .map(|(_, t)| t)
        .collect();
    let listed = outputs.iter().find(|t| t.contains("times in Asia/Tokyo")).unwrap();
    for day in [
        "2030-03-04 09:00",
        "2030-03-11 09:00",
        "2030-03-18 09:00",
        "2030-03-10 (all day) Trip",
    ] {
        assert!(listed.contains(day), "{day} missing from {listed}");
    }
    // Refreshed without a new refresh token: the stored one is kept; no token in any output.
    assert!(g.requests().iter().any(|r| r.body.contains("grant_type=refresh_token")));
    let stored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&token_file).unwrap()).unwrap();
    assert_eq!(stored["refresh_token"].as_str(), Some(refresh_token.as_str()));
    assert!(!model_saw(&model, &refresh_token));

    // invalid_grant: told once, no retry storm.
    let before = g.requests().iter().filter(|r| r.path == "/token").count();
    g.revoke_all();
    model.push(Turn::call("toolu_c4", "calendar", json!({"action": "list_calendars"})));
    model.push(Turn::call("toolu_c5", "calendar", json!({"action": "list_calendars"})));
    model.push(Turn::reply("revoked noted"));
    tg.push_update(updates::text_message(OWNER, OWNER, "list my calendars"));
    nth_text(&tg, OWNER, "revoked noted", 1, &bot).await;
    nth_text(&tg, OWNER, "expired or was revoked", 1, &bot).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        texts(&tg, OWNER)
            .iter()
            .filter(|t| t.contains("expired or was revoked"))
            .count(),
        1
    );
    assert_eq!(
        g.requests().iter().filter(|r| r.path == "/token").count(),
        before + 2,
        "the first call's refresh (yup-oauth2's, then the one telling why) and none for the second call"
    );
    drop(bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calendar_by_callback_status_and_disconnect() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let g = google().await;
    let (public, http) = callback_http(&g);
    let env = Env::new(
        &model.url(),
        &format!("{}{}{}", telegram_config(&tg, ""), http, google_config(&g)),
    );
    let bot = BotProcess::start(&env, TOKEN);

    let url = connect_link(&tg, OWNER, OWNER, &bot).await;
    let landed = g.consent(&url).await.unwrap();
    assert!(
        landed.starts_with(&format!("{public}/oauth/google/callback?")),
        "{landed}"
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let page = client.get(&landed).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.text().await.unwrap().contains("go back to Telegram"));
    let confirmed = nth_text(&tg, OWNER, "Google Calendar connected", 1, &bot).await;
    assert!(confirmed.contains("ann@example.com"), "{confirmed}");

    // A replayed and a made-up state are refused with a clear page.
    let replay = client.get(&landed).send().await.unwrap();
    assert_eq!(replay.status().as_u16(), 400);
    assert!(replay.text().await.unwrap().contains("unknown or was already used"));
    let bogus = client
        .get(format!("{public}/oauth/google/callback?state=bogus&code=4/0abc"))
        .send()
        .await
        .unwrap();
    assert_eq!(bogus.status().as_u16(), 400);

    tg.push_update(updates::text_message(OWNER, OWNER, "/calendar status"));
    let status = nth_text(&tg, OWNER, "Google account", 1, &bot).await;
    assert!(
        status.contains("ann@example.com") && status.contains("calendar.events"),
        "{status}"
    );
    assert!(status.contains("zone Asia/Tokyo"), "{status}");

    tg.push_update(updates::text_message(OWNER, OWNER, "/calendar disconnect"));
    let done = nth_text(&tg, OWNER, "Disconnected", 1, &bot).await;
    assert!(done.contains("revoked"), "{done}");
    assert_eq!(g.revocations().len(), 1);
    assert!(
        !env.dir
            .path()
            .join("data/google")
            .join(format!("{OWNER}.json"))
            .exists()
    );
    drop(bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calendar_in_a_group_links_privately_and_moves_with_a_migration() {
    const GROUP: i64 = -5001;
    const SUPERGROUP: i64 = -1_005_001;
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let g = google().await;
    let (_, http) = callback_http(&g);
    let env = Env::new(
        &model.url(),
        &format!(
            "{}{}{}",
            telegram_config(&tg, &format!("allowed_chats = [{GROUP}]")),
            http,
            google_config(&g)
        ),
    );
    let bot = BotProcess::start(&env, TOKEN);
    let me = tg.bot_username();
    let connect = format!("/calendar@{me} connect");

    // No private chat with the user yet: the link is not shown in the group.
    tg.push_update(updates::group_message(GROUP, OWNER, &connect, None));
    nth_text(&tg, GROUP, "open a private chat", 1, &bot).await;
    assert!(tg.messages(GROUP).iter().all(|m| m.reply_markup.is_none()));

    tg.add_chat(OWNER);
    tg.push_update(updates::group_message(GROUP, OWNER, &connect, None));
    nth_text(&tg, GROUP, "in a private message", 1, &bot).await;
    tg.wait_for(|s| s.messages(OWNER).iter().any(|m| m.reply_markup.is_some()), T)
        .await
        .unwrap();
    assert!(tg.messages(GROUP).iter().all(|m| m.reply_markup.is_none()));
    let m = tg
        .messages(OWNER)
        .into_iter()
        .find(|m| m.reply_markup.is_some())
        .unwrap();
    let url = m.reply_markup.unwrap()["inline_keyboard"][0][0]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let landed = g.consent(&url).await.unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let page = reqwest::Client::new().get(&landed).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let confirmed = nth_text(&tg, GROUP, "Google Calendar connected", 1, &bot).await;
    assert!(confirmed.contains("ann@example.com"), "{confirmed}");

    // The group becomes a supergroup: its tokens move with it.
    let google_dir = env.dir.path().join("data/google");
    assert!(google_dir.join("g5001.json").exists());
    tg.push_update(updates::migrate_to_chat(GROUP, SUPERGROUP, OWNER));
    let moved = google_dir.join("g1005001.json");
    for _ in 0..100 {
        if moved.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(moved.exists(), "bot log:\n{}", bot.log());
    assert!(!google_dir.join("g5001.json").exists());
    drop(bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calendar_connect_without_google_config_says_what_to_set() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "/calendar connect"));
    let text = nth_text(&tg, OWNER, "not configured", 1, &bot).await;
    assert!(
        text.contains("client_id") && text.contains("GOOGLE_CLIENT_ID"),
        "{text}"
    );
    drop(bot);
}
