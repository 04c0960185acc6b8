//! Sign-in flows, refresh, invalid_grant, disconnect.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use serde_json::json;
use volcanic_google_calendar::{CalendarError, CalendarTool, TokenStore, is_paste_back};

use super::{args, chat, setup};

#[tokio::test]
async fn paste_back_connects_and_refuses_replays_and_other_chats() {
    let s = setup(None).await;
    let link = s
        .connections
        .connect(chat(1), 7, None)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(link.paste_back);
    assert!(link.url.contains("code_challenge_method=S256") && link.url.contains("access_type=offline"));
    let location = s.google.consent(&link.url).await.unwrap_or_else(|e| panic!("{e:?}"));
    assert!(is_paste_back(&location), "{location}");

    let other = s.connections.finish_paste(&chat(2), 7, &location).await;
    assert!(matches!(other, Err(CalendarError::WrongChat)), "{other:?}");
    // The leaked sign-in is cancelled: even its own chat cannot use it now.
    let replay = s.connections.finish_paste(&chat(1), 7, &location).await;
    assert!(matches!(replay, Err(CalendarError::UnknownState)), "{replay:?}");

    // The address with words around it, without its scheme: still taken and used.
    let link = s
        .connections
        .connect(chat(1), 7, None)
        .unwrap_or_else(|e| panic!("{e}"));
    let state = url::Url::parse(&link.url)
        .ok()
        .and_then(|u| u.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()))
        .unwrap_or_default();
    assert!(
        s.connections.is_paste(&format!("is it {state}?")),
        "a pending state anywhere"
    );
    let location = s.google.consent(&link.url).await.unwrap_or_else(|e| panic!("{e:?}"));
    let pasted = format!("here: {}, thanks", location.trim_start_matches("http://"));
    assert!(s.connections.is_paste(&pasted), "{pasted}");
    let connected = s
        .connections
        .finish_paste(&chat(1), 7, &pasted)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(connected.email.as_deref(), Some("ann@example.com"));
    assert!(!s.connections.is_paste("what is on my calendar?"));

    let connected = s.connect(&chat(1)).await;
    assert_eq!(connected.email.as_deref(), Some("ann@example.com"));
    assert_eq!(connected.missing, Vec::<String>::new());
    let path = TokenStore::new(s.dir.path()).path("1");
    let mode = std::fs::metadata(&path)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(0);
    assert_eq!(mode, 0o600);
    let account = s.connections.account(&chat(1)).unwrap_or_else(|| panic!("no account"));
    assert!(s.secrets.all().contains(&account.access_token));
    assert!(
        account
            .refresh_token
            .as_ref()
            .is_some_and(|r| s.secrets.all().contains(r))
    );
}

#[tokio::test]
async fn callback_flow_uses_the_public_url_and_reports_unticked_scopes() {
    let s = setup(Some("https://bot.example.org")).await;
    s.google
        .decline_scope("https://www.googleapis.com/auth/calendar.freebusy");
    let link = s
        .connections
        .connect(chat(5), 9, Some(77))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!link.paste_back);
    let location = s.google.consent(&link.url).await.unwrap_or_else(|e| panic!("{e:?}"));
    assert!(
        location.starts_with("https://bot.example.org/oauth/google/callback?"),
        "{location}"
    );
    let params: HashMap<String, String> = url::Url::parse(&location)
        .map(|u| u.query_pairs().into_owned().collect())
        .unwrap_or_default();
    let connected = s
        .connections
        .finish_callback(&params)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((connected.chat.clone(), connected.topic), (chat(5), Some(77)));
    assert_eq!(connected.missing, vec!["calendar.freebusy".to_owned()]);
    assert!(connected.message().contains("calendar.freebusy"));
    let again = s.connections.finish_callback(&params).await;
    assert!(matches!(again, Err(CalendarError::UnknownState)));

    let tool = CalendarTool::new(s.connections.clone(), chat(5));
    let err = tool
        .call(
            args(json!({"action": "free_busy", "from": "2030-01-01T00:00:00Z"})),
            "c1",
            "UTC",
        )
        .await
        .map(|r| r.text_content());
    let text = err.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        text.contains("calendar.freebusy") && text.contains("/calendar connect"),
        "{text}"
    );
}

