//! Session files for recall's tests and benchmark: pi's v3 lines (header, user prompts in the
//! Telegram host's envelope, assistant answers with usage), text drawn from a word list with
//! Zipf-like frequencies (the 200 most common English words, then generated rarer ones).

#![allow(dead_code)]

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

const COMMON: &str = "the of and to a in is you that it he was for on are as with his they I at be \
this have from or one had by word but not what all were we when your can said there use an each \
which she do how their if will up other about out many then them these so some her would make like \
him into time has look two more write go see number no way could people my than first water been \
call who oil its now find long down day did get come made may part over new sound take only little \
work know place year live me back give most very after thing our just name good sentence man think \
say great where help through much before line right too mean old any same tell boy follow came want \
show also around form three small set put end does another well large must big even such because \
turn here why ask went men read need land different home us move try kind hand picture again change \
off play spell air away animal house point page letter mother answer found study still learn should \
plan deploy server release budget meeting invoice garden recipe flight hotel doctor";

/// Words with Zipf-like weights.
pub struct Words {
    words: Vec<String>,
    cdf: Vec<f64>,
    rng: StdRng,
}

impl Words {
    /// The common words and `rare` generated ones (`kalvo`, `mirtesa`, …), seeded.
    pub fn new(rare: usize, seed: u64) -> Words {
        let mut words: Vec<String> = COMMON.split_whitespace().map(str::to_lowercase).collect();
        let syll = [
            "ka", "lo", "mi", "ter", "sa", "vo", "ne", "ru", "pi", "do", "gel", "an", "or", "tis",
        ];
        for i in 0..rare {
            let (mut n, mut w) = (i + 7, String::new());
            while n > 0 || w.len() < 4 {
                w.push_str(syll[n % syll.len()]);
                n /= syll.len();
            }
            words.push(w);
        }
        let mut cdf = Vec::with_capacity(words.len());
        let mut acc = 0.0;
        for rank in 1..=words.len() {
            acc += 1.0 / rank as f64;
            cdf.push(acc);
        }
        Words {
            words,
            cdf,
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// One word.
    pub fn word(&mut self) -> &str {
        let total = self.cdf.last().copied().unwrap_or(1.0);
        let x = self.rng.random::<f64>() * total;
        let i = self.cdf.partition_point(|c| *c < x).min(self.words.len() - 1);
        &self.words[i]
    }

    /// A sentence-like text of `n` words.
    pub fn text(&mut self, n: usize) -> String {
        let mut out = String::new();
        for i in 0..n {
            if i > 0 {
                out.push(' ');
            }
            let w = self.word().to_owned();
            out.push_str(&w);
        }
        out.push('.');
        out
    }

    /// A number in `range`.
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        self.rng.random_range(lo..hi)
    }
}

/// ISO-8601 UTC with milliseconds of epoch ms `at`.
pub fn iso(at: i64) -> String {
    chrono::DateTime::from_timestamp_millis(at)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A session header line (with its newline).
pub fn header(session: &str, at: i64) -> String {
    format!(
        "{}\n",
        json!({"type": "session", "version": 3, "id": session, "timestamp": iso(at), "cwd": "/w"})
    )
}

/// A user prompt line as the Telegram host writes it (`sender`: a group's member).
pub fn user(id: &str, parent: Option<&str>, at: i64, text: &str, sender: Option<&str>) -> String {
    let when = iso(at);
    let local = chrono::DateTime::from_timestamp_millis(at)
        .unwrap_or_default()
        .format("%a %Y-%m-%d %H:%M");
    let head = match sender {
        Some(s) => format!("[{local}] {s}"),
        None => format!("[{local}]"),
    };
    let line = json!({"type": "message", "id": id, "parentId": parent, "timestamp": when,
        "message": {"role": "user", "content": [{"type": "text", "text": format!("{head}\n{text}")}], "timestamp": at}});
    format!("{line}\n")
}

/// An assistant answer line with usage, as providers record it.
pub fn assistant(id: &str, parent: Option<&str>, at: i64, text: &str) -> String {
    let line = json!({"type": "message", "id": id, "parentId": parent, "timestamp": iso(at),
        "message": {"role": "assistant", "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
        "usage": {"input": 1200, "output": 80, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1280,
            "cost": {"input": 0.0036, "output": 0.0012, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0048}},
        "stopReason": "stop", "timestamp": at}});
    format!("{line}\n")
}

/// A session of `messages` messages (prompts and answers alternating) starting at `at`, one
/// minute apart; the text of message `i` is `text(i)`.
pub fn session(session: &str, at: i64, messages: usize, mut text: impl FnMut(usize) -> String) -> String {
    let mut out = header(session, at);
    let mut parent: Option<String> = None;
    for i in 0..messages {
        let id = format!("{i:08x}");
        let t = at + i as i64 * 60_000;
        if i % 2 == 0 {
            out.push_str(&user(&id, parent.as_deref(), t, &text(i), None));
        } else {
            out.push_str(&assistant(&id, parent.as_deref(), t, &text(i)));
        }
        parent = Some(id);
    }
    out
}
