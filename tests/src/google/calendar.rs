//! The Calendar API v3 subset (`/calendar/v3/…`), strict like Google: bearer tokens checked
//! against their grant's scopes, RFC 3339 timestamps with offsets, `orderBy=startTime` only with
//! `singleEvents=true`, client ids in base32hex (`a-v0-9`, 5-1024 characters), recurring events
//! with a time zone. Errors have Google's shape: `{"error": {"code", "message", "errors":
//! [{"domain", "reason", "message"}], "status"}}`.

use std::collections::HashMap;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::{Value, json};

use super::recur::{When, expand, instant, parse_ts, rule, when};
use super::state::{State, now_unix, random_token};

const FULL: &str = "https://www.googleapis.com/auth/calendar";
const READONLY: &str = "https://www.googleapis.com/auth/calendar.readonly";
const EVENTS: &str = "https://www.googleapis.com/auth/calendar.events";
const EVENTS_READONLY: &str = "https://www.googleapis.com/auth/calendar.events.readonly";
const CALENDARLIST_READONLY: &str = "https://www.googleapis.com/auth/calendar.calendarlist.readonly";
const FREEBUSY: &str = "https://www.googleapis.com/auth/calendar.freebusy";

/// A Google API error response.
pub(crate) fn api_error(status: u16, reason: &str, message: &str) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    let grpc = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ALREADY_EXISTS",
        429 => "RESOURCE_EXHAUSTED",
        _ => "UNKNOWN",
    };
    let body = json!({"error": {
        "code": status,
        "message": message,
        "errors": [{"domain": "global", "reason": reason, "message": message}],
        "status": grpc,
    }});
    (code, axum::Json(body)).into_response()
}

/// A refusal on its way to becoming an [`api_error`] answer.
pub(crate) struct Refusal {
    status: u16,
    reason: &'static str,
    message: String,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        api_error(self.status, self.reason, &self.message)
    }
}

/// The times a window or an event carries.
type Window = (Option<DateTime<Utc>>, Option<DateTime<Utc>>);

/// What an API method does with the state, the path, the query and the body.
type Method = fn(&mut State, &[&str], &HashMap<String, String>, &str) -> Response;

fn bad(message: impl AsRef<str>) -> Refusal {
    Refusal {
        status: 400,
        reason: "invalid",
        message: message.as_ref().to_owned(),
    }
}

/// Handles one API request: `segments` are the percent-decoded path parts after `calendar/v3`.
pub(crate) fn handle(
    state: &mut State,
    method: &str,
    segments: &[String],
    query: &HashMap<String, String>,
    body: &str,
    authorization: Option<&str>,
) -> Response {
    let Some(scopes) = bearer_scopes(state, authorization) else {
        return api_error(
            401,
            "authError",
            "Request had invalid authentication credentials. Expected OAuth 2 access token.",
        );
    };
    if let Some(fault) = state.faults.pop_front() {
        return api_error(
            fault.status,
            &fault.reason,
            &format!("Injected fault: {}", fault.reason),
        );
    }
    let seg: Vec<&str> = segments.iter().map(String::as_str).collect();
    let (needed, result): (&[&str], Method) = match (method, seg.as_slice()) {
        ("GET", ["users", "me", "calendarList"]) => (&[FULL, READONLY, CALENDARLIST_READONLY], calendar_list),
        ("GET", ["calendars", _, "events"]) => (&[FULL, READONLY, EVENTS, EVENTS_READONLY], list_events),
        ("POST", ["calendars", _, "events"]) => (&[FULL, EVENTS], insert_event),
        ("GET", ["calendars", _, "events", _]) => (&[FULL, READONLY, EVENTS, EVENTS_READONLY], get_event),
        ("PATCH", ["calendars", _, "events", _]) => (&[FULL, EVENTS], patch_event),
        ("PUT", ["calendars", _, "events", _]) => (&[FULL, EVENTS], put_event),
        ("DELETE", ["calendars", _, "events", _]) => (&[FULL, EVENTS], delete_event),
        ("GET", ["calendars", _, "events", _, "instances"]) => (&[FULL, READONLY, EVENTS, EVENTS_READONLY], instances),
        ("POST", ["freeBusy"]) => (&[FULL, READONLY, FREEBUSY], free_busy),
        _ => return api_error(404, "notFound", "Not Found"),
    };
    if !needed.iter().any(|n| scopes.iter().any(|s| s == n)) {
        return api_error(
            403,
            "insufficientPermissions",
            "Request had insufficient authentication scopes.",
        );
    }
    if seg.len() >= 2 && seg[0] == "calendars" && seg[1] != "primary" && seg[1] != state.email {
        return api_error(404, "notFound", "Not Found");
    }
    result(state, &seg, query, body)
}

