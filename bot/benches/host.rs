//! Host benchmarks: the real `volcanic-bot` release binary against the Bot API double and the
//! scripted model server. Run with `cargo bench -p volcanic-bot --bench host`; without
//! `--bench` (as `cargo test --all-targets` runs it) it does a tiny smoke version.
//!
//! Knobs (environment): `HOST_BENCH_ONLY=overhead` runs only the overhead figures,
//! `HOST_BENCH_ONLY=rss` only the memory ones;
//! `HOST_BENCH_BIN=<path>` measures another build of the binary (to compare);
//! `HOST_BENCH_METRICS=1` turns `[metrics]` on for the overhead figures (to compare with off);
//! `HOST_BENCH_ALLOWANCE=1` turns `[allowance]` on for them, with caps never reached (every
//! request is checked and counted, none refused: issue 30's "the check costs nothing");
//! `HOST_BENCH_MEMORY=0` turns `[memory]` off for them (no memory tool, no recall index: issue
//! 28's "the host benchmark's overhead unchanged", measured against it on);
//! `HOST_BENCH_SPEND_SHM=1` puts the spend store's folder in `/dev/shm` (its fsyncs cost
//! nothing: what is left of the allowance's overhead is not the disk);
//! `HOST_BENCH_LOG=<filter>` sets the bot's `VOLCANIC_LOG`; `HOST_BENCH_LOG_COPY=<file>` keeps
//! each bot's log as `<file>.<n>` (n counts the bots started); `HOST_BENCH_WRAP="strace -f -tt
//! -o <file>"` starts the bot under another program; `HOST_BENCH_ROUNDS=1` prints each round's
//! overhead samples.

// This is a measurement binary, not library code: it panics on setup failure and prints its
// results.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tokio::time::Instant;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

mod common;
use common::{Bot, Env, FIRST_ID, TOKEN, bin, percentile, wait_all_answered};

struct Sizes {
    starts: usize,
    chats: usize,
    busy: usize,
    rounds: usize,
    idle_per_round: usize,
    timeout: Duration,
}

async fn first_get_updates(tg: &BotApiServer, bot: &Bot, timeout: Duration) -> Instant {
    tg.wait_for(|s| !s.get_updates_calls().is_empty(), timeout)
        .await
        .unwrap_or_else(|e| panic!("{e}\nbot log:\n{}", bot.log()));
    tg.get_updates_calls()[0].at
}

/// 1. Spawn to first getUpdates, one sample per start (ms).
async fn start_latency(sizes: &Sizes) -> Vec<f64> {
    let mut out = Vec::new();
    for _ in 0..sizes.starts {
        let model = ModelServer::start().await.unwrap();
        let tg = BotApiServer::start(TOKEN).await.unwrap();
        let env = Env::new(&model.url(), &tg.url(), &[FIRST_ID], "");
        let t0 = Instant::now();
        let bot = Bot::start(&env);
        let first = first_get_updates(&tg, &bot, sizes.timeout).await;
        out.push((first - t0).as_secs_f64() * 1e3);
    }
    out
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The session files of one chat, relative to its session folder.
type Seed = Vec<(PathBuf, String)>;

/// One real conversation, to get a session file the binary wrote itself.
async fn seed_session(sizes: &Sizes) -> Seed {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &tg.url(), &[FIRST_ID], "");
    let bot = Bot::start(&env);
    model.push(Turn::reply("seed-answer"));
    tg.push_update(updates::text_message(FIRST_ID, FIRST_ID, "hello"));
    wait_all_answered(&tg, &bot, &[FIRST_ID], "seed-answer", sizes.timeout).await;
    drop(bot);
    let root = env.state().join("sessions").join(FIRST_ID.to_string());
    let mut files = Vec::new();
    files_under(&root, &mut files);
    assert!(
        !files.is_empty(),
        "the seed run wrote no session under {}",
        root.display()
    );
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).unwrap().to_path_buf();
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// Makes `chats` known: a workspace and a copy of the seed session each, on disk (synced, as old
/// sessions are: the bot does not pay for flushing the bench's writes).
fn plant(env: &Env, chats: &[i64], seed: &Seed) {
    for &chat in chats {
        let id = chat.to_string();
        let ws = env.workspaces().join(&id);
        std::fs::create_dir_all(&ws).unwrap();
        for (rel, text) in seed {
            let path = env.state().join("sessions").join(&id).join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text.replace(&FIRST_ID.to_string(), &id)).unwrap();
        }
    }
    let synced = Command::new("sync").status();
    assert!(synced.as_ref().is_ok_and(|s| s.success()), "sync failed: {synced:?}");
}

