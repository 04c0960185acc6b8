//! The double's own tests: it refuses what Google refuses.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::GoogleServer;

const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXkdBjftJeZ4CVP";
const REDIRECT: &str = "http://127.0.0.1:5555/callback";
const ALL: &str = "openid email https://www.googleapis.com/auth/calendar.events \
                   https://www.googleapis.com/auth/calendar.calendarlist.readonly \
                   https://www.googleapis.com/auth/calendar.freebusy";

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

fn auth_request(g: &GoogleServer, redirect: &str, scope: &str, method: &str) -> String {
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(VERIFIER.as_bytes()));
    let mut u = url::Url::parse(&g.auth_url()).unwrap_or_else(|e| panic!("{e}"));
    u.query_pairs_mut()
        .append_pair("client_id", "cid")
        .append_pair("redirect_uri", redirect)
        .append_pair("response_type", "code")
        .append_pair("scope", scope)
        .append_pair("access_type", "offline")
        .append_pair("prompt", "consent")
        .append_pair("state", "st4te")
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", method);
    u.to_string()
}

fn query_param(location: &str, key: &str) -> String {
    let u = url::Url::parse(location).unwrap_or_else(|e| panic!("{e}"));
    u.query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

async fn post_form(url: &str, form: &[(&str, &str)]) -> (u16, Value) {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let r = client()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn exchange(g: &GoogleServer, code: &str, verifier: &str, redirect: &str) -> (u16, Value) {
    post_form(
        &g.token_url(),
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", "cid"),
            ("client_secret", "secret"),
            ("redirect_uri", redirect),
            ("code_verifier", verifier),
        ],
    )
    .await
}

async fn connected(g: &GoogleServer, scope: &str) -> Value {
    let location = g
        .consent(&auth_request(g, REDIRECT, scope, "S256"))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let (status, body) = exchange(g, &query_param(&location, "code"), VERIFIER, REDIRECT).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn api(method: reqwest::Method, url: String, token: &str, body: Option<Value>) -> (u16, Value) {
    let mut r = client().request(method, url).bearer_auth(token);
    if let Some(b) = body {
        r = r.json(&b);
    }
    let r = r.send().await.unwrap_or_else(|e| panic!("{e}"));
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

fn reason(body: &Value) -> &str {
    body["error"]["errors"][0]["reason"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn code_exchange_checks_pkce_redirect_and_single_use() {
    let g = GoogleServer::start("cid", "secret")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    g.set_email("ann@example.com");
    let location = g
        .consent(&auth_request(&g, REDIRECT, ALL, "S256"))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert!(location.starts_with(REDIRECT), "{location}");
    assert_eq!(query_param(&location, "state"), "st4te");
    let code = query_param(&location, "code");

    let (status, body) = exchange(&g, &code, "wrong-verifier-wrong-verifier-wrong-verifier-x", REDIRECT).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")));
    // The failed attempt used the code up, as Google does.
    let (status, _) = exchange(&g, &code, VERIFIER, REDIRECT).await;
    assert_eq!(status, 400);

    let location = g
        .consent(&auth_request(&g, REDIRECT, ALL, "S256"))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let code = query_param(&location, "code");
    let (status, body) = exchange(&g, &code, VERIFIER, "http://127.0.0.1:5556/callback").await;
    assert_eq!((status, body["error"].as_str()), (400, Some("redirect_uri_mismatch")));

    let location = g
        .consent(&auth_request(&g, REDIRECT, ALL, "S256"))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let code = query_param(&location, "code");
    let (status, body) = exchange(&g, &code, VERIFIER, REDIRECT).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["refresh_token"].is_string());
    assert_eq!(
        body["scope"].as_str(),
        Some(ALL.split_whitespace().collect::<Vec<_>>().join(" ").as_str())
    );
    let payload = body["id_token"]
        .as_str()
        .and_then(|t| t.split('.').nth(1))
        .unwrap_or_default();
    let claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap_or_default()).unwrap_or_default();
    assert_eq!(claims["email"], "ann@example.com");
    let (status, _) = exchange(&g, &code, VERIFIER, REDIRECT).await;
    assert_eq!(status, 400, "a code is single use");
}

#[tokio::test]
async fn authorization_refuses_plain_pkce_unregistered_redirects_and_unknown_scopes() {
    let g = GoogleServer::start("cid", "secret")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let plain = g.consent(&auth_request(&g, REDIRECT, ALL, "plain")).await;
    assert_eq!(plain.map_err(|e| e.0), Err(400));
    let web = g
        .consent(&auth_request(
            &g,
            "https://bot.example.org/oauth/google/callback",
            ALL,
            "S256",
        ))
        .await;
    assert_eq!(web, Err((400, "Error 400: redirect_uri_mismatch".into())));
    g.register_redirect_uri("https://bot.example.org/oauth/google/callback");
    let web = g
        .consent(&auth_request(
            &g,
            "https://bot.example.org/oauth/google/callback",
            ALL,
            "S256",
        ))
        .await;
    assert!(web.is_ok());
    let bad = g
        .consent(&auth_request(
            &g,
            REDIRECT,
            "https://www.googleapis.com/auth/drive",
            "S256",
        ))
        .await;
    assert_eq!(bad, Err((400, "Error 400: invalid_scope".into())));
}

#[tokio::test]
async fn declined_scopes_are_missing_from_the_grant_and_endpoints_check_scopes() {
    let g = GoogleServer::start("cid", "secret")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    g.decline_scope("https://www.googleapis.com/auth/calendar.freebusy");
    let token = connected(&g, ALL).await;
    assert!(!token["scope"].as_str().unwrap_or_default().contains("freebusy"));
    let access = token["access_token"].as_str().unwrap_or_default();
    let body =
        json!({"timeMin": "2030-01-01T00:00:00Z", "timeMax": "2030-01-02T00:00:00Z", "items": [{"id": "primary"}]});
    let (status, answer) = api(
        reqwest::Method::POST,
        format!("{}freeBusy", g.api_base_url()),
        access,
        Some(body),
    )
    .await;
    assert_eq!((status, reason(&answer)), (403, "insufficientPermissions"));
    let (status, _) = api(
        reqwest::Method::GET,
        format!("{}users/me/calendarList", g.api_base_url()),
        access,
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, answer) = api(
        reqwest::Method::GET,
        format!("{}users/me/calendarList", g.api_base_url()),
        "ya29.nope",
        None,
    )
    .await;
    assert_eq!((status, reason(&answer)), (401, "authError"));
}

#[tokio::test]
async fn refresh_keeps_no_new_refresh_token_and_revocation_gives_invalid_grant() {
    let g = GoogleServer::start("cid", "secret")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let token = connected(&g, ALL).await;
    let refresh = token["refresh_token"].as_str().unwrap_or_default().to_owned();
    let form = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh.as_str()),
        ("client_id", "cid"),
        ("client_secret", "secret"),
    ];
    let (status, body) = post_form(&g.token_url(), &form).await;
    assert_eq!(status, 200);
    assert!(
        body["access_token"].is_string() && body.get("refresh_token").is_none(),
        "{body}"
    );
    let (status, _) = post_form(&g.revoke_url(), &[("token", refresh.as_str())]).await;
    assert_eq!(status, 200);
    assert_eq!(g.live_grants(), 0);
    let (status, body) = post_form(&g.token_url(), &form).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")));
}

#[tokio::test]
async fn events_are_checked_like_google_and_recurring_ones_expand() {
    let g = GoogleServer::start("cid", "secret")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    g.set_time_zone("Asia/Tokyo");
    let token = connected(&g, ALL).await;
    let access = token["access_token"].as_str().unwrap_or_default();
    let events = format!("{}calendars/primary/events", g.api_base_url());
    let post = |body: Value| api(reqwest::Method::POST, events.clone(), access, Some(body));

    let naive = json!({"summary": "x", "start": {"dateTime": "2030-01-07T09:00:00"}, "end": {"dateTime": "2030-01-07T10:00:00"}});
    assert_eq!(post(naive).await.0, 400);
    let bad_id =
        json!({"id": "Has-Upper", "summary": "x", "start": {"date": "2030-01-07"}, "end": {"date": "2030-01-08"}});
    assert_eq!(post(bad_id).await.0, 400);
    let no_zone = json!({"summary": "x", "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=3"],
        "start": {"dateTime": "2030-01-07T09:00:00+09:00"}, "end": {"dateTime": "2030-01-07T10:00:00+09:00"}});
    assert_eq!(post(no_zone).await.0, 400);
    let weekly = json!({"id": "standup01", "summary": "Standup", "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=3"],
        "start": {"dateTime": "2030-01-07T09:00:00+09:00", "timeZone": "Asia/Tokyo"},
        "end": {"dateTime": "2030-01-07T09:15:00+09:00", "timeZone": "Asia/Tokyo"}});
    assert_eq!(post(weekly.clone()).await.0, 200);
    let (status, body) = post(weekly).await;
    assert_eq!((status, reason(&body)), (409, "duplicate"));

    let unordered = format!("{events}?timeMin=2030-01-01T00:00:00Z&orderBy=startTime");
    assert_eq!(api(reqwest::Method::GET, unordered, access, None).await.0, 400);
    let naive_min = format!("{events}?timeMin=2030-01-01T00:00:00&singleEvents=true");
    assert_eq!(api(reqwest::Method::GET, naive_min, access, None).await.0, 400);
    let list = format!(
        "{events}?timeMin=2030-01-01T00:00:00Z&timeMax=2030-02-01T00:00:00Z&singleEvents=true&orderBy=startTime"
    );
    let (status, body) = api(reqwest::Method::GET, list.clone(), access, None).await;
    assert_eq!(status, 200);
    let starts: Vec<&str> = body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["start"]["dateTime"].as_str())
        .collect();
    assert_eq!(
        starts,
        [
            "2030-01-07T09:00:00+09:00",
            "2030-01-14T09:00:00+09:00",
            "2030-01-21T09:00:00+09:00"
        ]
    );

    let (status, body) = api(
        reqwest::Method::GET,
        format!("{events}/standup01/instances"),
        access,
        None,
    )
    .await;
    assert_eq!((status, body["items"].as_array().map(Vec::len)), (200, Some(3)));
    assert_eq!(body["items"][1]["recurringEventId"], "standup01");
    let (status, _) = api(
        reqwest::Method::PATCH,
        format!("{events}/nosuchevent"),
        access,
        Some(json!({"summary": "x"})),
    )
    .await;
    assert_eq!(status, 404);
    let (status, body) = api(
        reqwest::Method::PATCH,
        format!("{events}/standup01"),
        access,
        Some(json!({"summary": "Daily"})),
    )
    .await;
    assert_eq!((status, body["summary"].as_str()), (200, Some("Daily")));
    let one = format!("{events}/standup01_20300114T000000Z");
    assert_eq!(api(reqwest::Method::DELETE, one.clone(), access, None).await.0, 204);
    assert_eq!(api(reqwest::Method::DELETE, one, access, None).await.0, 410);
    let (_, body) = api(reqwest::Method::GET, list, access, None).await;
    assert_eq!(body["items"].as_array().map(Vec::len), Some(2));

    g.fail_next(429, "rateLimitExceeded");
    let (status, body) = api(reqwest::Method::GET, format!("{events}/standup01"), access, None).await;
    assert_eq!((status, reason(&body)), (429, "rateLimitExceeded"));
    let (status, body) = api(reqwest::Method::GET, format!("{events}/standup01"), access, None).await;
    assert_eq!((status, body["summary"].as_str()), (200, Some("Daily")));
}