fn bearer_scopes(state: &State, authorization: Option<&str>) -> Option<Vec<String>> {
    let token = authorization?.strip_prefix("Bearer ")?;
    let access = state.access_tokens.get(token)?;
    if access.expires_at <= now_unix() {
        return None;
    }
    state.grants.get(&access.grant).map(|g| g.scopes.clone())
}

fn zone(state: &State) -> Tz {
    state.time_zone.parse().unwrap_or(Tz::UTC)
}

fn calendar_list(state: &mut State, _: &[&str], _: &HashMap<String, String>, _: &str) -> Response {
    axum::Json(json!({
        "kind": "calendar#calendarList",
        "items": [{
            "kind": "calendar#calendarListEntry",
            "id": state.email,
            "summary": state.email,
            "timeZone": state.time_zone,
            "accessRole": "owner",
            "primary": true,
        }],
    }))
    .into_response()
}

fn window(query: &HashMap<String, String>) -> Result<Window, Refusal> {
    let read = |k: &str| -> Result<Option<DateTime<Utc>>, Refusal> {
        query
            .get(k)
            .map(|v| parse_ts(v).map(|t| t.with_timezone(&Utc)).map_err(bad))
            .transpose()
    };
    Ok((read("timeMin")?, read("timeMax")?))
}

/// Start and end instants of an event (or instance).
fn span(event: &Value, zone: Tz) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    let s = when(&event["start"], "start").ok()?;
    let e = when(&event["end"], "end").ok()?;
    Some((instant(s, zone), instant(e, zone)))
}

/// The live single events of the calendar overlapping `[min, max)`, in start order.
fn single_events(state: &State, min: Option<DateTime<Utc>>, max: Option<DateTime<Utc>>) -> Result<Vec<Value>, String> {
    let zone = zone(state);
    let horizon = max.unwrap_or_else(|| Utc::now() + chrono::Duration::days(3650));
    let mut out = Vec::new();
    for event in state.events.get(&state.email).into_iter().flat_map(|m| m.values()) {
        if event["status"] == "cancelled" {
            continue;
        }
        for inst in expand(event, zone, horizon)? {
            if inst["id"]
                .as_str()
                .is_some_and(|i| state.cancelled_instances.contains(i))
            {
                continue;
            }
            if let Some((s, e)) = span(&inst, zone)
                && min.is_none_or(|m| e > m)
                && max.is_none_or(|m| s < m)
            {
                out.push(inst);
            }
        }
    }
    out.sort_by_key(|e| span(e, zone).map(|(s, _)| s));
    Ok(out)
}

