//! A full disk through the real binary: the bot runs in a mount namespace of its own (`unshare
//! -Urm`, no privileges needed) whose `data/sessions` is a 1 MiB tmpfs, which the test fills.
//! The chat is told once what is wrong and what the owner should do, never the OS error; its
//! messages wait and are answered once there is space again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use std::io::Write;
use std::time::Duration;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// The one-time notice's words (`texts::DISK_FULL_WAITING`).
const NOTICE: &str = "The bot's disk is full.";

/// Starts the bot as `BotProcess::start` does, inside `unshare -Urm` with a 1 MiB tmpfs on
/// `sessions`.
pub(crate) fn start_on_small_disk(env: &Env, sessions: &std::path::Path) -> BotProcess {
    let mount = "mount -t tmpfs -o size=1m tmpfs \"$1\" && shift && exec \"$@\"";
    let program = ["unshare", "-Urm", "sh", "-c", mount, "sh"];
    let wrapper: Vec<&std::ffi::OsStr> = program
        .iter()
        .map(std::ffi::OsStr::new)
        .chain([sessions.as_os_str()])
        .collect();
    BotProcess::start_wrapped(env, TOKEN, Some("info"), &[], &wrapper)
}

/// Fills the file system of `dir` as the bot sees it (through `/proc/<pid>/root`).
pub(crate) fn fill(bot: &BotProcess, dir: &std::path::Path) -> std::path::PathBuf {
    let path = std::path::PathBuf::from(format!("/proc/{}/root{}/filler", bot.child.id(), dir.display()));
    let mut f = std::fs::File::create(&path).unwrap_or_else(|e| panic!("{}: {e}\n{}", path.display(), bot.log()));
    let block = vec![0u8; 64 * 1024];
    loop {
        if let Err(e) = f.write_all(&block).and_then(|()| f.flush()) {
            assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
            return path;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_is_told_once_and_the_messages_wait_for_space() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("first answer after the disk was freed"));
    model.push(Turn::reply("second answer after the disk was freed"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let sessions = env.dir.path().join("data/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let bot = start_on_small_disk(&env, &sessions);
    tg.wait_for(|s| !s.get_updates_calls().is_empty(), T)
        .await
        .unwrap_or_else(|e| panic!("no getUpdates: {e}\n{}", bot.log()));
    let filler = fill(&bot, &sessions);

    tg.push_update(updates::text_message(OWNER, OWNER, "hello on a full disk"));
    nth_text(&tg, OWNER, NOTICE, 1, &bot).await;
    tg.push_update(updates::text_message(OWNER, OWNER, "and another"));
    eventually("the second message to meet the full disk", &bot, || {
        bot.log().matches("short of resources").count() >= 1
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let told = texts(&tg, OWNER);
    assert_eq!(told.len(), 1, "told once, nothing else: {told:?}");
    assert!(told[0].contains("free some space"), "{}", told[0]);
    assert!(model.requests().is_empty());

    std::fs::remove_file(&filler).unwrap();
    nth_text(&tg, OWNER, "first answer after the disk was freed", 1, &bot).await;
    nth_text(&tg, OWNER, "second answer after the disk was freed", 1, &bot).await;
    for text in texts(&tg, OWNER) {
        assert!(!text.contains("os error") && !text.contains("No space left"), "{text}");
    }
    assert_eq!(count(&tg, OWNER, NOTICE), 1);
    // Each message reached the model once (a retried hand-over added nothing twice).
    let last = conversation(model.requests().last().unwrap());
    assert_eq!(last.matches("hello on a full disk").count(), 1, "{last}");
    assert_eq!(last.matches("and another").count(), 1, "{last}");
}
