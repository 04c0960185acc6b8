//! `volcanic-bot console` against the scripted model server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use volcanic_testkit::model_server::{ModelServer, Turn};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_mode_runs_bash_then_answers_and_session_reopens() {
    let server = ModelServer::start().await.unwrap();
    server.push(Turn::call(
        "toolu_01",
        "bash",
        json!({"command": "echo hello > out.txt"}),
    ));
    server.push(Turn::reply("Done: wrote out.txt"));
    let env = Env::new(&server.url(), "");
    let out = env.console(&["-p", "make a file"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "Done: wrote out.txt\n");
    assert_eq!(
        std::fs::read_to_string(env.workspace().join("out.txt")).unwrap(),
        "hello\n"
    );

    // The second request carried the tool result, paired with its call.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs.iter().all(|r| !r.is_rejected()));
    assert_eq!(reqs[1].tool_outputs().len(), 1);

    // Continue the session file: the model sees the whole earlier conversation.
    let files = env.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    server.push(Turn::reply("still here"));
    let before = std::fs::read(&files[0]).unwrap();
    let out = env.console(&["--session", files[0].to_str().unwrap(), "-p", "again"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "still here\n");
    let third = &server.requests()[2];
    let msgs = third.messages();
    // user, assistant(tool_use), user(tool_result), assistant(text), user("again")
    assert_eq!(msgs.len(), 5, "{msgs:#?}");
    // Appending kept every existing byte.
    let after = std::fs::read(&files[0]).unwrap();
    assert!(after.starts_with(&before));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_mode_prints_events_in_spec_order() {
    let server = ModelServer::start().await.unwrap();
    server.push(Turn::call("toolu_01", "bash", json!({"command": "echo hi"})));
    server.push(Turn::reply("ok"));
    let env = Env::new(&server.url(), "");
    let out = env.console(&["--mode", "json", "-p", "go"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let types: Vec<String> = stdout(&out)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .filter(|t| t != "message_update" && t != "tool_execution_update")
        .collect();
    assert_eq!(
        types,
        vec![
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "tool_execution_start",
            "tool_execution_end",
            "message_start",
            "message_end",
            "turn_end",
            "turn_start",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end",
            "agent_settled",
        ]
    );
    assert!(stdout(&out).contains("\"type\":\"message_update\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_format_works_too() {
    let server = ModelServer::start().await.unwrap();
    server.push(Turn::call("call_1", "bash", json!({"command": "echo hi > o.txt"})));
    server.push(Turn::reply("done"));
    let env = Env::new(&server.url(), "");
    // gpt-4.1 does not reason: it stays on Chat Completions (`responses.rs` has the others).
    let out = env.console(&["--model", "openai/gpt-4.1", "-p", "go"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "done\n");
    assert!(env.workspace().join("o.txt").is_file());
    assert!(server.requests()[0].path.ends_with("/chat/completions"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_api_key_names_the_variable() {
    let server = ModelServer::start().await.unwrap();
    let env = Env::new(&server.url(), "");
    let out = env.console_with_env(&["-p", "hi"], &[]);
    // A setup error, found before the session starts (exit code 2, as a bad config).
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("E2E_ANTHROPIC_KEY"), "{}", stderr(&out));
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_model_is_named_with_the_known_ones() {
    let server = ModelServer::start().await.unwrap();
    let env = Env::new(&server.url(), "");
    let out = env.console(&["--model", "anthropic/claude-nope-9", "-p", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("--model: unknown model `anthropic/claude-nope-9`"),
        "{err}"
    );
    assert!(
        err.contains("anthropic/claude-sonnet-4-5"),
        "the known models are listed: {err}"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_500_is_reported_and_exit_is_nonzero() {
    let server = ModelServer::start().await.unwrap();
    for _ in 0..6 {
        server.push(Turn::error(500, "internal trouble"));
    }
    let env = Env::new(&server.url(), "");
    let out = env.console(&["-p", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("internal trouble"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_config_key_is_named() {
    let server = ModelServer::start().await.unwrap();
    let env = Env::new(&server.url(), "thinkng = \"high\"");
    let out = env.console(&["-p", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("thinkng"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interactive_console_streams_answers_and_runs_slash_commands() {
    let server = ModelServer::start().await.unwrap();
    server.push(Turn::reply("Hello from the model"));
    server.push(Turn::reply("a path, then"));
    let env = Env::new(&server.url(), "");
    let input = "hi there\n/session\n/model\n/help\n/frobnicate now\n/tmp/x is odd\n/quit\n";
    let out = env.console_stdin(&[], input.to_owned()).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Hello from the model"), "{text}");
    assert!(
        text.contains("model anthropic/claude-sonnet-4-5 · 2 messages"),
        "{text}"
    );
    assert!(text.contains("* anthropic/claude-sonnet-4-5"), "{text}");
    assert!(
        text.contains("/compact [instructions]"),
        "/help lists the commands: {text}"
    );
    assert!(
        stderr(&out).contains("unknown command /frobnicate: /help lists the commands"),
        "{}",
        stderr(&out)
    );
    // A mistyped command never reaches the model; a line that starts with a path does.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let last = serde_json::to_string(requests[1].messages()).unwrap();
    assert!(last.contains("/tmp/x is odd") && !last.contains("frobnicate"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_left_without_a_message_keeps_no_session_so_continue_finds_the_last_talk() {
    let server = ModelServer::start().await.unwrap();
    server.push(Turn::reply("First answer"));
    server.push(Turn::reply("Continued"));
    let env = Env::new(&server.url(), "");
    let out = env.console_with_env(&["-p", "remember the word kiwi"], &[("E2E_ANTHROPIC_KEY", "test-key")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(env.session_files().len(), 1);
    // Opened and left at once: nothing is kept.
    let out = env.console_stdin(&[], "/quit\n".to_owned()).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(env.session_files().len(), 1, "{:?}", env.session_files());
    let out = env.console_with_env(&["-c", "-p", "which word?"], &[("E2E_ANTHROPIC_KEY", "test-key")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let last = server.requests().pop().unwrap();
    assert!(
        conversation(&last).contains("kiwi"),
        "-c continued the last conversation"
    );
}