#[tokio::test]
async fn refresh_keeps_the_refresh_token_and_invalid_grant_is_told_once() {
    let s = setup(None).await;
    s.google.set_token_lifetime(30); // under a minute: every use refreshes
    s.connect(&chat(3)).await;
    let before = s.connections.account(&chat(3)).and_then(|a| a.refresh_token);
    let old_access = s
        .connections
        .account(&chat(3))
        .map(|a| a.access_token)
        .unwrap_or_default();
    assert!(s.secrets.all().contains(&old_access));
    let told: Arc<Mutex<Vec<(i64, String)>>> = Arc::default();
    let sink = told.clone();
    s.connections.set_notifier(Arc::new(move |id, _topic, text| {
        sink.lock().unwrap_or_else(|p| p.into_inner()).push((id, text))
    }));
    let tool = CalendarTool::new(s.connections.clone(), chat(3));
    let listed = tool.call(args(json!({"action": "list_calendars"})), "c1", "UTC").await;
    assert!(listed.is_ok(), "{listed:?}");
    let refreshes = s
        .google
        .requests()
        .iter()
        .filter(|r| r.body.contains("grant_type=refresh_token"))
        .count();
    assert_eq!(
        refreshes, 1,
        "one refresh, through yup-oauth2 (a failed one would add a second request)"
    );
    let after = s.connections.account(&chat(3)).and_then(|a| a.refresh_token);
    assert_eq!(
        after, before,
        "a refresh answer without a refresh token keeps the old one"
    );
    // The expired access token left the redactor's set; the new one and the refresh token are in.
    let new_access = s
        .connections
        .account(&chat(3))
        .map(|a| a.access_token)
        .unwrap_or_default();
    let secrets = s.secrets.all();
    assert_ne!(new_access, old_access);
    assert!(!secrets.contains(&old_access), "{secrets:?}");
    assert!(secrets.contains(&new_access) && before.as_ref().is_some_and(|r| secrets.contains(r)));

    s.google.revoke_all();
    let first = tool.call(args(json!({"action": "list_calendars"})), "c2", "UTC").await;
    assert!(matches!(first, Err(CalendarError::NeedsReconnect)), "{first:?}");
    let token_calls = s.google.requests().iter().filter(|r| r.path == "/token").count();
    let second = tool.call(args(json!({"action": "list_calendars"})), "c3", "UTC").await;
    assert!(matches!(second, Err(CalendarError::NeedsReconnect)));
    assert_eq!(
        s.google.requests().iter().filter(|r| r.path == "/token").count(),
        token_calls,
        "no retry storm"
    );
    let told = told.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(told.len(), 1);
    assert_eq!(told[0].0, 3);
    assert!(told[0].1.contains("/calendar connect"));
}

#[tokio::test]
async fn disconnect_revokes_and_deletes_even_when_revoking_fails() {
    let s = setup(None).await;
    s.connect(&chat(4)).await;
    let text = s
        .connections
        .disconnect(&chat(4))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(text.contains("revoked"), "{text}");
    assert_eq!(s.google.revocations().len(), 1);
    assert_eq!(s.google.live_grants(), 0);
    assert!(s.connections.account(&chat(4)).is_none());

    s.connect(&chat(4)).await;
    s.google.revoke_all();
    let text = s
        .connections
        .disconnect(&chat(4))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(text.contains("revoking at Google failed"), "{text}");
    assert!(s.connections.account(&chat(4)).is_none());
}

#[tokio::test]
async fn a_chat_that_is_not_connected_is_told_to_connect() {
    let s = setup(None).await;
    let tool = CalendarTool::new(s.connections.clone(), chat(8));
    let r = tool.call(args(json!({"action": "list_events"})), "c1", "UTC").await;
    let text = r.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("run /calendar connect"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn an_expired_sign_in_is_refused() {
    let s = setup(None).await;
    let link = s
        .connections
        .connect(chat(6), 7, None)
        .unwrap_or_else(|e| panic!("{e}"));
    let state = url::Url::parse(&link.url)
        .ok()
        .and_then(|u| u.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()))
        .unwrap_or_default();
    tokio::time::advance(volcanic_google_calendar::FLOW_TTL + std::time::Duration::from_secs(1)).await;
    let pasted = format!("http://127.0.0.1:53682/volcanic/oauth?state={state}&code=4/0abc");
    let r = s.connections.finish_paste(&chat(6), 7, &pasted).await;
    let text = r.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("expired") && text.contains("/calendar connect"), "{text}");
    assert!(
        s.google.requests().iter().all(|r| r.path != "/token"),
        "no exchange for an expired sign-in"
    );
}

