//! The `/metrics` scrape: the real `volcanic-bot` binary with 1,000 known chats (a workspace each)
//! after conversations that filled the families (a tool call, answers, a 429), scraped again and
//! again over one kept-alive connection. Goals (issue 31): a scrape answers in ≤ 5 ms and is
//! ≤ 64 KB. Run with `cargo bench -p volcanic-bot --bench metrics`; without `--bench` (as
//! `cargo test --all-targets` runs it) it does a tiny smoke version.

// This is a measurement binary, not library code: it panics on setup failure and prints its
// results.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use std::time::{Duration, Instant};
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

mod common;
use common::{Bot, Env, FIRST_ID, TOKEN, bin, percentile, wait_all_answered};

/// A port free on 127.0.0.1 now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (known, talking, scrapes) = if full { (1000, 20, 500) } else { (10, 2, 5) };
    let rt = common::runtime();
    rt.block_on(async {
        let model = ModelServer::start().await.unwrap();
        let tg = BotApiServer::start(TOKEN).await.unwrap();
        let chats: Vec<i64> = (0..known as i64).map(|i| FIRST_ID + i).collect();
        let env = Env::new(&model.url(), &tg.url(), &chats, "");
        let port = free_port();
        env.add_section(&format!("[metrics]\nlisten = \"127.0.0.1:{port}\""));
        for chat in &chats {
            std::fs::create_dir_all(env.workspaces().join(chat.to_string())).unwrap();
        }
        let bot = Bot::start(&env);
        let talkers = &chats[..talking];
        tg.fail_next_in(
            "sendMessage",
            talkers[0],
            429,
            "Too Many Requests: retry after 1",
            Some(1),
        );
        // One conversation with a tool call first (the model's script is shared by every chat),
        // then plain answers in the others.
        model.push(Turn::call("c1", "bash", serde_json::json!({"command": "true"})).usage(100, 10, 0, 0));
        model.push(Turn::reply("bench-answer").usage(120, 8, 0, 0));
        tg.push_update(updates::text_message(talkers[0], talkers[0], "hello"));
        wait_all_answered(&tg, &bot, &talkers[..1], "bench-answer", Duration::from_secs(120)).await;
        for &chat in &talkers[1..] {
            model.push(Turn::reply("bench-answer").usage(120, 8, 0, 0));
            tg.push_update(updates::text_message(chat, chat, "hello"));
        }
        wait_all_answered(&tg, &bot, talkers, "bench-answer", Duration::from_secs(120)).await;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::new();
        let url = format!("http://127.0.0.1:{port}/metrics");
        let mut times = Vec::new();
        let mut size = 0;
        for _ in 0..scrapes {
            let t0 = Instant::now();
            let body = client.get(&url).send().await.unwrap().bytes().await.unwrap();
            times.push(t0.elapsed().as_secs_f64() * 1e3);
            size = body.len();
            assert!(body.starts_with(b"# HELP"), "{}", String::from_utf8_lossy(&body));
        }
        let text = client.get(&url).send().await.unwrap().text().await.unwrap();
        assert!(
            text.contains(&format!("volcanic_chats_known {known}")),
            "the scrape does not count the chats:\n{text}"
        );
        println!(
            "\nvolcanic-bot metrics bench ({}; binary {})",
            if full { "full" } else { "smoke" },
            bin()
        );
        println!("| {:<50} | {:>10} | {:>9} | met? |", "figure", "measured", "goal");
        println!("|{:-<52}|{:-<12}|{:-<11}|------|", "", "", "");
        let row = |figure: String, measured: f64, unit: &str, goal: f64| {
            let met = if measured <= goal { "yes" } else { "NO" };
            let m = format!("{measured:.2} {unit}");
            let g = format!("<= {goal} {unit}");
            println!("| {figure:<50} | {m:>10} | {g:>9} | {met:<4} |");
        };
        row(
            format!("scrape p50, {known} known chats"),
            percentile(&times, 50.0),
            "ms",
            5.0,
        );
        row(
            format!("scrape p99 ({scrapes} scrapes)"),
            percentile(&times, 99.0),
            "ms",
            5.0,
        );
        row("scrape size".into(), size as f64 / 1024.0, "KB", 64.0);
    });
}
