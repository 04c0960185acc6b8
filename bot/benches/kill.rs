//! Kill harness: crash-safe delivery measured from outside, through the real `volcanic-bot`
//! binary against the Bot API double and the scripted model server (issue 12).
//!
//! Run with `cargo bench -p volcanic-bot --bench kill` (about 3 minutes once built). Users of 12 private
//! chats and 3 groups (where a message mentions the bot) send 220 messages, each carrying a
//! marker (`M0057`): questions (answered `ANSWER M0057. …`), commands (the model calls `bash`,
//! which appends the marker and the time to a tool-run log outside the workspaces and sleeps
//! 1.5 s, then answers), reminders (the model calls `schedule` with `in: "3s"`; the job's prompt
//! names `J0057` and is answered `ANSWER J0057` when it fires), and follow-ups sent to a chat
//! while its run is going. Live answers are on (`[telegram] streaming = "auto"`: drafts in
//! private chats, a preview edited in place in groups, every 100 ms; reactions on), and every
//! model turn streams its events 80 ms apart after a 300 ms wait. The messages go
//! out in 24 batches; during each the bot is killed with `kill -9` at a point of one kind, six
//! of each: during the model's stream (a request admitted, its answer not finished: from the
//! second half of the wait to the fourth event, mostly with a draft or preview showing),
//! during a `bash` tool (its marker written, the sleep running), right after `getUpdates`
//! returned a non-empty batch, and during sending (a `sendMessage` with an answer held by the
//! double: received whole but not yet answered; applied after the kill, as Telegram applies a
//! request it received whether or not the client reads the reply. The bot journals `sending`
//! before the request leaves and counts such a chunk as shown: the Bot API has no idempotency
//! key to ask, and a request cut off before Telegram had it whole is not staged).
//! The bot is restarted at once on the same state and workspaces dirs. Retry buttons (callback
//! `retry:<update_id>` on a restart notice) are pressed with a 50 % chance as they appear. At the
//! end the bot runs without kills until nothing happens for 6 s and no job is due, and is
//! stopped with SIGTERM.
//!
//! Then it prints a Markdown table (for docs/benchmarks.md) and exits 1 if any bad count is not zero:
//! - **lost**: a message with neither an answer nor a notice, or a job whose prompt was never
//!   answered nor reported;
//! - **Retry pressed, then nothing**: neither an answer nor a new notice after the press;
//! - **answered twice**: a marker answered more than once between two presses of its Retry;
//! - **tools re-run without a press**: a command's `bash` (or a reminder's `schedule`) ran twice
//!   between two presses;
//! - **notices about a message whose tool never ran** (since the last press);
//! - **corrupt files**: `*.corrupt-*` in the state or workspaces dirs, or a `.jsonl` line under
//!   the state dir that is not JSON;
//! - **stale previews left**: a group message still showing a preview's Stop button at the end.
//!
//! Answers are read from what the chats show at the end (`tally::shown`): a group's answer is
//! its preview edited into it.
//!
//! A notice is judged by the tool's effect (the tool-run log, the job in `jobs.json`) or, failing
//! that, by the tool call kept in the session transcript before it: a kill between the bot's
//! durable `tool` mark and the tool's effect leaves the bot unable to know whether the tool did
//! anything, and telling the user is then right.
//!
//! Knobs (environment): `KILL_BENCH_SEED=<u64>` repeats a run's plan, kill points and presses
//! (printed at the start; timing still varies from run to run); `KILL_BENCH_MESSAGES`,
//! `KILL_BENCH_CHATS`, `KILL_BENCH_GROUPS`, `KILL_BENCH_KILLS` (defaults 220, 12, 3, 24); `KILL_BENCH_PRESS` (chance of
//! pressing Retry, default 0.5); `KILL_BENCH_BIN=<path>` runs another build of the binary;
//! `KILL_BENCH_LOG=<filter>` sets the bot's `VOLCANIC_LOG` (default `info`);
//! `KILL_BENCH_KEEP=1` keeps the temporary folder (state, workspaces, `bot.log` of every start,
//! `tools/tool-runs.log`, and the doubles' records: `telegram-calls.jsonl`, `model-requests.jsonl`,
//! `events.jsonl`) and prints its path.
//!
//! Without `--bench` (as `cargo test --all-targets` runs it) it does a small smoke run with no
//! kills (10 messages over 3 private chats and a group, every kind, a follow-up and a job, drafts
//! and previews shown) and asserts that every
//! message was answered exactly once, every command ran once, every job fired and was answered,
//! and nothing is corrupt. Both versions first check the counting rules on made-up histories
//! (`kill/judge.rs`).

