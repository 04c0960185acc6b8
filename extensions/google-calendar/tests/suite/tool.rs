//! The `calendar` tool against the double: zones, all-day and recurring events, idempotent
//! creates, backoff.

use pretty_assertions::assert_eq;
use serde_json::json;
use volcanic_google_calendar::{CalendarTool, event_id};

use super::{args, chat, setup};

#[tokio::test]
async fn events_are_created_and_listed_in_the_chats_zone() {
    let s = setup(None).await;
    s.google.set_time_zone("Asia/Tokyo");
    s.connect(&chat(1)).await;
    let tool = CalendarTool::new(s.connections.clone(), chat(1));
    let created = tool
        .call(
            args(
                json!({"action": "create_event", "summary": "Dentist", "start": "2030-01-07 09:00", "duration": "45m"}),
            ),
            "call-1",
            "Asia/Tokyo",
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        created.text_content().contains("2030-01-07 09:00 – 09:45 Dentist"),
        "{}",
        created.text_content()
    );
    let stored = s.google.events();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["id"], json!(event_id("1", "call-1")));
    assert_eq!(stored[0]["start"]["dateTime"], json!("2030-01-07T00:00:00Z"));
    assert_eq!(stored[0]["start"]["timeZone"], json!("Asia/Tokyo"));

    let listed = tool
        .call(
            args(json!({"action": "list_events", "from": "2030-01-07 00:00", "to": "2030-01-08 00:00"})),
            "call-2",
            "Asia/Tokyo",
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let text = listed.text_content();
    assert!(
        text.contains("(times in Asia/Tokyo)") && text.contains("2030-01-07 09:00 – 09:45 Dentist"),
        "{text}"
    );
    let list = s
        .google
        .requests()
        .into_iter()
        .rfind(|r| r.method == "GET" && r.path.ends_with("/events"));
    let query = list.map(|r| r.query).unwrap_or_default();
    assert!(
        query.contains("singleEvents=true") && query.contains("orderBy=startTime") && query.contains("timeMin="),
        "{query}"
    );
}

#[tokio::test]
async fn a_retried_create_does_not_duplicate() {
    let s = setup(None).await;
    s.connect(&chat(1)).await;
    let tool = CalendarTool::new(s.connections.clone(), chat(1));
    let call = json!({"action": "create_event", "summary": "Call", "start": "2030-02-01T10:00:00Z"});
    assert!(tool.call(args(call.clone()), "same-id", "UTC").await.is_ok());
    let again = tool
        .call(args(call), "same-id", "UTC")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(again.text_content().starts_with("Created"));
    assert_eq!(s.google.events().len(), 1);
    let other = json!({"action": "create_event", "summary": "Something else", "start": "2030-02-01T10:00:00Z"});
    let clash = tool.call(args(other), "same-id", "UTC").await;
    assert!(clash.is_err(), "a 409 for a different event is not success");
}

