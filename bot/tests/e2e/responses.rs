//! The built-in `openai` provider's reasoning models through the real binary: the console runs a
//! tool call on `openai/gpt-5-mini` over the Responses API (reasoning replayed encrypted,
//! statelessly), then the same session continues on Chat Completions (`openai/gpt-4.1`) with
//! every request accepted by the strict model server.

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
