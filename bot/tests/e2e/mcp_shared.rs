//! A shared MCP server (`shared = true`) through the real binary: two chats use the pinned
//! `server-everything` over stdio, and one process serves both (beside a per-chat server that
//! starts once per chat); `/mcp` marks it shared; stopping the bot stops it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::json;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shared_server_process_serves_two_chats() {
    let script = volcanic_testkit::testdeps::server_everything();
    let model = ModelServer::start().await.unwrap();
    for chat in ["owner", "friend"] {
        model.push(Turn::call(
            format!("toolu_{chat}"),
            "shared__get-sum",
            json!({"a": 2, "b": 40}),
        ));
        model.push(Turn::reply(format!("Sum for {chat}: 42.")));
    }
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (shared_marker, own_marker) = (
        format!("mcp-shared-{}", std::process::id()),
        format!("mcp-own-{}", std::process::id()),
    );
    let server = |name: &str, marker: &str, shared: bool| {
        format!(
            "[mcp.servers.{name}]\ncommand = \"node\"\nargs = [\"{}\", \"stdio\", \"{marker}\"]\nshared = {shared}\n",
            script.display()
        )
    };
    let mcp = format!(
        "[mcp]\n{}{}",
        server("shared", &shared_marker, true),
        server("own", &own_marker, false)
    );
    let env = Env::new(&model.url(), &format!("{}{mcp}", telegram_config(&tg, "")));
    let bot = BotProcess::start(&env, TOKEN);

    tg.push_update(updates::text_message(OWNER, OWNER, "2 + 40?"));
    nth_text(&tg, OWNER, "Sum for owner: 42.", 1, &bot).await;
    tg.push_update(updates::text_message(FRIEND, FRIEND, "2 + 40?"));
    nth_text(&tg, FRIEND, "Sum for friend: 42.", 1, &bot).await;

    let requests = model.requests();
    assert_eq!(requests.len(), 4, "{}", bot.log());
    for (i, who) in [(1, "toolu_owner"), (3, "toolu_friend")] {
        assert_eq!(
            requests[i].tool_outputs().last(),
            Some(&(who.to_owned(), "The sum of 2 and 40 is 42.".to_owned())),
            "request {i}"
        );
    }
    for r in [&requests[0], &requests[2]] {
        let tools = r.body["tools"].to_string();
        assert!(
            tools.contains("shared__get-sum") && tools.contains("own__get-sum"),
            "{tools}"
        );
    }
    // One process for the shared server, one per chat for the other.
    assert_eq!(running(&shared_marker).len(), 1, "{:?}", running(&shared_marker));
    assert_eq!(running(&own_marker).len(), 2, "{:?}", running(&own_marker));

    tg.push_update(updates::text_message(FRIEND, FRIEND, "/mcp"));
    let status = nth_text(&tg, FRIEND, "MCP servers:", 1, &bot).await;
    assert!(status.contains("• shared (shared): ready, "), "{status}");
    assert!(status.contains("• own: ready, "), "{status}");

    assert_eq!(bot.terminate(T), Some(0));
    let deadline = std::time::Instant::now() + T;
    while !running(&shared_marker).is_empty() || !running(&own_marker).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "servers still running after the bot stopped"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