// A measurement binary, not library code: it panics on setup failure and prints its results.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

#[path = "kill/drive.rs"]
mod drive;
#[path = "kill/judge.rs"]
mod judge;
#[path = "kill/proc.rs"]
mod proc;
#[path = "kill/script.rs"]
mod script;
#[path = "kill/tally.rs"]
mod tally;

use std::time::Duration;

use drive::{Run, Sizes};
use tally::Figures;

/// The first seed from 1 whose plan of `sizes.messages` has every kind, a follow-up and a
/// message to a group: the smoke run's default.
fn smoke_seed(sizes: &Sizes) -> u64 {
    use rand::SeedableRng;
    let chats = drive::chat_ids(sizes.chats);
    let groups = drive::group_ids(sizes.groups);
    (1..)
        .find(|seed| {
            let mut rng = rand::rngs::StdRng::seed_from_u64(*seed);
            let msgs = drive::plan(&mut rng, sizes.messages, &chats, &groups);
            [script::Kind::Ask, script::Kind::Run, script::Kind::Plan]
                .iter()
                .all(|k| msgs.iter().any(|m| m.kind == *k))
                && msgs.iter().any(|m| m.follow_up)
                && msgs.iter().any(|m| m.chat < 0)
        })
        .unwrap_or(1)
}

fn knob<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a valid value; unset it or give a number")),
        Err(_) => default,
    }
}

fn sizes(full: bool) -> Sizes {
    if full {
        Sizes {
            messages: knob("KILL_BENCH_MESSAGES", 220),
            chats: knob("KILL_BENCH_CHATS", 12),
            groups: knob("KILL_BENCH_GROUPS", 3),
            kills: knob("KILL_BENCH_KILLS", 24),
            delay: Duration::from_millis(300),
            pace: Duration::from_millis(80),
            bash_sleep: Duration::from_millis(1500),
            job_in_secs: 3,
            press: knob("KILL_BENCH_PRESS", 0.5),
            quiet: Duration::from_secs(6),
            settle_max: Duration::from_secs(120),
            point_timeout: Duration::from_secs(30),
        }
    } else {
        Sizes {
            messages: knob("KILL_BENCH_MESSAGES", 10),
            chats: knob("KILL_BENCH_CHATS", 3),
            groups: knob("KILL_BENCH_GROUPS", 1),
            kills: 0,
            delay: Duration::from_millis(50),
            pace: Duration::from_millis(30),
            bash_sleep: Duration::from_millis(300),
            job_in_secs: 2,
            press: 0.5,
            quiet: Duration::from_secs(2),
            settle_max: Duration::from_secs(60),
            point_timeout: Duration::from_secs(20),
        }
    }
}

fn row(figure: &str, value: impl std::fmt::Display) {
    println!("| {figure:<58} | {value:>14} |");
}

