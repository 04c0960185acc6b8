//! OAuth for a remote MCP server through the real binary, against the test kit's server that
//! requires it (`volcanic_testkit::mcp_oauth`: protected-resource and authorization-server
//! metadata, dynamic registration, PKCE, refresh, revocation): `/mcp` shows "needs login";
//! `/mcp login remote` sends a sign-in button; the test follows it as a browser would and pastes
//! the loopback address back (no public URL); the tool works, also after the access token
//! expired (refreshed); `/mcp logout remote` revokes and deletes the token file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::json;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::mcp_oauth::OAuthMcpServer;
use volcanic_testkit::model_server::{ModelServer, Turn};

/// The address of the newest URL button in `chat`.
fn button_url(tg: &BotApiServer, chat: i64) -> Option<String> {
    tg.messages(chat).into_iter().rev().find_map(|m| {
        m.reply_markup.as_ref()?["inline_keyboard"][0][0]["url"]
            .as_str()
            .map(str::to_owned)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_server_needs_login_signs_in_refreshes_and_logs_out() {
    let remote = OAuthMcpServer::start().await.unwrap();
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("No tools yet."));
    model.push(Turn::call("toolu_1", "remote__hello", json!({})));
    model.push(Turn::reply("It said hello."));
    model.push(Turn::call("toolu_2", "remote__hello", json!({})));
    model.push(Turn::reply("It said hello again."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let mcp = format!("[mcp]\n[mcp.servers.remote]\nurl = \"{}\"\n", remote.url());
    let env = Env::new(&model.url(), &format!("{}{mcp}", telegram_config(&tg, "")));
    let tokens = env
        .dir
        .path()
        .join("data/mcp/tokens")
        .join(OWNER.to_string())
        .join("remote.json");
    let bot = BotProcess::start(&env, TOKEN);

    // The first run finds it answering 401: needs login, and its tool is not offered.
    tg.push_update(updates::text_message(OWNER, OWNER, "hello?"));
    nth_text(&tg, OWNER, "No tools yet.", 1, &bot).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "/mcp"));
    let status = nth_text(&tg, OWNER, "MCP servers:", 1, &bot).await;
    assert!(
        status.contains("• remote: needs login (/mcp login remote signs in)"),
        "{status}"
    );

    // The sign-in button; the browser follows it and lands on the loopback address.
    let _ = rustls::crypto::ring::default_provider().install_default();
    assert_eq!(sign_in(&tg, &remote, 1, &bot).await, ["tools"]);
    assert_eq!(remote.registrations(), 1);
    assert_eq!(remote.grants(), ["authorization_code"]);
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(&tokens).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode, 0o600, "{}", tokens.display());

    // The tool works now.
    tg.push_update(updates::text_message(OWNER, OWNER, "say hello"));
    nth_text(&tg, OWNER, "It said hello.", 1, &bot).await;
    let requests = model.requests();
    assert_eq!(
        requests[2].tool_outputs().last(),
        Some(&("toolu_1".to_owned(), "hello from the protected server".to_owned())),
        "{}",
        bot.log()
    );

    // The access token expires: refreshed with the refresh token, the call goes through.
    remote.expire_access_tokens();
    tg.push_update(updates::text_message(OWNER, OWNER, "again"));
    nth_text(&tg, OWNER, "It said hello again.", 1, &bot).await;
    assert_eq!(
        model.requests()[4].tool_outputs().last(),
        Some(&("toolu_2".to_owned(), "hello from the protected server".to_owned())),
        "{}",
        bot.log()
    );
    assert!(
        remote.grants().contains(&"refresh_token".to_owned()),
        "{:?}",
        remote.grants()
    );
    assert_eq!(remote.calls(), 2);

    tg.push_update(updates::text_message(OWNER, OWNER, "/mcp logout remote"));
    let out = nth_text(&tg, OWNER, "Signed out of remote", 1, &bot).await;
    assert!(out.contains("revoked and deleted"), "{out}");
    assert!(!tokens.exists(), "the token file is still there");
    assert!(!remote.revocations().is_empty());
    // No token reached the log.
    assert!(!bot.log().contains("access-token-"), "a token reached the log");
    assert_eq!(bot.terminate(T), Some(0));
}

/// With `[http] public_url` the browser comes back to the bot's own listener: the sign-in
/// finishes there, the chat is told, and a forged callback is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_public_url_the_callback_route_finishes_the_sign_in() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let remote = OAuthMcpServer::start().await.unwrap();
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call("toolu_1", "remote__hello", json!({})));
    model.push(Turn::reply("It said hello."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}");
    let config = format!(
        "[http]\nlisten = \"127.0.0.1:{port}\"\npublic_url = \"{public}\"\n[mcp]\n[mcp.servers.remote]\nurl = \"{}\"\n",
        remote.url()
    );
    let env = Env::new(&model.url(), &format!("{}{config}", telegram_config(&tg, "")));
    let bot = BotProcess::start(&env, TOKEN);

    tg.push_update(updates::text_message(OWNER, OWNER, "/mcp login remote"));
    let asked = nth_text(&tg, OWNER, "sign in to remote", 1, &bot).await;
    assert!(asked.contains("I confirm here when it is done"), "{asked}");
    let url = button_url(&tg, OWNER).expect("no sign-in button");
    let browser = reqwest::Client::new();
    let forged = browser
        .get(format!("{public}/mcp/oauth/callback?code=x&state=forged"))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 400);
    // The browser follows every redirect: the authorization server, then the bot's callback.
    let landed = browser.get(&url).send().await.unwrap();
    assert!(
        landed
            .url()
            .as_str()
            .starts_with(&format!("{public}/mcp/oauth/callback?")),
        "{}",
        landed.url()
    );
    assert_eq!(landed.status(), 200);
    assert!(landed.text().await.unwrap().contains("Signed in to remote"));
    nth_text(&tg, OWNER, "Signed in to remote", 1, &bot).await;

    tg.push_update(updates::text_message(OWNER, OWNER, "say hello"));
    nth_text(&tg, OWNER, "It said hello.", 1, &bot).await;
    assert_eq!(
        model.requests()[1].tool_outputs().last(),
        Some(&("toolu_1".to_owned(), "hello from the protected server".to_owned())),
        "{}",
        bot.log()
    );
    assert_eq!(bot.terminate(T), Some(0));
}

