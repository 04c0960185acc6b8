//! Long conversations through the real binary: 300 turns with large tool outputs against the
//! model server with a 40,000-token window, in the Anthropic and the OpenAI format. Compaction
//! keeps every request inside the window (the server answers 400 "prompt is too long" /
//! `context_length_exceeded` otherwise, and 400 to an unpaired tool call or result), and the
//! session file, reopened, gives the model the same context.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use volcanic_testkit::model_server::{ModelServer, Turn, WireApi};

const WINDOW: u64 = 40_000;
const TURNS: usize = 300;

/// Answers like a model that reads `big.txt` for every question and then answers; summary
/// requests (compaction's) get a summary.
fn respond(server: &ModelServer) -> Arc<AtomicUsize> {
    let summaries = Arc::new(AtomicUsize::new(0));
    let calls = AtomicUsize::new(0);
    let s = summaries.clone();
    server.set_responder(move |api, body| {
        if body.to_string().contains("You summarise conversations") {
            let n = s.fetch_add(1, Ordering::SeqCst) + 1;
            return Some(Turn::reply(format!(
                "## Goal\nAnswer the questions.\n\n## Progress\n### Done\n- summary {n}"
            )));
        }
        let last = body["messages"].as_array()?.last()?.clone();
        let after_tool = match api {
            WireApi::Anthropic => last["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result")),
            WireApi::OpenAi => last["role"] == "tool",
            WireApi::Responses => last["type"] == "function_call_output",
        };
        let n = calls.fetch_add(1, Ordering::SeqCst);
        Some(if after_tool {
            Turn::reply(format!("answer {n}"))
        } else {
            Turn::call(format!("call_{n}"), "read", json!({"path": "big.txt"}))
        })
    });
    summaries
}

/// A message list without prompt-cache markers (they move to the newest user block).
fn without_cache_marks(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("cache_control");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

async fn long_conversation(provider_api: &str) {
    let server = ModelServer::start().await.unwrap();
    server.set_context_window(Some(WINDOW));
    let summaries = respond(&server);
    let base = if provider_api == "anthropic-messages" {
        server.anthropic_base_url()
    } else {
        server.openai_base_url()
    };
    // Memory's automatic curation (one more model call at each compaction) is not this test's
    // subject: the request count below is turns and summaries only.
    let env = Env::new(
        &server.url(),
        &format!(
            "[providers.small]\napi = \"{provider_api}\"\nbase_url = \"{base}\"\napi_key_env = \"E2E_ANTHROPIC_KEY\"\n\
             models = [{{ id = \"tiny\", context_window = {WINDOW}, max_tokens = 4096 }}]\n\
             [memory]\nauto = false\n"
        ),
    );
    // ≈ 1,500 tokens per read.
    std::fs::write(
        env.workspace().join("big.txt"),
        "0123456789 abcdefghij klmnopqrstuvwxyz\n".repeat(155),
    )
    .unwrap();
    let mut stdin: String = (0..TURNS).map(|i| format!("question {i}\n")).collect();
    stdin.push_str("/session\n/quit\n");
    let out = env
        .console_stdin(&["--mode", "json", "--model", "small/tiny"], stdin)
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    // In JSON mode stdout carries only events; the console's own text goes to stderr.
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    let ends: Vec<&Value> = events.iter().filter(|e| e["type"] == "compaction_end").collect();
    let n_summaries = summaries.load(Ordering::SeqCst);
    assert!(n_summaries >= 10, "{n_summaries} compactions in {TURNS} turns");
    assert_eq!(ends.len(), n_summaries);
    assert!(
        ends.iter().all(|e| e["success"] == true && e["reason"] == "threshold"),
        "{ends:?}"
    );
    assert_eq!(events.iter().filter(|e| e["type"] == "agent_end").count(), TURNS);
    let requests = server.requests();
    let rejected: Vec<_> = requests.iter().filter(|r| r.is_rejected()).collect();
    assert!(
        rejected.is_empty(),
        "{} rejected, first: {:?}",
        rejected.len(),
        rejected.first()
    );
    assert_eq!(requests.len(), 2 * TURNS + n_summaries);
    // `/session` shows the context inside the window.
    let human = stderr(&out);
    let line = human
        .lines()
        .find(|l| l.contains("messages · context"))
        .expect("the /session line");
    let context: u64 = line
        .split("context ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .map(|n| n.trim_start_matches('~').parse().unwrap())
        .unwrap();
    assert!(context > 0 && context < WINDOW, "{line}");
    assert!(line.contains(&format!("/ {WINDOW} tokens")), "{line}");

    // Reopen the file: the model sees the same context, then the new prompt.
    let files = env.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    let last = requests.last().unwrap().messages().to_vec();
    let out = env.console(&[
        "--session",
        files[0].to_str().unwrap(),
        "--model",
        "small/tiny",
        "-p",
        "one more",
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let after = server.requests();
    let reopened = after[requests.len()].messages().to_vec();
    assert_eq!(
        reopened.len(),
        last.len() + 2,
        "last context + the answer + the new prompt"
    );
    assert_eq!(
        without_cache_marks(Value::Array(reopened[..last.len()].to_vec())),
        without_cache_marks(Value::Array(last))
    );
    assert!(after.iter().all(|r| !r.is_rejected()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_300_turn_conversation_compacts_in_the_anthropic_format() {
    long_conversation("anthropic-messages").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_300_turn_conversation_compacts_in_the_openai_format() {
    long_conversation("openai-completions").await;
}
