//! The built-in `openai` provider's reasoning models through the real binary: the console runs a
//! tool call on `openai/gpt-5-mini` over the Responses API (reasoning replayed encrypted,
//! statelessly), then the same session continues on Chat Completions (`openai/gpt-4.1`) with
//! every request accepted by the strict model server; and one conversation over all five back
//! ends (Anthropic, Responses, Chat Completions, Claude Code, Anthropic, Chat Completions) with a
//! tool call in each.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use volcanic_testkit::model_server::{ModelServer, Turn};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_runs_a_tool_call_over_responses_then_switches_to_chat_completions() {
    let server = ModelServer::start().await.unwrap();
    server.push(Turn::new().thinking("I will write the file.", None).tool_call(
        "call_e2e",
        "bash",
        json!({"command": "echo hi > r.txt"}),
    ));
    server.push(Turn::reply("Wrote r.txt."));
    let env = Env::new(&server.url(), "");
    let out = env.console(&["--model", "openai/gpt-5-mini", "--thinking", "low", "-p", "write r.txt"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "Wrote r.txt.\n");
    assert_eq!(std::fs::read_to_string(env.workspace().join("r.txt")).unwrap(), "hi\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.path, "/v1/responses");
        assert!(!request.is_rejected(), "{:?}", request.rejection);
        assert_eq!(request.body["store"], false);
    }
    assert_eq!(requests[0].body["reasoning"]["effort"], "low");
    let replayed: Vec<&serde_json::Value> = requests[1]
        .messages()
        .iter()
        .filter(|item| item["type"] == "reasoning")
        .collect();
    assert_eq!(replayed.len(), 1, "{:?}", requests[1].body);
    assert_eq!(replayed[0]["encrypted_content"], "enc_testkit_0000_0");
    assert_eq!(
        requests[1].tool_outputs(),
        [("call_e2e".to_owned(), "(no output)".to_owned())]
    );

    // The same session on a Chat Completions model: ids mapped, reasoning sent as text.
    let files = env.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    server.push(Turn::reply("Still here."));
    let out = env.console(&[
        "--session",
        files[0].to_str().unwrap(),
        "--model",
        "openai/gpt-4.1",
        "-p",
        "and now?",
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "Still here.\n");
    let third = &server.requests()[2];
    assert_eq!(third.path, "/v1/chat/completions");
    assert!(!third.is_rejected(), "{:?}", third.rejection);
    assert_eq!(third.tool_outputs().len(), 1);
}

/// Issue 17's switching test: one conversation over five back ends, a tool call in each step,
/// every model request accepted by the strict model server, each one carrying the whole
/// conversation before it. Claude Code runs its own `Bash` inside `claude`: the console's JSON
/// events show it as tool progress, the session keeps it as a `providerToolCall` with its
/// result, and the Anthropic and Chat Completions steps after it get it as text (no tool call
/// without its result, none executed by us).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_conversation_switches_across_five_back_ends_with_a_tool_call_in_each() {
    let fake = volcanic_testkit::fake_claude::path().unwrap_or_else(|e| panic!("the fake claude is needed: {e}"));
    let server = ModelServer::start().await.unwrap();
    let env = Env::new(&server.url(), "");
    let path = env.dir.path().join("volcanic.toml");
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        format!("{config}[providers.claude-code]\ncommand = \"{}\"\n", fake.display()),
    )
    .unwrap();

    let steps = [
        ("anthropic/claude-sonnet-4-5", "/v1/messages"),
        ("openai/gpt-5-mini", "/v1/responses"),
        ("openai/gpt-4.1", "/v1/chat/completions"),
        ("claude-code/sonnet", ""),
        ("anthropic/claude-opus-4-5", "/v1/messages"),
        ("openai/gpt-4.1", "/v1/chat/completions"),
    ];
    let mut session: Option<String> = None;
    let mut said: Vec<String> = Vec::new();
    let mut our_tool_runs = 0;
    let mut claude_ran = false;
    for (i, (model, path)) in steps.iter().enumerate() {
        let file = format!("step{i}.txt");
        let prompt = if path.is_empty() {
            format!("[tool] step {i}")
        } else {
            server.push(Turn::new().tool_call(
                format!("call_step{i}"),
                "bash",
                json!({"command": format!("echo {i} > {file}")}),
            ));
            server.push(Turn::reply(format!("step {i} done")));
            format!("step {i}: write {file}")
        };
        let before = server.requests().len();
        let mut args = vec!["--model", model, "-p", prompt.as_str()];
        if path.is_empty() {
            args.splice(0..0, ["--mode", "json"]);
        }
        if let Some(s) = &session {
            args.splice(0..0, ["--session", s.as_str()]);
        }
        let out = env.console(&args);
        assert_eq!(out.status.code(), Some(0), "{model}: stderr: {}", stderr(&out));
        if session.is_none() {
            let files = env.session_files();
            assert_eq!(files.len(), 1, "{files:?}");
            session = Some(files[0].to_str().unwrap().to_owned());
        }
        let requests = server.requests();
        if path.is_empty() {
            assert!(stdout(&out).contains("fake claude (new session"), "{}", stdout(&out));
            assert_eq!(requests.len(), before, "Claude Code is the model: no request here");
            claude_code_tool_is_progress_and_history(&stdout(&out), session.as_deref().unwrap());
            assert!(
                !env.workspace().join("notes.txt").exists(),
                "Claude's own call was run by us"
            );
            said.push(prompt);
            claude_ran = true;
            continue;
        }
        assert_eq!(stdout(&out), format!("step {i} done\n"), "{model}");
        assert_eq!(
            std::fs::read_to_string(env.workspace().join(&file)).unwrap(),
            format!("{i}\n")
        );
        assert_eq!(requests.len(), before + 2, "{model}");
        for r in &requests[before..] {
            assert_eq!(&r.path, path, "{model}");
            assert!(!r.is_rejected(), "{model}: {:?}\n{}", r.rejection, r.body);
            let body = r.body.to_string();
            for earlier in &said {
                assert!(
                    body.contains(earlier.as_str()),
                    "{model}: {earlier:?} missing from {body}"
                );
            }
            if claude_ran {
                // Claude's call and its result, as assistant text.
                for needle in ["Ran tool `Bash` with", "Result:\\nnotes.txt"] {
                    assert!(body.contains(needle), "{model}: {needle:?} missing from {body}");
                }
                assert!(
                    !body.contains("toolu_1"),
                    "{model}: Claude's call id sent as a call: {body}"
                );
            }
        }
        our_tool_runs += 1;
        assert_eq!(requests[before + 1].tool_outputs().len(), our_tool_runs, "{model}");
        said.push(format!("step {i}: write {file}"));
        said.push(format!("step {i} done"));
    }
}

