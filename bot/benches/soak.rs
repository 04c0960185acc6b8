//! Soak benchmark: the real `volcanic-bot` release binary answers many messages over many chats
//! while idle sessions are evicted from memory, and its RSS is sampled along the way. Run with
//! `cargo bench -p volcanic-bot --bench soak`: 5,000 messages over 100 chats (50 waves of one
//! message per chat; after every 5 waves the bench waits for the sessions to be evicted and
//! samples RSS). Without `--bench` (as `cargo test --all-targets` runs it) a small version runs.
//!
//! The mix is a realistic one (issue 25, point 8): every third chat has the model run `bash`
//! before it answers, every tenth has it `schedule` a job due a second later (which fires while
//! the chat is busy with the next wave), and transcripts grow with every wave (sessions are never
//! reset). Goals: RSS at the end ≤ 100 MB (issue 12), and flat over the last half (≤ 10 % growth
//! from the middle sample to the end, issue 25).
//!
//! Knobs: `SOAK_CHATS`, `SOAK_WAVES` (sizes); `SOAK_HOLD_SECS` (keeps the bot running that long
//! after the last sample, to look inside it); `SOAK_SMAPS=<dir>` (copies the bot's
//! `/proc/<pid>/smaps` there at every sample, as `smaps.<messages>`, to see which mappings hold
//! its memory); the shared ones of `common` (`HOST_BENCH_BIN`, ...).

// A measurement binary, not library code: it panics on setup failure and prints its results.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

mod common;

use common::{Bot, Env, FIRST_ID, TOKEN, bin, wait_all_answered};
use serde_json::json;
use std::time::Duration;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Transcript, Turn};

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

/// The model double's answer to a run of a scheduled job's prompt alone.
const JOB_ANSWER: &str = "The soak's queue is fine (scheduled check).";

/// The tool calls the model makes for the chat at `index` (of the bench's chats) in `wave`
/// before it answers (tool call ids are unique in a transcript, as the providers require):
/// every tenth chat schedules a job due a second later and then runs a two-second `bash`, so
/// the job fires while the chat is busy; every third of the rest runs a quick `bash`.
fn steps(index: usize, wave: usize) -> Vec<Turn> {
    let bash = |command: &str| Turn::call(format!("call_{wave}_bash"), "bash", json!({ "command": command }));
    if index.is_multiple_of(10) {
        let args = json!({"action": "add", "in": "1s", "text": "Check the soak's queue and say so."});
        vec![
            Turn::call(format!("call_{wave}_schedule"), "schedule", args),
            bash("sleep 2; seq 1 300 | tail -n 40"),
        ]
    } else if index.is_multiple_of(3) {
        vec![bash("seq 1 300 | tail -n 40; ls -la")]
    } else {
        Vec::new()
    }
}

/// The model double's answers, from the request alone (the chats run concurrently, so a
/// queue of turns in order cannot say which chat gets which): user messages read
/// `chat <index> message <wave>`; a run of a scheduled job's prompt alone gets a short answer.
fn respond(transcript: &Transcript) -> Option<Turn> {
    let prompts = transcript.run_prompts();
    let Some((index, wave)) = prompts.iter().rev().find_map(|p| chat_message(p)) else {
        return Some(Turn::reply(JOB_ANSWER));
    };
    let done = transcript.run_calls().len();
    let next = steps(index, wave).into_iter().nth(done);
    Some(next.unwrap_or_else(|| Turn::reply(answer(&marker(wave)))))
}

/// How many answers to scheduled jobs the chats got in all (the model double's short answer to a
/// job's own run; a job queued behind a user's message may share that message's answer).
fn tg_jobs_answered(tg: &BotApiServer, chats: &[i64]) -> usize {
    chats
        .iter()
        .map(|&c| {
            tg.messages(c)
                .iter()
                .filter(|m| m.visible_text.as_deref().unwrap_or_default().contains(JOB_ANSWER))
                .count()
        })
        .sum()
}

/// `(index, wave)` of a user message holding `chat <index> message <wave>` (the host may put
/// a line about the sender before it).
fn chat_message(text: &str) -> Option<(usize, usize)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words.windows(4).find_map(|w| match w {
        ["chat", index, "message", wave] => Some((index.parse().ok()?, wave.parse().ok()?)),
        _ => None,
    })
}

