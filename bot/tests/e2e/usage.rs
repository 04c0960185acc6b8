//! `/usage` through the real binary: the scripted model server bills known usage, and `/usage`
//! sends a chart (a valid, non-blank PNG of the expected size) whose caption gives the billed
//! numbers; an owner also sees the month's top chats and people.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use volcanic_testkit::bot_api::{ApiCall, BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// Decodes a PNG: its size and how many distinct colours its pixels have.
fn decode(bytes: &[u8]) -> ((u32, u32), usize) {
    let mut reader = png::Decoder::new(bytes).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let colours: std::collections::HashSet<&[u8]> =
        buf[..info.buffer_size()].chunks(info.color_type.samples()).collect();
    ((info.width, info.height), colours.len())
}

/// The bot with `[allowance]` (a cap that never refuses here) after one message in each chat of
/// `billed` whose answer (its text) the model bills at (input, output) tokens, in order; then
/// the owner asked `/usage`. Returns the chart's `sendPhoto` call with the rest.
async fn owners_usage_after(billed: &[(i64, &str, u64, u64)]) -> (ModelServer, BotApiServer, Env, BotProcess, ApiCall) {
    let model = ModelServer::start().await.unwrap();
    for (_, answer, input, output) in billed {
        model.push(Turn::reply(*answer).usage(*input, *output, 0, 0));
    }
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(
        &model.url(),
        &telegram_config(&tg, "[allowance]\nchat_daily_usd = 1000\n"),
    );
    let bot = BotProcess::start(&env, TOKEN);
    for (chat, answer, _, _) in billed {
        tg.push_update(updates::text_message(*chat, *chat, "hello"));
        wait_text(&tg, *chat, answer, &bot).await;
    }
    tg.push_update(updates::text_message(OWNER, OWNER, "/usage"));
    tg.wait_for(|s| !s.calls("sendPhoto").is_empty(), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\nbot log:\n{}", bot.log()));
    let call = tg.calls("sendPhoto").remove(0);
    (model, tg, env, bot, call)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_sends_a_chart_with_the_billed_numbers() {
    // claude-sonnet-4-5 at $3 / $15 per million tokens: 1,000,000 in + 100,000 out = $4.50.
    let (_model, tg, _env, bot, call) = owners_usage_after(&[(OWNER, "an expensive answer", 1_000_000, 100_000)]).await;
    assert_eq!(call.params["chat_id"], OWNER);
    let caption = call.params["caption"].as_str().unwrap_or_default().to_owned();
    assert!(
        caption.starts_with("Spent in this chat: today $4.50, this month $4.50."),
        "{caption}"
    );
    assert!(
        caption.contains(&format!("Top chats this month: {OWNER} $4.50."))
            && caption.contains(&format!("Top people this month: {OWNER} $4.50.")),
        "{caption}"
    );
    let file = &call.files[0];
    assert_eq!(&file.bytes[..8], b"\x89PNG\r\n\x1a\n");
    let (size, colours) = decode(&file.bytes);
    assert_eq!(size, (600, 300));
    // Background, guide lines, the axis and today's bar at least: not blank.
    assert!(colours >= 4, "{colours} colours");
    // Someone who is not an owner sees the chat's numbers only.
    tg.push_update(updates::text_message(FRIEND, FRIEND, "/usage"));
    tg.wait_for(|s| s.calls("sendPhoto").len() == 2, T)
        .await
        .unwrap_or_else(|e| panic!("{e}\nbot log:\n{}", bot.log()));
    let theirs = tg.calls("sendPhoto").remove(1);
    let caption = theirs.params["caption"].as_str().unwrap_or_default();
    assert!(
        caption.starts_with("Spent in this chat: today $0.00, this month $0.00.") && !caption.contains("Top"),
        "{caption}"
    );
}

/// Every file under `dir` (names and bytes), sorted.
fn files(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| (e.path(), std::fs::read(e.path()).unwrap()))
        .collect();
    out.sort();
    out
}

/// The text after `Spent in <subject>: ` in the first line with it, and the `Top ...` lines.
fn numbers(text: &str) -> (String, Vec<String>) {
    let spent = text
        .lines()
        .find_map(|l| l.split_once(": today ").map(|(_, n)| n.to_owned()))
        .unwrap_or_default();
    let top = text
        .lines()
        .filter(|l| l.starts_with("Top "))
        .map(str::to_owned)
        .collect();
    (spent, top)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_prints_the_chats_numbers_beside_the_running_bot_and_writes_nothing() {
    // $3 / $15 per million: $4.50 for the owner's chat, $0.30 for the friend's.
    let (model, _tg, env, _bot, call) = owners_usage_after(&[
        (OWNER, "an expensive answer", 1_000_000, 100_000),
        (FRIEND, "a cheaper answer", 100_000, 0),
    ])
    .await;
    let caption = call.params["caption"].as_str().unwrap_or_default().to_owned();

    let spend = env.dir.path().join("data/allowance/spend");
    let before = files(&spend);
    assert!(!before.is_empty(), "the bot keeps its spend in {}", spend.display());
    let out = env
        .console_stdin(&[], "/usage\n/usage 1002\n/usage bob\n/quit\n".to_owned())
        .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let ours = text
        .split("> ")
        .find(|s| s.contains("Spent in chat 1001"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        ours.contains("Spent in chat 1001: today $4.50, this month $4.50."),
        "{text}"
    );
    assert_eq!(
        numbers(ours),
        numbers(&caption),
        "the chat's /usage and the console agree"
    );
    assert!(
        ours.contains("Top chats this month: 1001 $4.50, 1002 $0.30."),
        "the console is the owner's: {text}"
    );
    assert!(
        text.contains("Spent in chat 1002: today $0.30, this month $0.30."),
        "{text}"
    );
    assert!(stderr(&out).contains("`bob` is not a chat id"), "{}", stderr(&out));
    assert_eq!(
        files(&spend),
        before,
        "the console wrote nothing to the bot's spend store"
    );
    assert_eq!(model.requests().len(), 2, "/usage is no prompt");
}
