//! Recall's index survives a `kill -9` in the middle of indexing (issue 28): the rows of new
//! lines commit with each file's indexed offset, so after a restart every message is found,
//! none twice.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../extensions/recall/tests/support/transcript.rs"]
mod transcript;

use crate::support::*;
use std::time::{Duration, Instant};
use volcanic_recall::Recall;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::ModelServer;

/// Sessions written before the bot starts, and messages in each.
const SESSIONS: usize = 8;
const PER_SESSION: usize = 6_000;
/// Unique words planted at the edges and in the middle of the history.
const PLANTED: [(usize, usize, &str); 5] = [
    (0, 0, "firstplantedword"),
    (0, PER_SESSION - 1, "endofonewordplant"),
    (3, 2_500, "middleplantedword"),
    (6, 10, "lateplantedword"),
    (SESSIONS - 1, PER_SESSION - 1, "lastplantedword"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_9_while_indexing_loses_no_message_from_search() {
    let model = ModelServer::start().await.unwrap();
    crate::recall::recall_model(&model);
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let state = env.dir.path().join("data");
    let main = state.join("sessions/1001/main");
    std::fs::create_dir_all(&main).unwrap();
    let mut words = transcript::Words::new(5_000, 7);
    let t0 = 1_767_225_600_000_i64;
    for s in 0..SESSIONS {
        let at = t0 + s as i64 * 86_400_000;
        let text = transcript::session(&format!("0000000{s}-kill"), at, PER_SESSION, |i| {
            let planted = PLANTED.iter().find(|(ps, pi, _)| *ps == s && *pi == i);
            let n = words.between(6, 30);
            match planted {
                Some((_, _, w)) => format!("{} {w} {}", words.text(n / 2), words.text(n / 2)),
                None => words.text(n),
            }
        });
        let stamp = transcript::iso(at).replace([':', '.'], "-");
        std::fs::write(main.join(format!("{stamp}_0000000{s}-kill.jsonl")), text).unwrap();
    }
    let total = (SESSIONS * PER_SESSION) as u64;

    // A search catches its chat up first (the background pass starts 30 s after the bot): ask,
    // and kill the bot once rows have committed.
    // (Its words are none of the planted ones, so its prompt is no hit of the search below.)
    let bot = BotProcess::start(&env, TOKEN);
    tg.push_update(updates::text_message(OWNER, OWNER, "recall unplantedword"));
    let recall = Recall::new(state.join("sessions"), state.join("recall"));
    let rows = || {
        recall
            .status()
            .iter()
            .find(|s| s.chat.as_str() == "1001")
            .and_then(|s| s.counts.clone().ok())
            .map_or(0, |(rows, _)| rows)
    };
    let deadline = Instant::now() + T;
    while rows() == 0 {
        assert!(Instant::now() < deadline, "no rows indexed\n{}", bot.log());
        std::thread::sleep(Duration::from_millis(2));
    }
    bot.kill9();
    let at_kill = rows();
    assert!(
        at_kill > 0 && at_kill < total,
        "the kill must come mid-indexing: {at_kill} of {total} rows (make the history longer)"
    );

    // Restarted: a search catches the index up from where it stopped.
    let bot = BotProcess::start(&env, TOKEN);
    let query: Vec<&str> = PLANTED.iter().map(|(_, _, w)| *w).collect();
    tg.push_update(updates::text_message(
        OWNER,
        OWNER,
        &format!("recall {}", query.join(" ")),
    ));
    nth_text(&tg, OWNER, "recall says", 1, &bot).await;
    let answer = crate::recall::last_tool_output(&model);
    for w in query {
        assert_eq!(answer.matches(&format!("**{w}**")).count(), 1, "{w} once in: {answer}");
    }
    // Every message is in the index once: with the prompt, and perhaps already the tool's
    // results and answers of the asks before and after the kill, at most 6 more.
    let now = rows();
    assert!(now > total && now <= total + 6, "{now} rows for {total} messages");
    let status = recall.status();
    let files = status
        .iter()
        .find(|s| s.chat.as_str() == "1001")
        .map(|s| s.counts.clone());
    assert_eq!(files.map(|c| c.map(|(_, files)| files)), Some(Ok(SESSIONS as u64)));
}