/// The text every chat's answer of `wave` carries.
fn marker(wave: usize) -> String {
    format!("wave-{wave}-answer")
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let chats_n = env_usize("SOAK_CHATS", if full { 100 } else { 5 });
    let waves = env_usize("SOAK_WAVES", if full { 50 } else { 4 });
    let every = if full { 5 } else { 2 };
    let rt = common::runtime();
    rt.block_on(async {
        let model = ModelServer::start().await.unwrap();
        model.set_responder(|api, body| respond(&Transcript::of(api, body)));
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
        let start = bot.rss_mib();
        // (messages answered, RSS, of which anonymous, of which file-backed), in MiB.
        let smaps = std::env::var("SOAK_SMAPS").ok();
        let parts = |n: usize| {
            if let Some(dir) = &smaps {
                let from = format!("/proc/{}/smaps", bot.child.id());
                std::fs::copy(&from, format!("{dir}/smaps.{n}")).unwrap_or_else(|e| panic!("{from}: {e}"));
            }
            (n, bot.rss_mib(), bot.status_mib("RssAnon"), bot.status_mib("RssFile"))
        };
        let mut samples = vec![parts(0)];
        let t0 = std::time::Instant::now();
        for wave in 0..waves {
            for (index, &chat) in chats.iter().enumerate() {
                tg.push_update(updates::text_message(chat, chat, &format!("chat {index} message {wave}")));
            }
            wait_all_answered(&tg, &bot, &chats, &marker(wave), Duration::from_secs(300)).await;
            if (wave + 1) % every == 0 {
                // Every session idle long enough to be evicted, then one more sweep.
                tokio::time::sleep(Duration::from_secs_f64(IDLE_SECS * 2.0 + 1.0)).await;
                samples.push(parts((wave + 1) * chats.len()));
            }
        }
        let took = t0.elapsed();
        // Time to look inside the bot before it stops (`gdb -p`, `/proc/<pid>/smaps`).
        let hold = env_usize("SOAK_HOLD_SECS", 0);
        if hold > 0 {
            println!("holding the bot (pid {}) for {hold} s", bot.child.id());
            tokio::time::sleep(Duration::from_secs(hold as u64)).await;
        }
        let evictions = bot.log().matches("evicted from memory").count();
        let jobs = tg_jobs_answered(&tg, &chats);
        let end = samples.last().map_or(start, |s| s.1);
        let peak = samples.iter().map(|s| s.1).fold(0.0, f64::max);
        println!(
            "\nvolcanic-bot soak ({}; binary {})\n{} messages over {} chats in {:.1} s; sessions evicted {} times; {} scheduled jobs answered on their own",
            if full { "full" } else { "smoke" },
            bin(),
            waves * chats.len(),
            chats.len(),
            took.as_secs_f64(),
            evictions,
            jobs,
        );
        println!("| messages answered | RSS after eviction (MiB) | anonymous | file-backed |");
        println!("|---|---|---|---|");
        for (n, rss, anon, file) in &samples {
            println!("| {n} | {rss:.1} | {anon:.1} | {file:.1} |");
        }
        // The middle sample: the last half runs from it to the end.
        let middle = samples[samples.len() / 2].1;
        let growth = (end - middle) / middle * 100.0;
        println!(
            "\nRSS at the start {start:.1} MiB, peak {peak:.1} MiB, in the middle {middle:.1} MiB, at the end {end:.1} MiB \
             (goals: <= 100 MB at the end; <= 10 % growth over the last half: {growth:+.1} %)"
        );
        assert!(evictions > 0, "no session was evicted: the soak did not test eviction\n{}", bot.log());
        assert!(jobs > 0, "no scheduled job ran: the soak did not test jobs in busy chats\n{}", bot.log());
        if full {
            assert!(end * 1.048_576 <= 100.0, "RSS at the end {end:.1} MiB is over the 100 MB goal");
            assert!(growth <= 10.0, "RSS grew {growth:.1} % over the last half (goal <= 10 %)");
        }
    });
}
