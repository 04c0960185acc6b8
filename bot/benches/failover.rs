//! Failover benchmark (issue 30's goal: "with the primary answering 529 for every request, a
//! chat's answer arrives from the fallback with at most the primary's retry time added"). The
//! real `volcanic-bot` binary against the Bot API double and two scripted model servers (the
//! primary, `anthropic`, and the fallback, an OpenAI-compatible `[providers.backup]`), all on
//! loopback. Run with `cargo bench -p volcanic-bot --bench failover`; without `--bench` (as
//! `cargo test --all-targets` runs it) it does a tiny smoke version.
//!
//! Per message (one chat, one after the other), times from the model servers' and the Bot API
//! double's own records:
//! - direct: a healthy primary; first model request → the answer's `sendMessage`;
//! - failover: the primary answering 529 to every request; first primary request → the answer;
//! - the primary's retry time: its first request → its last (the provider's own backoff);
//! - the failover step: the primary's last request → the fallback's request;
//! - added beyond the retry time: failover − retry time − direct p50 (the goal: about 0).

// A measurement binary, not library code: it panics on setup failure and prints its results.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

mod common;
use common::{Bot, Env, FIRST_ID, bin, percentile, wait_all_answered};

/// Answers waited for at most this long (the primary's retries take about 7 s).
const WAIT: Duration = Duration::from_secs(60);
/// What the bookkeeping of a failover may add beyond the retry time (ms).
const ALLOWED_MS: f64 = 100.0;

struct Setup {
    primary: ModelServer,
    backup: ModelServer,
    down: Arc<AtomicBool>,
    tg: BotApiServer,
    _env: Env,
    bot: Bot,
}

async fn setup() -> Setup {
    let primary = ModelServer::start().await.unwrap();
    let backup = ModelServer::start().await.unwrap();
    let down = Arc::new(AtomicBool::new(false));
    let flag = down.clone();
    primary.set_responder(move |_, _| flag.load(Ordering::SeqCst).then(|| Turn::error(529, "Overloaded")));
    let tg = BotApiServer::start(common::TOKEN).await.unwrap();
    let env = Env::new(
        &primary.url(),
        &tg.url(),
        &[FIRST_ID],
        "fallback_models = [\"backup/backup-1\"]",
    );
    let path = env.dir.path().join("volcanic.toml");
    let config = std::fs::read_to_string(&path).unwrap();
    let section = format!(
        "[providers.backup]\napi = \"openai-completions\"\nbase_url = \"{}/v1\"\napi_key_env = \"BENCH_ANTHROPIC_KEY\"\n\
         models = [{{ id = \"backup-1\", context_window = 128000, max_tokens = 4096 }}]\n",
        backup.url()
    );
    std::fs::write(&path, format!("{config}{section}")).unwrap();
    let bot = Bot::start(&env);
    tg.wait_for(|s| !s.get_updates_calls().is_empty(), WAIT)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    Setup {
        primary,
        backup,
        down,
        tg,
        _env: env,
        bot,
    }
}

/// When the answer containing `marker` was sent.
fn answered_at(tg: &BotApiServer, marker: &str) -> Instant {
    tg.calls("sendMessage")
        .into_iter()
        .find(|c| c.params["text"].as_str().unwrap_or_default().contains(marker))
        .map(|c| c.at)
        .unwrap_or_else(|| panic!("no sendMessage with {marker}"))
}

/// Sends one message and waits for `marker`, answered by `server`.
async fn ask(s: &Setup, server: &ModelServer, n: usize, marker: &str) {
    server.push(Turn::reply(marker));
    s.tg.push_update(updates::text_message(FIRST_ID, FIRST_ID, &format!("message {n}")));
    wait_all_answered(&s.tg, &s.bot, &[FIRST_ID], marker, WAIT).await;
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Measured samples (ms).
#[derive(Default)]
struct Samples {
    direct: Vec<f64>,
    failover: Vec<f64>,
    retry: Vec<f64>,
    step: Vec<f64>,
}

async fn measure(samples: usize) -> Samples {
    let s = setup().await;
    let mut out = Samples::default();
    for n in 0..samples {
        s.down.store(false, Ordering::SeqCst);
        let from = s.primary.requests().len();
        let marker = format!("direct answer {n}");
        ask(&s, &s.primary, 2 * n, &marker).await;
        let first = s.primary.requests_since(from)[0].at;
        out.direct.push(ms(answered_at(&s.tg, &marker).duration_since(first)));

        s.down.store(true, Ordering::SeqCst);
        let from = s.primary.requests().len();
        let marker = format!("fallback answer {n}");
        ask(&s, &s.backup, 2 * n + 1, &marker).await;
        let tries = s.primary.requests_since(from);
        let (first, last) = (tries[0].at, tries[tries.len() - 1].at);
        let fallback = s.backup.requests().last().unwrap().at;
        out.failover.push(ms(answered_at(&s.tg, &marker).duration_since(first)));
        out.retry.push(ms(last.duration_since(first)));
        out.step.push(ms(fallback.duration_since(last)));
        assert_eq!(tries.len(), 4, "1 + 3 attempts on the primary");
    }
    out
}

fn row(figure: &str, measured: f64, goal: &str, met: bool) {
    let met = if met { "yes" } else { "NO" };
    println!(
        "| {figure:<58} | {:>12} | {goal:>16} | {met:<4} |",
        format!("{measured:.2} ms")
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let samples = if full { 10 } else { 1 };
    let rt = common::runtime();
    rt.block_on(async {
        let m = measure(samples).await;
        eprintln!(
            "direct {:.2?}\nfailover {:.2?}\nretry {:.2?}\nstep {:.2?}",
            m.direct, m.failover, m.retry, m.step
        );
        let direct = percentile(&m.direct, 50.0);
        let added: Vec<f64> = m.failover.iter().zip(&m.retry).map(|(f, r)| f - r - direct).collect();
        println!(
            "\nvolcanic-bot failover bench ({}; binary {})",
            if full { "full" } else { "smoke" },
            bin()
        );
        println!("| {:<58} | {:>12} | {:>16} | met? |", "figure", "measured", "goal");
        println!("|{:-<60}|{:-<14}|{:-<18}|------|", "", "", "");
        row(
            &format!("direct answer p50 ({samples} messages)"),
            direct,
            "(reported)",
            true,
        );
        row(
            "answer through failover p50",
            percentile(&m.failover, 50.0),
            "(reported)",
            true,
        );
        row(
            "primary's retry time p50",
            percentile(&m.retry, 50.0),
            "(reported)",
            true,
        );
        row(
            "failover step p50 (last 529 → fallback request)",
            percentile(&m.step, 50.0),
            "(reported)",
            true,
        );
        let (p50, p99) = (percentile(&added, 50.0), percentile(&added, 99.0));
        let goal = format!("<= {ALLOWED_MS} ms");
        row("added beyond the retry time p50", p50, &goal, p50 <= ALLOWED_MS);
        row("added beyond the retry time p99", p99, &goal, p99 <= ALLOWED_MS);
    });
}