/// 2 and 3: idle RSS with `chats` sessions on disk, then RSS after each chat had a conversation.
async fn rss(sizes: &Sizes, seed: &Seed) -> (f64, f64) {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let chats: Vec<i64> = (0..sizes.chats as i64).map(|i| FIRST_ID + i).collect();
    let env = Env::new(&model.url(), &tg.url(), &chats, "");
    plant(&env, &chats, seed);
    let bot = Bot::start(&env);
    first_get_updates(&tg, &bot, sizes.timeout).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = bot.rss_mib();

    model.push_all(chats.iter().map(|_| Turn::reply("bench-answer")));
    for &chat in &chats {
        tg.push_update(updates::text_message(chat, chat, "hi there"));
    }
    wait_all_answered(&tg, &bot, &chats, "bench-answer", sizes.timeout).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    (idle, bot.rss_mib())
}

/// Host overhead: the first byte of the model request at the model server (its head parsed,
/// the body not yet read) minus the answer time of the getUpdates call that delivered the
/// update, for messages to idle chats while busy chats wait on the model. Also returned: the
/// same up to the request's body read and parsed. With a `seed` the idle chats are known (a
/// workspace and a session on disk, not loaded: as after a restart or an idle eviction);
/// without, each idle chat writes to the bot for the first time.
async fn overhead(sizes: &Sizes, seed: Option<&Seed>) -> (Vec<f64>, Vec<f64>) {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let busy: Vec<i64> = (0..sizes.busy as i64).map(|i| FIRST_ID + i).collect();
    let idle_n = sizes.rounds * sizes.idle_per_round;
    let idle: Vec<i64> = (0..idle_n as i64).map(|i| FIRST_ID + 10_000 + i).collect();
    let users: Vec<i64> = busy.iter().chain(&idle).copied().collect();
    let env = Env::new(&model.url(), &tg.url(), &users, "");
    if knob_on("HOST_BENCH_METRICS") {
        env.add_section("[metrics]\nlisten = \"127.0.0.1:0\"");
    }
    if knob_on("HOST_BENCH_ALLOWANCE") {
        // Far above a request's estimate (the model's whole output at the catalogue price,
        // about $1) plus what a bench's chats spend: checked on every request, never reached.
        env.add_section(
            "[allowance]\nchat_daily_usd = 100000\nchat_monthly_usd = 1000000\n\
             user_daily_usd = 100000\nuser_monthly_usd = 1000000",
        );
    }
    if knob_off("HOST_BENCH_MEMORY") {
        env.add_section("[memory]\nenabled = false");
    }
    if let Some(seed) = seed {
        plant(&env, &idle, seed);
    }
    let _spend = knob_on("HOST_BENCH_SPEND_SHM").then(|| spend_in_shm(&env));
    let bot = Bot::start(&env);
    first_get_updates(&tg, &bot, sizes.timeout).await;
    let delay = Duration::from_millis(50);
    let mut samples = Vec::new();
    let mut parsed = Vec::new();
    let mut sent = 0usize;
    let mut seen = 0usize;
    for round in 0..sizes.rounds {
        let marker = format!("round-{round}-answer");
        model.push_all((0..sizes.busy + sizes.idle_per_round).map(|_| Turn::reply(marker.clone()).delay(delay)));
        for &chat in &busy {
            tg.push_update(updates::text_message(chat, chat, &format!("busy {round}")));
        }
        sent += busy.len();
        // Counted, not copied: copying every recorded request would hold the model server's
        // state (and so the idle chats' requests) up for milliseconds.
        if let Err(n) = model.wait_for_request_count(sent, sizes.timeout).await {
            panic!("{n} of {sent} model requests\nbot log:\n{}", bot.log());
        }
        // Every busy chat now has a request waiting 50 ms on the model.
        let round_idle = &idle[round * sizes.idle_per_round..(round + 1) * sizes.idle_per_round];
        let mut pushed = Vec::new();
        for &chat in round_idle {
            let marker = format!("idle-message-{chat}");
            let update = tg.push_update(updates::text_message(chat, chat, &marker));
            pushed.push((update["update_id"].as_i64().unwrap(), marker));
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        sent += round_idle.len();
        let all: Vec<i64> = busy.iter().chain(round_idle).copied().collect();
        wait_all_answered(&tg, &bot, &all, &marker, sizes.timeout).await;
        let calls = tg.get_updates_calls();
        // This round's requests only, each serialized once.
        let requests: Vec<(String, Instant, Instant)> = model
            .requests_since(seen)
            .into_iter()
            .map(|r| (r.body.to_string(), r.first_byte, r.at))
            .collect();
        seen += requests.len();
        for (update_id, marker) in pushed {
            let delivered = calls
                .iter()
                .find(|c| matches!(&c.outcome, Some(Ok(ids)) if ids.contains(&update_id)))
                .and_then(|c| c.answered_at)
                .expect("the getUpdates call that delivered the update");
            let (first_byte, at) = requests
                .iter()
                .find(|(body, _, _)| body.contains(&marker))
                .map(|(_, first, at)| (*first, *at))
                .expect("the model request for the idle chat");
            samples.push(first_byte.saturating_duration_since(delivered).as_secs_f64() * 1e3);
            parsed.push(at.saturating_duration_since(delivered).as_secs_f64() * 1e3);
        }
        if std::env::var("HOST_BENCH_ROUNDS").is_ok() {
            let r = &samples[samples.len() - sizes.idle_per_round..];
            eprintln!("round {round}: {r:.2?}");
        }
    }
    drop(bot);
    (samples, parsed)
}

/// Links the bot's spend store folder (`data/allowance/spend`) to a new folder in `/dev/shm`,
/// kept as long as the returned value.
fn spend_in_shm(env: &Env) -> tempfile::TempDir {
    let shm = tempfile::tempdir_in("/dev/shm").expect("HOST_BENCH_SPEND_SHM needs /dev/shm");
    let parent = env.dir.path().join("data/allowance");
    std::fs::create_dir_all(&parent).unwrap();
    std::os::unix::fs::symlink(shm.path(), parent.join("spend")).unwrap();
    shm
}

/// Whether the environment variable `name` is `1`.
fn knob_on(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1")
}

/// Whether the environment turns a default-on feature off (`<name>=0`).
fn knob_off(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "0")
}

