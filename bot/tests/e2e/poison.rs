//! Poison input never stops the bot, and the token never reaches a log line: an update that does
//! not decode (a lone surrogate) or has a field of another type among good ones, in polling and
//! webhook mode; a session file with a garbage middle line; a failing `getUpdates` logged at
//! `debug`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// What the chat of an unreadable message is told (the bot's `texts::COULD_NOT_READ`).
const COULD_NOT_READ: &str = "I could not read that message";

/// Update `id`: a private message of `OWNER` as Telegram writes it, ending with `fields` (raw
/// JSON, such as `"text":"hi"`).
fn owner_message(id: i64, fields: &str) -> String {
    format!(
        r#"{{"update_id":{id},"message":{{"message_id":{},"from":{{"id":{OWNER},"is_bot":false,"first_name":"Owner"}},"chat":{{"id":{OWNER},"first_name":"Owner","type":"private"}},"date":1700000000,{fields}}}}}"#,
        900 + id
    )
}

/// `<state_dir>/unreadable/<id>.json`.
fn kept(env: &Env, id: i64) -> std::path::PathBuf {
    env.dir.path().join(format!("data/unreadable/{id}.json"))
}

/// Waits until the double has confirmed every update up to `id` (the offset moved past it).
async fn confirmed_past(tg: &BotApiServer, id: i64, bot: &BotProcess) {
    tg.wait_for(|s| s.confirmed_offset().is_some_and(|o| o > id), T)
        .await
        .unwrap_or_else(|e| panic!("offset never moved past {id}: {e}\n{}", bot.log()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_update_among_good_ones_is_set_aside_and_polling_goes_on() {
    let model = ModelServer::start().await.unwrap();
    for _ in 0..3 {
        model.push(Turn::reply("an answer"));
    }
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    // One batch: a good message, one with a lone surrogate (serde_json refuses it), another.
    tg.push_update(updates::text_message(OWNER, OWNER, "first"));
    let broken = r#""text":"broken \ud800 text""#;
    let bad = tg.push_raw_update(|id| owner_message(id, broken));
    let raw = owner_message(bad, broken);
    tg.push_update(updates::text_message(FRIEND, FRIEND, "second"));
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);

    nth_text(&tg, OWNER, COULD_NOT_READ, 1, &bot).await;
    nth_text(&tg, OWNER, "an answer", 1, &bot).await;
    nth_text(&tg, FRIEND, "an answer", 1, &bot).await;
    assert_eq!(tg.get_updates_calls()[0].outcome, Some(Ok(vec![1, 2, 3])), "one batch");
    confirmed_past(&tg, 3, &bot).await;
    assert_eq!(
        std::fs::read(kept(&env, bad)).unwrap(),
        raw.as_bytes(),
        "kept byte for byte"
    );
    let log = bot.log();
    let line = log
        .lines()
        .find(|l| l.contains("an update could not be read"))
        .unwrap_or_else(|| panic!("no warning:\n{log}"));
    assert!(
        line.contains(&format!("update_id={bad} ")) && line.contains("not valid JSON"),
        "{line}"
    );
    assert!(!line.contains("broken"), "no content in the log: {line}");

    // Polling goes on.
    tg.push_update(updates::text_message(OWNER, OWNER, "later"));
    nth_text(&tg, OWNER, "an answer", 2, &bot).await;
    assert_eq!(
        model.requests().len(),
        3,
        "the unreadable update never reached the model"
    );
    assert_eq!(
        texts(&tg, OWNER).iter().filter(|t| t.contains(COULD_NOT_READ)).count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_of_another_type_are_set_aside_and_polling_goes_on() {
    let model = ModelServer::start().await.unwrap();
    for _ in 0..2 {
        model.push(Turn::reply("an answer"));
    }
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    tg.push_update(updates::text_message(OWNER, OWNER, "first"));
    // A number for a text, a string for a chat id, no sender.
    let number_text = tg.push_raw_update(|id| owner_message(id, r#""text":5"#));
    let string_chat = tg.push_raw_update(|id| {
        owner_message(id, r#""text":"hi""#).replace(&format!(r#""chat":{{"id":{OWNER}"#), r#""chat":{"id":"x""#)
    });
    let no_sender = tg.push_raw_update(|id| {
        owner_message(id, r#""text":"hi""#).replace(
            &format!(r#""from":{{"id":{OWNER},"is_bot":false,"first_name":"Owner"}},"#),
            "",
        )
    });
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);

    nth_text(&tg, OWNER, "an answer", 1, &bot).await;
    // The chat is told for the two whose chat can be read, not for the one whose chat cannot.
    nth_text(&tg, OWNER, COULD_NOT_READ, 2, &bot).await;
    confirmed_past(&tg, no_sender, &bot).await;
    for id in [number_text, string_chat, no_sender] {
        assert!(kept(&env, id).exists(), "update {id} set aside\n{}", bot.log());
    }
    let log = bot.log();
    for (id, reason) in [
        (
            number_text,
            "`message.text` is a number where the Bot API gives a string",
        ),
        (
            string_chat,
            "`message.chat.id` is a string where the Bot API gives an integer",
        ),
        (no_sender, "`message.from` is missing"),
    ] {
        assert!(
            log.lines()
                .any(|l| l.contains(&format!("update_id={id} ")) && l.contains(reason)),
            "{id}: {reason}\n{log}"
        );
    }
    tg.push_update(updates::text_message(OWNER, OWNER, "later"));
    nth_text(&tg, OWNER, "an answer", 2, &bot).await;
    assert_eq!(
        texts(&tg, OWNER).iter().filter(|t| t.contains(COULD_NOT_READ)).count(),
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_mode_sets_an_undecodable_update_aside_and_acknowledges_it_once() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("an answer"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let env = Env::new(
        &model.url(),
        &format!(
            "{}[http]\nlisten = \"127.0.0.1:{port}\"\npublic_url = \"https://bot.example.org\"\n",
            telegram_config(&tg, "mode = \"webhook\"")
        ),
    );
    let bot = BotProcess::start(&env, TOKEN);
    tg.wait_for(|s| s.webhook().is_some(), T)
        .await
        .unwrap_or_else(|e| panic!("no setWebhook: {e}\n{}", bot.log()));
    tg.add_chat(OWNER);
    let bad = tg.push_raw_update(|id| owner_message(id, r#""text":"\ud800""#));
    let good = tg.push_update(updates::text_message(OWNER, OWNER, "after it"))["update_id"]
        .as_i64()
        .unwrap();
    tg.deliver_webhooks_via(&format!("http://127.0.0.1:{port}"));
    nth_text(&tg, OWNER, COULD_NOT_READ, 1, &bot).await;
    nth_text(&tg, OWNER, "an answer", 1, &bot).await;
    assert_eq!(tg.webhook_attempts(), vec![(bad, 200), (good, 200)], "no retry storm");
    assert!(kept(&env, bad).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbage_middle_line_in_a_session_file_keeps_the_rest_of_the_context() {
    let model = ModelServer::start().await.unwrap();
    for reply in ["reply one", "reply two", "reply three", "reply four"] {
        model.push(Turn::reply(reply));
    }
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    for (n, turn) in ["turn one", "turn two", "turn three"].iter().enumerate() {
        tg.push_update(updates::text_message(OWNER, OWNER, turn));
        nth_text(&tg, OWNER, "reply", n + 1, &bot).await;
    }
    assert_eq!(bot.terminate(T), Some(0));

    // The line holding "reply one" becomes disk garbage (not UTF-8, not JSON).
    let files = jsonl_files(&env.dir.path().join("data/sessions"));
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read(&files[0]).unwrap();
    let mut lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
    let lost = lines
        .iter()
        .position(|l| String::from_utf8_lossy(l).contains("reply one"))
        .unwrap();
    lines[lost] = b"\x00\x00\xff garbage \xfe";
    let damaged = lines.join(&b'\n');
    std::fs::write(&files[0], &damaged).unwrap();
    let line = lost + 1;

    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "turn four"));
    nth_text(&tg, OWNER, "reply four", 1, &bot).await;
    let last = model.requests().last().unwrap().clone();
    let sent = serde_json::to_string(last.messages()).unwrap();
    for kept in [
        "turn one",
        "turn two",
        "reply two",
        "turn three",
        "reply three",
        "turn four",
    ] {
        assert!(sent.contains(kept), "{kept:?} missing from the request: {sent}");
    }
    assert!(!sent.contains("reply one"), "that entry was lost: {sent}");
    let log = bot.log();
    assert!(
        log.lines()
            .any(|l| l.contains("skipping an unreadable session line") && l.contains(&format!("line={line} "))),
        "the log names line {line}:\n{log}"
    );
    assert!(
        log.lines()
            .any(|l| l.contains("continues from") && l.contains(&format!("unreadable_line={line}"))),
        "the log says what was kept:\n{log}"
    );
    let after = std::fs::read(&files[0]).unwrap();
    assert!(after.starts_with(&damaged), "the garbage line stays, byte for byte");
}

/// A TCP proxy in front of the Bot API double that can go down: while down it closes every
/// connection it has and every new one at once (the bot's requests fail in transport, as with a
/// network outage).
struct Proxy {
    port: u16,
    down: Arc<AtomicBool>,
    cut: watch::Sender<u64>,
}

impl Proxy {
    async fn start(to: std::net::SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let down = Arc::new(AtomicBool::new(false));
        let (cut, _) = watch::channel(0u64);
        let (flag, cuts) = (down.clone(), cut.clone());
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if flag.load(Ordering::SeqCst) {
                    continue; // dropped: closed at once
                }
                let mut cut = cuts.subscribe();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(to).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        Proxy { port, down, cut }
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
        if down {
            self.cut.send_modify(|n| *n += 1);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_in_no_log_line_even_at_debug_through_failing_polls() {
    // Shaped like a real token (teloxide hides those differently from others).
    const REAL_LOOKING: &str = "7000000123:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw9";
    let secret = REAL_LOOKING.split_once(':').unwrap().1;
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("still here"));
    let tg = BotApiServer::start(REAL_LOOKING).await.unwrap();
    let proxy = Proxy::start(tg.addr()).await;
    let config = telegram_config(&tg, "").replace(&tg.url(), &format!("http://127.0.0.1:{}", proxy.port));
    let env = Env::new(&model.url(), &config);
    // Two answers of 500 first, then polling works.
    tg.fail_next("getUpdates", 500, "Internal Server Error", None);
    tg.fail_next("getUpdates", 500, "Internal Server Error", None);
    let bot = BotProcess::start_logging(&env, REAL_LOOKING, Some("debug"));
    tg.wait_for(|s| s.get_updates_calls().len() >= 3, T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    // The network goes: the poll in flight and the next ones fail in transport.
    proxy.set_down(true);
    let failed_before = bot.log().matches("getUpdates failed").count();
    let deadline = std::time::Instant::now() + T;
    while bot.log().matches("getUpdates failed").count() < failed_before + 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "no transport failure logged:\n{}",
            bot.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    proxy.set_down(false);
    // And a normal exchange after it.
    tg.push_update(updates::text_message(OWNER, OWNER, "are you there?"));
    nth_text(&tg, OWNER, "still here", 1, &bot).await;
    let log_file = bot.log.clone();
    let exit = bot.terminate(T);
    let log = std::fs::read_to_string(log_file).unwrap();
    assert_eq!(exit, Some(0), "{log}");
    assert!(log.contains("getUpdates failed: 500 Internal Server Error"), "{log}");
    assert!(log.contains("getUpdates failed: error sending request"), "{log}");
    assert!(log.contains("DEBUG"), "debug lines are there: {log}");
    for line in log.lines() {
        assert!(!line.contains(secret), "the token is in a log line: {line}");
    }
}