/// In a group the sign-in link goes privately to the user who asked (the callback cannot tell
/// who opens it), and the group is told when it is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_group_the_sign_in_link_goes_privately() {
    const GROUP: i64 = -5002;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let remote = OAuthMcpServer::start().await.unwrap();
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}");
    let config = format!(
        "[http]\nlisten = \"127.0.0.1:{port}\"\npublic_url = \"{public}\"\n[mcp]\n[mcp.servers.remote]\nurl = \"{}\"\n",
        remote.url()
    );
    let telegram = telegram_config(&tg, &format!("allowed_chats = [{GROUP}]"));
    let env = Env::new(&model.url(), &format!("{telegram}{config}"));
    let bot = BotProcess::start(&env, TOKEN);
    let login = format!("/mcp@{} login remote", tg.bot_username());

    // No private chat with the user yet: the link is not shown in the group.
    tg.push_update(updates::group_message(GROUP, OWNER, &login, None));
    nth_text(&tg, GROUP, "open a private chat", 1, &bot).await;
    tg.add_chat(OWNER);
    tg.push_update(updates::group_message(GROUP, OWNER, &login, None));
    nth_text(&tg, GROUP, "in a private message", 1, &bot).await;
    assert!(tg.messages(GROUP).iter().all(|m| m.reply_markup.is_none()));
    tg.wait_for(|s| button_url(s, OWNER).is_some(), T).await.unwrap();
    let url = button_url(&tg, OWNER).unwrap();
    let landed = reqwest::Client::new().get(&url).send().await.unwrap();
    assert_eq!(landed.status(), 200);
    nth_text(&tg, GROUP, "Signed in to remote", 1, &bot).await;
    let tokens = env.dir.path().join("data/mcp/tokens").join(format!("g{}", -GROUP));
    assert!(
        tokens.join("remote.json").is_file(),
        "the group's token file is missing"
    );
    assert_eq!(bot.terminate(T), Some(0));
}