fn list_events(state: &mut State, _: &[&str], query: &HashMap<String, String>, _: &str) -> Response {
    let (min, max) = match window(query) {
        Ok(w) => w,
        Err(r) => return r.into_response(),
    };
    let single = query.get("singleEvents").is_some_and(|v| v == "true");
    if query.get("orderBy").is_some_and(|o| o == "startTime") && !single {
        return bad("The requested ordering is not available for the particular query.").into_response();
    }
    let items = if single {
        match single_events(state, min, max) {
            Ok(items) => items,
            Err(e) => return bad(e).into_response(),
        }
    } else {
        let all = match single_events(state, min, max) {
            Ok(items) => items,
            Err(e) => return bad(e).into_response(),
        };
        let mut ids: Vec<String> = all
            .iter()
            .map(|e| {
                e["recurringEventId"]
                    .as_str()
                    .or(e["id"].as_str())
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        let mut seen = std::collections::HashSet::new();
        ids.retain(|id| seen.insert(id.clone()));
        let calendar = state.events.get(&state.email);
        ids.iter()
            .filter_map(|id| calendar.and_then(|c| c.get(id)).cloned())
            .collect()
    };
    let q = query.get("q").map(|q| q.to_lowercase());
    let items: Vec<Value> = items
        .into_iter()
        .filter(|e| {
            q.as_ref().is_none_or(|q| {
                ["summary", "description", "location"]
                    .iter()
                    .any(|k| e[*k].as_str().is_some_and(|t| t.to_lowercase().contains(q)))
            })
        })
        .collect();
    let limit = query
        .get("maxResults")
        .and_then(|m| m.parse::<usize>().ok())
        .unwrap_or(250)
        .min(state.page_size);
    let mut items = items;
    let mut page = json!({
        "kind": "calendar#events",
        "summary": state.email,
        "timeZone": state.time_zone,
    });
    if items.len() > limit {
        items.truncate(limit);
        page["nextPageToken"] = json!(random_token(16));
    }
    page["items"] = json!(items);
    axum::Json(page).into_response()
}

/// Checks an event's times as Google does; `Err` is the 400 answer.
fn check_times(event: &Value) -> Result<(), Refusal> {
    let start = when(&event["start"], "start").map_err(bad)?;
    let end = when(&event["end"], "end").map_err(bad)?;
    let ordered = match (start, end) {
        (When::Day(s), When::Day(e)) => e > s,
        (When::At(s), When::At(e)) => e > s,
        _ => return Err(bad("Start and end times must either both be date or both be dateTime.")),
    };
    if !ordered {
        return Err(Refusal {
            status: 400,
            reason: "timeRangeEmpty",
            message: "The specified time range is empty.".into(),
        });
    }
    let recurrence = event["recurrence"].as_array().cloned().unwrap_or_default();
    if !recurrence.is_empty() {
        rule(&recurrence).map_err(bad)?;
        if matches!(start, When::At(_)) {
            for side in ["start", "end"] {
                let z = event[side]["timeZone"].as_str().unwrap_or_default();
                if z.parse::<Tz>().is_err() {
                    return Err(bad(format!("Missing time zone definition for {side} time.")));
                }
            }
        }
    }
    Ok(())
}

/// Whether `id` is a valid client-chosen event id: base32hex (`a-v`, `0-9`), 5-1024 characters.
pub fn valid_event_id(id: &str) -> bool {
    (5..=1024).contains(&id.len()) && id.bytes().all(|b| matches!(b, b'a'..=b'v' | b'0'..=b'9'))
}

fn insert_event(state: &mut State, _: &[&str], _: &HashMap<String, String>, body: &str) -> Response {
    let Ok(mut event) = serde_json::from_str::<Value>(body) else {
        return api_error(400, "parseError", "Parse Error");
    };
    if let Err(r) = check_times(&event) {
        return r.into_response();
    }
    let id = match event["id"].as_str() {
        Some(id) if !valid_event_id(id) => return bad("Invalid resource id value.").into_response(),
        Some(id) => id.to_owned(),
        None => random_token(26)
            .to_lowercase()
            .replace(|c: char| !matches!(c, 'a'..='v' | '0'..='9'), "0"),
    };
    let email = state.email.clone();
    let calendar = state.events.entry(email.clone()).or_default();
    if calendar.contains_key(&id) {
        return api_error(409, "duplicate", "The requested identifier already exists.");
    }
    let now = Utc::now().to_rfc3339();
    event["id"] = json!(id);
    event["kind"] = json!("calendar#event");
    event["etag"] = json!(format!("\"{}\"", now_unix()));
    event["status"] = json!("confirmed");
    event["htmlLink"] = json!(format!("https://www.google.com/calendar/event?eid={id}"));
    event["iCalUID"] = json!(format!("{id}@google.com"));
    event["created"] = json!(now);
    event["updated"] = json!(now);
    event["creator"] = json!({"email": email, "self": true});
    event["organizer"] = json!({"email": email, "self": true});
    calendar.insert(id, event.clone());
    axum::Json(event).into_response()
}

fn get_event(state: &mut State, seg: &[&str], _: &HashMap<String, String>, _: &str) -> Response {
    if let Some(e) = state.events.get(&state.email).and_then(|c| c.get(seg[3])) {
        return axum::Json(e.clone()).into_response();
    }
    // An occurrence of a recurring event, with its `recurringEventId`.
    if state.cancelled_instances.contains(seg[3]) {
        return api_error(410, "deleted", "Resource has been deleted");
    }
    match single_events(state, None, None)
        .unwrap_or_default()
        .into_iter()
        .find(|e| e["id"] == seg[3])
    {
        Some(e) => axum::Json(e).into_response(),
        None => api_error(404, "notFound", "Not Found"),
    }
}

fn patch_event(state: &mut State, seg: &[&str], _: &HashMap<String, String>, body: &str) -> Response {
    let Ok(Value::Object(patch)) = serde_json::from_str::<Value>(body) else {
        return api_error(400, "parseError", "Parse Error");
    };
    let email = state.email.clone();
    let Some(event) = state.events.get(&email).and_then(|c| c.get(seg[3])).cloned() else {
        return api_error(404, "notFound", "Not Found");
    };
    if event["status"] == "cancelled" {
        return api_error(410, "deleted", "Resource has been deleted");
    }
    let mut updated = event;
    for (k, v) in patch {
        if k != "id" {
            merge(&mut updated[k.as_str()], v);
        }
    }
    store_updated(state, &email, seg[3], updated)
}

/// Patch semantics as Google has them: objects are merged field by field (a `null` clears the
/// field), anything else (arrays included) replaces.
/// Stores a changed event (its times checked, `updated` stamped) and answers with it.
fn store_updated(state: &mut State, email: &str, id: &str, mut updated: Value) -> Response {
    if let Err(r) = check_times(&updated) {
        return r.into_response();
    }
    updated["updated"] = json!(Utc::now().to_rfc3339());
    if let Some(c) = state.events.get_mut(email) {
        c.insert(id.to_owned(), updated.clone());
    }
    axum::Json(updated).into_response()
}

fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(&k);
                } else {
                    merge(t.entry(k).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p,
    }
}

/// `PUT …/events/{id}` (update): replaces the event's fields, keeping what Google keeps
/// (id, creation, creator, organizer, links).
fn put_event(state: &mut State, seg: &[&str], _: &HashMap<String, String>, body: &str) -> Response {
    let Ok(Value::Object(mut new)) = serde_json::from_str::<Value>(body) else {
        return api_error(400, "parseError", "Parse Error");
    };
    new.retain(|_, v| !v.is_null());
    let email = state.email.clone();
    let Some(old) = state.events.get(&email).and_then(|c| c.get(seg[3])).cloned() else {
        return api_error(404, "notFound", "Not Found");
    };
    if old["status"] == "cancelled" {
        return api_error(410, "deleted", "Resource has been deleted");
    }
    let mut updated = Value::Object(new);
    for k in [
        "id",
        "kind",
        "etag",
        "status",
        "htmlLink",
        "iCalUID",
        "created",
        "creator",
        "organizer",
    ] {
        updated[k] = old[k].clone();
    }
    store_updated(state, &email, seg[3], updated)
}

fn delete_event(state: &mut State, seg: &[&str], _: &HashMap<String, String>, _: &str) -> Response {
    let email = state.email.clone();
    let id = seg[3];
    if let Some(event) = state.events.get_mut(&email).and_then(|c| c.get_mut(id)) {
        if event["status"] == "cancelled" {
            return api_error(410, "deleted", "Resource has been deleted");
        }
        event["status"] = json!("cancelled");
        return StatusCode::NO_CONTENT.into_response();
    }
    let Some((master, _)) = id.rsplit_once('_') else {
        return api_error(404, "notFound", "Not Found");
    };
    if state.cancelled_instances.contains(id) {
        return api_error(410, "deleted", "Resource has been deleted");
    }
    let exists = state.events.get(&email).and_then(|c| c.get(master)).is_some();
    let is_instance = exists
        && single_events(state, None, None)
            .unwrap_or_default()
            .iter()
            .any(|e| e["id"] == id);
    if !is_instance {
        return api_error(404, "notFound", "Not Found");
    }
    state.cancelled_instances.insert(id.to_owned());
    StatusCode::NO_CONTENT.into_response()
}

fn instances(state: &mut State, seg: &[&str], query: &HashMap<String, String>, _: &str) -> Response {
    let (min, max) = match window(query) {
        Ok(w) => w,
        Err(r) => return r.into_response(),
    };
    let Some(master) = state.events.get(&state.email).and_then(|c| c.get(seg[3])).cloned() else {
        return api_error(404, "notFound", "Not Found");
    };
    let items: Vec<Value> = match single_events(state, min, max) {
        Ok(all) => all
            .into_iter()
            .filter(|e| e["recurringEventId"] == master["id"])
            .collect(),
        Err(e) => return bad(e).into_response(),
    };
    axum::Json(json!({"kind": "calendar#events", "timeZone": state.time_zone, "items": items})).into_response()
}

fn free_busy(state: &mut State, _: &[&str], _: &HashMap<String, String>, body: &str) -> Response {
    let Ok(request) = serde_json::from_str::<Value>(body) else {
        return api_error(400, "parseError", "Parse Error");
    };
    let read = |k: &str| match request[k].as_str() {
        Some(t) => parse_ts(t).map(|t| t.with_timezone(&Utc)).map_err(bad),
        None => Err(Refusal {
            status: 400,
            reason: "required",
            message: format!("Missing {k}"),
        }),
    };
    let (min, max) = match (read("timeMin"), read("timeMax")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(r), _) | (_, Err(r)) => return r.into_response(),
    };
    let zone = zone(state);
    let mut calendars = serde_json::Map::new();
    for item in request["items"].as_array().cloned().unwrap_or_default() {
        let id = item["id"].as_str().unwrap_or_default().to_owned();
        if id != "primary" && id != state.email {
            calendars.insert(
                id,
                json!({"errors": [{"domain": "global", "reason": "notFound"}], "busy": []}),
            );
            continue;
        }
        let events = match single_events(state, Some(min), Some(max)) {
            Ok(e) => e,
            Err(e) => return bad(e).into_response(),
        };
        let mut busy: Vec<(DateTime<Utc>, DateTime<Utc>)> = events
            .iter()
            .filter(|e| e["transparency"] != "transparent")
            .filter_map(|e| span(e, zone))
            .map(|(s, e)| (s.max(min), e.min(max)))
            .collect();
        busy.sort();
        let mut merged: Vec<(DateTime<Utc>, DateTime<Utc>)> = Vec::new();
        for (s, e) in busy {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        let fmt = |t: DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let busy: Vec<Value> = merged
            .into_iter()
            .map(|(s, e)| json!({"start": fmt(s), "end": fmt(e)}))
            .collect();
        calendars.insert(id, json!({"busy": busy}));
    }
    axum::Json(json!({
        "kind": "calendar#freeBusy",
        "timeMin": request["timeMin"],
        "timeMax": request["timeMax"],
        "calendars": calendars,
    }))
    .into_response()
}
