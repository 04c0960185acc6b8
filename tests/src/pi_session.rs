//! A generator of large, realistic pi (`@mariozechner/pi-coding-agent`) v3 session files, for
//! the session tests and the `session_open` benchmark (nothing outside the repository is needed).
//!
//! What it writes: a header, then one linear chain of entries (each `parentId` the previous
//! entry's id, the first `null`): a `model_change` and a `thinking_level_change` as a new pi
//! session starts; turns of a user message, 1..6 tool rounds (an assistant message with optional
//! thinking, text and 1..3 `toolCall` blocks, `stopReason: "toolUse"`, one `toolResult` per call)
//! and a final assistant text (`stopReason: "stop"`), each assistant message with usage and cost;
//! now and then a model or thinking-level change, a label on an earlier user message, a `custom`
//! entry; one `compaction` at the first turn boundary after 70 % of the entries, keeping about
//! 20,000 estimated tokens (4 characters each) from a user message on. Entries start with pi's
//! key order (`type`, `id`, `parentId`, `timestamp`). The same `entries` and `seed` give the same
//! bytes.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

const WORDS: &[&str] = &[
    "the",
    "a",
    "to",
    "of",
    "and",
    "in",
    "is",
    "for",
    "that",
    "with",
    "function",
    "return",
    "value",
    "error",
    "file",
    "path",
    "config",
    "session",
    "entry",
    "message",
    "tool",
    "result",
    "test",
    "build",
    "struct",
    "async",
    "await",
    "parse",
    "write",
    "read",
    "edit",
    "bash",
    "cargo",
    "crate",
    "module",
    "handler",
    "request",
    "response",
    "stream",
    "token",
    "model",
    "context",
    "branch",
    "leaf",
    "parent",
    "offset",
    "→",
    "é",
    "日本語",
    "🚀",
    "\"q\"",
    "\\",
];
const MODELS: &[(&str, &str, &str)] = &[
    ("anthropic", "anthropic-messages", "claude-sonnet-4-5"),
    ("anthropic", "anthropic-messages", "claude-opus-4-5"),
    ("openai", "openai-responses", "gpt-5"),
];
const LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high"];

/// A generated file and what a reader must find in it.
#[derive(Debug, Clone)]
pub struct PiSession {
    /// The file's text (one JSON object per line, `\n` after each).
    pub text: String,
    /// `sessionId`, `entries` (lines after the header), `leafId`, `expectedContextMessages` (the
    /// context pi builds: the compaction summary, the kept messages, the newer ones),
    /// `expectedModel` (`provider`, `modelId`), `expectedThinkingLevel`, `bytes`.
    pub summary: Value,
}