/// Signs in to `remote` for the `n`th time in `OWNER`'s chat: `/mcp login remote`, its button
/// followed as a browser would (PKCE), the loopback address it lands on pasted back (no public
/// URL). Returns the `scope` the authorization request asked, split and sorted.
async fn sign_in(tg: &BotApiServer, remote: &OAuthMcpServer, n: usize, bot: &BotProcess) -> Vec<String> {
    tg.push_update(updates::text_message(OWNER, OWNER, "/mcp login remote"));
    let asked = nth_text(tg, OWNER, "sign in to remote", n, bot).await;
    assert!(asked.contains("copy that whole address"), "{asked}");
    let url = button_url(tg, OWNER).expect("no sign-in button");
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let answer = browser.get(&url).send().await.unwrap();
    assert_eq!(answer.status(), 302, "{:?}", answer.text().await);
    let back = answer.headers()["location"].to_str().unwrap().to_owned();
    assert!(back.starts_with("http://127.0.0.1:53683/"), "{back}");
    tg.push_update(updates::text_message(OWNER, OWNER, &back));
    nth_text(tg, OWNER, "Signed in to remote", n, bot).await;
    let asked = remote.authorization_scopes();
    assert_eq!(asked.len(), n, "{asked:?}");
    let mut scopes: Vec<String> = asked[n - 1].split_whitespace().map(str::to_owned).collect();
    scopes.sort();
    scopes
}

/// Issue 31 point 5: after a 403 `insufficient_scope`, `/mcp login` asks for the scopes granted
/// so far with the one the challenge names (a step-up), so the new token keeps what the old one
/// could do: after two step-ups both scoped tools work with the one token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_up_sign_in_keeps_the_scopes_already_granted() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let remote = OAuthMcpServer::start().await.unwrap();
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call("toolu_1", "remote__read", json!({})));
    model.push(Turn::reply("Reading was refused."));
    model.push(Turn::call("toolu_2", "remote__read", json!({})));
    model.push(Turn::call("toolu_3", "remote__write", json!({})));
    model.push(Turn::reply("Read, writing was refused."));
    model.push(Turn::call("toolu_4", "remote__read", json!({})));
    model.push(Turn::call("toolu_5", "remote__write", json!({})));
    model.push(Turn::reply("Both went through."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let mcp = format!("[mcp]\n[mcp.servers.remote]\nurl = \"{}\"\n", remote.url());
    let env = Env::new(&model.url(), &format!("{}{mcp}", telegram_config(&tg, "")));
    let bot = BotProcess::start(&env, TOKEN);
    let output = |request: usize| model.requests()[request].tool_outputs().last().cloned().unwrap();

    // The first sign-in asks for what the resource's metadata names.
    assert_eq!(sign_in(&tg, &remote, 1, &bot).await, ["tools"]);
    tg.push_update(updates::text_message(OWNER, OWNER, "read it"));
    nth_text(&tg, OWNER, "Reading was refused.", 1, &bot).await;
    let (id, refused) = output(1);
    assert_eq!(id, "toolu_1");
    assert!(refused.contains("/mcp login remote"), "{refused}");

    // The first step-up: granted so far and the challenge's scope.
    assert_eq!(sign_in(&tg, &remote, 2, &bot).await, ["files:read", "tools"]);
    tg.push_update(updates::text_message(OWNER, OWNER, "read and write"));
    nth_text(&tg, OWNER, "Read, writing was refused.", 1, &bot).await;
    assert_eq!(output(3), ("toolu_2".to_owned(), "read with files:read".to_owned()));
    let (id, refused) = output(4);
    assert_eq!(id, "toolu_3");
    assert!(refused.contains("lacks a scope"), "{refused}");

    // The second keeps `files:read`, which neither the challenge nor the metadata names.
    assert_eq!(
        sign_in(&tg, &remote, 3, &bot).await,
        ["files:read", "files:write", "tools"]
    );
    tg.push_update(updates::text_message(OWNER, OWNER, "both again"));
    nth_text(&tg, OWNER, "Both went through.", 1, &bot).await;
    assert_eq!(output(6), ("toolu_4".to_owned(), "read with files:read".to_owned()));
    assert_eq!(output(7), ("toolu_5".to_owned(), "written with files:write".to_owned()));
    assert_eq!(remote.calls(), 3);
    assert_eq!(bot.terminate(T), Some(0));
}
