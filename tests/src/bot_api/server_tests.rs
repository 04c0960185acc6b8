//! The double over HTTP: shapes, routing, long polling, message checks, faults, files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::test_support::{Part, TOKEN, call, call_form, call_multipart, client, fails, method_url, ok, server};
use super::{ApiCall, ApiError, BotApiServer, BotCommand, ChatMessage, WaitTimeout, updates};

const CHAT: i64 = 42;
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\x01\x40\0\0\0\xf0\x08\x02\0\0\0";

/// A server that knows private chat [`CHAT`].
async fn with_chat() -> BotApiServer {
    let server = server().await;
    server.add_chat(CHAT);
    server
}

#[test]
fn public_types_are_send_sync_static() {
    fn check<T: Send + Sync + 'static>() {}
    check::<BotApiServer>();
    check::<ApiCall>();
    check::<ApiError>();
    check::<ChatMessage>();
    check::<WaitTimeout>();
    check::<updates::MessageUpdate>();
}

#[tokio::test(flavor = "multi_thread")]
async fn get_me_has_every_field_teloxide_needs() {
    let server = server().await;
    let me = ok(&server, "getMe", json!({})).await;
    assert_eq!(
        me,
        json!({
            "id": 123456,
            "is_bot": true,
            "first_name": "Volcanic Test Bot",
            "username": "volcanic_test_bot",
            "can_join_groups": true,
            "can_read_all_group_messages": false,
            "supports_inline_queries": false,
            "can_connect_to_business": false,
            "has_main_web_app": false,
            "has_topics_enabled": false,
        })
    );
    assert_eq!(
        (server.bot_id(), server.bot_username().as_str()),
        (123456, "volcanic_test_bot")
    );
    let info = ok(&server, "getWebhookInfo", json!({})).await;
    assert_eq!(
        info,
        json!({"url": "", "has_custom_certificate": false, "pending_update_count": 0})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn wrong_token_is_401_and_unknown_method_404() {
    let server = server().await;
    let response = client()
        .post(format!("{}/bot999:WRONG/getMe", server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"ok": false, "error_code": 401, "description": "Unauthorized"})
    );
    let description = fails(&server, "getMee", json!({}), 404).await;
    assert_eq!(description, "Not Found: method not found");
    let methods: Vec<(String, u16)> = server
        .sent()
        .iter()
        .map(|call| (call.method.clone(), call.error().map_or(200, |error| error.error_code)))
        .collect();
    assert_eq!(methods, [("getme".to_owned(), 401), ("getmee".to_owned(), 404)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn method_names_match_case_insensitively() {
    let server = with_chat().await;
    for method in ["SendMessage", "sendmessage", "SENDMESSAGE"] {
        ok(&server, method, json!({"chat_id": CHAT, "text": method})).await;
    }
    let me = client().get(method_url(&server, "GetMe")).send().await.unwrap();
    assert_eq!(me.status(), 200);
    let texts: Vec<_> = server
        .messages(CHAT)
        .into_iter()
        .map(|message| (message.message_id, message.text.unwrap()))
        .collect();
    assert_eq!(
        texts,
        [
            (1, "SendMessage".into()),
            (2, "sendmessage".into()),
            (3, "SENDMESSAGE".into())
        ]
    );
    assert_eq!(server.calls("sendMessage").len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn parameters_come_as_form_query_string_or_json_alike() {
    let server = with_chat().await;
    let markup = r#"{"inline_keyboard":[[{"text":"Yes","callback_data":"y"}]]}"#;
    let form = format!(
        "chat_id={CHAT}&text=a+%3Cb%3Ebold%3C%2Fb%3E&parse_mode=HTML&reply_markup={}",
        markup.replace('{', "%7B").replace('}', "%7D").replace('"', "%22")
    );
    let (status, answer) = call_form(&server, "sendMessage", &form).await;
    assert_eq!(status, 200, "{answer}");
    let query = client()
        .post(format!(
            "{}?chat_id={CHAT}&text=from%20query",
            method_url(&server, "sendMessage")
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(query.status(), 200);
    let calls = server.calls("sendmessage");
    assert_eq!(calls[0].params["chat_id"], CHAT);
    assert_eq!(calls[0].params["reply_markup"]["inline_keyboard"][0][0]["text"], "Yes");
    assert_eq!(calls[1].text(), Some("from query"));
    let first = &server.messages(CHAT)[0];
    assert_eq!(first.visible_text.as_deref(), Some("a bold"));
    assert_eq!(
        first.message["entities"],
        json!([{"type": "bold", "offset": 2, "length": 4}])
    );
    assert_eq!(
        first.reply_markup,
        Some(json!({"inline_keyboard": [[{"text": "Yes", "callback_data": "y"}]]}))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn get_updates_long_poll_returns_when_an_update_is_pushed() {
    let server = server().await;
    let started = Instant::now();
    let poll = tokio::spawn({
        let server = server.clone();
        async move { ok(&server, "GetUpdates", json!({"offset": 0, "timeout": 10})).await }
    });
    server
        .wait_for(|api| api.get_updates_calls().len() == 1, Duration::from_secs(5))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!poll.is_finished(), "the poll is held until an update comes");
    let pushed = server.push_update(updates::text_message(CHAT, CHAT, "hi"));
    let updates = poll.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(updates, json!([pushed]));
    assert_eq!(pushed["update_id"], 1);
    assert_eq!(pushed["message"]["message_id"], 1);
    assert_eq!(pushed["message"]["chat"]["type"], "private");
    let calls = server.get_updates_calls();
    assert_eq!((calls[0].offset, calls[0].timeout), (Some(0), Some(10)));
    assert_eq!(calls[0].outcome, Some(Ok(vec![1])));
}

#[tokio::test(flavor = "multi_thread")]
async fn get_updates_honours_offset_and_limit() {
    let server = server().await;
    for text in ["one", "two", "three"] {
        server.push_update(updates::text_message(CHAT, CHAT, text));
    }
    let ids = |updates: &Value| -> Vec<i64> {
        updates
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["update_id"].as_i64().unwrap())
            .collect()
    };
    let first = ok(&server, "getUpdates", json!({"limit": 2})).await;
    assert_eq!(ids(&first), [1, 2]);
    // Not confirmed yet: returned again.
    assert_eq!(ids(&ok(&server, "getUpdates", json!({})).await), [1, 2, 3]);
    assert_eq!(ids(&ok(&server, "getUpdates", json!({"offset": 3})).await), [3]);
    assert_eq!(
        ids(&ok(&server, "getUpdates", json!({"offset": 4, "timeout": 0})).await),
        Vec::<i64>::new()
    );
    assert!(server.pending_updates().is_empty());
    assert_eq!(server.confirmed_offset(), Some(4));
    let started = Instant::now();
    assert_eq!(
        ok(&server, "getUpdates", json!({"offset": 4, "timeout": 1})).await,
        json!([])
    );
    assert!(started.elapsed() >= Duration::from_millis(900), "held for the timeout");
    let next = server.push_update(updates::text_message(CHAT, CHAT, "four"));
    assert_eq!(next["update_id"], 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_overtaken_long_poll_gets_409_conflict() {
    let server = server().await;
    let first = tokio::spawn({
        let server = server.clone();
        async move { call(&server, "getUpdates", json!({"timeout": 10})).await }
    });
    server
        .wait_for(|api| api.get_updates_calls().len() == 1, Duration::from_secs(5))
        .await
        .unwrap();
    let second = tokio::spawn({
        let server = server.clone();
        async move { call(&server, "getUpdates", json!({"timeout": 10})).await }
    });
    let (status, answer) = first.await.unwrap();
    assert_eq!(status, 409);
    assert_eq!(
        answer["description"],
        "Conflict: terminated by other getUpdates request; make sure that only one bot instance \
         is running"
    );
    server.push_update(updates::text_message(CHAT, CHAT, "x"));
    assert_eq!(second.await.unwrap().0, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn send_message_checks_html_like_telegram() {
    let server = with_chat().await;
    let send = |text: String| {
        let server = server.clone();
        async move {
            call(
                &server,
                "sendMessage",
                json!({"chat_id": CHAT, "text": text, "parse_mode": "HTML"}),
            )
            .await
        }
    };
    let (status, answer) = send("<b>bold <i>and</i></b> <code>x &lt; y</code>".into()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["text"], "bold and x < y");
    let refused = [
        (
            "a<b",
            "Bad Request: can't parse entities: Unclosed start tag at byte offset 1",
        ),
        (
            "<think>plan</think> answer",
            "Bad Request: can't parse entities: Unsupported start tag \"think\" at byte offset 0",
        ),
        (
            "<b>unbalanced",
            "Bad Request: can't parse entities: Can't find end tag corresponding to start tag \"b\"",
        ),
        (
            "Q&A",
            "Bad Request: can't parse entities: Character \"&\" at byte offset 1 must start an \
             HTML entity; escape it as \"&amp;\"",
        ),
    ];
    for (text, description) in refused {
        let (status, answer) = send(text.into()).await;
        assert_eq!(status, 400, "{text}");
        assert_eq!(
            answer,
            json!({"ok": false, "error_code": 400, "description": description})
        );
    }
    // Without parse_mode the same text is plain.
    ok(
        &server,
        "sendMessage",
        json!({"chat_id": CHAT, "text": "a<b & <think>"}),
    )
    .await;
    assert_eq!(server.messages(CHAT).len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn text_limit_is_4096_utf16_units_of_visible_text() {
    let server = with_chat().await;
    let send = |text: String, html: bool| {
        let server = server.clone();
        let mut body = json!({"chat_id": CHAT, "text": text});
        if html {
            body["parse_mode"] = "HTML".into();
        }
        async move { call(&server, "sendMessage", body).await }
    };
    let too_long = json!({"ok": false, "error_code": 400, "description": "Bad Request: message is too long"});
    assert_eq!(send("a".repeat(4096), false).await.0, 200);
    assert_eq!(send("a".repeat(4097), false).await.1, too_long);
    // An emoji is two UTF-16 units.
    assert_eq!(send("😀".repeat(2048), false).await.0, 200);
    assert_eq!(send(format!("{}a", "😀".repeat(2048)), false).await.1, too_long);
    // Markup and entities do not count, their visible text does.
    assert_eq!(send(format!("<b>{}</b>", "a".repeat(4096)), true).await.0, 200);
    assert_eq!(send("&lt;".repeat(4096), true).await.0, 200);
    assert_eq!(send("&lt;".repeat(4097), true).await.1, too_long);
    let empty = fails(
        &server,
        "sendMessage",
        json!({"chat_id": CHAT, "text": "<b> </b>", "parse_mode": "HTML"}),
        400,
    )
    .await;
    assert_eq!(empty, "Bad Request: message text is empty");
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_chats_replies_and_buttons_are_checked() {
    let server = with_chat().await;
    let missing = fails(&server, "sendMessage", json!({"chat_id": 7, "text": "x"}), 400).await;
    assert_eq!(missing, "Bad Request: chat not found");
    let reply = fails(
        &server,
        "sendMessage",
        json!({"chat_id": CHAT, "text": "x", "reply_parameters": {"message_id": 99}}),
        400,
    )
    .await;
    assert_eq!(reply, "Bad Request: message to be replied not found");
    let button = fails(
        &server,
        "sendMessage",
        json!({"chat_id": CHAT, "text": "x", "reply_markup": {"inline_keyboard": [[{"text": "a", "callback_data": "d".repeat(65)}]]}}),
        400,
    )
    .await;
    assert_eq!(button, "Bad Request: BUTTON_DATA_INVALID");
    let pushed = server.push_update(updates::text_message(CHAT, CHAT, "question"));
    let answer = ok(
        &server,
        "sendMessage",
        json!({"chat_id": CHAT, "text": "answer", "reply_parameters": {"message_id": pushed["message"]["message_id"]}}),
    )
    .await;
    assert_eq!(answer["reply_to_message"]["text"], "question");
    assert_eq!(answer["message_id"], 2, "ids are shared with incoming messages");
    assert_eq!(server.messages(CHAT)[0].reply_to_message_id, Some(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn edit_message_text_not_modified_and_not_found() {
    let server = with_chat().await;
    let keyboard = json!({"inline_keyboard": [[{"text": "Stop", "callback_data": "stop"}]]});
    let sent = ok(
        &server,
        "sendMessage",
        json!({"chat_id": CHAT, "text": "<b>Working</b>", "parse_mode": "HTML", "reply_markup": keyboard}),
    )
    .await;
    let id = sent["message_id"].as_i64().unwrap();
    let same = json!({"chat_id": CHAT, "message_id": id, "text": "<strong>Working</strong>", "parse_mode": "html", "reply_markup": keyboard});
    let description = fails(&server, "editMessageText", same, 400).await;
    assert_eq!(
        description,
        "Bad Request: message is not modified: specified new message content and reply markup \
         are exactly the same as a current content and reply markup of the message"
    );
    let edited = ok(
        &server,
        "editMessageText",
        json!({"chat_id": CHAT, "message_id": id, "text": "Done"}),
    )
    .await;
    assert_eq!(edited["text"], "Done");
    assert!(
        edited.get("reply_markup").is_none(),
        "no reply_markup removes the keyboard"
    );
    assert!(edited["edit_date"].is_i64());
    let missing = fails(
        &server,
        "editMessageText",
        json!({"chat_id": CHAT, "message_id": 99, "text": "x"}),
        400,
    )
    .await;
    assert_eq!(missing, "Bad Request: message to edit not found");
    let message = &server.messages(CHAT)[0];
    assert_eq!(
        (message.text.as_deref(), message.parse_mode.as_deref(), message.edits),
        (Some("Done"), None, 1)
    );
    ok(&server, "deleteMessage", json!({"chat_id": CHAT, "message_id": id})).await;
    assert!(server.messages(CHAT).is_empty());
    let gone = fails(
        &server,
        "deleteMessage",
        json!({"chat_id": CHAT, "message_id": id}),
        400,
    )
    .await;
    assert_eq!(gone, "Bad Request: message to delete not found");
}

#[tokio::test(flavor = "multi_thread")]
async fn fail_next_429_and_early_retries_are_recorded() {
    let server = with_chat().await;
    server.fail_next("sendMessage", 429, "Too Many Requests: retry after 1", Some(1));
    let body = json!({"chat_id": CHAT, "text": "hi"});
    let (status, answer) = call(&server, "sendMessage", body.clone()).await;
    assert_eq!(status, 429);
    assert_eq!(
        answer,
        json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1", "parameters": {"retry_after": 1}})
    );
    // Another chat is not the one told to wait.
    server.add_chat(43);
    ok(&server, "sendMessage", json!({"chat_id": 43, "text": "elsewhere"})).await;
    assert!(server.early_retries().is_empty());
    // Retrying at once is early (and served: the fault was for one call).
    ok(&server, "sendMessage", body.clone()).await;
    let early = server.early_retries();
    assert_eq!(
        (early[0].method.as_str(), early[0].chat_id),
        ("sendmessage", Some(CHAT))
    );
    assert!(early[0].too_early_by() > Duration::from_millis(500));
    // A retry after the wait is not (another chat, whose wait starts now).
    server.add_chat(44);
    let other = json!({"chat_id": 44, "text": "hi"});
    server.fail_next("sendmessage", 429, "Too Many Requests: retry after 1", Some(1));
    assert_eq!(call(&server, "sendMessage", other.clone()).await.0, 429);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    ok(&server, "sendMessage", other).await;
    assert_eq!(server.early_retries().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limit_answers_429_to_every_call_in_the_window() {
    let server = with_chat().await;
    server.add_chat(43);
    server.rate_limit("editMessageText", 2);
    let edit = |chat: i64| json!({"chat_id": chat, "message_id": 1, "text": "x"});
    let (status, answer) = call(&server, "editMessageText", edit(CHAT)).await;
    assert_eq!(status, 429);
    assert_eq!(answer["parameters"]["retry_after"], 2);
    assert_eq!(answer["description"], "Too Many Requests: retry after 2");
    assert!(server.early_retries().is_empty(), "the first 429 is not a retry");
    let (status, _) = call(&server, "editMessageText", edit(43)).await;
    assert_eq!(status, 429);
    assert_eq!(server.early_retries().len(), 1, "the window holds for every chat");
    // Other methods are not limited.
    ok(&server, "sendMessage", json!({"chat_id": CHAT, "text": "fine"})).await;
    server.rate_limit("editMessageText", 0);
    let description = fails(&server, "editMessageText", edit(43), 400).await;
    assert_eq!(description, "Bad Request: message to edit not found");
}

#[tokio::test(flavor = "multi_thread")]
async fn fail_next_in_fails_only_that_chat() {
    let server = with_chat().await;
    server.add_chat(43);
    server.fail_next_in("sendMessage", CHAT, 429, "Too Many Requests: retry after 1", Some(1));
    server.fail_next("sendMessage", 400, "Bad Request: any chat", None);
    // Another chat gets the error queued for any chat, not the one for CHAT.
    assert_eq!(
        fails(&server, "sendMessage", json!({"chat_id": 43, "text": "a"}), 400).await,
        "Bad Request: any chat"
    );
    ok(&server, "sendMessage", json!({"chat_id": 43, "text": "b"})).await;
    let (status, answer) = call(&server, "sendMessage", json!({"chat_id": CHAT, "text": "c"})).await;
    assert_eq!((status, answer["parameters"]["retry_after"].clone()), (429, json!(1)));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    ok(&server, "sendMessage", json!({"chat_id": CHAT, "text": "d"})).await;
    assert!(server.early_retries().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn fail_next_injects_any_error_once() {
    let server = with_chat().await;
    let description = "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0";
    server.fail_next("sendMessage", 400, description, None);
    let body = json!({"chat_id": CHAT, "text": "fine"});
    assert_eq!(fails(&server, "sendMessage", body.clone(), 400).await, description);
    assert!(server.messages(CHAT).is_empty(), "a failed call has no effect");
    ok(&server, "sendMessage", body).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn multipart_send_document_is_recorded_and_downloadable() {
    let server = with_chat().await;
    let (status, answer) = call_multipart(
        &server,
        "SendDocument",
        &[
            Part::Text("chat_id", &CHAT.to_string()),
            Part::Text("document", "attach://f0"),
            Part::Text("caption", "<b>report</b>"),
            Part::Text("parse_mode", "HTML"),
            Part::File("f0", "report.txt", b"hello file"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let document = &answer["result"]["document"];
    assert_eq!(document["file_name"], "report.txt");
    assert_eq!(document["file_size"], 10);
    assert_eq!(document["mime_type"], "text/plain");
    assert_eq!(answer["result"]["caption"], "report");
    let uploads = server.uploads();
    assert_eq!(
        (
            uploads[0].field.as_str(),
            uploads[0].file_name.as_deref(),
            &uploads[0].bytes[..]
        ),
        ("f0", Some("report.txt"), &b"hello file"[..])
    );
    let file_id = document["file_id"].as_str().unwrap();
    assert_eq!(server.messages(CHAT)[0].file_id.as_deref(), Some(file_id));
    let file = ok(&server, "getFile", json!({"file_id": file_id})).await;
    let url = format!(
        "{}/file/bot{TOKEN}/{}",
        server.url(),
        file["file_path"].as_str().unwrap()
    );
    let downloaded = client().get(url).send().await.unwrap().bytes().await.unwrap();
    assert_eq!(&downloaded[..], b"hello file");
    // A photo straight in a part named like the parameter; it must be an image.
    let (status, answer) = call_multipart(
        &server,
        "sendPhoto",
        &[
            Part::Text("chat_id", &CHAT.to_string()),
            Part::File("photo", "p.png", PNG),
        ],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        (
            answer["result"]["photo"][0]["width"].clone(),
            answer["result"]["photo"][0]["height"].clone()
        ),
        (json!(320), json!(240))
    );
    let (status, answer) = call_multipart(
        &server,
        "sendPhoto",
        &[
            Part::Text("chat_id", &CHAT.to_string()),
            Part::File("photo", "p.png", b"not an image"),
        ],
    )
    .await;
    assert_eq!(
        (status, answer["description"].clone()),
        (400, json!("Bad Request: IMAGE_PROCESS_FAILED"))
    );
    // A known file id is sent again without an upload; an unknown one is refused.
    ok(&server, "sendDocument", json!({"chat_id": CHAT, "document": file_id})).await;
    let wrong = fails(
        &server,
        "sendDocument",
        json!({"chat_id": CHAT, "document": "nope"}),
        400,
    )
    .await;
    assert_eq!(wrong, "Bad Request: wrong file identifier/HTTP URL specified");
}

#[tokio::test(flavor = "multi_thread")]
async fn get_file_and_download_round_trip_for_registered_files() {
    let server = server().await;
    let file_id = server.add_file(&b"voice bytes"[..], "note.ogg");
    let pushed = server.push_update(updates::voice_message(CHAT, CHAT, &file_id, 3));
    assert_eq!(pushed["message"]["voice"]["file_size"], 11);
    assert_eq!(pushed["message"]["voice"]["file_unique_id"], "testkit_unique_1");
    let file = ok(&server, "getFile", json!({"file_id": file_id})).await;
    assert_eq!(
        file,
        json!({"file_id": file_id, "file_unique_id": "testkit_unique_1", "file_size": 11, "file_path": "documents/file_1.ogg"})
    );
    let download = |token: &str| {
        let url = format!("{}/file/bot{token}/documents/file_1.ogg", server.url());
        async move { client().get(url).send().await.unwrap() }
    };
    let response = download(TOKEN).await;
    assert_eq!(response.status(), 200);
    assert_eq!(&response.bytes().await.unwrap()[..], b"voice bytes");
    assert_eq!(download("1:WRONG").await.status(), 404);
    assert_eq!(server.downloads(), ["documents/file_1.ogg"]);
    let invalid = fails(&server, "getFile", json!({"file_id": "nope"}), 400).await;
    assert_eq!(invalid, "Bad Request: invalid file id");
}

#[tokio::test(flavor = "multi_thread")]
async fn set_my_commands_validates_and_records() {
    let server = server().await;
    let set = |commands: Value| {
        let server = server.clone();
        async move { call(&server, "setMyCommands", json!({"commands": commands})).await }
    };
    for bad in ["Start", "compact:2", "", &"x".repeat(33), "ünï"] {
        let (status, answer) = set(json!([{"command": bad, "description": "d"}])).await;
        assert_eq!(
            (status, answer["description"].clone()),
            (400, json!("Bad Request: BOT_COMMAND_INVALID")),
            "{bad:?}"
        );
    }
    let (status, answer) = set(json!([{"command": "new", "description": ""}])).await;
    assert_eq!(
        (status, answer["description"].clone()),
        (400, json!("Bad Request: BOT_COMMAND_DESCRIPTION_INVALID"))
    );
    let commands =
        json!([{"command": "new", "description": "Start over"}, {"command": "compact_2", "description": "Compact"}]);
    assert_eq!(set(commands.clone()).await.0, 200);
    assert_eq!(
        server.commands(),
        [
            BotCommand {
                command: "new".into(),
                description: "Start over".into()
            },
            BotCommand {
                command: "compact_2".into(),
                description: "Compact".into()
            },
        ]
    );
    assert_eq!(ok(&server, "getMyCommands", json!({})).await, commands);
    assert_eq!(
        ok(&server, "getMyCommands", json!({"scope": {"type": "all_group_chats"}})).await,
        json!([])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn callback_queries_carry_the_stored_message_and_are_answered_once() {
    let server = with_chat().await;
    let keyboard = json!({"inline_keyboard": [[{"text": "Yes", "callback_data": "yes"}]]});
    let sent = ok(
        &server,
        "sendMessage",
        json!({"chat_id": CHAT, "text": "Sure?", "reply_markup": keyboard}),
    )
    .await;
    let pushed = server.push_update(updates::callback_query(
        CHAT,
        sent["message_id"].as_i64().unwrap(),
        CHAT,
        "yes",
    ));
    let query = &pushed["callback_query"];
    assert_eq!(query["message"], sent);
    assert_eq!(query["data"], "yes");
    let id = query["id"].clone();
    ok(
        &server,
        "answerCallbackQuery",
        json!({"callback_query_id": id, "text": "ok"}),
    )
    .await;
    let again = fails(&server, "answerCallbackQuery", json!({"callback_query_id": id}), 400).await;
    assert_eq!(
        again,
        "Bad Request: query is too old and response timeout expired or query id is invalid"
    );
    ok(&server, "sendChatAction", json!({"chat_id": CHAT, "action": "typing"})).await;
    let action = fails(
        &server,
        "sendChatAction",
        json!({"chat_id": CHAT, "action": "dancing"}),
        400,
    )
    .await;
    assert_eq!(action, "Bad Request: wrong parameter action in request");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_migrated_group_answers_with_migrate_to_chat_id() {
    let server = server().await;
    server.push_update(updates::group_message(-5, 7, "hello", None));
    server.push_update(updates::migrate_to_chat(-5, -1_000_000_000_005, 7));
    let (status, answer) = call(&server, "sendMessage", json!({"chat_id": -5, "text": "x"})).await;
    assert_eq!(status, 400);
    assert_eq!(
        answer,
        json!({"ok": false, "error_code": 400, "description": "Bad Request: group chat was upgraded to a supergroup chat", "parameters": {"migrate_to_chat_id": -1_000_000_000_005_i64}})
    );
    let moved = ok(
        &server,
        "sendMessage",
        json!({"chat_id": -1_000_000_000_005_i64, "text": "x"}),
    )
    .await;
    assert_eq!(moved["chat"]["type"], "supergroup");
}

#[tokio::test(flavor = "multi_thread")]
async fn topic_messages_and_auto_entities() {
    let server = server().await;
    let chat = -1_000_000_000_001;
    let pushed = server.push_update(updates::topic_message(
        chat,
        5,
        7,
        "/help@volcanic_test_bot now @someone",
    ));
    let message = &pushed["message"];
    assert_eq!(
        (
            message["message_thread_id"].clone(),
            message["is_topic_message"].clone()
        ),
        (json!(5), json!(true))
    );
    assert_eq!(message["chat"]["is_forum"], true);
    assert_eq!(
        message["entities"],
        json!([
            {"type": "bot_command", "offset": 0, "length": 23},
            {"type": "mention", "offset": 28, "length": 8},
        ])
    );
    let sent = ok(
        &server,
        "sendMessage",
        json!({"chat_id": chat, "message_thread_id": 5, "text": "ok"}),
    )
    .await;
    assert_eq!(
        (sent["message_thread_id"].clone(), sent["is_topic_message"].clone()),
        (json!(5), json!(true))
    );
    assert_eq!(server.messages(chat)[0].thread_id, Some(5));
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_for_reports_what_happened_when_it_gives_up() {
    let server = server().await;
    ok(&server, "getMe", json!({})).await;
    let error = server
        .wait_for_calls("sendMessage", 1, Duration::from_millis(100))
        .await
        .unwrap_err();
    assert_eq!(error.calls.len(), 1);
    let message = error.to_string();
    assert!(
        message.contains("1 calls to sendMessage") && message.contains("[getme ok]"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn drafts_go_to_private_chats_only_and_are_checked_like_messages() {
    let server = with_chat().await;
    server.add_chat(-100);
    let thinking = json!({"chat_id": CHAT, "draft_id": 7, "can_stop": true});
    assert_eq!(ok(&server, "sendMessageDraft", thinking).await, json!(true));
    let html = json!({"chat_id": CHAT, "draft_id": 7, "text": "<b>so far</b>", "parse_mode": "HTML"});
    assert_eq!(ok(&server, "sendMessageDraft", html).await, json!(true));
    let broken = json!({"chat_id": CHAT, "draft_id": 7, "text": "<think>", "parse_mode": "HTML"});
    assert!(
        fails(&server, "sendMessageDraft", broken, 400)
            .await
            .contains("can't parse entities")
    );
    let zero = json!({"chat_id": CHAT, "draft_id": 0, "text": "x"});
    assert!(fails(&server, "sendMessageDraft", zero, 400).await.contains("draft_id"));
    let group = json!({"chat_id": -100, "draft_id": 7, "text": "x"});
    assert!(
        fails(&server, "sendMessageDraft", group, 400)
            .await
            .contains("PEER_INVALID")
    );
    let calls = server.calls("sendMessageDraft");
    assert_eq!(calls[0].param("can_stop"), Some(&json!(true)));
    assert!(server.messages(CHAT).is_empty(), "a draft is not a message");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_opt_in_update_reaches_only_a_bot_that_listed_it() {
    let server = with_chat().await;
    server.push_update(updates::stopped_generation(CHAT, 9));
    server.push_update(updates::text_message(CHAT, CHAT, "hi"));
    let got = ok(&server, "getUpdates", json!({"timeout": 0})).await;
    assert_eq!(got.as_array().map(Vec::len), Some(1), "not listed: dropped, {got}");
    assert!(got[0].get("message").is_some());
    server.push_update(updates::stopped_generation(CHAT, 9));
    let listed = json!({"offset": 3, "timeout": 0, "allowed_updates": ["message", "stopped_message_generation"]});
    let got = ok(&server, "getUpdates", listed).await;
    assert_eq!(got[0]["stopped_message_generation"]["draft_id"], json!(9), "{got}");
}
