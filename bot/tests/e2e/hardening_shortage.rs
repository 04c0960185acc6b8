//! Shortages past the session's opening, through the real binary: a model request that cannot
//! get a descriptor waits until descriptors return and is then answered, once, without the
//! chat ever seeing the OS error's text; a scheduled job whose prompt meets one, or whose run
//! cannot be recorded for one, fails, is told plainly and is retried. (A message that meets the shortage while its session opens waits and is
//! answered: `hardening_listener`.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::hardening_listener::{exhaust, listener_config, start, wait_ready};
use crate::support::*;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// As `hardening_listener::FLOODABLE`, with held connections kept for a minute: longer than
/// the provider's retries (about 7 s) would have lasted, had the shortage spent them.
const LIMITS: &str = "max_connections = 100000\nmax_connections_per_peer = 100000\nheader_timeout_secs = 60";

/// What the provider logs when a request meets a shortage and waits.
const WAITING: &str = "short of descriptors or memory";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_request_without_descriptors_waits_and_is_answered_once_they_return() {
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
    model.push(Turn::reply("answered once descriptors returned"));
    tg.push_update(updates::text_message(OWNER, OWNER, "are you there?"));
    eventually("the provider waits the shortage out", &bot, || {
        bot.log().contains(WAITING)
    })
    .await;
    // Longer than the provider's retries (1 + 2 + 4 s) would have taken.
    tokio::time::sleep(std::time::Duration::from_secs(8)).await;
    assert_eq!(model.requests().len(), 1, "no request reached the model meanwhile");
    let before = texts(&tg, OWNER).len();

    drop(conns);
    nth_text(&tg, OWNER, "answered once descriptors returned", 1, &bot).await;
    assert_eq!(model.requests().len(), 2, "the waiting request reached the model once");
    let shown = texts(&tg, OWNER);
    for text in &shown {
        assert!(
            !text.contains("os error") && !text.contains("Too many open files") && !text.contains("short of"),
            "an OS error or a failure reached the chat: {text}\n{}",
            bot.log()
        );
    }
    assert_eq!(shown.len(), before + 1, "the answer and nothing else: {shown:#?}");
}

/// A scheduled job whose prompt meets a shortage in the chat's session (its file system full,
/// the session open): the run fails and is retried by the scheduler, and what the chat is
/// shown of it (`/jobs`) says plainly what ran short, never the OS error's text. (With
/// descriptors exhausted the scheduler's own record of the run fails first; with a full
/// `data/sessions` the jobs file, in the workspace, is still written, so the prompt is handed on.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_prompt_meets_a_shortage_is_told_plainly() {
    use crate::hardening_disk::{fill, start_on_small_disk};
    use crate::scheduler::{jobs_file, plant_job, prompt_job};
    const PLAINLY: &str = "the bot's machine is short of disk space";
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("first answer"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let sessions = env.dir.path().join("data/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    // Due once the chat's session is open and its disk full (the set-up takes a few seconds).
    let first = chrono::Utc::now() + chrono::Duration::seconds(25);
    let hourly = serde_json::json!({"type": "every", "every_secs": 3600, "anchor": first, "time_zone": "UTC"});
    // Longer than a page: its line cannot fit in the room left in the session file's last page.
    let prompt = "Check the backups. ".repeat(400);
    plant_job(&env, OWNER, prompt_job("dsk001", &prompt, hourly, first));
    let bot = start_on_small_disk(&env, &sessions);
    tg.push_update(updates::text_message(OWNER, OWNER, "hello"));
    nth_text(&tg, OWNER, "first answer", 1, &bot).await;
    let filler = fill(&bot, &sessions);
    assert!(
        chrono::Utc::now() < first,
        "the set-up took longer than 25 s: the job was due before the disk was full"
    );

    tokio::time::sleep((first - chrono::Utc::now()).to_std().unwrap_or_default()).await;
    eventually("the job's run to fail", &bot, || {
        jobs_file(&env, OWNER)["jobs"][0]["last_run"]["status"] == "error"
    })
    .await;
    let jobs = jobs_file(&env, OWNER);
    let run = &jobs["jobs"][0]["last_run"];
    assert_eq!(run["error"], PLAINLY, "{run:#}\n{}", bot.log());
    tg.push_update(updates::text_message(OWNER, OWNER, "/jobs"));
    let listed = nth_text(&tg, OWNER, "dsk001", 1, &bot).await;
    assert!(listed.contains(&format!("Last run: error: {PLAINLY}")), "{listed}");
    for text in texts(&tg, OWNER) {
        assert!(
            !text.contains("os error") && !text.contains("No space left"),
            "an OS error reached the chat: {text}"
        );
    }
    assert_eq!(model.requests().len(), 1, "the job's prompt never reached the model");
    std::fs::remove_file(&filler).unwrap();
}

/// A scheduled job due while the bot has no descriptors left: the scheduler cannot record the
/// run before starting it, so the run fails before its prompt reaches the model. `/jobs` says
/// plainly what ran short, never the OS error's text, and the run is not lost: its retry (30 s
/// later, `slots::BACKOFF_SECS`), once descriptors have returned, hands the prompt on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_due_without_descriptors_is_told_plainly_and_retried() {
    use crate::scheduler::{plant_job, prompt_job};
    const PLAINLY: &str = "could not record the run before starting it: the bot's machine is short of open files";
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("backups checked"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let env = Env::new(&model.url(), &listener_config(&tg, port, LIMITS));
    // Due once the bot is up and its descriptors are exhausted (a few seconds).
    let first = chrono::Utc::now() + chrono::Duration::seconds(20);
    let hourly = serde_json::json!({"type": "every", "every_secs": 3600, "anchor": first, "time_zone": "UTC"});
    plant_job(&env, OWNER, prompt_job("fds001", "Check the backups.", hourly, first));
    let bot = start(&env);
    wait_ready(port, &tg, &bot).await;
    let conns = exhaust(port, &bot).await;
    assert!(
        chrono::Utc::now() < first,
        "the set-up took longer than 20 s: the job was due before descriptors ran out"
    );

    tokio::time::sleep((first - chrono::Utc::now()).to_std().unwrap_or_default()).await;
    // The run's failure is then saved, and that fails too while descriptors are short.
    eventually("the run's record to fail", &bot, || {
        bot.log().contains("cannot save the scheduler's jobs")
    })
    .await;
    let failed = std::time::Instant::now();
    assert!(model.requests().is_empty(), "the job's prompt reached the model");
    drop(conns);
    tg.push_update(updates::text_message(OWNER, OWNER, "/jobs"));
    let listed = nth_text(&tg, OWNER, "fds001", 1, &bot).await;
    assert!(
        listed.contains(&format!("Last run: error: {PLAINLY}")),
        "{listed}\n{}",
        bot.log()
    );

    // Within `T` of a moment a little before the retry is due.
    let retry = std::time::Duration::from_secs(25);
    tokio::time::sleep(retry.saturating_sub(failed.elapsed())).await;
    nth_text(&tg, OWNER, "backups checked", 1, &bot).await;
    assert_eq!(
        model.requests().len(),
        1,
        "the retried run's prompt reached the model once"
    );
    for text in texts(&tg, OWNER) {
        assert!(
            !text.contains("os error") && !text.contains("Too many open files"),
            "an OS error reached the chat: {text}"
        );
    }
}
