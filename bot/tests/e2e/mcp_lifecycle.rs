//! An MCP server's life through the real binary, against a Python `mcp==2.3.0` server over stdio
//! (`tests/peers/mcp_lifecycle.py`, run by the test venv's Python): a tool that adds a tool and
//! says `list_changed` (the next model request has it), an image result, a tool error, a question
//! from the server answered with buttons, and the server exiting mid-call (a clear error, then
//! restarted: `/mcp` says so).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::json;
use std::path::Path;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};
use volcanic_testkit::testdeps;

/// The names of the tools offered in a recorded request.
fn tool_names(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|a| a.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_server_changes_its_tools_asks_the_user_and_is_restarted_after_a_crash() {
    let python = testdeps::python().unwrap_or_else(|e| panic!("{e}"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers/mcp_lifecycle.py");
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call("toolu_01", "py__add_tool", json!({})));
    model.push(Turn::call("toolu_02", "py__greet", json!({"name": "Ada"})));
    model.push(Turn::call("toolu_03", "py__pixel", json!({})));
    model.push(Turn::call("toolu_04", "py__fail", json!({})));
    model.push(Turn::call("toolu_05", "py__ask", json!({})));
    model.push(Turn::call("toolu_06", "py__crash", json!({})));
    model.push(Turn::reply("All done."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let mcp = format!(
        "[mcp]\n[mcp.servers.py]\ncommand = \"{}\"\nargs = [\"{}\"]\n",
        python.display(),
        script.display()
    );
    let env = Env::new(&model.url(), &format!("{}{mcp}", telegram_config(&tg, "")));
    let bot = BotProcess::start(&env, TOKEN);

    tg.push_update(updates::text_message(OWNER, OWNER, "exercise the server"));
    // The server's question: first whether to answer, then the field as buttons.
    press_button(&tg, OWNER, "Answer").await;
    let asked = nth_text(&tg, OWNER, "Which colour?", 1, &bot).await;
    assert!(asked.contains("MCP server"), "{asked}");
    press_button(&tg, OWNER, "blue").await;
    nth_text(&tg, OWNER, "All done.", 1, &bot).await;

    let requests = model.requests();
    assert_eq!(requests.len(), 7, "{}", bot.log());
    assert!(!tool_names(&requests[0].body).contains(&"py__greet".to_owned()));
    // `list_changed` during the call: the very next request offers the new tool.
    assert!(
        tool_names(&requests[1].body).contains(&"py__greet".to_owned()),
        "{:?}",
        tool_names(&requests[1].body)
    );
    let output = |i: usize, id: &str| {
        requests[i]
            .tool_outputs()
            .into_iter()
            .find(|(t, _)| t == id)
            .map(|(_, o)| o)
            .unwrap_or_else(|| panic!("no output of {id} in request {i}"))
    };
    // Text first, then the structured content as JSON text.
    assert!(
        output(1, "toolu_01").starts_with("added greet"),
        "{}",
        output(1, "toolu_01")
    );
    assert!(
        output(2, "toolu_02").starts_with("Hello, Ada!"),
        "{}",
        output(2, "toolu_02")
    );
    let image = requests[3].body.to_string();
    assert!(image.contains("image/png"), "the image result is not an image: {image}");
    // `isError`: an error result (the SDK hides the exception's text).
    let failed = output(4, "toolu_04");
    assert!(failed.contains("Error executing tool fail"), "{failed}");
    assert!(
        requests[4].body.to_string().contains("\"is_error\":true"),
        "{}",
        requests[4].body
    );
    let answered = output(5, "toolu_05");
    assert!(answered.starts_with("the user chose blue"), "{answered}");
    let crashed = output(6, "toolu_06");
    assert!(crashed.contains("stopped during the call of `crash`"), "{crashed}");

    // Restarted with backoff: `/mcp` shows it back, without the tool the old process had added.
    let deadline = std::time::Instant::now() + T;
    let mut n = 0;
    loop {
        n += 1;
        tg.push_update(updates::text_message(OWNER, OWNER, "/mcp"));
        let state = nth_text(&tg, OWNER, "MCP servers:", n, &bot).await;
        if state.contains("• py: ready, 5 tools, restarted 1 time") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not restarted: {state}\n{}",
            bot.log()
        );
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    assert!(bot.log().contains("MCP server exited; restart 1 of 5"), "{}", bot.log());

    // `/mcp restart NAME`: a fresh process, the count starts afresh; an unknown name is said so.
    tg.push_update(updates::text_message(OWNER, OWNER, "/mcp restart nope"));
    nth_text(&tg, OWNER, "No MCP server nope in this chat", 1, &bot).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "/mcp restart py"));
    nth_text(&tg, OWNER, "Restarting MCP server py", 1, &bot).await;
    loop {
        n += 1;
        tg.push_update(updates::text_message(OWNER, OWNER, "/mcp"));
        let state = nth_text(&tg, OWNER, "MCP servers:", n, &bot).await;
        if state.contains("• py: ready, 5 tools") && !state.contains("restarted") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline + T,
            "not restarted: {state}\n{}",
            bot.log()
        );
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    assert!(
        bot.log().contains("MCP server restarted by /mcp restart"),
        "{}",
        bot.log()
    );
    assert_eq!(bot.terminate(T), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_mcp_tools_are_bounded_and_the_overflow_is_reported() {
    let python = testdeps::python().unwrap_or_else(|e| panic!("{e}"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers/mcp_lifecycle.py");
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("Fine."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let mcp = format!(
        "[mcp]\nmax_tools = 3\n[mcp.servers.py]\ncommand = \"{}\"\nargs = [\"{}\"]\n",
        python.display(),
        script.display()
    );
    let env = Env::new(&model.url(), &format!("{}{mcp}", telegram_config(&tg, "")));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "hello"));
    nth_text(&tg, OWNER, "Fine.", 1, &bot).await;
    let offered: Vec<String> = tool_names(&model.requests()[0].body)
        .into_iter()
        .filter(|n| n.starts_with("py__"))
        .collect();
    assert_eq!(offered.len(), 3, "{offered:?}");
    tg.push_update(updates::text_message(OWNER, OWNER, "/mcp"));
    let state = nth_text(&tg, OWNER, "MCP servers:", 1, &bot).await;
    assert!(
        state.contains("• py: ready, 3 tools (2 left out: over mcp.max_tools"),
        "{state}"
    );
    assert!(bot.log().contains("2 MCP tools left out"), "{}", bot.log());
    assert_eq!(bot.terminate(T), Some(0));
}
