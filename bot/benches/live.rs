//! Live-answer benchmarks (issue 27's goals): the real `volcanic-bot` binary against the Bot API
//! double and the scripted model server, with a loopback tap between the bot and the model
//! server that timestamps the stream's bytes as they leave the model server and the moment the
//! bot closes the stream. Run with `cargo bench -p volcanic-bot --bench live`; without
//! `--bench` (as `cargo test --all-targets` runs it) it does a tiny smoke version.
//!
//! Figures:
//! 1. First visible text: the model's first text delta leaving the model server (the tap) to
//!    the first `sendMessageDraft` carrying it at the Bot API double (p50, p99).
//! 2. Stop: the `stopped_message_generation` update handed out by `getUpdates` to the model
//!    stream closed by the bot (p99).
//! 3. Bot API calls per answer (drafts and sends; typing and reactions shown apart) against
//!    2 + answer duration / `stream_interval_ms`.
//! 4. 429s answered in a round of 100 chats asking at once, with the double imitating
//!    Telegram's flood limits (`BotApiServer::telegram_limits`: one message a second per chat
//!    with short bursts, 20 a minute per group, 30 a second in all; drafts and edits count):
//!    those provoked by drafts (goal 0), those on answers (goal 0: a final is never delayed), and
//!    calls retried before their `retry_after`.

// A measurement binary, not library code: it panics on setup failure and prints its results.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use volcanic_testkit::bot_api::{ApiCall, BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

mod common;
use common::{Bot, Env, FIRST_ID, TOKEN, bin, percentile, wait_all_answered};

/// `stream_interval_ms` of the benched bot.
const INTERVAL_MS: u64 = 300;

/// What the tap saw on the bot's connections to the model server.
#[derive(Debug, Default)]
struct Seen {
    /// Bytes from the model server, when they were read from it (before they go on).
    down: Vec<(Instant, Vec<u8>)>,
    /// When the bot closed a connection (its side read to the end, or reset).
    closed: Vec<Instant>,
}

/// A loopback TCP relay in front of the model server.
#[derive(Clone)]
struct Tap {
    url: String,
    seen: Arc<Mutex<Seen>>,
}

impl Tap {
    async fn start(model: &ModelServer) -> Tap {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let target = model.addr();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let record = seen.clone();
        tokio::spawn(async move {
            while let Ok((bot, _)) = listener.accept().await {
                let model = TcpStream::connect(target).await.unwrap();
                tokio::spawn(relay(bot, model, record.clone()));
            }
        });
        Tap { url, seen }
    }

    /// When the bytes carrying `marker` left the model server.
    fn sent_at(&self, marker: &str) -> Option<Instant> {
        let seen = self.seen.lock().unwrap();
        let mut tail: Vec<u8> = Vec::new();
        for (at, bytes) in &seen.down {
            tail.extend_from_slice(bytes);
            if tail.windows(marker.len()).any(|w| w == marker.as_bytes()) {
                return Some(*at);
            }
            let keep = tail.len().saturating_sub(marker.len());
            tail.drain(..keep);
        }
        None
    }

    /// The first close by the bot at or after `from`.
    fn closed_after(&self, from: Instant) -> Option<Instant> {
        self.seen
            .lock()
            .unwrap()
            .closed
            .iter()
            .copied()
            .filter(|&c| c >= from)
            .min()
    }
}

async fn relay(bot: TcpStream, model: TcpStream, seen: Arc<Mutex<Seen>>) {
    let (mut bot_rx, mut bot_tx) = bot.into_split();
    let (mut model_rx, mut model_tx) = model.into_split();
    let up_seen = seen.clone();
    let up = tokio::spawn(async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match bot_rx.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if model_tx.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
        }
        up_seen.lock().unwrap().closed.push(Instant::now());
        let _ = model_tx.shutdown().await;
    });
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match model_rx.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                seen.lock().unwrap().down.push((Instant::now(), buf[..n].to_vec()));
                if bot_tx.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = up.await;
}

