//! State files are private whatever the umask, through the real binary: started with the
//! common umask 022 (outside the unit's `UMask=0077`), every file and folder the bot creates in
//! its state directory while answering (lock, journal, session, settings) has no group or other
//! permission bits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// Every path under `dir`, `dir` included, with its permission bits.
fn modes(dir: &Path) -> Vec<(PathBuf, u32)> {
    let mut out = vec![(
        dir.to_path_buf(),
        std::fs::metadata(dir).unwrap().permissions().mode() & 0o777,
    )];
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(modes(&p));
        } else {
            out.push((p.clone(), e.metadata().unwrap().permissions().mode() & 0o777));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_files_and_folders_are_private_under_a_permissive_umask() {
    // The usual login umask; the bot inherits it.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("noted"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "/model"));
    tg.push_update(updates::text_message(OWNER, OWNER, "remember this"));
    nth_text(&tg, OWNER, "noted", 1, &bot).await;
    let data = env.dir.path().join("data");
    eventually("a session file", &bot, || {
        !jsonl_files(&data.join("sessions")).is_empty()
    })
    .await;

    let found = modes(&data);
    let names: Vec<String> = found
        .iter()
        .map(|(p, _)| p.strip_prefix(&data).unwrap().display().to_string())
        .collect();
    for want in ["inbound.jsonl", "sessions"] {
        assert!(names.iter().any(|n| n == want), "{want} missing in {names:?}");
    }
    let open: Vec<String> = found
        .iter()
        .filter(|(_, mode)| mode & 0o077 != 0)
        .map(|(p, mode)| format!("{} {mode:o}", p.display()))
        .collect();
    assert!(open.is_empty(), "readable by others: {open:#?}");
}
