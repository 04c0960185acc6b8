//! A spoken answer is delivered exactly once across `kill -9`: killed while the answer was being
//! spoken (before `sendVoice` reached Telegram), the restarted bot speaks and sends it, once;
//! killed with the `sendVoice` on the wire (which Telegram then took), it sends nothing more:
//! not the voice again, not its text. The model is asked once either way.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use crate::voice::Voice;
use crate::voice_speaking::voices;
use std::time::Duration;
use volcanic_testkit::bot_api::updates;
use volcanic_testkit::model_server::Turn;

const ANSWER: &str = "Your train leaves at ten past nine.";

/// `/voice on`, the speech ready, and a question whose answer is [`ANSWER`].
async fn ask(v: &Voice) {
    v.voice_mode("on", "Answers are spoken by").await;
    v.speech(ANSWER);
    v.model.push(Turn::reply(ANSWER));
    v.tg.push_update(updates::text_message(OWNER, OWNER, "when is my train?"));
}

/// Whether the journal finished every update (its last record for each is `done`).
fn journal(v: &Voice) -> String {
    std::fs::read_to_string(v.env.dir.path().join("data/inbound.jsonl")).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_speaking_the_answer_is_spoken_once_after_the_restart() {
    let v = Voice::start(crate::voice::KEY, "", "").await;
    v.audio.set_delay(Duration::from_secs(60));
    ask(&v).await;
    eventually("the speech request", &v.bot, || v.audio.requests() == 1).await;
    let stopped = v.kill9();
    stopped.audio.set_delay(Duration::ZERO);
    assert!(
        stopped.tg.calls("sendVoice").is_empty(),
        "nothing was sent before the kill"
    );

    let v = stopped.restart().await;
    let sent = v.wait_voices(1).await;
    assert_eq!(sent[0].visible_text.as_deref(), Some(ANSWER));
    eventually("the answer's update done", &v.bot, || journal(&v).contains("\"done\"")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(voices(&v).len(), 1);
    assert_eq!(count(&v.tg, OWNER, ANSWER), 1, "{:?}", texts(&v.tg, OWNER));
    assert_eq!(
        v.model.requests().len(),
        1,
        "the model was asked again\n{}",
        v.bot.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_with_the_voice_on_the_wire_nothing_is_sent_twice() {
    let v = Voice::start(crate::voice::KEY, "", "").await;
    v.tg.hold_next("sendVoice", |_| true);
    ask(&v).await;
    eventually("the voice message on the wire", &v.bot, || {
        !v.tg.held_calls().is_empty()
    })
    .await;
    assert!(
        journal(&v).contains(&format!("\"n\":{VOICE_CHUNK},\"s\":\"sending\"")),
        "{}",
        journal(&v)
    );
    let stopped = v.kill9();
    // Telegram took it although the bot never read the reply.
    assert_eq!(stopped.tg.release_held(true), 1);

    let v = stopped.restart().await;
    assert_eq!(voices(&v).len(), 1);
    eventually("the answer's update done", &v.bot, || journal(&v).contains("\"done\"")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(voices(&v).len(), 1, "the voice was not sent again");
    assert_eq!(count(&v.tg, OWNER, ANSWER), 1, "{:?}", texts(&v.tg, OWNER));
    assert_eq!(v.audio.speeches().len(), 1, "not spoken again");
    assert_eq!(
        v.model.requests().len(),
        1,
        "the model was asked again\n{}",
        v.bot.log()
    );
}

/// [`voice::answer::VOICE_CHUNK`](../../src/telegram/voice/answer.rs): the journal number of an
/// answer's voice message.
const VOICE_CHUNK: u32 = 1_000_000;
