//! Failover through the real binary: a primary model server that fails (529 on every request, or
//! a refused key) and a fallback server; the chat's answer comes from the fallback, says so, and
//! the next message asks the primary again. A stopped run is never failed over; unknown fallback
//! models are refused at start and when an owner sets them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

const PRIMARY: &str = "anthropic/claude-sonnet-4-5";
const BACKUP: &str = "backup/backup-1";

/// The fallback provider's section: an OpenAI-compatible server at `backup`.
fn backup_section(backup: &ModelServer) -> String {
    format!(
        "[providers.backup]\napi = \"openai-completions\"\nbase_url = \"{}/v1\"\napi_key_env = \"E2E_OPENAI_KEY\"\n\
         models = [{{ id = \"backup-1\", context_window = 128000, max_tokens = 4096 }}]\n",
        backup.url()
    )
}

/// Config text: `top` at the top level, then `[telegram]` and the fallback provider.
fn config(tg: &BotApiServer, backup: &ModelServer, top: &str) -> String {
    format!("{top}\n{}{}", telegram_config(tg, ""), backup_section(backup))
}

/// A primary that answers 529 to every request while `down` is set, else "primary is back".
fn overloaded_while(primary: &ModelServer, down: Arc<AtomicBool>) {
    primary.set_responder(move |_, _| {
        Some(if down.load(Ordering::SeqCst) {
            Turn::error(529, "Overloaded")
        } else {
            Turn::reply("primary is back")
        })
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overloaded_primary_fails_over_to_the_fallback_and_back() {
    let primary = ModelServer::start().await.unwrap();
    let backup = ModelServer::start().await.unwrap();
    let down = Arc::new(AtomicBool::new(true));
    overloaded_while(&primary, down.clone());
    backup.push(Turn::reply("the backup answers"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(
        &primary.url(),
        &config(&tg, &backup, &format!("fallback_models = [\"{BACKUP}\"]")),
    );
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "hello?"));
    wait_text(&tg, OWNER, "the backup answers", &bot).await;
    let answer = texts(&tg, OWNER)
        .into_iter()
        .find(|t| t.contains("the backup answers"))
        .unwrap();
    assert!(
        answer.ends_with(&format!("↪ answered by {BACKUP}: {PRIMARY} is unavailable right now")),
        "{answer}"
    );
    // The progress line (a message or a draft) named the model that answered.
    let progress = ["sendMessage", "editMessageText", "sendMessageDraft"]
        .iter()
        .flat_map(|m| tg.calls(m))
        .any(|c| c.params.to_string().contains(&format!("↪ {BACKUP}")));
    assert!(progress, "no progress line named {BACKUP}");
    // The primary's own retries came first (1 + 3 attempts), then one fallback request; no
    // error reached the chat.
    let tried = primary.requests().len();
    assert_eq!((tried, backup.requests().len()), (4, 1));
    assert!(
        !texts(&tg, OWNER).iter().any(|t| t.contains("⚠️")),
        "{:?}",
        texts(&tg, OWNER)
    );
    // The next message asks the primary first again.
    down.store(false, Ordering::SeqCst);
    tg.push_update(updates::text_message(OWNER, OWNER, "and now?"));
    wait_text(&tg, OWNER, "primary is back", &bot).await;
    assert_eq!((primary.requests().len(), backup.requests().len()), (tried + 1, 1));
    let back = texts(&tg, OWNER)
        .into_iter()
        .find(|t| t.contains("primary is back"))
        .unwrap();
    assert!(!back.contains("answered by"), "{back}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_fails_over_at_once_with_the_chats_own_list() {
    let primary = ModelServer::start().await.unwrap();
    let backup = ModelServer::start().await.unwrap();
    primary.set_responder(|_, _| Some(Turn::error(401, "invalid x-api-key")));
    backup.push(Turn::reply("answered without the primary"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    // No list in the config: the chat sets its own.
    let env = Env::new(&primary.url(), &config(&tg, &backup, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(FRIEND, FRIEND, "/model fallback backup/backup-1"));
    wait_text(&tg, FRIEND, "Only an owner may change the fallback models", &bot).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "/model fallback nope/none"));
    wait_text(&tg, OWNER, "unknown model nope/none", &bot).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "/model fallback backup/backup-1"));
    wait_text(&tg, OWNER, "Fallback models (this chat's): backup/backup-1", &bot).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "hello?"));
    wait_text(&tg, OWNER, "answered without the primary", &bot).await;
    // A refusal is not retried: one request to each.
    assert_eq!((primary.requests().len(), backup.requests().len()), (1, 1));
    let settings = std::fs::read_to_string(env.dir.path().join("data/chat-settings.json")).unwrap();
    assert!(settings.contains("\"fallback_models\""), "{settings}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_run_is_not_failed_over() {
    let primary = ModelServer::start().await.unwrap();
    let backup = ModelServer::start().await.unwrap();
    primary.push(Turn::reply("too late").delay(Duration::from_secs(30)));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(
        &primary.url(),
        &config(&tg, &backup, &format!("fallback_models = [\"{BACKUP}\"]")),
    );
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "take your time"));
    wait_requests(&primary, 1, &bot).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "/stop"));
    wait_text(&tg, OWNER, "Stopped", &bot).await;
    // Give a failover the time it would take, then check none happened.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(backup.requests().len(), 0);
    assert!(!bot.log().contains("failing over"), "{}", bot.log());
}

#[test]
fn an_unknown_fallback_model_is_refused_at_start() {
    let env = Env::new("http://127.0.0.1:9", "fallback_models = [\"anthropic/claude-nope-9\"]");
    let out = env.console(&["-p", "hi"]);
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(
        err.contains("config key `fallback_models`: unknown model `anthropic/claude-nope-9`"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_says_which_model_answered() {
    let primary = ModelServer::start().await.unwrap();
    let backup = ModelServer::start().await.unwrap();
    primary.set_responder(|_, _| Some(Turn::error(401, "invalid x-api-key")));
    backup.push(Turn::reply("from the backup"));
    let top = format!("fallback_models = [\"{BACKUP}\"]\n{}", backup_section(&backup));
    let env = Env::new(&primary.url(), &top);
    let out = env.console(&["-p", "hi"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "from the backup\n");
    assert!(
        stderr(&out).contains(&format!("↪ {PRIMARY} failed (401 "))
            && stderr(&out).contains(&format!("answering with {BACKUP}")),
        "{}",
        stderr(&out)
    );
}