fn print_table(f: &Figures, mode: &str, seed: u64) {
    println!(
        "\nvolcanic-bot kill bench ({mode}; seed {seed}; binary {})",
        proc::bin()
    );
    println!("| {:<58} | {:>14} |", "figure", "count");
    println!("|:{:-<58}-|-{:->14}:|", "", "");
    row("messages sent", f.messages);
    row("private chats / groups", format!("{} / {}", f.chats, f.groups));
    row(
        "questions / bash commands / reminders",
        format!("{} / {} / {}", f.by_kind[0], f.by_kind[1], f.by_kind[2]),
    );
    row("follow-ups sent while the chat's run was going", f.follow_ups);
    row(
        "drafts / previews sent / text edits / reactions",
        format!("{} / {} / {} / {}", f.drafts, f.previews, f.edits, f.reactions),
    );
    row("kill -9 in all", f.kills.iter().map(|(_, n)| n).sum::<usize>());
    for (at, n) in &f.kills {
        row(&format!("  kill -9 {}", at.name()), n);
    }
    row("kill points waited for in vain (tried again)", f.missed_points);
    row("bot starts", f.starts);
    row("bot found dead without a kill (restarted)", f.died);
    row(
        "answers sent (markers they name)",
        format!("{} ({})", f.answers, f.answered),
    );
    row("\"interrupted\" notices (with Retry)", f.notices);
    row("Retry pressed", f.presses);
    row("retried runs answered", f.retries_answered);
    row("notices about a message already answered", f.notices_after_answer);
    row("bash runs", f.tool_runs);
    row(
        "scheduled jobs created / fired",
        format!("{} / {}", f.jobs, f.jobs_fired),
    );
    row(
        "model requests (refused by the server)",
        format!("{} ({})", f.model_requests, f.model_rejected),
    );
    row("torn session lines set aside (*.torn-*)", f.torn);
    row(
        "end settled after (s)",
        format!("{:.1}{}", f.settle_secs, if f.settled { "" } else { " (timed out)" }),
    );
    row(
        "exit code of the final SIGTERM",
        f.exit.map_or("none (hung)".to_owned(), |c| c.to_string()),
    );
    row("**lost** (no answer, no notice)", f.lost.len());
    row("**Retry pressed, then nothing**", f.retries_lost.len());
    row("**answered twice**", f.twice.len());
    row("**tools re-run without a press**", f.reruns.len());
    row(
        "**notices about a message whose tool never ran**",
        f.wrong_notices.len(),
    );
    row("**corrupt files**", f.corrupt.len());
    row("**stale previews left** (Stop button still shown)", f.stale.len());
    for (what, list) in [
        ("lost", &f.lost),
        ("Retry pressed, then nothing", &f.retries_lost),
        ("answered twice", &f.twice),
        ("tools re-run without a press", &f.reruns),
        ("notices about a message whose tool never ran", &f.wrong_notices),
        ("corrupt files", &f.corrupt),
        ("stale previews left", &f.stale),
    ] {
        if !list.is_empty() {
            eprintln!("{what}: {}", list.join(", "));
        }
    }
}

/// The smoke run's checks: with no kills everything is exact.
fn check_smoke(f: &Figures) {
    assert!(
        f.by_kind.iter().all(|n| *n > 0) && f.follow_ups > 0,
        "the smoke plan lacks a kind or a follow-up: {f:?}"
    );
    assert_eq!(f.bad(), 0, "bad counts in a run without kills: {f:#?}");
    assert_eq!(
        f.answered,
        f.messages + f.jobs,
        "one answer per message and job: {f:#?}"
    );
    assert_eq!(f.notices, 0, "no notice without a kill: {f:#?}");
    assert_eq!(f.tool_runs, f.by_kind[1], "one bash run per command: {f:#?}");
    assert_eq!(f.jobs, f.by_kind[2], "one job per reminder: {f:#?}");
    assert_eq!(f.jobs_fired, f.jobs, "every job fired: {f:#?}");
    assert_eq!(f.model_rejected, 0, "{f:#?}");
    assert!(
        f.drafts > 0 && f.previews > 0,
        "live answers in both kinds of chat: {f:#?}"
    );
    assert_eq!(f.died, 0, "the bot died on its own: {f:#?}");
    assert!(f.settled, "the run did not settle: {f:#?}");
    assert_eq!(f.exit, Some(0), "SIGTERM did not end the bot cleanly: {f:#?}");
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    judge::self_check();
    let sizes = sizes(full);
    let default_seed = if full {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    } else {
        smoke_seed(&sizes)
    };
    let seed = knob("KILL_BENCH_SEED", default_seed);
    let mode = if full { "full" } else { "smoke" };
    eprintln!("kill bench ({mode}): seed {seed} (repeat with KILL_BENCH_SEED={seed}); {sizes:?}");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (figures, run) = rt.block_on(async {
        let mut run = Run::start(sizes, seed).await;
        run.drive().await;
        run.finish().await;
        (tally::tally(&run), run)
    });
    print_table(&figures, mode, seed);
    if std::env::var("KILL_BENCH_KEEP").is_ok() {
        if let Err(e) = tally::dump(&run, run.env.root()) {
            eprintln!("could not write the doubles' records: {e}");
        }
        let Run { env, .. } = run;
        eprintln!("kept the run's folder: {}", env.keep().display());
    } else {
        // Removes the temporary folder (`process::exit` below would skip it).
        drop(run);
    }
    if full {
        if figures.bad() > 0 {
            eprintln!("kill bench: {} bad counts are not zero", figures.bad());
            std::process::exit(1);
        }
    } else {
        check_smoke(&figures);
    }
}
