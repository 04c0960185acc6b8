//! The public HTTP listener (`[http] listen`) under attack, through the real binary: a thousand
//! half-open connections neither stop the bot nor hold its descriptors, and a Telegram message
//! arriving meanwhile is answered; when descriptors do run out, the message that met the
//! shortage is answered once they return, and the chat never sees the OS error; unauthenticated
//! big webhook bodies are refused before they are read, so memory stays flat.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::a2a_server::wait_card;
use crate::support::*;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// `[http.limits]` with caps above the descriptor budget (an owner's choice the bot warns
/// about), so that a flood can exhaust the descriptors ([`exhaust`]).
pub(crate) const FLOODABLE: &str =
    "max_connections = 100000\nmax_connections_per_peer = 100000\nheader_timeout_secs = 20";

/// Polling mode, the listener on `port` serving the A2A card (a public route), and `limits` as
/// the `[http.limits]` lines.
pub(crate) fn listener_config(tg: &BotApiServer, port: u16, limits: &str) -> String {
    format!(
        "{}{}[http.limits]\n{limits}\n[a2a.server]\nname = \"Test assistant\"\n\
         [[a2a.server.callers]]\nname = \"alice\"\ntoken_env = \"E2E_ALICE\"\n",
        telegram_config(tg, ""),
        http_section(port)
    )
}

pub(crate) fn start(env: &Env) -> BotProcess {
    BotProcess::start_with(
        env,
        TOKEN,
        Some("info"),
        &[("E2E_ALICE", "alice-token-0123456789abcdef")],
    )
}

/// Waits until the card is served and polling has begun (its long poll is open).
pub(crate) async fn wait_ready(port: u16, tg: &BotApiServer, bot: &BotProcess) {
    wait_card(&format!("http://127.0.0.1:{port}"), bot).await;
    tg.wait_for(|s| !s.get_updates_calls().is_empty(), T)
        .await
        .unwrap_or_else(|e| panic!("no getUpdates: {e}\n{}", bot.log()));
}

/// The bot's open descriptors.
pub(crate) fn fds(bot: &BotProcess) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", bot.child.id())).map_or(0, |d| d.count())
}

/// `key` (`VmRSS`, `VmHWM`) of the bot, in kB.
fn status_kb(bot: &BotProcess, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", bot.child.id())).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in\n{status}"))
}

/// `n` connections to `port`, each having sent half a request head and nothing more.
async fn half_open(port: u16, n: usize) -> Vec<TcpStream> {
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        // The bot may have closed it already (past the per-peer cap): that is its answer.
        let _ = c
            .write_all(b"POST /a2a HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
            .await;
        conns.push(c);
    }
    conns
}

