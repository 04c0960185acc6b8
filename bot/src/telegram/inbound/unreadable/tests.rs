#![allow(clippy::unwrap_used)]

use super::*;
use pretty_assertions::assert_eq;

fn good(id: i64, text: &str) -> String {
    format!(
        r#"{{"update_id":{id},"message":{{"message_id":{id},"from":{{"id":7,"is_bot":false,"first_name":"Ann"}},"chat":{{"id":7,"type":"private"}},"date":1700000000,"text":"{text}"}}}}"#
    )
}

fn ok_batch(updates: &[String]) -> Vec<u8> {
    format!(r#"{{"ok":true,"result":[{}]}}"#, updates.join(",")).into_bytes()
}

fn reason_of(d: &Decoded) -> &str {
    match d {
        Decoded::Unreadable(u) => &u.reason,
        Decoded::Update(..) => panic!("readable: {d:?}"),
    }
}

#[test]
fn a_lone_surrogate_spoils_only_its_own_update() {
    let bad = good(11, "\\ud800");
    let body = ok_batch(&[good(10, "hi"), bad.clone(), good(12, "there \\ud83d\\ude00")]);
    let decoded = decode_batch(200, &body).unwrap();
    assert_eq!(decoded.len(), 3);
    assert!(matches!(&decoded[0], Decoded::Update(10, u) if u["message"]["text"] == "hi"));
    assert!(matches!(&decoded[2], Decoded::Update(12, u) if u["message"]["text"] == "there 😀"));
    let Decoded::Unreadable(u) = &decoded[1] else {
        panic!("{:?}", decoded[1])
    };
    assert_eq!(u.id, Some(11));
    assert_eq!(u.raw, bad.as_bytes(), "its bytes exactly as received");
    assert!(u.reason.starts_with("it is not valid JSON: "), "{}", u.reason);
    assert!(!u.reason.contains("ud800"), "no content in the reason: {}", u.reason);
}

#[test]
fn bytes_that_are_not_utf8_spoil_only_their_update() {
    let mut body = br#"{"ok":true,"result":["#.to_vec();
    body.extend_from_slice(good(1, "a").as_bytes());
    body.push(b',');
    let start = body.len();
    body.extend_from_slice(br#"{"update_id":2,"message":{"text":""#);
    body.extend_from_slice(&[0xff, 0xfe]);
    body.extend_from_slice(br#""}}"#);
    let end = body.len();
    body.extend_from_slice(b"]}");
    let decoded = decode_batch(200, &body).unwrap();
    assert!(matches!(&decoded[0], Decoded::Update(1, _)));
    let Decoded::Unreadable(u) = &decoded[1] else {
        panic!("{:?}", decoded[1])
    };
    assert_eq!((u.id, u.raw.as_slice()), (Some(2), &body[start..end]));
    assert_eq!(u.reason, "it is not valid UTF-8");
}

#[test]
fn fields_of_another_type_make_an_update_unreadable_and_are_named() {
    let cases = [
        (
            r#""text":"hi""#,
            r#""text":5"#,
            "`message.text` is a number where the Bot API gives a string",
        ),
        (
            r#""chat":{"id":7,"#,
            r#""chat":{"id":"x","#,
            "`message.chat.id` is a string",
        ),
        (
            r#""from":{"id":7,"is_bot":false,"first_name":"Ann"},"#,
            "",
            "`message.from` is missing",
        ),
        (
            r#""date":1700000000"#,
            r#""date":1.5"#,
            "`message.date` is a number that is not",
        ),
        (
            r#""text":"hi""#,
            r#""text":"hi","entities":[{"type":"bold","offset":"0","length":2}]"#,
            "`message.entities[0].offset` is a string",
        ),
        (
            r#""text":"hi""#,
            r#""photo":[{"width":1}]"#,
            "`message.photo[0].file_id` is missing",
        ),
        (r#""message":{"#, r#""message":5,"x":{"#, "`message` is a number"),
    ];
    for (from, to, reason) in cases {
        let raw = good(3, "hi").replacen(from, to, 1);
        let d = decode_update(raw.as_bytes());
        assert!(reason_of(&d).starts_with(reason), "{raw}: {d:?}");
        assert!(matches!(&d, Decoded::Unreadable(u) if u.id == Some(3)));
    }
    let press = r#"{"update_id":4,"callback_query":{"id":"q1","from":{"id":7},"data":9}}"#;
    assert!(reason_of(&decode_update(press.as_bytes())).starts_with("`callback_query.data` is a number"));
    // Readable shapes: other kinds of updates, a migration service message without a sender.
    for raw in [
        r#"{"update_id":5,"edited_message":{"text":5}}"#.to_owned(),
        r#"{"update_id":6,"message":{"message_id":1,"chat":{"id":-5,"type":"group"},"migrate_to_chat_id":-1005}}"#
            .to_owned(),
        good(7, "fine"),
    ] {
        assert!(matches!(decode_update(raw.as_bytes()), Decoded::Update(..)), "{raw}");
    }
}

#[test]
fn envelopes_that_are_errors_or_not_json() {
    assert_eq!(
        decode_batch(
            409,
            br#"{"ok":false,"error_code":409,"description":"Conflict: webhook is active"}"#
        ),
        Err(BatchError::Api {
            code: 409,
            description: "Conflict: webhook is active".into()
        })
    );
    assert_eq!(
        decode_batch(502, b"<html>Bad Gateway</html>").unwrap_err().to_string(),
        "the answer (HTTP 502) is not a Bot API response: expected value at line 1 column 1"
    );
    assert_eq!(decode_batch(200, br#"{"ok":true,"result":[]}"#), Ok(Vec::new()));
    let no_id = decode_batch(200, br#"{"ok":true,"result":[{"message":{}}]}"#).unwrap();
    assert!(matches!(&no_id[0], Decoded::Unreadable(u) if u.id.is_none()));
}

#[test]
fn raw_scans_find_ids_and_mentions_only_where_they_are_keys() {
    let raw = br#"{"update_id" : 42, "message": {"from": {"id": 7}, "chat": { "id" : -100123, "type": "supergroup"}, "is_topic_message": true, "message_thread_id": 5, "text": "\"chat\":{\"id\":9} @Volcanic_Bot \ud800"}}"#;
    assert_eq!(scan::int_field(raw, "update_id"), Some(42));
    assert_eq!(scan::nested_int(raw, "chat", "id"), Some(-100123));
    assert_eq!(scan::nested_int(raw, "from", "id"), Some(7));
    assert!(scan::is_true(raw, "is_topic_message"));
    assert!(scan::mentions(raw, "volcanic_bot"));
    assert!(!scan::mentions(raw, "volcanic"), "a longer name is another user");
    assert_eq!(scan::nested_int(br#"{"chat":{"id":"x"}}"#, "chat", "id"), None);
    assert_eq!(scan::nested_int(br#"{"chat":{"id":1.5}}"#, "chat", "id"), None);
    assert_eq!(
        scan::nested_int(br#"{"text":"\"chat\":{\"id\":9}"}"#, "chat", "id"),
        None
    );
}

#[test]
fn only_chats_the_access_rules_allow_are_told() {
    let dir = tempfile::tempdir().unwrap();
    let access = Access::load(dir.path(), &[7, 8], &[-100], &[7]).unwrap();
    let msg = |chat: i64, from: i64, text: &str| {
        format!(
            r#"{{"update_id":1,"message":{{"from":{{"id":{from}}},"chat":{{"id":{chat}}},"text":"{text} \ud800"}}}}"#
        )
    };
    let tell = |raw: String| chat_to_tell(raw.as_bytes(), &access, "volcanic_bot").map(|t| t.chat_id);
    assert_eq!(tell(msg(7, 7, "hi")), Some(7), "an allowed user's private chat");
    assert_eq!(tell(msg(9, 9, "hi")), None, "a stranger gets nothing more");
    assert_eq!(tell(msg(7, 9, "hi")), None, "a sender who is not allowed");
    assert_eq!(
        tell(msg(-100, 8, "@volcanic_bot hi")),
        Some(-100),
        "addressed in an allowed group"
    );
    assert_eq!(tell(msg(-100, 8, "hi all")), None, "not addressed to the bot");
    assert_eq!(
        tell(msg(-100, 9, "@volcanic_bot hi")),
        None,
        "a stranger in an allowed group"
    );
    assert_eq!(
        tell(msg(-200, 8, "@volcanic_bot hi")),
        None,
        "a group that is not allowed"
    );
    assert_eq!(tell(r#"{"update_id":1,"message":{"chat":{"id":"7"}}}"#.into()), None);
    let topic = r#"{"update_id":1,"message":{"from":{"id":8},"chat":{"id":-100},"is_topic_message":true,"message_thread_id":3,"text":"@volcanic_bot \ud800"}}"#;
    assert_eq!(
        chat_to_tell(topic.as_bytes(), &access, "volcanic_bot"),
        Some(Target {
            chat_id: -100,
            thread: Some(3)
        })
    );
}

#[test]
fn kept_bytes_are_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let first = Unreadable {
        id: Some(5),
        raw: b"first \xff".to_vec(),
        reason: "r".into(),
    };
    let again = Unreadable {
        raw: b"second".to_vec(),
        ..first.clone()
    };
    let no_id = Unreadable {
        id: None,
        raw: b"no id".to_vec(),
        reason: "r".into(),
    };
    let (kept, not_kept) = keep_all(dir.path(), vec![first, no_id.clone()]);
    assert_eq!(not_kept, None);
    assert!(kept.iter().all(|a| a.new));
    let file = dir.path().join("unreadable/5.json");
    assert_eq!(kept[0].file, file);
    assert!(
        kept[1]
            .file
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("no-id-")
    );
    let (kept_again, _) = keep_all(dir.path(), vec![again, no_id]);
    assert!(kept_again.iter().all(|a| !a.new), "the same files, found again");
    assert_eq!(std::fs::read(&file).unwrap(), b"first \xff");
    // A folder that cannot be written: not kept, so not acknowledged.
    let blocked = tempfile::tempdir().unwrap();
    std::fs::write(blocked.path().join(FOLDER), "a file where the folder goes").unwrap();
    let (kept, not_kept) = keep_all(
        blocked.path(),
        vec![Unreadable {
            id: Some(9),
            raw: b"x".to_vec(),
            reason: "r".into(),
        }],
    );
    assert!(kept.is_empty());
    assert_eq!(not_kept, Some(9));
}