#[tokio::test]
async fn all_day_and_weekly_events() {
    let s = setup(None).await;
    s.google.set_time_zone("Asia/Tokyo");
    s.connect(&chat(2)).await;
    let tool = CalendarTool::new(s.connections.clone(), chat(2));
    let all_day = json!({"action": "create_event", "summary": "Trip", "start": "2030-03-10", "end": "2030-03-12", "all_day": true});
    let r = tool
        .call(args(all_day), "a1", "Asia/Tokyo")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        r.text_content().contains("2030-03-10 – 2030-03-12 (all day) Trip"),
        "{}",
        r.text_content()
    );
    let trip = s
        .google
        .events()
        .into_iter()
        .find(|e| e["summary"] == "Trip")
        .unwrap_or_default();
    assert_eq!(
        (trip["start"]["date"].clone(), trip["end"]["date"].clone()),
        (json!("2030-03-10"), json!("2030-03-13"))
    );

    let weekly = json!({"action": "create_event", "summary": "Standup", "start": "2030-03-04 09:00", "duration": "15m",
        "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=3"], "reminders": [10]});
    tool.call(args(weekly), "w1", "Asia/Tokyo")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let list = json!({"action": "list_events", "from": "2030-03-01", "to": "2030-04-01", "query": "standup"});
    let text = tool
        .call(args(list.clone()), "l1", "Asia/Tokyo")
        .await
        .map(|r| r.text_content())
        .unwrap_or_default();
    let days: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("Standup"))
        .map(|l| &l[2..18])
        .collect();
    assert_eq!(
        days,
        ["2030-03-04 09:00", "2030-03-11 09:00", "2030-03-18 09:00"],
        "{text}"
    );

    let series = event_id("2", "w1");
    let one = format!("{series}_20300311T000000Z");
    tool.call(
        args(json!({"action": "delete_event", "event_id": one})),
        "d1",
        "Asia/Tokyo",
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let text = tool
        .call(args(list.clone()), "l2", "Asia/Tokyo")
        .await
        .map(|r| r.text_content())
        .unwrap_or_default();
    assert_eq!(text.lines().filter(|l| l.contains("Standup")).count(), 2, "{text}");
    let first = format!("{series}_20300304T000000Z");
    tool.call(
        args(json!({"action": "delete_event", "event_id": first, "series": true})),
        "d2",
        "Asia/Tokyo",
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let text = tool
        .call(args(list), "l3", "Asia/Tokyo")
        .await
        .map(|r| r.text_content())
        .unwrap_or_default();
    assert_eq!(text.lines().filter(|l| l.contains("Standup")).count(), 0, "{text}");
}

#[tokio::test]
async fn updates_patch_and_free_busy_and_rate_limits_back_off() {
    let s = setup(None).await;
    s.connect(&chat(3)).await;
    let tool = CalendarTool::new(s.connections.clone(), chat(3));
    let create = json!({"action": "create_event", "summary": "Review", "start": "2030-05-02T13:00:00+02:00", "end": "2030-05-02T14:00:00+02:00"});
    tool.call(args(create), "c1", "Europe/Berlin")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let id = event_id("3", "c1");
    s.google.fail_next(429, "rateLimitExceeded");
    s.google.fail_next(403, "userRateLimitExceeded");
    let update = json!({"action": "update_event", "event_id": id, "start": "2030-05-02 15:00", "location": "Room 4"});
    let r = tool
        .call(args(update), "u1", "Europe/Berlin")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        r.text_content().contains("2030-05-02 15:00 – 16:00 Review"),
        "{}",
        r.text_content()
    );
    let patch = s
        .google
        .requests()
        .into_iter()
        .rfind(|r| r.method == "PATCH")
        .map(|r| r.body)
        .unwrap_or_default();
    assert!(patch.contains("Room 4") && !patch.contains("null"), "{patch}");

    let busy = json!({"action": "free_busy", "from": "2030-05-02 00:00", "to": "2030-05-03 00:00"});
    let text = tool
        .call(args(busy), "f1", "Europe/Berlin")
        .await
        .map(|r| r.text_content())
        .unwrap_or_default();
    assert!(text.contains("- 2030-05-02 15:00 – 2030-05-02 16:00"), "{text}");
}

#[tokio::test]
async fn updates_keep_or_switch_the_kind_and_derive_the_end() {
    let s = setup(None).await;
    s.connect(&chat(4)).await;
    let tool = CalendarTool::new(s.connections.clone(), chat(4));
    let call = |v: serde_json::Value, id: &'static str| tool.call(args(v), id, "UTC");
    let create = json!({"action": "create_event", "summary": "Review", "start": "2030-05-02 13:00"});
    call(create, "c1").await.unwrap_or_else(|e| panic!("{e}"));
    let id = event_id("4", "c1");
    let stored = || {
        s.google
            .events()
            .into_iter()
            .find(|e| e["id"] == json!(id))
            .unwrap_or_default()
    };
    // A duration alone moves the end.
    call(
        json!({"action": "update_event", "event_id": id, "duration": "2h"}),
        "u1",
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored()["end"]["dateTime"], json!("2030-05-02T15:00:00Z"));
    // Timed → all-day: no dateTime left.
    call(
        json!({"action": "update_event", "event_id": id, "all_day": true, "start": "2030-05-03"}),
        "u2",
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored()["start"], json!({"date": "2030-05-03"}));
    assert_eq!(stored()["summary"], json!("Review"));
    // Moving an all-day event without `all_day` keeps it all-day.
    call(
        json!({"action": "update_event", "event_id": id, "start": "2030-05-10"}),
        "u3",
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (stored()["start"].clone(), stored()["end"].clone()),
        (json!({"date": "2030-05-10"}), json!({"date": "2030-05-11"}))
    );
    // All-day → timed.
    call(
        json!({"action": "update_event", "event_id": id, "all_day": false, "start": "2030-05-10 09:00"}),
        "u4",
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored()["start"]["dateTime"], json!("2030-05-10T09:00:00Z"));
    assert_eq!(stored()["start"].get("date"), None);
    assert_eq!(stored()["end"]["dateTime"], json!("2030-05-10T10:00:00Z"));
}

