//! Shortages past the session's opening, through the real binary: a model request that cannot
//! get a descriptor is told as a plain sentence, never as the OS error's text, and the chat
//! works again once descriptors return. (A message that meets the shortage while its session
//! opens waits and is answered: `hardening_listener`.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::hardening_listener::{exhaust, listener_config, start, wait_ready};
use crate::support::*;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// As `hardening_listener::FLOODABLE`, with held connections kept for a minute: the
/// provider's retries (about 7 s) run out while the descriptors are still gone.
const LIMITS: &str = "max_connections = 100000\nmax_connections_per_peer = 100000\nheader_timeout_secs = 60";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_request_without_descriptors_is_told_plainly_and_the_chat_recovers() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("first answer"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let env = Env::new(&model.url(), &listener_config(&tg, port, LIMITS));
    let bot = start(&env);
    wait_ready(port, &tg, &bot).await;
    // The session is open and its file written; then a model whose provider has no pooled
    // connection yet (each provider has its own client), so the next request must connect.
    tg.push_update(updates::text_message(OWNER, OWNER, "hello"));
    nth_text(&tg, OWNER, "first answer", 1, &bot).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "/model openai/gpt-5-mini"));
    nth_text(&tg, OWNER, "Model:", 1, &bot).await;

    let conns = exhaust(port, &bot).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "are you there?"));
    let told = nth_text(&tg, OWNER, "short of open files", 1, &bot).await;
    assert!(told.contains("LimitNOFILE"), "it says what the owner should do: {told}");
    for text in texts(&tg, OWNER) {
        assert!(
            !text.contains("os error") && !text.contains("Too many open files"),
            "an OS error reached the chat: {text}\n{}",
            bot.log()
        );
    }
    assert_eq!(model.requests().len(), 1, "no request reached the model");

    // Descriptors back: the chat works again.
    drop(conns);
    model.push(Turn::reply("back again"));
    tg.push_update(updates::text_message(OWNER, OWNER, "and now?"));
    nth_text(&tg, OWNER, "back again", 1, &bot).await;
}