struct Gen {
    rng: StdRng,
    n: usize,
    lines: Vec<String>,
    leaf: Option<String>,
    t_ms: i64,
    model: (&'static str, &'static str, &'static str),
    thinking: &'static str,
    user_ids: Vec<String>,
    /// `(id, role, estimated characters)` of every message entry.
    messages: Vec<(String, &'static str, usize)>,
    compaction: Option<(usize, usize)>,
}

impl Gen {
    fn count(&self) -> usize {
        self.lines.len() - 1
    }

    fn room(&self) -> usize {
        self.n.saturating_sub(self.count())
    }

    fn text(&mut self, lo: usize, hi: usize) -> String {
        let target = self.rng.random_range(lo..=hi);
        let mut out = String::new();
        while out.chars().count() < target {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(WORDS[self.rng.random_range(0..WORDS.len())]);
        }
        out.chars().take(target).collect()
    }

    fn iso(&self) -> String {
        chrono::DateTime::from_timestamp_millis(self.t_ms)
            .map(|d| d.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
            .unwrap_or_default()
    }

    fn tick(&mut self, lo: i64, hi: i64) -> i64 {
        self.t_ms += self.rng.random_range(lo..=hi);
        self.t_ms
    }

    /// Writes an entry (`body`: its keys after `timestamp`), returns its id.
    fn emit(&mut self, kind: &str, body: Value) -> String {
        let id = format!("{:08x}", self.rng.random::<u32>());
        let parent = self.leaf.as_ref().map_or("null".to_owned(), |p| format!("\"{p}\""));
        let mut line = format!(
            r#"{{"type":"{kind}","id":"{id}","parentId":{parent},"timestamp":"{}""#,
            self.iso()
        );
        if let Value::Object(map) = &body {
            for (k, v) in map {
                line.push_str(&format!(",{}:{}", Value::String(k.clone()), v));
            }
        }
        line.push('}');
        self.lines.push(line);
        self.leaf = Some(id.clone());
        if let Some(role) = body["message"]["role"].as_str() {
            let role = match role {
                "user" => "user",
                "assistant" => "assistant",
                _ => "toolResult",
            };
            let chars = body["message"]["content"].to_string().len();
            self.messages.push((id.clone(), role, chars));
            if role == "user" {
                self.user_ids.push(id.clone());
            }
        }
        id
    }

    fn assistant(&mut self, content: Vec<Value>, stop: &str) {
        let ts = self.tick(800, 30_000);
        let (provider, api, model) = self.model;
        let out = (content.iter().map(|c| c.to_string().len()).sum::<usize>() / 4).max(1);
        let input = self.rng.random_range(1_000..20_000);
        let msg = json!({"role": "assistant", "content": content, "api": api, "provider": provider, "model": model,
            "usage": {"input": input, "output": out, "cacheRead": 0, "cacheWrite": 0, "totalTokens": input + out,
                "cost": {"input": 0.003, "output": 0.001, "cacheRead": 0, "cacheWrite": 0, "total": 0.004}},
            "stopReason": stop, "timestamp": ts});
        self.emit("message", json!({ "message": msg }));
    }

    fn turn(&mut self) {
        let ts = self.tick(20_000, 300_000);
        let text = self.text(40, 500);
        self.emit(
            "message",
            json!({"message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}}),
        );
        let rounds = self.rng.random_range(1..=6);
        for r in 0..=rounds {
            let mut content = Vec::new();
            if self.thinking != "off" && self.rng.random_bool(0.5) {
                let t = self.text(80, 900);
                content.push(json!({"type": "thinking", "thinking": t, "thinkingSignature": "c2lnbmF0dXJl"}));
            }
            let last = r == rounds || self.room() < 3;
            if last || self.rng.random_bool(0.6) {
                let t = self.text(100, if last { 900 } else { 300 });
                content.push(json!({"type": "text", "text": t}));
            }
            if last {
                self.assistant(content, "stop");
                return;
            }
            let k = self.rng.random_range(1..=3).min(self.room() - 2);
            let calls: Vec<Value> = (0..k)
                .map(|_| {
                    let id = format!("toolu_01{:016x}", self.rng.random::<u64>());
                    json!({"type": "toolCall", "id": id, "name": "bash", "arguments": {"command": "cargo test -p core"}})
                })
                .collect();
            content.extend(calls.iter().cloned());
            self.assistant(content, "toolUse");
            for c in calls {
                let ts = self.tick(30, 20_000);
                let out = self.text(200, 2000);
                self.emit(
                    "message",
                    json!({"message": {"role": "toolResult", "toolCallId": c["id"], "toolName": "bash",
                    "content": [{"type": "text", "text": out}], "isError": false, "timestamp": ts}}),
                );
            }
        }
    }

    fn side_entries(&mut self) {
        if self.room() >= 3 && self.rng.random_bool(0.02) {
            self.model = MODELS[self.rng.random_range(0..MODELS.len())];
            let (provider, _, model) = self.model;
            self.emit("model_change", json!({"provider": provider, "modelId": model}));
        }
        if self.room() >= 3 && self.rng.random_bool(0.01) {
            self.thinking = LEVELS[self.rng.random_range(0..LEVELS.len())];
            self.emit("thinking_level_change", json!({ "thinkingLevel": self.thinking }));
        }
        if self.room() >= 3 && self.rng.random_bool(0.015) && !self.user_ids.is_empty() {
            let target = self.user_ids[self.rng.random_range(0..self.user_ids.len())].clone();
            self.emit("label", json!({"targetId": target, "label": "checkpoint"}));
        }
        if self.room() >= 3 && self.rng.random_bool(0.005) {
            let rev = self.count();
            self.emit("custom", json!({"customType": "todo-state", "data": {"rev": rev}}));
        }
    }

    fn compact(&mut self) {
        let (mut acc, mut idx) = (0, self.messages.len() - 1);
        while idx > 0 && acc < 80_000 {
            acc += self.messages[idx].2;
            idx -= 1;
        }
        while idx < self.messages.len() && self.messages[idx].1 != "user" {
            idx += 1;
        }
        let first_kept = self.messages[idx].0.clone();
        let summary = format!(
            "## Goal\n{}\n\n## Progress\n### Done\n- [x] {}",
            self.text(100, 300),
            self.text(30, 90)
        );
        self.tick(2_000, 30_000);
        self.emit(
            "compaction",
            json!({"summary": summary, "firstKeptEntryId": first_kept, "tokensBefore": acc / 4,
            "details": {"readFiles": [], "modifiedFiles": []}, "fromHook": false}),
        );
        self.compaction = Some((self.messages.len() - idx, self.messages.len()));
    }
}

/// Generates a session of `entries` entries (after the header) from `seed`.
pub fn generate(entries: usize, seed: u64) -> PiSession {
    let mut g = Gen {
        rng: StdRng::seed_from_u64(seed),
        n: entries,
        lines: Vec::new(),
        leaf: None,
        t_ms: 1_768_467_600_000,
        model: MODELS[0],
        thinking: "medium",
        user_ids: Vec::new(),
        messages: Vec::new(),
        compaction: None,
    };
    let session_id = format!(
        "019bc1a0-{:04x}-7{:03x}-8{:03x}-{:012x}",
        g.rng.random::<u16>(),
        g.rng.random::<u16>() & 0xfff,
        g.rng.random::<u16>() & 0xfff,
        g.rng.random::<u64>() & 0xffff_ffff_ffff
    );
    g.lines.push(format!(
        r#"{{"type":"session","version":3,"id":"{session_id}","timestamp":"{}","cwd":"/home/dev/project"}}"#,
        g.iso()
    ));
    if g.room() > 0 {
        g.emit("model_change", json!({"provider": g.model.0, "modelId": g.model.2}));
    }
    if g.room() > 0 {
        g.emit("thinking_level_change", json!({ "thinkingLevel": g.thinking }));
    }
    while g.room() > 0 {
        if g.compaction.is_none() && g.count() * 10 >= entries * 7 && g.room() >= 3 && !g.messages.is_empty() {
            g.compact();
            continue;
        }
        g.side_entries();
        if g.room() == 1 {
            let target = g.user_ids.last().cloned().or(g.leaf.clone()).unwrap_or_default();
            g.emit("label", json!({"targetId": target, "label": "end"}));
        } else if g.room() > 1 {
            g.turn();
        }
    }
    let context = match g.compaction {
        Some((kept, before)) => 1 + kept + (g.messages.len() - before),
        None => g.messages.len(),
    };
    let mut text = g.lines.join("\n");
    text.push('\n');
    let summary = json!({"sessionId": session_id, "entries": g.count(), "leafId": g.leaf, "bytes": text.len(),
        "expectedContextMessages": context,
        "expectedModel": {"provider": g.model.0, "modelId": g.model.2},
        "expectedThinkingLevel": g.thinking});
    PiSession { text, summary }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_bytes_and_the_chain_is_linear() {
        let a = generate(2_000, 7);
        assert_eq!(a.text, generate(2_000, 7).text);
        assert_ne!(a.text, generate(2_000, 8).text);
        let lines: Vec<Value> = a.text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2_001);
        assert_eq!(a.summary["entries"], 2_000);
        for w in lines[1..].windows(2) {
            assert_eq!(w[1]["parentId"], w[0]["id"]);
        }
        assert!(lines.iter().any(|l| l["type"] == "compaction"));
        assert_eq!(a.summary["leafId"], lines[2_000]["id"]);
    }
}
