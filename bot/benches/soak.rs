//! Soak benchmark: the real `volcanic-bot` release binary answers many messages over many chats
//! while idle sessions are evicted from memory, and its RSS is sampled along the way. Run with
//! `cargo bench -p volcanic-bot --bench soak`: 10,000 messages over 100 chats (100 waves of one
//! message per chat; after every 10 waves the bench waits for the sessions to be evicted and
//! samples RSS). Without `--bench` (as `cargo test --all-targets` runs it) a small version runs.
//! Goal (issue 12): RSS at the end ≤ 100 MB.
//!
//! Knobs: `SOAK_CHATS`, `SOAK_WAVES` (sizes); the shared ones of `common` (`HOST_BENCH_BIN`, ...).

// A measurement binary, not library code: it panics on setup failure and prints its results.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

mod common;

use common::{Bot, Env, FIRST_ID, TOKEN, bin, wait_all_answered};
use std::time::Duration;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// Seconds a session stays in memory without use (the config's `session_idle_minutes`).
const IDLE_SECS: f64 = 1.5;

/// An answer with the Markdown the renderer meets in practice (about 1.5 KB).
fn answer(marker: &str) -> String {
    let mut s = format!("**{marker}** here is what I found:\n\n");
    for i in 0..12 {
        s.push_str(&format!(
            "- item {i}: `value_{i}` with some *emphasis* and a [link](https://example.com/{i})\n"
        ));
    }
    s.push_str("\n```rust\nfn main() {\n    println!(\"hello\");\n}\n```\n");
    s.push_str(&"More text to make the session grow. ".repeat(20));
    s
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let chats_n = env_usize("SOAK_CHATS", if full { 100 } else { 5 });
    let waves = env_usize("SOAK_WAVES", if full { 100 } else { 4 });
    let every = if full { 10 } else { 2 };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let model = ModelServer::start().await.unwrap();
        let tg = BotApiServer::start(TOKEN).await.unwrap();
        let chats: Vec<i64> = (0..chats_n as i64).map(|i| FIRST_ID + i).collect();
        let extra = format!("session_idle_minutes = {}", IDLE_SECS / 60.0);
        let env = Env::new(&model.url(), &tg.url(), &chats, &extra);
        // Info: the eviction lines are counted.
        let bot = Bot::start_logging(&env, "info");
        tg.wait_for(|s| !s.get_updates_calls().is_empty(), Duration::from_secs(60))
            .await
            .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
        tokio::time::sleep(Duration::from_secs(1)).await;
        let start = bot.rss_mb();
        let mut samples = vec![(0usize, start)];
        let t0 = std::time::Instant::now();
        for wave in 0..waves {
            let marker = format!("wave-{wave}-answer");
            let text = answer(&marker);
            model.push_all(chats.iter().map(|_| Turn::reply(text.clone())));
            for &chat in &chats {
                tg.push_update(updates::text_message(chat, chat, &format!("message {wave} of the soak")));
            }
            wait_all_answered(&tg, &bot, &chats, &marker, Duration::from_secs(300)).await;
            if (wave + 1) % every == 0 {
                // Every session idle long enough to be evicted, then one more sweep.
                tokio::time::sleep(Duration::from_secs_f64(IDLE_SECS * 2.0 + 1.0)).await;
                samples.push(((wave + 1) * chats.len(), bot.rss_mb()));
            }
        }
        let took = t0.elapsed();
        let evictions = bot.log().matches("evicted from memory").count();
        let end = samples.last().map_or(start, |s| s.1);
        let peak = samples.iter().map(|s| s.1).fold(0.0, f64::max);
        println!(
            "\nvolcanic-bot soak ({}; binary {})\n{} messages over {} chats in {:.1} s; sessions evicted {} times",
            if full { "full" } else { "smoke" },
            bin(),
            waves * chats.len(),
            chats.len(),
            took.as_secs_f64(),
            evictions,
        );
        println!("| messages answered | RSS after eviction (MiB) |");
        println!("|---|---|");
        for (n, rss) in &samples {
            println!("| {n} | {rss:.1} |");
        }
        println!("\nRSS at the start {start:.1} MiB, peak {peak:.1} MiB, at the end {end:.1} MiB (goal at the end: <= 100 MB)");
        assert!(evictions > 0, "no session was evicted: the soak did not test eviction\n{}", bot.log());
        if full {
            assert!(end * 1.048_576 <= 100.0, "RSS at the end {end:.1} MiB is over the 100 MB goal");
        }
    });
}