#[tokio::test]
async fn patch_merges_nested_objects_and_update_replaces() {
    let g = GoogleServer::start("cid", "secret")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let token = connected(&g, ALL).await;
    let access = token["access_token"].as_str().unwrap_or_default();
    let events = format!("{}calendars/primary/events", g.api_base_url());
    let one = format!("{events}/revu0001");
    let timed = json!({"id": "revu0001", "summary": "Review",
        "start": {"dateTime": "2030-05-02T11:00:00Z", "timeZone": "Europe/Berlin"},
        "end": {"dateTime": "2030-05-02T12:00:00Z", "timeZone": "Europe/Berlin"}});
    assert_eq!(
        api(reqwest::Method::POST, events.clone(), access, Some(timed)).await.0,
        200
    );
    // Merged into `start`: the zone stays; a date next to the dateTime is refused, as Google does.
    let (status, body) = api(
        reqwest::Method::PATCH,
        one.clone(),
        access,
        Some(json!({"start": {"dateTime": "2030-05-02T10:00:00Z"}})),
    )
    .await;
    assert_eq!(
        (status, body["start"]["timeZone"].as_str()),
        (200, Some("Europe/Berlin"))
    );
    let to_day = json!({"start": {"date": "2030-05-02"}, "end": {"date": "2030-05-03"}});
    assert_eq!(
        api(reqwest::Method::PATCH, one.clone(), access, Some(to_day.clone()))
            .await
            .0,
        400
    );
    // Explicit nulls clear the other kind's fields.
    let cleared = json!({"start": {"date": "2030-05-02", "dateTime": null, "timeZone": null},
        "end": {"date": "2030-05-03", "dateTime": null, "timeZone": null}});
    let (status, body) = api(reqwest::Method::PATCH, one.clone(), access, Some(cleared)).await;
    assert_eq!((status, body["start"].clone()), (200, json!({"date": "2030-05-02"})));
    // PUT replaces: the summary not sent is gone, the id stays.
    let (status, body) = api(reqwest::Method::PUT, one, access, Some(to_day)).await;
    assert_eq!(
        (status, body["id"].as_str(), body.get("summary")),
        (200, Some("revu0001"), None)
    );
}
