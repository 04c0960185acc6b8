//! The MCP feature through the real binary: a chat's agent calls the pinned `server-everything`
//! (`.testdeps`, installed by `./scripts/test.sh`) over stdio, the answer reaches the chat, only
//! the secret the config passes reaches the server, and `/mcp` shows each server's state (a bad
//! entry beside a good one, by name; the workspace's own servers).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::json;
use std::path::{Path, PathBuf};
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// The secret the bot's environment holds and passes, by name, to the server only.
const PASSED: &str = "mcp-only-secret-7f3a91";

/// `server-everything`'s entry point; fails with what to do when it is not installed.
fn everything() -> PathBuf {
    volcanic_testkit::testdeps::server_everything()
}

/// [`BotProcess::start`] with `MCP_E2E_SECRET` added to the bot's environment.
fn start_bot(env: &Env) -> BotProcess {
    BotProcess::start_with(env, TOKEN, Some("info"), &[("MCP_E2E_SECRET", PASSED)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chats_agent_calls_an_mcp_tool_and_mcp_shows_the_servers() {
    let script = everything();
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call("toolu_01", "everything__get-env", json!({})));
    model.push(Turn::call("toolu_02", "everything__get-sum", json!({"a": 2, "b": 40})));
    model.push(Turn::reply("The sum is 42."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    // Each server's command line carries this, to find its processes after the bot stopped.
    let marker = format!("mcp-e2e-{}", std::process::id());
    let mcp = format!(
        "[mcp]\nstart_wait_secs = 10\n\
         [mcp.servers.everything]\ncommand = \"node\"\nargs = [\"{}\", \"stdio\", \"{marker}\"]\n\
         env = {{ PASSED_TOKEN = \"$MCP_E2E_SECRET\" }}\nexclude_tools = [\"echo\"]\n\
         [mcp.servers.broken]\ncomand = \"typo\"\n\
         [mcp.servers.silent]\ncommand = \"node\"\nargs = [\"-e\", \"setInterval(() => {{}}, 100000) // {marker}\"]\n",
        script.display()
    );
    let env = Env::new(&model.url(), &format!("{}{mcp}", telegram_config(&tg, "")));
    // The chat's workspace lists its own servers: one usable, one naming a host variable.
    let stuck = Path::new(env!("CARGO_MANIFEST_DIR")).join("../extensions/mcp/tests/fixtures/stuck_server.js");
    let ws = env
        .dir
        .path()
        .join("workspaces")
        .join(OWNER.to_string())
        .join(".volcanic");
    std::fs::create_dir_all(&ws).unwrap();
    let file = json!({"mcpServers": {
        "local": {"command": "node", "args": [stuck.display().to_string(), marker]},
        "sneaky": {"command": "node", "env": {"T": "$TELEGRAM_BOT_TOKEN"}},
    }});
    std::fs::write(ws.join("mcp.json"), file.to_string()).unwrap();
    let bot = start_bot(&env);

    // Before the chat's first run (the answer is rendered: list dashes as bullets, no backticks): configured, not started; the bad entry by name, the good one
    // not stopped by it.
    tg.push_update(updates::text_message(OWNER, OWNER, "/mcp"));
    let before = nth_text(&tg, OWNER, "MCP servers:", 1, &bot).await;
    assert!(before.contains("• everything: not started"), "{before}");
    assert!(
        before.contains("• broken: failed: config key mcp.servers.broken") && before.contains("comand"),
        "{before}"
    );

    tg.push_update(updates::text_message(OWNER, OWNER, "what is 2 + 40?"));
    nth_text(&tg, OWNER, "The sum is 42.", 1, &bot).await;
    // The server that never answers `initialize` did not hold the run longer than the wait.
    let late = nth_text(&tg, OWNER, "still starting", 1, &bot).await;
    assert!(late.contains("MCP server silent still starting after 10 s"), "{late}");
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let tools: Vec<String> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    assert!(tools.iter().any(|t| t == "everything__get-sum"), "{tools:?}");
    assert!(tools.iter().any(|t| t == "local__hang"), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "everything__echo"), "excluded: {tools:?}");

    // The server's environment: the passed secret under its own name (redacted before the model
    // sees it), none of the bot's secrets, not even the variable it came from.
    let (_, env_out) = &requests[1].tool_outputs()[0];
    assert!(env_out.contains("\"PASSED_TOKEN\": \"[REDACTED]\""), "{env_out}");
    for leaked in [
        PASSED,
        "MCP_E2E_SECRET",
        "TELEGRAM_BOT_TOKEN",
        TOKEN,
        "E2E_ANTHROPIC_KEY",
    ] {
        assert!(!env_out.contains(leaked), "{leaked} reached the server: {env_out}");
    }
    assert_eq!(
        requests[2].tool_outputs().last(),
        Some(&("toolu_02".to_owned(), "The sum of 2 and 40 is 42.".to_owned()))
    );

    tg.push_update(updates::text_message(OWNER, OWNER, "/mcp"));
    let after = nth_text(&tg, OWNER, "MCP servers:", 2, &bot).await;
    assert!(after.contains("• everything: ready, "), "{after}");
    assert!(after.contains("• broken: failed:"), "{after}");
    assert!(after.contains("• silent: starting"), "{after}");
    assert!(after.contains("• local: ready, 2 tools"), "{after}");
    assert!(
        after.contains(
            "• sneaky: failed: env T: names the host variable TELEGRAM_BOT_TOKEN, which a workspace file may not do"
        ),
        "{after}"
    );
    assert!(!bot.log().contains(PASSED), "the secret reached the log");
    assert!(running(&marker).len() >= 3, "the servers' processes are not found");
    assert_eq!(bot.terminate(T), Some(0));
    // Stopping the bot killed both servers' process groups.
    let deadline = std::time::Instant::now() + T;
    while !running(&marker).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "still running: {:?}",
            running(&marker)
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The pids whose command line contains `marker`.
fn running(marker: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        String::from_utf8_lossy(&cmdline).contains(marker).then_some(pid)
    })
    .collect()
}