/// A bot for `chats` users behind the tap, drafts paced at [`INTERVAL_MS`].
async fn start(tap: &Tap, tg: &BotApiServer, chats: &[i64]) -> (Env, Bot) {
    let env = Env::new(&tap.url, &tg.url(), chats, "");
    let path = env.dir.path().join("volcanic.toml");
    let config = std::fs::read_to_string(&path).unwrap();
    let config = config.replace(
        "[telegram]\n",
        &format!("[telegram]\nstream_interval_ms = {INTERVAL_MS}\n"),
    );
    std::fs::write(&path, config).unwrap();
    let bot = Bot::start(&env);
    tg.wait_for(|s| !s.get_updates_calls().is_empty(), Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    (env, bot)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn drafts_of(tg: &BotApiServer, chat: i64) -> Vec<ApiCall> {
    tg.calls("sendMessageDraft")
        .into_iter()
        .filter(|c| c.chat_id() == Some(chat))
        .collect()
}

/// A paced answer whose first text delta is `marker`: the model server streams a text block
/// in three pieces, so the first block is the marker three times; then `parts` more blocks,
/// `gap` apart.
fn paced(marker: &str, parts: usize, gap: Duration) -> Turn {
    let mut turn = Turn::new().pace(gap).text(marker.repeat(3));
    for n in 0..parts {
        turn = turn.text(format!(" part {n} of the answer,"));
    }
    turn.text(" end-of-answer.")
}

/// A marker of `chat` for [`paced`] (letters and digits: shown as written).
fn marker_of(what: &str, chat: i64) -> String {
    format!("{what}{chat}x")
}

/// Figures 1 and 3: per sample, one question in its own chat, answered one after another.
/// Returns (first visible text samples in ms, (calls for the answer, allowed calls) per sample,
/// typing and reaction calls per answer).
async fn first_text(samples: usize) -> (Vec<f64>, Vec<(usize, f64)>, f64) {
    let model = ModelServer::start().await.unwrap();
    let tap = Tap::start(&model).await;
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let chats: Vec<i64> = (0..samples as i64).map(|n| FIRST_ID + n).collect();
    let (_env, bot) = start(&tap, &tg, &chats).await;
    let (mut firsts, mut calls, mut extra) = (Vec::new(), Vec::new(), 0usize);
    for &chat in &chats {
        let marker = marker_of("first", chat);
        model.push(paced(&marker, 8, Duration::from_millis(100)));
        tg.push_update(updates::text_message(chat, chat, "tell me"));
        wait_all_answered(&tg, &bot, &[chat], "end-of-answer.", Duration::from_secs(60)).await;
        let left = tap.sent_at(&marker).expect("the tap saw the first text");
        let shown = drafts_of(&tg, chat)
            .into_iter()
            .find(|c| c.text().is_some_and(|t| t.contains(&marker)))
            .unwrap_or_else(|| panic!("no draft carried the first text\n{}", bot.log()));
        firsts.push(ms(shown.at - left));
        let of_chat = |m: &str| {
            tg.calls(m)
                .into_iter()
                .filter(|c| c.chat_id() == Some(chat))
                .collect::<Vec<_>>()
        };
        let sends = of_chat("sendMessage");
        // The window the calls span: the first draft ("Thinking…") to the final send.
        let drafts = drafts_of(&tg, chat);
        let (Some(begun), Some(answered)) = (drafts.first().map(|c| c.at), sends.last().map(|c| c.at)) else {
            panic!("no draft or no answer\n{}", bot.log());
        };
        let duration = answered.saturating_duration_since(begun);
        let allowed = 2.0 + ms(duration) / INTERVAL_MS as f64;
        calls.push((drafts.len() + sends.len(), allowed));
        extra += of_chat("sendChatAction").len() + of_chat("setMessageReaction").len();
    }
    (firsts, calls, extra as f64 / samples as f64)
}

/// Figure 2: per sample, a long answer stopped with Telegram's Stop once its draft shows text.
async fn stop(samples: usize) -> Vec<f64> {
    let model = ModelServer::start().await.unwrap();
    let tap = Tap::start(&model).await;
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let chats: Vec<i64> = (0..samples as i64).map(|n| FIRST_ID + n).collect();
    let (_env, bot) = start(&tap, &tg, &chats).await;
    let mut out = Vec::new();
    for &chat in &chats {
        let marker = marker_of("stop", chat);
        model.push(paced(&marker, 200, Duration::from_millis(50)));
        tg.push_update(updates::text_message(chat, chat, "write a lot"));
        tg.wait_for(
            |s| {
                drafts_of(s, chat)
                    .iter()
                    .any(|c| c.text().is_some_and(|t| t.contains(&marker)))
            },
            Duration::from_secs(60),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
        let draft_id = drafts_of(&tg, chat)[0]
            .param("draft_id")
            .and_then(|v| v.as_i64())
            .unwrap();
        let pushed = tg.push_update(updates::stopped_generation(chat, draft_id));
        let id = pushed["update_id"].as_i64().unwrap();
        let handed = |s: &BotApiServer| {
            s.get_updates_calls()
                .into_iter()
                .find_map(|c| match (&c.outcome, c.answered_at) {
                    (Some(Ok(ids)), Some(at)) if ids.contains(&id) => Some(at),
                    _ => None,
                })
        };
        tg.wait_for(|s| handed(s).is_some(), Duration::from_secs(30))
            .await
            .unwrap();
        let from = handed(&tg).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let closed = loop {
            if let Some(at) = tap.closed_after(from) {
                break at;
            }
            assert!(
                Instant::now() < deadline,
                "the model stream was not closed\n{}",
                bot.log()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        out.push(ms(closed - from));
        wait_all_answered(&tg, &bot, &[chat], "Stopped", Duration::from_secs(30)).await;
    }
    out
}

/// What the 100-chat round counted.
struct Round {
    /// 429s answered to drafts, and to anything else.
    drafts_limited: usize,
    others_limited: usize,
    early: usize,
    secs: f64,
}

/// Figure 4: `chats` chats ask at once under Telegram's limits.
async fn round(chats: usize) -> Round {
    let model = ModelServer::start().await.unwrap();
    let tap = Tap::start(&model).await;
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    tg.telegram_limits(true);
    let ids: Vec<i64> = (0..chats as i64).map(|n| FIRST_ID + n).collect();
    let (_env, bot) = start(&tap, &tg, &ids).await;
    model.set_responder(|_, _| Some(paced("roundx", 10, Duration::from_millis(100))));
    let t0 = Instant::now();
    for &chat in &ids {
        tg.push_update(updates::text_message(chat, chat, "all at once"));
    }
    wait_all_answered(&tg, &bot, &ids, "end-of-answer.", Duration::from_secs(300)).await;
    let secs = t0.elapsed().as_secs_f64();
    let limited: Vec<ApiCall> = tg
        .sent()
        .into_iter()
        .filter(|c| c.error().is_some_and(|e| e.error_code == 429))
        .collect();
    let drafts_limited = limited.iter().filter(|c| c.method == "sendmessagedraft").count();
    Round {
        drafts_limited,
        others_limited: limited.len() - drafts_limited,
        early: tg.early_retries().len(),
        secs,
    }
}

fn row(figure: &str, measured: f64, unit: &str, goal: &str, met: bool) {
    let met = if measured.is_nan() {
        "n/a"
    } else if met {
        "yes"
    } else {
        "NO"
    };
    println!(
        "| {figure:<60} | {:>12} | {goal:>14} | {met:<4} |",
        format!("{measured:.2} {unit}")
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (samples, stops, chats) = if full { (30, 30, 100) } else { (2, 2, 3) };
    let rt = common::runtime();
    rt.block_on(async {
        let (firsts, calls, extra) = first_text(samples).await;
        eprintln!("first visible text samples (ms): {firsts:.2?}");
        eprintln!("(calls, allowed) per answer: {calls:.1?}");
        let stopped = stop(stops).await;
        eprintln!("stop samples (ms): {stopped:.2?}");
        let r = round(chats).await;
        println!(
            "\nvolcanic-bot live bench ({}; binary {})",
            if full { "full" } else { "smoke" },
            bin()
        );
        println!("| {:<60} | {:>12} | {:>14} | met? |", "figure", "measured", "goal");
        println!("|{:-<62}|{:-<14}|{:-<16}|------|", "", "", "");
        let p50 = percentile(&firsts, 50.0);
        let p99 = percentile(&firsts, 99.0);
        row(
            &format!("first visible text p50 ({} answers)", firsts.len()),
            p50,
            "ms",
            "<= 50 ms",
            p50 <= 50.0,
        );
        row("first visible text p99", p99, "ms", "<= 150 ms", p99 <= 150.0);
        let stop99 = percentile(&stopped, 99.0);
        row(
            &format!("Stop to model stream closed p99 ({} stops)", stopped.len()),
            stop99,
            "ms",
            "<= 100 ms",
            stop99 <= 100.0,
        );
        let worst = calls
            .iter()
            .map(|(n, allowed)| *n as f64 - allowed)
            .fold(f64::MIN, f64::max);
        let mean = calls.iter().map(|(n, _)| *n as f64).sum::<f64>() / calls.len() as f64;
        row(
            &format!("drafts + sends per answer, mean (interval {INTERVAL_MS} ms)"),
            mean,
            "calls",
            "",
            true,
        );
        row(
            "  worst excess over 2 + duration / interval",
            worst,
            "calls",
            "<= 0",
            worst <= 0.0,
        );
        row(
            "  typing + reactions per answer, mean (not counted)",
            extra,
            "calls",
            "",
            true,
        );
        row(
            &format!("429s provoked by drafts, {chats}-chat round ({:.1} s)", r.secs),
            r.drafts_limited as f64,
            "",
            "0",
            r.drafts_limited == 0,
        );
        row(
            "  429s on answers and other calls",
            r.others_limited as f64,
            "",
            "0",
            r.others_limited == 0,
        );
        row(
            "  calls retried before their retry_after",
            r.early as f64,
            "",
            "0",
            r.early == 0,
        );
    });
}