#[tokio::test]
async fn huge_durations_are_refused_with_what_to_give() {
    let s = setup(None).await;
    s.connect(&chat(5)).await;
    let tool = CalendarTool::new(s.connections.clone(), chat(5));
    for (n, v) in [
        json!({"action": "create_event", "summary": "x", "start": "2030-05-02 13:00", "duration": "9999999999999d"}),
        json!({"action": "create_event", "summary": "x", "start": "2030-05-02 13:00", "duration": "400d"}),
        json!({"action": "update_event", "event_id": "abcde12345", "duration": "99999999999999999h"}),
    ]
    .into_iter()
    .enumerate()
    {
        let r = tool.call(args(v), &format!("h{n}"), "UTC").await;
        let text = r.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("at most 366d"), "{text}");
    }
    assert!(s.google.events().is_empty());
}

#[tokio::test]
async fn free_busy_errors_are_reported_and_a_second_delete_is_done() {
    let s = setup(None).await;
    s.connect(&chat(6)).await;
    let tool = CalendarTool::new(s.connections.clone(), chat(6));
    let busy = json!({"action": "free_busy", "calendar": "bob@example.com", "from": "2030-05-02 00:00"});
    let r = tool.call(args(busy), "f1", "UTC").await;
    let text = r.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("bob@example.com") && text.contains("notFound"), "{text}");

    let create = json!({"action": "create_event", "summary": "Gone", "start": "2030-05-02 13:00"});
    tool.call(args(create), "c1", "UTC")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let delete = json!({"action": "delete_event", "event_id": event_id("6", "c1")});
    for n in ["d1", "d2"] {
        let r = tool.call(args(delete.clone()), n, "UTC").await;
        assert!(r.is_ok(), "{n}: {r:?}");
    }
}

#[tokio::test]
async fn a_cut_list_says_so_and_a_series_is_found_from_its_occurrence() {
    let s = setup(None).await;
    s.connect(&chat(7)).await;
    let tool = CalendarTool::new(s.connections.clone(), chat(7));
    let weekly = json!({"action": "create_event", "summary": "Standup", "start": "2030-03-04 09:00",
        "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=3"]});
    tool.call(args(weekly), "w1", "UTC")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    s.google.set_page_size(2);
    let list = json!({"action": "list_events", "from": "2030-03-01", "to": "2030-04-01"});
    let text = tool
        .call(args(list), "l1", "UTC")
        .await
        .map(|r| r.text_content())
        .unwrap_or_default();
    assert!(text.contains("the list is cut after these 2 events"), "{text}");

    let one = format!("{}_20300311T090000Z", event_id("7", "w1"));
    let r = tool
        .call(
            args(json!({"action": "delete_event", "event_id": one, "series": true})),
            "d1",
            "UTC",
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(r.text_content().contains("the series"), "{}", r.text_content());
    assert!(
        s.google
            .requests()
            .iter()
            .any(|q| q.method == "GET" && q.path.ends_with(&format!("/events/{one}"))),
        "the series is read from the occurrence"
    );
    assert_eq!(s.google.events()[0]["status"], json!("cancelled"));
}