/// The Claude Code step's JSON events show its `Bash` as tool progress (start with the
/// arguments, end with the result) and the session file keeps it as one `providerToolCall`
/// block with its result.
fn claude_code_tool_is_progress_and_history(json_lines: &str, session_file: &str) {
    let events: Vec<serde_json::Value> = json_lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let progress: Vec<String> = events
        .iter()
        .filter(|e| e["type"].as_str().is_some_and(|t| t.starts_with("tool_execution")))
        .map(|e| {
            format!(
                "{} {} {} {}",
                e["type"].as_str().unwrap(),
                e["toolCallId"],
                e["toolName"],
                e.get("args")
                    .map_or_else(|| e["result"]["content"][0]["text"].to_string(), ToString::to_string)
            )
        })
        .collect();
    assert_eq!(
        progress,
        [
            r#"tool_execution_start "toolu_1" "Bash" {"command":"ls"}"#,
            r#"tool_execution_end "toolu_1" "Bash" "notes.txt""#,
        ]
    );
    let updates: Vec<&str> = events
        .iter()
        .filter_map(|e| e["assistantMessageEvent"]["type"].as_str())
        .filter(|t| t.starts_with("provider_"))
        .collect();
    assert_eq!(updates, ["provider_toolcall", "provider_toolresult"]);
    let file = std::fs::read_to_string(session_file).unwrap();
    let blocks: Vec<serde_json::Value> = file
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["message"]["provider"] == "claude-code")
        .flat_map(|e| e["message"]["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "providerToolCall")
        .collect();
    assert_eq!(
        blocks,
        [
            json!({"type": "providerToolCall", "id": "toolu_1", "name": "Bash", "arguments": {"command": "ls"},
            "result": {"content": [{"type": "text", "text": "notes.txt"}], "isError": false}})
        ]
    );
}
