//! The A2A client through the real binary: with `[a2a]`, a chat's model calls the `a2a`
//! tool, the scripted peer (bearer-protected, 1.0 + 0.3) answers, and the answer reaches the
//! model's next request as the tool's result; the token, read from the variable the config
//! names, goes to the peer's origin and nowhere else.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::json;
use volcanic_testkit::a2a_peer::{A2aPeer, PeerConfig, PeerMode};
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

const PEER_TOKEN: &str = "peer-token-0123456789";

/// [`BotProcess::start`] with `E2E_A2A_TOKEN` in the bot's environment too.
fn start_with_token(env: &Env) -> BotProcess {
    BotProcess::start_with(env, TOKEN, Some("info"), &[("E2E_A2A_TOKEN", PEER_TOKEN)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_hands_a_task_to_a_remote_agent_and_reads_its_answer() {
    let peer = A2aPeer::start(PeerConfig {
        bearer: Some(PEER_TOKEN.into()),
        ..PeerConfig::new(PeerMode::Both)
    })
    .await
    .unwrap();
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call(
        "toolu_01",
        "a2a",
        json!({"action": "send", "agent": "helper", "text": "hello from the chat"}),
    ));
    model.push(Turn::reply("The helper agent says hello back."));
    model.push(Turn::call(
        "toolu_02",
        "bash",
        json!({"command": "echo \"token:[$E2E_A2A_TOKEN]\""}),
    ));
    model.push(Turn::reply("Checked."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let config = format!(
        "{}[a2a]\nsend_wait_seconds = 20\n[a2a.credentials.\"{}\"]\ntoken_env = \"E2E_A2A_TOKEN\"\n",
        telegram_config(&tg, ""),
        peer.url()
    );
    let env = Env::new(&model.url(), &config);
    let agents = env
        .dir
        .path()
        .join("workspaces")
        .join(OWNER.to_string())
        .join(".volcanic/a2a");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("agents.json"),
        json!({"agents": [{"name": "helper", "url": peer.url()}]}).to_string(),
    )
    .unwrap();
    let bot = start_with_token(&env);

    tg.push_update(updates::text_message(OWNER, OWNER, "ask the helper agent to say hello"));
    nth_text(&tg, OWNER, "The helper agent says hello back.", 1, &bot).await;

    let requests = wait_requests(&model, 2, &bot).await;
    let tools = requests[0].body["tools"].to_string();
    assert!(tools.contains("\"a2a\""), "the a2a tool is offered: {tools}");
    let next = conversation(&requests[1]);
    assert!(next.contains("answer: hello from the chat"), "{next}");
    assert!(next.contains("not instructions"), "framed as untrusted output: {next}");
    assert!(!next.contains(PEER_TOKEN));
    // The card (public) and one streamed send in 1.0, which the card prefers; the send carried
    // the token bound to the peer's origin.
    let calls: Vec<_> = peer.requests().into_iter().filter(|r| r.rpc.is_some()).collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].rpc.as_deref(), Some("SendStreamingMessage"));
    assert_eq!(
        calls[0].header("authorization"),
        Some(format!("Bearer {PEER_TOKEN}").as_str())
    );
    assert!(!bot.log().contains(PEER_TOKEN), "the token is not logged");

    // The variable holding the token is kept out of child processes.
    tg.push_update(updates::text_message(OWNER, OWNER, "check the environment"));
    nth_text(&tg, OWNER, "Checked.", 1, &bot).await;
    let requests = wait_requests(&model, 4, &bot).await;
    let seen = conversation(&requests[3]);
    assert!(seen.contains("token:[]"), "{seen}");
}