/// Leaves the bot without descriptors: a small open-file limit (40 above what it uses now, set
/// with `prlimit`), then half-open connections to `port` until the listener says it cannot
/// accept. No more than that: further ones would wait in the kernel's accept queue (about 128)
/// and, once it is full, in the client's SYN retries for half a minute.
pub(crate) async fn exhaust(port: u16, bot: &BotProcess) -> Vec<TcpStream> {
    let limit = fds(bot) + 40;
    let set = std::process::Command::new("prlimit")
        .arg(format!("--pid={}", bot.child.id()))
        .arg(format!("--nofile={limit}:"))
        .status()
        .expect("prlimit (util-linux) must be installed for this test");
    assert!(set.success(), "prlimit failed");
    let mut conns = Vec::new();
    while !bot.log().contains("cannot accept connections") {
        assert!(conns.len() < 100, "no exhaustion after 100 connections\n{}", bot.log());
        conns.extend(half_open(port, 1).await);
        // The bot's accept loop runs meanwhile.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    conns
}

/// How many of `conns` the bot has not closed within `within`.
async fn still_open(conns: Vec<TcpStream>, within: Duration) -> usize {
    let waits = conns.into_iter().map(|mut c| async move {
        let mut buf = [0u8; 512];
        let closed = async {
            loop {
                match c.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        };
        tokio::time::timeout(within, closed).await.is_err()
    });
    futures::future::join_all(waits)
        .await
        .into_iter()
        .filter(|open| *open)
        .count()
}

fn alive(bot: &mut BotProcess) -> bool {
    bot.child.try_wait().unwrap().is_none()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_half_open_connections_hold_no_descriptors_and_a_message_meanwhile_is_answered() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("answered during the flood"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let env = Env::new(&model.url(), &listener_config(&tg, port, "header_timeout_secs = 2"));
    let mut bot = start(&env);
    wait_ready(port, &tg, &bot).await;
    let baseline = fds(&bot);

    let conns = half_open(port, 1000).await;
    let during = fds(&bot);
    // One address holds at most 64 (`max_connections_per_peer`); the rest were closed at once.
    assert!(
        during <= baseline + 64 + 16,
        "{during} descriptors during the flood, {baseline} before\n{}",
        bot.log()
    );
    tg.push_update(updates::text_message(OWNER, OWNER, "are you there?"));
    nth_text(&tg, OWNER, "answered during the flood", 1, &bot).await;

    // The ones it held are closed by the header timeout (2 s); none is left open.
    assert_eq!(still_open(conns, Duration::from_secs(8)).await, 0, "{}", bot.log());
    assert!(alive(&mut bot), "{}", bot.log());
    assert!(
        fds(&bot) <= baseline + 16,
        "descriptors back: {} of {baseline}",
        fds(&bot)
    );
    assert_eq!(texts(&tg, OWNER), ["answered during the flood"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_meets_exhausted_descriptors_is_answered_once_they_return() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("answered after the flood"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let env = Env::new(&model.url(), &listener_config(&tg, port, FLOODABLE));
    let mut bot = start(&env);
    wait_ready(port, &tg, &bot).await;
    assert!(
        bot.log().contains("above half the process's open-file limit"),
        "{}",
        bot.log()
    );
    let conns = exhaust(port, &bot).await;
    // A new chat's message now meets the shortage: its session cannot be opened.
    tg.push_update(updates::text_message(OWNER, OWNER, "hello during the flood"));
    let deadline = std::time::Instant::now() + T;
    while !bot.log().contains("short of resources") {
        assert!(
            std::time::Instant::now() < deadline,
            "the shortage was not met\n{}",
            bot.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        texts(&tg, OWNER),
        Vec::<String>::new(),
        "nothing told during the shortage"
    );

    // The descriptors return: the message is answered, once, and no OS error reached the chat.
    drop(conns);
    nth_text(&tg, OWNER, "answered after the flood", 1, &bot).await;
    assert!(alive(&mut bot), "{}", bot.log());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(texts(&tg, OWNER), ["answered after the flood"]);
    assert_eq!(model.requests().len(), 1);
    assert!(bot.log().contains("resources are back"), "{}", bot.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_big_webhook_bodies_are_refused_before_they_are_read() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    // The connection caps raised, so only the secret check stands between the posts and memory.
    let env = Env::new(
        &model.url(),
        &format!(
            "{}[http]\nlisten = \"127.0.0.1:{port}\"\npublic_url = \"https://bot.example.org\"\n\
             [http.limits]\nmax_connections = 1000\nmax_connections_per_peer = 1000\n",
            telegram_config(&tg, "mode = \"webhook\"")
        ),
    );
    let bot = start(&env);
    tg.wait_for(|s| s.webhook().is_some(), T)
        .await
        .unwrap_or_else(|e| panic!("no setWebhook: {e}\n{}", bot.log()));
    let before = status_kb(&bot, "VmRSS");

    // 150 slow posts, each announcing 2 MB and sending all but its last bytes, without the secret.
    const LEN: usize = 2_000_000;
    let chunk = vec![b'x'; 64 * 1024];
    let posts = (0..150).map(|_| {
        let chunk = chunk.clone();
        async move {
            let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            let head = format!(
                "POST /telegram/webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Content-Length: {LEN}\r\n\r\n"
            );
            c.write_all(head.as_bytes()).await.unwrap();
            // The answer is read first: a server that closes with data unread resets the
            // connection, which may drop an answer not yet read.
            let mut answer = vec![0u8; 64];
            let n = tokio::time::timeout(Duration::from_secs(5), c.read(&mut answer))
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or(0);
            let send = async {
                let mut sent = 0;
                while sent + chunk.len() < LEN {
                    if c.write_all(&chunk).await.is_err() {
                        break;
                    }
                    sent += chunk.len();
                }
            };
            let _ = tokio::time::timeout(Duration::from_secs(3), send).await;
            (String::from_utf8_lossy(&answer[..n]).into_owned(), c)
        }
    });
    let answered = futures::future::join_all(posts).await;
    let after = status_kb(&bot, "VmRSS");
    let peak = status_kb(&bot, "VmHWM");
    let refused = answered.iter().filter(|(a, _)| a.starts_with("HTTP/1.1 401")).count();
    assert_eq!(refused, 150, "every post refused: {:?}", answered.first().map(|a| &a.0));
    // Buffering the bodies would take ~300 MB; refused unread, memory stays near where it was.
    assert!(
        peak < before + 64 * 1024 && after < before + 64 * 1024,
        "RSS {before} kB before, {after} kB after, peak {peak} kB\n{}",
        bot.log()
    );
    assert!(tg.webhook_attempts().is_empty());
    assert!(model.requests().is_empty());
}
