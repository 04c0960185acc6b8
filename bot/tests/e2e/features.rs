//! Host features through the real binary. The example feature (`bot/src/features/example.rs`,
//! compiled in with the cargo feature `example-feature`, as `scripts/test.sh` builds the binary,
//! and on only with a `[example]` section; without the feature the bot refuses `[example]` and
//! the first wait fails with that error in the log) has a command, a per-chat tool,
//! an extension command and an HTTP route, all in one file: each must reach the user, the model
//! or the listener without the host naming it anywhere.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// An `[http]` section on a free port and the example feature answering `reply`.
fn example_config(tg: &BotApiServer, port: u16, reply: &str) -> String {
    format!(
        "{}[http]\nlisten = \"127.0.0.1:{port}\"\npublic_url = \"http://127.0.0.1:{port}\"\n\
         [example]\nreply = \"{reply}\"\n",
        telegram_config(tg, "")
    )
}

/// The tool names of a model request (Anthropic's `tools[].name`).
fn tool_names(r: &volcanic_testkit::model_server::RecordedRequest) -> Vec<String> {
    r.body["tools"]
        .as_array()
        .map(|a| a.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feature_brings_its_command_per_chat_tool_and_route_through_the_real_binary() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call("toolu_01", "example_where", json!({})));
    model.push(Turn::reply("You are in chat 1001."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let env = Env::new(&model.url(), &example_config(&tg, port, "pong from the example"));
    let bot = BotProcess::start(&env, TOKEN);

    // Announced: the feature's command among the built-ins (before the owners'), the command
    // its per-chat extension registers among the extension commands.
    tg.wait_for(|s| !s.commands().is_empty(), T)
        .await
        .unwrap_or_else(|e| panic!("no setMyCommands: {e}\n{}", bot.log()));
    let names: Vec<String> = tg.commands().into_iter().map(|c| c.command).collect();
    let at = |n: &str| {
        names
            .iter()
            .position(|x| x == n)
            .unwrap_or_else(|| panic!("/{n} missing from {names:?}"))
    };
    assert!(
        at("session") < at("example") && at("example") < at("allow"),
        "{names:?}"
    );
    assert!(at("deny") < at("example_note"), "{names:?}");
    let described = tg.commands().into_iter().find(|c| c.command == "example").unwrap();
    assert_eq!(described.description, "The example feature answers");

    // Answered by the feature, with the chat's key and zone.
    tg.push_update(updates::text_message(OWNER, OWNER, "/example"));
    let answer = nth_text(&tg, OWNER, "pong from the example", 1, &bot).await;
    assert_eq!(answer, "pong from the example (chat 1001, time zone UTC)");
    // Its extension command is dispatched through the session's registry.
    tg.push_update(updates::text_message(OWNER, OWNER, "/example_note buy milk"));
    nth_text(&tg, OWNER, "example note: buy milk", 1, &bot).await;
    // /help carries the feature's line.
    tg.push_update(updates::text_message(OWNER, OWNER, "/help"));
    let help = nth_text(&tg, OWNER, "/example - the example feature answers", 1, &bot).await;
    assert!(help.contains("/calendar connect|status|disconnect"), "{help}");
    assert!(model.requests().is_empty(), "commands never reach the model");

    // The per-chat tool reaches the model request, and runs bound to the chat.
    tg.push_update(updates::text_message(OWNER, OWNER, "where am I?"));
    nth_text(&tg, OWNER, "You are in chat 1001.", 1, &bot).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let tools = tool_names(&requests[0]);
    assert!(tools.iter().any(|t| t == "example_where"), "{tools:?}");
    assert_eq!(
        requests[1].tool_outputs(),
        vec![(
            "toolu_01".to_owned(),
            "chat 1001, time zone UTC, workspace 1001".to_owned()
        )]
    );

    // The route answers on the bot's one listener.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let page = reqwest::get(format!("http://127.0.0.1:{port}/example/ping"))
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.text().await.unwrap(), "pong from the example");
    drop(bot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_its_section_the_example_feature_is_not_there() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("hello"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.wait_for(|s| !s.commands().is_empty(), T)
        .await
        .unwrap_or_else(|e| panic!("no setMyCommands: {e}\n{}", bot.log()));
    let names: Vec<String> = tg.commands().into_iter().map(|c| c.command).collect();
    assert!(!names.iter().any(|n| n.starts_with("example")), "{names:?}");
    assert!(names.iter().any(|n| n == "jobs"), "{names:?}");
    tg.push_update(updates::text_message(OWNER, OWNER, "hi"));
    nth_text(&tg, OWNER, "hello", 1, &bot).await;
    let tools = tool_names(&model.requests()[0]);
    assert!(!tools.iter().any(|t| t == "example_where"), "{tools:?}");
    assert!(tools.iter().any(|t| t == "schedule"), "{tools:?}");
}

#[test]
fn a_features_section_no_feature_reads_is_refused_with_its_key() {
    let env = Env::new("http://127.0.0.1:9", "[exampel]\nreply = \"x\"\n");
    let out = env.console(&["-p", "hi"]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("config key `exampel`: not a setting, and no feature reads it") && err.contains("example"),
        "{err}"
    );
}

#[test]
fn a_bad_key_in_a_features_section_is_refused_with_its_key() {
    let env = Env::new("http://127.0.0.1:9", "[example]\nrepyl = \"x\"\n");
    let out = env.console(&["-p", "hi"]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("config key `example`") && err.contains("repyl"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_gets_the_example_features_per_session_extension() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call("toolu_01", "example_where", json!({})));
    model.push(Turn::reply("done"));
    let env = Env::new(&model.url(), "[example]\n");
    let out = env.console(&["-p", "where am I?"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let requests = model.requests();
    let tools = tool_names(&requests[0]);
    assert!(tools.iter().any(|t| t == "example_where"), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "schedule" || t == "calendar"), "{tools:?}");
    assert_eq!(
        requests[1].tool_outputs(),
        vec![(
            "toolu_01".to_owned(),
            "no chat (console), time zone UTC, workspace ws".to_owned()
        )]
    );
}
