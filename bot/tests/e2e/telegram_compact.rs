//! `/compact` and `/session` through the real binary against the Bot API double and the model
//! server: the figures before and after, and the next request starting from the summary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use volcanic_testkit::bot_api::{BotApiServer, updates};

use volcanic_testkit::model_server::{ModelServer, Turn};

/// The `Context: [~]N / W tokens` figure of a `/session` reply.
fn context_tokens(session_reply: &str) -> u64 {
    let line = session_reply.lines().find(|l| l.starts_with("Context:")).unwrap();
    line["Context:".len()..]
        .trim()
        .trim_start_matches('~')
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_shrinks_the_context_and_session_shows_tokens_before_and_after() {
    let model = ModelServer::start().await.unwrap();
    model.set_responder(|_, body| {
        body.to_string()
            .contains("You summarise conversations")
            .then(|| Turn::reply("## Goal\nTalk about long answers.\n\n## Critical Context\n- the user is Ada"))
    });
    for i in 0..3 {
        model.push(Turn::reply(format!(
            "long answer {i}: {}",
            "lorem ipsum dolor ".repeat(300)
        )));
    }
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), &telegram_config(&tg, ""));
    let bot = BotProcess::start(&env, TOKEN);
    let chat = OWNER;
    for i in 0..3 {
        tg.push_update(updates::text_message(chat, chat, &format!("question {i}")));
        nth_text(&tg, chat, &format!("long answer {i}"), 1, &bot).await;
    }
    tg.push_update(updates::text_message(chat, chat, "/session"));
    let before = nth_text(&tg, chat, "Context:", 1, &bot).await;
    let before_tokens = context_tokens(&before);
    assert!(before_tokens > 3_000, "{before}");
    assert!(!before.contains("(compacted)"), "{before}");

    tg.push_update(updates::text_message(chat, chat, "/compact keep the user's name"));
    let done = nth_text(&tg, chat, "Compacted", 1, &bot).await;
    assert!(done.contains(&format!("context {before_tokens} →")), "{done}");
    let summary_request = model.requests().last().cloned().unwrap();
    assert!(
        serde_json::to_string(summary_request.messages())
            .unwrap()
            .contains("keep the user's name")
    );

    tg.push_update(updates::text_message(chat, chat, "/session"));
    let after = nth_text(&tg, chat, "Context:", 2, &bot).await;
    let after_tokens = context_tokens(&after);
    // Two of the three long answers are gone; the system prompt and tools stay.
    assert!(after_tokens < before_tokens * 2 / 3, "{before}\n---\n{after}");
    assert!(after.contains("(compacted)") && after.contains("Context: ~"), "{after}");

    // The next question goes out with the summary in place of the older turns.
    model.push(Turn::reply("still know you, Ada"));
    tg.push_update(updates::text_message(chat, chat, "who am I?"));
    nth_text(&tg, chat, "still know you", 1, &bot).await;
    let next = serde_json::to_string(model.requests().last().unwrap().messages()).unwrap();
    assert!(next.contains("the user is Ada") && next.contains("who am I?"), "{next}");
    assert!(!next.contains("long answer 0"), "the oldest turn was summarised");
}
