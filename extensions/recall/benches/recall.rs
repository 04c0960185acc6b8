//! Recall at scale (issue 28's goals on the 2-core machine): chats × messages of pi session
//! files (4 sessions per chat, prompts in the Telegram envelope, answers with usage; 6 to 40
//! words each, Zipf-distributed over 200 common and 20,000 rarer words). Measures
//! - full rebuild: every index built from the session files (`catch_up_all` with no index, two
//!   threads), goal ≤ 60 s for 1,000,000 messages, and so the indexing cost per message, goal
//!   ≤ 0.5 ms;
//! - incremental indexing: one new message appended to a chat's file, then that chat caught up
//!   (what the background pass does per new line), per message, p50 / p99;
//! - index size against the transcripts' bytes (the indexes closed), goal ≤ 50 %;
//! - search: top-10 of a two-word query (two words drawn from the same distribution) in a
//!   random chat, through `Recall::search` (catch-up check, BM25 query, snippets read back from
//!   the session files), goal p99 ≤ 20 ms.
//!
//! `cargo bench -p volcanic-recall --bench recall`: 50 chats × 1,000 messages (CI size).
//! `RECALL_BENCH_FULL=1`: 1,000 chats × 1,000 (the goal's size). Knobs: `RECALL_BENCH_CHATS`,
//! `RECALL_BENCH_MESSAGES` (per chat), `RECALL_BENCH_QUERIES` (1000), `RECALL_BENCH_DIR` (a
//! temp dir).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "../tests/support/transcript.rs"]
mod transcript;

use std::path::Path;
use std::time::{Duration, Instant};
use transcript::Words;
use volcanic_recall::{ChatKey, Query, Recall, Terms};

const SESSIONS: usize = 4;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn bytes_under(dir: &Path) -> u64 {
    let mut total = 0;
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                dirs.push(e.path());
            } else {
                total += m.len();
            }
        }
    }
    total
}

/// Writes `chats` × `messages` into `<root>/sessions/<chat>/main/`.
fn write_transcripts(root: &Path, chats: usize, messages: usize, words: &mut Words) {
    let per = messages.div_ceil(SESSIONS);
    for c in 0..chats {
        let dir = root.join("sessions").join(format!("{}", 10_000 + c)).join("main");
        std::fs::create_dir_all(&dir).unwrap();
        let mut left = messages;
        for s in 0..SESSIONS {
            let n = per.min(left);
            left -= n;
            let at = 1_767_225_600_000 + (s as i64) * 86_400_000;
            let id = format!("{c:08}-{s}");
            let text = transcript::session(&id, at, n, |_| {
                let k = words.between(6, 41);
                words.text(k)
            });
            std::fs::write(dir.join(format!("{s}_{id}.jsonl")), text).unwrap();
        }
    }
}

fn main() {
    let full = std::env::var("RECALL_BENCH_FULL").is_ok_and(|v| v == "1");
    let chats = env("RECALL_BENCH_CHATS", if full { 1_000 } else { 50 });
    let messages = env("RECALL_BENCH_MESSAGES", 1_000);
    let queries = env("RECALL_BENCH_QUERIES", 1_000);
    let tmp = tempfile::tempdir().unwrap();
    let root = std::env::var("RECALL_BENCH_DIR").map_or_else(|_| tmp.path().to_path_buf(), Into::into);
    let total = (chats * messages) as f64;
    println!(
        "recall bench: {chats} chats × {messages} messages in {}",
        root.display()
    );

    let mut words = Words::new(20_000, 42);
    let t = Instant::now();
    write_transcripts(&root, chats, messages, &mut words);
    let transcripts = bytes_under(&root.join("sessions"));
    println!(
        "  transcripts written: {:.1} MB in {:.1} s",
        transcripts as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    // Full rebuild: no index at all.
    let recall = Recall::new(root.join("sessions"), root.join("recall"));
    let t = Instant::now();
    let built = recall.catch_up_all(&tokio_util::sync::CancellationToken::new());
    let rebuild = t.elapsed();
    assert_eq!(built.rows as f64, total, "every message indexed once");
    // Closed, as with the bot stopped: each log checkpointed into its index and removed.
    drop(recall);
    let index = bytes_under(&root.join("recall"));
    let recall = Recall::new(root.join("sessions"), root.join("recall"));
    println!(
        "  full rebuild: {:.1} s ({:.1} µs per message); index {:.1} MB = {:.1} % of the transcripts",
        rebuild.as_secs_f64(),
        rebuild.as_secs_f64() * 1e6 / total,
        index as f64 / 1e6,
        index as f64 * 100.0 / transcripts as f64
    );

    // Incremental: one message appended, its chat caught up.
    let mut appends = Vec::new();
    for i in 0..queries.min(500) {
        let chat = format!("{}", 10_000 + (i * 7919) % chats);
        let file = root.join("sessions").join(&chat).join("main").join(format!(
            "{}_{:08}-{}.jsonl",
            SESSIONS - 1,
            (i * 7919) % chats,
            SESSIONS - 1
        ));
        let line = transcript::user(&format!("n{i:07}"), None, 1_767_600_000_000, &words.text(20), None);
        let key = ChatKey::new(chat).unwrap();
        let t = Instant::now();
        {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
            f.write_all(line.as_bytes()).unwrap();
        }
        let caught = recall.catch_up(&key).unwrap();
        appends.push(t.elapsed());
        assert_eq!(caught.rows, 1);
    }
    appends.sort();
    println!(
        "  incremental (append + catch up one chat): p50 {}, p99 {} per message",
        ms(pct(&appends, 0.5)),
        ms(pct(&appends, 0.99))
    );

    // Search: two words from the same distribution, a random chat.
    let mut lat = Vec::with_capacity(queries);
    let mut hits = 0;
    for i in 0..queries {
        let q = format!("{} {}", words.word().to_owned(), words.word().to_owned());
        let key = ChatKey::new(format!("{}", 10_000 + (i * 104_729) % chats)).unwrap();
        let query = Query {
            terms: Terms::parse(&q).unwrap(),
            since_ms: None,
            until_ms: None,
            limit: 10,
            skip: None,
        };
        let t = Instant::now();
        let found = recall.search(&key, &query).unwrap();
        lat.push(t.elapsed());
        hits += found.len();
    }
    lat.sort();
    println!(
        "  search top-10, two words ({queries} queries, {:.1} hits each): p50 {}, p99 {}, max {}",
        hits as f64 / queries as f64,
        ms(pct(&lat, 0.5)),
        ms(pct(&lat, 0.99)),
        ms(pct(&lat, 1.0))
    );
}
