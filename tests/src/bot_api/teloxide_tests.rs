//! teloxide 0.17 (the bot's library) against the double: its requests are understood and
//! every answer and update builder parses into teloxide's types.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::Value;
use teloxide::payloads::setters::*;
use teloxide::requests::Requester;
use teloxide::types::{BotCommand, ChatId, InputFile, MessageId, ParseMode, Update, UpdateKind};
use teloxide::{ApiError, Bot, RequestError};

use super::test_support::{TOKEN, server};
use super::updates;

const CHAT: i64 = 42;

fn bot(url: &str) -> Bot {
    Bot::new(TOKEN).set_api_url(url::Url::parse(url).expect("API URL"))
}

#[tokio::test(flavor = "multi_thread")]
async fn teloxide_gets_me_sends_and_polls_against_the_double() {
    let api = server().await;
    let bot = bot(&api.url());

    let me = bot.get_me().await.expect("getMe parses as Me");
    assert_eq!((me.id.0, me.username()), (123_456, "volcanic_test_bot"));
    bot.delete_webhook().await.expect("deleteWebhook");
    let info = bot.get_webhook_info().await.expect("getWebhookInfo");
    assert_eq!(info.pending_update_count, 0);

    let pushed = api.push_update(updates::text_message(CHAT, CHAT, "/start"));
    let received = bot.get_updates().timeout(1).await.expect("getUpdates");
    assert_eq!(received.len(), 1);
    let UpdateKind::Message(message) = &received[0].kind else {
        panic!("not a message: {:?}", received[0].kind);
    };
    assert_eq!(message.text(), Some("/start"));
    assert_eq!(Value::from(received[0].id.0), pushed["update_id"]);
    let offset = i32::try_from(received[0].id.0).unwrap() + 1;
    let next = bot.get_updates().offset(offset).timeout(0).await.expect("getUpdates");
    assert!(next.is_empty());
    assert_eq!(api.confirmed_offset(), Some(i64::from(offset)));

    let sent = bot
        .send_message(ChatId(CHAT), "<b>Hello</b> &amp; welcome")
        .parse_mode(ParseMode::Html)
        .reply_parameters(teloxide::types::ReplyParameters::new(message.id))
        .await
        .expect("sendMessage parses as Message");
    assert_eq!(sent.text(), Some("Hello & welcome"));
    assert_eq!(sent.reply_to_message().map(|m| m.id), Some(message.id));
    assert_eq!(api.calls("sendmessage")[0].params["parse_mode"], "HTML");

    let not_modified = bot
        .edit_message_text(ChatId(CHAT), sent.id, "<b>Hello</b> &amp; welcome")
        .parse_mode(ParseMode::Html)
        .await
        .unwrap_err();
    assert!(
        matches!(not_modified, RequestError::Api(ApiError::MessageNotModified)),
        "{not_modified:?}"
    );
    let edited = bot.edit_message_text(ChatId(CHAT), sent.id, "Bye").await.expect("edit");
    assert_eq!(edited.text(), Some("Bye"));

    let bad_html = bot
        .send_message(ChatId(CHAT), "<think>x</think>")
        .parse_mode(ParseMode::Html)
        .await
        .unwrap_err();
    assert!(
        matches!(bad_html, RequestError::Api(ApiError::CantParseEntities(_))),
        "{bad_html:?}"
    );

    api.fail_next("SendMessage", 429, "Too Many Requests: retry after 3", Some(3));
    let limited = bot.send_message(ChatId(CHAT), "x").await.unwrap_err();
    assert!(
        matches!(limited, RequestError::RetryAfter(seconds) if seconds.seconds() == 3),
        "{limited:?}"
    );

    let document = bot
        .send_document(
            ChatId(CHAT),
            InputFile::memory(b"report body".to_vec()).file_name("report.md"),
        )
        .caption("the <i>report</i>")
        .parse_mode(ParseMode::Html)
        .await
        .expect("multipart sendDocument");
    let file = document.document().expect("a document");
    assert_eq!((file.file_name.as_deref(), file.file.size), (Some("report.md"), 11));
    assert_eq!(document.caption(), Some("the report"));
    assert_eq!(&api.uploads()[0].bytes[..], b"report body");
    let file = bot.get_file(file.file.id.clone()).await.expect("getFile");
    let mut downloaded = Vec::new();
    teloxide::net::Download::download_file(&bot, &file.path, &mut downloaded)
        .await
        .expect("download");
    assert_eq!(downloaded, b"report body");

    bot.set_my_commands([BotCommand::new("new", "Start over")])
        .await
        .expect("setMyCommands");
    assert_eq!(api.commands()[0].command, "new");
    bot.send_chat_action(ChatId(CHAT), teloxide::types::ChatAction::Typing)
        .await
        .expect("sendChatAction");
    bot.delete_message(ChatId(CHAT), MessageId(sent.id.0))
        .await
        .expect("deleteMessage");
    assert_eq!(api.messages(CHAT).len(), 1, "the document is left");
    assert!(api.early_retries().is_empty());

    api.wait_for_calls("getUpdates", 2, Duration::from_secs(1))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn every_update_builder_parses_as_a_teloxide_update() {
    let api = server().await;
    let photo = api.add_file(&b"\x89PNG\r\n\x1a\n"[..], "cat.png");
    let paper = api.add_file(&b"%PDF-1.4"[..], "paper.pdf");
    let voice = api.add_file(&b"OggS"[..], "note.ogg");
    api.add_chat(CHAT);
    let question = api.push_update(updates::group_message(-100, 7, "@volcanic_test_bot hi", None));
    let sent = bot(&api.url())
        .send_message(ChatId(CHAT), "pick")
        .await
        .expect("sendMessage");
    let pushed = [
        question.clone(),
        api.push_update(updates::text_message(CHAT, CHAT, "hello https://example.com")),
        api.push_update(updates::group_message(-100, 7, "reply", None).reply_to(&question)),
        api.push_update(updates::topic_message(
            -1_000_000_000_100,
            3,
            7,
            "/new@volcanic_test_bot",
        )),
        api.push_update(
            updates::photo_message(CHAT, CHAT, &photo)
                .caption("look")
                .media_group("album"),
        ),
        api.push_update(updates::document_message(CHAT, CHAT, &paper)),
        api.push_update(updates::voice_message(CHAT, CHAT, &voice, 4)),
        api.push_update(updates::text_message(CHAT, CHAT, "fixed").message_id(2).edited()),
        api.push_update(updates::callback_query(CHAT, i64::from(sent.id.0), CHAT, "a")),
        api.push_update(updates::callback_query(CHAT, 999, CHAT, "gone")),
        api.push_update(updates::migrate_to_chat(-100, -1_000_000_000_200, 7)),
        api.push_update(updates::migrate_from_chat(-1_000_000_000_200, -100, 7)),
    ];
    for update in pushed {
        // As teloxide reads the wire: `from_value` cannot serve its borrowed-key visitor.
        let parsed: Update = serde_json::from_str(&update.to_string()).expect("parses as Update");
        assert!(
            !matches!(parsed.kind, UpdateKind::Error(_)),
            "teloxide could not read {update:#}"
        );
    }
    let polled = bot(&api.url()).get_updates().await.expect("getUpdates");
    assert_eq!(polled.len(), 12);
    let UpdateKind::CallbackQuery(query) = &polled[8].kind else {
        panic!("not a callback query: {:?}", polled[8].kind);
    };
    assert_eq!(query.regular_message().and_then(|m| m.text()), Some("pick"));
    let UpdateKind::Message(photo_message) = &polled[4].kind else {
        panic!("not a message");
    };
    assert_eq!(photo_message.media_group_id().map(|id| id.0.as_str()), Some("album"));
    assert_eq!(photo_message.photo().map(|sizes| sizes[0].file.size), Some(8));
}
