//! The scheduler through the real binary: a user asks for a reminder, the model calls
//! `schedule`, the reminder's answer arrives on time; a restart in between loses nothing and
//! duplicates nothing; a watcher wakes the agent exactly once when its file appears.
//! Real time with stated tolerances (DESIGN.md: due in 3 s arrives within 3-5 s).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use std::time::Duration;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

pub(crate) fn jobs_file(env: &Env, chat: i64) -> Value {
    let path = env
        .dir
        .path()
        .join("workspaces")
        .join(chat.to_string())
        .join(".volcanic/scheduler/jobs.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_default()).unwrap_or(Value::Null)
}

fn instant(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().unwrap_or_default())
        .map(|d| d.with_timezone(&Utc))
        .unwrap_or_else(|e| panic!("{v}: {e}"))
}

/// Polls `probe` every 50 ms until it gives `Some` (up to `T` plus the 30 s of a watcher's
/// period); fails with `what`, the last probe's state and the bot's log.
async fn eventually<R>(what: &str, bot: &BotProcess, mut probe: impl FnMut() -> Result<R, String>) -> R {
    let deadline = std::time::Instant::now() + T + Duration::from_secs(30);
    loop {
        match probe() {
            Ok(r) => return r,
            Err(state) => assert!(
                std::time::Instant::now() < deadline,
                "never got to: {what}; now {state}\nbot log:\n{}",
                bot.log()
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the chat's jobs file satisfies `f`.
async fn wait_jobs(env: &Env, chat: i64, what: &str, bot: &BotProcess, f: impl Fn(&Value) -> bool) -> Value {
    eventually(what, bot, || {
        let v = jobs_file(env, chat);
        if f(&v) { Ok(v) } else { Err(format!("{v:#}")) }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reminder_asked_for_in_chat_arrives_on_time() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call(
        "call_1",
        "schedule",
        json!({"action": "add", "in": "3s", "text": "Remind the user to stretch."}),
    ));
    model.push(Turn::reply("Done: I'll remind you in 3 seconds."));
    model.push(Turn::reply("⏰ Time to stretch!"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(
        &model.url(),
        &format!("default_time_zone = \"Asia/Kathmandu\"\n{}", telegram_config(&tg, "")),
    );
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "remind me in 3 seconds to stretch"));
    nth_text(&tg, OWNER, "I'll remind you", 1, &bot).await;
    let jobs = jobs_file(&env, OWNER);
    let created = instant(&jobs["jobs"][0]["created"]);
    let due = instant(&jobs["jobs"][0]["next_run"]);
    // `in` counts from the tool call; `created` is stamped a moment later when the job is stored.
    assert!((2900..=3000).contains(&(due - created).num_milliseconds()), "{jobs:#}");
    // The tool told the model the fire time in the chat's zone (UTC+05:45).
    let told: Vec<String> = model.requests()[1].tool_outputs().into_iter().map(|(_, o)| o).collect();
    let local = due
        .with_timezone(&chrono_tz::Asia::Kathmandu)
        .format("%Y-%m-%d %H:%M")
        .to_string();
    assert!(
        told.iter()
            .any(|o| o.contains("Added job") && o.contains(&local) && o.contains("+0545")),
        "{told:?} lacks {local} +0545"
    );

    nth_text(&tg, OWNER, "Time to stretch", 1, &bot).await;
    let arrived = Utc::now();
    let after_add = (arrived - created).num_milliseconds();
    assert!(
        (3000..=5000).contains(&after_add),
        "due in 3 s, arrived {after_add} ms after it was scheduled"
    );
    let scheduled = serde_json::to_string(model.requests()[2].messages()).unwrap();
    assert!(
        scheduled.contains("[Scheduled job") && scheduled.contains("Remind the user to stretch."),
        "{scheduled}"
    );
    let jobs = wait_jobs(&env, OWNER, "run ok", &bot, |v| {
        v["jobs"][0]["last_run"]["status"] == "ok"
    })
    .await;
    assert_eq!(jobs["jobs"][0]["enabled"], false, "a one-shot is done");
    assert_eq!(jobs["jobs"][0]["last_run"]["delivery"], "sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_between_scheduling_and_firing_loses_nothing_and_duplicates_nothing() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call(
        "call_1",
        "schedule",
        json!({"action": "add", "in": "6s", "text": "Tell the user the tea is ready."}),
    ));
    model.push(Turn::reply("Scheduled the tea reminder."));
    model.push(Turn::reply("🍵 Your tea is ready."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(
        OWNER,
        OWNER,
        "remind me in 6 seconds that the tea is ready",
    ));
    nth_text(&tg, OWNER, "Scheduled the tea reminder", 1, &bot).await;
    assert_eq!(bot.terminate(Duration::from_secs(15)), Some(0));

    let bot = BotProcess::start(&env, TOKEN);
    nth_text(&tg, OWNER, "Your tea is ready", 1, &bot).await;
    wait_jobs(&env, OWNER, "run ok", &bot, |v| {
        v["jobs"][0]["last_run"]["status"] == "ok"
    })
    .await;
    assert_eq!(bot.terminate(Duration::from_secs(15)), Some(0));

    // Once more: the done reminder does not come again.
    let bot = BotProcess::start(&env, TOKEN);
    eventually("jobs loaded", &bot, || {
        if bot.log().contains("scheduled jobs loaded") {
            Ok(())
        } else {
            Err("not yet".into())
        }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let reminders = texts(&tg, OWNER)
        .into_iter()
        .filter(|t| t.contains("tea is ready"))
        .count();
    assert_eq!(reminders, 1, "{:?}", texts(&tg, OWNER));
    assert_eq!(model.requests().len(), 3, "one model call for the reminder, no replay");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_wakes_the_agent_exactly_once_when_its_file_appears() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call(
        "call_1",
        "schedule",
        json!({"action": "add", "kind": "watcher", "script": "watch.sh", "every": "30s",
               "text": "Tell the user what the file says."}),
    ));
    model.push(Turn::reply("Watching for the file."));
    model.push(Turn::reply("📄 The file appeared: hello from the file."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let ws = env.dir.path().join("workspaces").join(OWNER.to_string());
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(
        ws.join("watch.sh"),
        "if [ -f arrived.txt ] && [ ! -f .seen ]; then touch .seen; echo \"new file: $(cat arrived.txt)\"; fi\n",
    )
    .unwrap();
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "tell me when arrived.txt shows up"));
    nth_text(&tg, OWNER, "Watching for the file", 1, &bot).await;
    let first_slot = instant(&jobs_file(&env, OWNER)["jobs"][0]["next_run"]);

    // The first run finds nothing and says nothing.
    let jobs = wait_jobs(&env, OWNER, "first run ok", &bot, |v| {
        v["jobs"][0]["last_run"]["status"] == "ok" && v["jobs"][0]["last_run"]["slot"].as_str().is_some()
    })
    .await;
    assert_eq!(instant(&jobs["jobs"][0]["last_run"]["slot"]), first_slot);
    assert_eq!(model.requests().len(), 2, "a quiet watcher does not call the model");
    std::fs::write(ws.join("arrived.txt"), "hello from the file").unwrap();

    eventually("the watcher's reply", &bot, || {
        let all = texts(&tg, OWNER);
        if all.iter().any(|t| t.contains("The file appeared")) {
            Ok(())
        } else {
            Err(format!("{all:?}"))
        }
    })
    .await;
    let prompt = serde_json::to_string(model.requests()[2].messages()).unwrap();
    assert!(prompt.contains("new file: hello from the file"), "{prompt}");
    let second_slot = first_slot + chrono::Duration::seconds(30);
    wait_jobs(&env, OWNER, "second run ok", &bot, |v| {
        v["jobs"][0]["last_run"]["status"] == "ok"
            && v["jobs"][0]["last_run"]["slot"]
                .as_str()
                .is_some_and(|s| instant(&json!(s)) == second_slot)
    })
    .await;
    let replies = texts(&tg, OWNER)
        .into_iter()
        .filter(|t| t.contains("The file appeared"))
        .count();
    assert_eq!(replies, 1);
    assert_eq!(model.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_lists_the_chats_jobs_with_pause_resume_and_remove_buttons() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call(
        "call_1",
        "schedule",
        json!({"action": "add", "cron": "0 9 * * 1-5", "time_zone": "Europe/Berlin",
               "text": "Ask the user about the deploy."}),
    ));
    model.push(Turn::reply("Every weekday at 9, Berlin time."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(
        OWNER,
        OWNER,
        "every weekday at 9 ask me about the deploy",
    ));
    nth_text(&tg, OWNER, "Every weekday at 9", 1, &bot).await;
    let id = jobs_file(&env, OWNER)["jobs"][0]["id"].as_str().unwrap().to_owned();
    assert!(tg.commands().iter().any(|c| c.command == "jobs"), "{:?}", tg.commands());

    tg.push_update(updates::text_message(OWNER, OWNER, "/jobs"));
    let list = nth_text(&tg, OWNER, "Scheduled jobs", 1, &bot).await;
    assert!(
        list.contains(&id) && list.contains("cron `0 9 * * 1-5` (Europe/Berlin)"),
        "{list}"
    );
    press_button(&tg, OWNER, &format!("Pause {id}")).await;
    nth_text(&tg, OWNER, &format!("Paused job {id}"), 1, &bot).await;
    assert_eq!(jobs_file(&env, OWNER)["jobs"][0]["enabled"], false);

    tg.push_update(updates::text_message(OWNER, OWNER, "/jobs"));
    nth_text(&tg, OWNER, "(paused)", 1, &bot).await;
    press_button(&tg, OWNER, &format!("Remove {id}")).await;
    nth_text(&tg, OWNER, &format!("Removed job {id}"), 1, &bot).await;
    assert_eq!(jobs_file(&env, OWNER)["jobs"], json!([]));
    assert_eq!(model.requests().len(), 2, "/jobs never reaches the model");
}

/// Plants `job` (a `jobs.json` job object) as the only job of `chat`'s workspace, as the
/// `schedule` tool would have stored it.
pub(crate) fn plant_job(env: &Env, chat: i64, job: Value) {
    let dir = env
        .dir
        .path()
        .join("workspaces")
        .join(chat.to_string())
        .join(".volcanic/scheduler");
    std::fs::create_dir_all(&dir).unwrap();
    let file = json!({"version": 1, "jobs": [job]});
    std::fs::write(dir.join("jobs.json"), serde_json::to_vec_pretty(&file).unwrap()).unwrap();
}

/// Telegram (knowing the owner's chat) and the bot's files, with one prompt job `id` of the
/// owner (`text`) due once, `in_secs` seconds from now (UTC); the bot is not started yet.
async fn one_shot(model: &ModelServer, id: &str, text: &str, in_secs: i64) -> (BotApiServer, Env) {
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    tg.add_chat(OWNER);
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let at = Utc::now() + chrono::Duration::seconds(in_secs);
    let schedule = json!({"type": "at", "at": at, "time_zone": "UTC"});
    plant_job(&env, OWNER, prompt_job(id, text, schedule, at));
    (tg, env)
}

/// A prompt job of `OWNER` with `schedule`, first due at `first`.
pub(crate) fn prompt_job(id: &str, text: &str, schedule: Value, first: DateTime<Utc>) -> Value {
    json!({
        "id": id,
        "target": {"chat_id": OWNER},
        "kind": {"type": "prompt", "text": text},
        "schedule": schedule,
        "enabled": true,
        "created": Utc::now(),
        "next_run": first,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_run_killed_during_its_tool_is_told_once_and_its_next_slot_runs() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::call(
        "call_1",
        "bash",
        json!({"command": "echo ran >> backup.log; sleep 20"}),
    ));
    model.push(Turn::reply("Backup of the second slot finished."));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    // The user wrote to the bot before (Telegram knows the chat).
    tg.add_chat(OWNER);
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let first = Utc::now() + chrono::Duration::seconds(4);
    let schedule = json!({"type": "every", "every_secs": 30, "anchor": first, "time_zone": "UTC"});
    plant_job(&env, OWNER, prompt_job("bkp001", "Run the backup.", schedule, first));
    let ran = env.dir.path().join("workspaces/1001/backup.log");
    let count_runs = || std::fs::read_to_string(&ran).unwrap_or_default().lines().count();

    let bot = BotProcess::start(&env, TOKEN);
    eventually("the tool to start", &bot, || {
        if count_runs() == 1 {
            Ok(())
        } else {
            Err("no run yet".into())
        }
    })
    .await;
    // The tool's start was on disk before the tool ran.
    let run = &jobs_file(&env, OWNER)["jobs"][0]["last_run"];
    assert_eq!(run["status"], "running", "{run:#}");
    assert!(run["tool_started"].is_string(), "{run:#}");
    bot.kill9();

    let bot = BotProcess::start(&env, TOKEN);
    let note = nth_text(&tg, OWNER, "cut off by a restart", 1, &bot).await;
    assert!(
        note.contains("bkp001") && note.contains("after a tool had started"),
        "{note}"
    );
    let jobs = wait_jobs(&env, OWNER, "recorded interrupted and told", &bot, |v| {
        v["jobs"][0]["last_run"]["status"] == "interrupted" && v["jobs"][0]["last_run"].get("untold").is_none()
    })
    .await;
    assert_eq!(instant(&jobs["jobs"][0]["last_run"]["slot"]), first);

    // The next slot fires as usual, and the cut-off run was neither repeated nor told twice.
    let second = first + chrono::Duration::seconds(30);
    wait_jobs(&env, OWNER, "the second slot ok", &bot, |v| {
        v["jobs"][0]["last_run"]["status"] == "ok"
            && v["jobs"][0]["last_run"]["slot"]
                .as_str()
                .is_some_and(|s| instant(&json!(s)) == second)
    })
    .await;
    nth_text(&tg, OWNER, "Backup of the second slot finished", 1, &bot).await;
    assert_eq!(count_runs(), 1, "the tool ran again");
    assert_eq!(count(&tg, OWNER, "cut off by a restart"), 1, "{:?}", texts(&tg, OWNER));
    assert_eq!(model.requests().len(), 2, "one request per slot, no replay");
    let history = &jobs_file(&env, OWNER)["jobs"][0]["history"];
    assert_eq!(history[history.as_array().unwrap().len() - 1]["status"], "interrupted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_run_killed_before_its_tool_is_run_again_once() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("never delivered").stall_after(2));
    model.push(Turn::reply("🗄️ Backup report: all good."));
    let (tg, env) = one_shot(&model, "rep001", "Report on the backup.", 4).await;

    let bot = BotProcess::start(&env, TOKEN);
    // Killed while the model streams its answer (no tool yet).
    wait_requests(&model, 1, &bot).await;
    bot.kill9();
    let run = &jobs_file(&env, OWNER)["jobs"][0]["last_run"];
    assert_eq!(run["status"], "running", "{run:#}");
    assert!(run.get("tool_started").is_none(), "{run:#}");

    let bot = BotProcess::start(&env, TOKEN);
    nth_text(&tg, OWNER, "Backup report: all good", 1, &bot).await;
    let jobs = wait_jobs(&env, OWNER, "the re-run recorded ok", &bot, |v| {
        v["jobs"][0]["last_run"]["status"] == "ok"
    })
    .await;
    let run = &jobs["jobs"][0]["last_run"];
    assert_eq!(
        (run["rerun"].as_bool(), run["attempts"].as_u64()),
        (Some(true), Some(2)),
        "{run:#}"
    );
    assert_eq!(jobs["jobs"][0]["enabled"], false, "the one-shot is done");
    let rerun = conversation(&model.requests()[1]);
    assert!(rerun.contains("Report on the backup."), "{rerun}");

    // A further restart has nothing left to do: the answer came once, and the only word of the
    // cut is the first restart's "while I was down" report.
    assert_eq!(bot.terminate(T), Some(0));
    let bot = BotProcess::start(&env, TOKEN);
    eventually("jobs loaded", &bot, || {
        if bot.log().contains("scheduled jobs loaded") {
            Ok(())
        } else {
            Err("not yet".into())
        }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(count(&tg, OWNER, "Backup report: all good"), 1);
    assert_eq!(count(&tg, OWNER, "never delivered"), 0);
    assert_eq!(count(&tg, OWNER, "cut off"), 1, "{:?}", texts(&tg, OWNER));
    assert_eq!(
        count(&tg, OWNER, "cut off before any tool ran; run again now"),
        1,
        "{:?}",
        texts(&tg, OWNER)
    );
    assert_eq!(model.requests().len(), 2);
}

/// Killed with the answer on the wire: Telegram shows it, the bot never learns. The slot's re-run
/// finds the answer in the transcript and its chunk journaled as sent: not shown again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_answer_on_the_wire_at_a_crash_is_not_shown_again() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("🗄️ Backup report: all good."));
    let (tg, env) = one_shot(&model, "rep002", "Report on the backup.", 3).await;
    tg.hold_next("sendMessage", |p| {
        p["text"].as_str().is_some_and(|t| t.contains("Backup report"))
    });

    let bot = BotProcess::start(&env, TOKEN);
    eventually("the answer held on the wire", &bot, || {
        if tg.held_calls().is_empty() {
            Err("not yet".into())
        } else {
            Ok(())
        }
    })
    .await;
    bot.kill9();
    // Telegram got the whole request: it shows the answer.
    assert_eq!(tg.release_held(true), 1);
    let deadline = std::time::Instant::now() + T;
    while count(&tg, OWNER, "Backup report: all good") == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(count(&tg, OWNER, "Backup report: all good"), 1);

    let bot = BotProcess::start(&env, TOKEN);
    wait_jobs(&env, OWNER, "the slot recorded ok", &bot, |v| {
        v["jobs"][0]["last_run"]["status"] == "ok"
    })
    .await;
    assert_eq!(
        count(&tg, OWNER, "Backup report: all good"),
        1,
        "{:?}",
        texts(&tg, OWNER)
    );
    assert_eq!(model.requests().len(), 1, "the model was asked again");
    assert_eq!(bot.terminate(T), Some(0));
}

/// Killed after the answer was delivered whole but before the job's file recorded the run (a
/// window of milliseconds, made here by putting the file back as it was then): the slot runs
/// again, finds its answer in the transcript and its delivery journaled as done, and sends
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_answer_delivered_before_a_crash_is_not_shown_again() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("🗄️ Backup report: all good."));
    let (tg, env) = one_shot(&model, "rep003", "Report on the backup.", 3).await;

    let bot = BotProcess::start(&env, TOKEN);
    let done = wait_jobs(&env, OWNER, "the slot recorded ok", &bot, |v| {
        v["jobs"][0]["last_run"]["status"] == "ok"
    })
    .await;
    bot.kill9();
    assert_eq!(count(&tg, OWNER, "Backup report: all good"), 1);
    // The file as it was while the answer went out: the run still `running`.
    let mut then = done.clone();
    let job = &mut then["jobs"][0];
    job["enabled"] = json!(true);
    let run = job["last_run"].as_object_mut().unwrap();
    run.insert("status".into(), json!("running"));
    run.remove("finished");
    run.remove("delivery");
    let file = env
        .dir
        .path()
        .join(format!("workspaces/{OWNER}/.volcanic/scheduler/jobs.json"));
    std::fs::write(&file, serde_json::to_vec_pretty(&then).unwrap()).unwrap();

    let bot = BotProcess::start(&env, TOKEN);
    wait_jobs(&env, OWNER, "the slot run again and recorded ok", &bot, |v| {
        v["jobs"][0]["last_run"]["status"] == "ok" && v["jobs"][0]["last_run"]["rerun"] == true
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        count(&tg, OWNER, "Backup report: all good"),
        1,
        "{:?}",
        texts(&tg, OWNER)
    );
    assert_eq!(model.requests().len(), 1, "the model was asked again");
    assert_eq!(bot.terminate(T), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_reports_a_jobs_file_that_was_set_aside() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let dir = env.dir.path().join("workspaces/1001/.volcanic/scheduler");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("jobs.json"), b"{\"version\": 1, \"jobs\": [{\"id\": ").unwrap();
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "/jobs"));
    let text = nth_text(&tg, OWNER, "set aside", 1, &bot).await;
    assert!(
        text.contains("No scheduled jobs")
            && text.contains("not valid jobs JSON")
            && text.contains("jobs.json.corrupt-"),
        "{text}"
    );
    assert_eq!(model.requests().len(), 0, "/jobs never reaches the model");
}

/// SIGTERM while a scheduled prompt streams (no tool yet): the bot stops within its bound and
/// `jobs.json` says `interrupted` while it is down (not `running`), marked for the next start,
/// which runs the slot once more and records it ok.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_run_cut_off_by_sigterm_is_recorded_interrupted_and_run_again_once() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("never delivered").stall_after(2));
    model.push(Turn::reply("📬 Inbox: nothing urgent."));
    let (tg, env) = one_shot(&model, "inb001", "Check the inbox.", 4).await;

    let bot = BotProcess::start(&env, TOKEN);
    wait_requests(&model, 1, &bot).await;
    assert_eq!(bot.terminate(T), Some(0));
    let run = &jobs_file(&env, OWNER)["jobs"][0]["last_run"];
    assert_eq!(run["status"], "interrupted", "{run:#}");
    assert_eq!(run["shutdown"], true, "{run:#}");
    assert!(run["finished"].is_string(), "{run:#}");
    assert!(
        run["error"]
            .as_str()
            .unwrap_or_default()
            .starts_with("cut off by the bot's shutdown"),
        "{run:#}"
    );

    let bot = BotProcess::start(&env, TOKEN);
    nth_text(&tg, OWNER, "Inbox: nothing urgent", 1, &bot).await;
    let jobs = wait_jobs(&env, OWNER, "the re-run recorded ok", &bot, |v| {
        v["jobs"][0]["last_run"]["status"] == "ok"
    })
    .await;
    let run = &jobs["jobs"][0]["last_run"];
    assert_eq!(
        (run["rerun"].as_bool(), run["attempts"].as_u64(), run.get("shutdown")),
        (Some(true), Some(2), None),
        "{run:#}"
    );
    assert_eq!(count(&tg, OWNER, "never delivered"), 0);
    assert_eq!(model.requests().len(), 2);
    assert_eq!(bot.terminate(T), Some(0));
}