#[tokio::test]
async fn a_token_revoked_before_it_expires_leads_to_one_reconnect_notice() {
    let s = setup(None).await;
    s.connect(&chat(9)).await;
    let told: Arc<Mutex<Vec<(i64, String)>>> = Arc::default();
    let sink = told.clone();
    s.connections.set_notifier(Arc::new(move |id, _topic, text| {
        sink.lock().unwrap_or_else(|p| p.into_inner()).push((id, text))
    }));
    s.google.revoke_all();
    let tool = CalendarTool::new(s.connections.clone(), chat(9));
    let r = tool.call(args(json!({"action": "list_calendars"})), "c1", "UTC").await;
    assert!(matches!(r, Err(CalendarError::NeedsReconnect)), "{r:?}");
    assert_eq!(told.lock().unwrap_or_else(|p| p.into_inner()).len(), 1);
    assert!(s.connections.account(&chat(9)).is_some_and(|a| a.needs_reconnect));
}

#[tokio::test]
async fn a_disconnect_during_a_refresh_is_not_undone_by_it() {
    let s = setup(None).await;
    s.google.set_token_lifetime(30); // every use refreshes
    s.connect(&chat(11)).await;
    s.google.delay_token(std::time::Duration::from_millis(400));
    let tool = CalendarTool::new(s.connections.clone(), chat(11));
    let call = tokio::spawn(async move { tool.call(args(json!({"action": "list_calendars"})), "c1", "UTC").await });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let text = s
        .connections
        .disconnect(&chat(11))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(text.starts_with("Disconnected"), "{text}");
    let _ = call.await;
    assert!(
        s.connections.account(&chat(11)).is_none(),
        "the refresh in flight wrote the deleted tokens back"
    );
}

#[tokio::test]
async fn a_hanging_google_fails_the_call_and_frees_the_chat() {
    let s = setup(None).await;
    s.google.set_token_lifetime(30); // every use refreshes
    s.connect(&chat(12)).await;
    let tool = CalendarTool::new(s.connections.clone(), chat(12));
    s.google.delay_token(std::time::Duration::from_secs(60));
    let started = std::time::Instant::now();
    let r = tool.call(args(json!({"action": "list_calendars"})), "c1", "UTC").await;
    let text = r.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("token endpoint did not answer within 2 s"), "{text}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));

    s.google.delay_token(std::time::Duration::ZERO);
    s.google.delay_api(std::time::Duration::from_secs(60));
    let r = tool.call(args(json!({"action": "list_calendars"})), "c2", "UTC").await;
    let text = r.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("Google Calendar did not answer within 2 s"), "{text}");

    s.google.delay_api(std::time::Duration::ZERO);
    let r = tool.call(args(json!({"action": "list_calendars"})), "c3", "UTC").await;
    assert!(r.is_ok(), "the chat's lock was released: {r:?}");
}

#[tokio::test]
async fn the_reconnect_notice_goes_to_the_topic_the_chat_was_connected_from() {
    let s = setup(None).await;
    let link = s
        .connections
        .connect(chat(13), 7, Some(77))
        .unwrap_or_else(|e| panic!("{e}"));
    let location = s.google.consent(&link.url).await.unwrap_or_else(|e| panic!("{e:?}"));
    s.connections
        .finish_paste(&chat(13), 7, &location)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    type Told = Arc<Mutex<Vec<(i64, Option<i32>)>>>;
    let told: Told = Arc::default();
    let sink = told.clone();
    s.connections.set_notifier(Arc::new(move |id, topic, _text| {
        sink.lock().unwrap_or_else(|p| p.into_inner()).push((id, topic))
    }));
    s.google.revoke_all();
    let tool = CalendarTool::new(s.connections.clone(), chat(13));
    let r = tool.call(args(json!({"action": "list_calendars"})), "c1", "UTC").await;
    assert!(matches!(r, Err(CalendarError::NeedsReconnect)), "{r:?}");
    assert_eq!(*told.lock().unwrap_or_else(|p| p.into_inner()), vec![(13, Some(77))]);
}