/// Lets the disk catch up with the previous phase (thousands of files written, then deleted with
/// its temporary folder) so that its flushing is not measured as the next phase's overhead.
async fn settle() {
    let synced = Command::new("sync").status();
    assert!(synced.as_ref().is_ok_and(|s| s.success()), "sync failed: {synced:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

fn spread(label: &str, samples: &[f64]) {
    eprintln!(
        "{label}: {} samples (ms): min {:.2}, p50 {:.2}, p90 {:.2}, p99 {:.2}, max {:.2}",
        samples.len(),
        percentile(samples, 0.0),
        percentile(samples, 50.0),
        percentile(samples, 90.0),
        percentile(samples, 99.0),
        percentile(samples, 100.0),
    );
}

fn row(figure: &str, measured: f64, unit: &str, goal: f64) {
    let met = if measured <= goal { "yes" } else { "NO" };
    println!(
        "| {figure:<60} | {:>12} | {:>10} | {met:<4} |",
        format!("{measured:.2} {unit}"),
        format!("<= {goal} {unit}")
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes = if full {
        Sizes {
            starts: 5,
            chats: 1000,
            busy: 100,
            rounds: 30,
            idle_per_round: 10,
            timeout: Duration::from_secs(300),
        }
    } else {
        Sizes {
            starts: 1,
            chats: 3,
            busy: 3,
            rounds: 1,
            idle_per_round: 3,
            timeout: Duration::from_secs(60),
        }
    };
    let rt = common::runtime();
    rt.block_on(async {
        let only_overhead = std::env::var("HOST_BENCH_ONLY").is_ok_and(|v| v == "overhead");
        let only_rss = std::env::var("HOST_BENCH_ONLY").is_ok_and(|v| v == "rss");
        let starts = if only_overhead || only_rss {
            vec![f64::NAN]
        } else {
            start_latency(&sizes).await
        };
        eprintln!("start to first getUpdates samples (ms): {starts:.2?}");
        let seed = seed_session(&sizes).await;
        let (idle, busy) = if only_overhead {
            (f64::NAN, f64::NAN)
        } else {
            rss(&sizes, &seed).await
        };
        if only_rss {
            eprintln!("idle RSS {idle:.2} MiB, after the conversations {busy:.2} MiB");
            return;
        }
        settle().await;
        let (known, known_parsed) = overhead(&sizes, Some(&seed)).await;
        spread("host overhead, known idle chats", &known);
        spread("  same, to the body read and parsed", &known_parsed);
        settle().await;
        let (new, new_parsed) = overhead(&sizes, None).await;
        spread("host overhead, new chats", &new);
        spread("  same, to the body read and parsed", &new_parsed);
        let n = sizes.chats;
        println!(
            "\nvolcanic-bot host bench ({}; binary {}; metrics {}, allowance {}, memory {})",
            if full { "full" } else { "smoke" },
            bin(),
            if knob_on("HOST_BENCH_METRICS") { "on" } else { "off" },
            if knob_on("HOST_BENCH_ALLOWANCE") { "on" } else { "off" },
            if knob_off("HOST_BENCH_MEMORY") { "off" } else { "on" },
        );
        println!("| {:<60} | {:>12} | {:>10} | met? |", "figure", "measured", "goal");
        println!("|{:-<62}|{:-<14}|{:-<12}|------|", "", "", "");
        row(
            &format!("start to first getUpdates, median of {}", starts.len()),
            percentile(&starts, 50.0),
            "ms",
            50.0,
        );
        row(&format!("idle RSS, {n} chats' sessions on disk"), idle, "MiB", 30.0);
        row(&format!("RSS after {n} chats had a conversation"), busy, "MiB", 100.0);
        let busy = sizes.busy;
        for (what, samples) in [("known idle chats", &known), ("new chats", &new)] {
            let label = format!("overhead p50, {what} ({busy} busy, 50 ms model)");
            row(&label, percentile(samples, 50.0), "ms", 1.0);
            let label = format!("overhead p99, {what} ({} samples)", samples.len());
            row(&label, percentile(samples, 99.0), "ms", 5.0);
        }
    });
}
