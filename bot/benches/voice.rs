//! Voice benchmarks (issue 29's goals): the real `volcanic-bot` binary against the Bot API
//! double, the strict transcription double and the scripted model server. Run with
//! `cargo bench -p volcanic-bot --bench voice`; without `--bench` (as `cargo test --all-targets`
//! runs it) it does a tiny smoke version.
//!
//! Figures:
//! 1. The bot's added latency around the transcription of a 60 s voice note (OGG/Opus made by
//!    opusenc): from `getFile` reaching the Bot API double to the transcription request reaching
//!    the audio double (download, save, upload start), plus from the audio double's answer to
//!    the model request (the prompt built and sent). The service's own time (the double holds
//!    each answer 200 ms) lies between the two and is left out.
//! 2. Peak RSS growth of the bot while a 20 MB audio file is downloaded, saved and uploaded:
//!    `VmHWM` after it (the peak reset through `/proc/<pid>/clear_refs` first) minus `VmRSS`
//!    before.
//! 3. Speaking (`/voice on`): from the model request reaching the model double to `sendVoice`
//!    reaching the Bot API double, the speech service's own time (the double holds each answer
//!    200 ms) left out: the answer streamed back, the speech request, the audio written to a
//!    file with its length read, the upload. Beside it the same for a text answer (`/voice off`),
//!    the part that is not speaking's.

// A measurement binary, not library code: it panics on setup failure and prints its results.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

use std::time::Duration;

use volcanic_testkit::audio::{AudioServer, speak};
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

mod common;
use common::{Bot, Env, FIRST_ID, bin, percentile, wait_all_answered};

/// The service's own time per transcription.
const SERVICE_TIME: Duration = Duration::from_millis(200);
/// Answers waited for at most this long.
const WAIT: Duration = Duration::from_secs(60);

struct Setup {
    model: ModelServer,
    tg: BotApiServer,
    audio: AudioServer,
    _env: Env,
    bot: Bot,
}

async fn setup() -> Setup {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(common::TOKEN).await.unwrap();
    let audio = AudioServer::start(None).await.unwrap();
    audio.set_delay(SERVICE_TIME);
    audio.set_transcript("bench transcript");
    let voice = format!(
        "[voice]\nstt_base_url = \"{url}\"\ntts_base_url = \"{url}\"\nmax_seconds = 7200\n",
        url = audio.base_url()
    );
    let env = Env::new(&model.url(), &tg.url(), &[FIRST_ID], "");
    let path = env.dir.path().join("volcanic.toml");
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{config}{voice}")).unwrap();
    let bot = Bot::start(&env);
    tg.wait_for(|s| !s.get_updates_calls().is_empty(), WAIT)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    Setup {
        model,
        tg,
        audio,
        _env: env,
        bot,
    }
}

/// Figure 1: `samples` 60 s notes, one after the other; the added latency of each (ms).
async fn added_latency(samples: usize) -> Vec<f64> {
    let s = setup().await;
    let dir = tempfile::tempdir().unwrap();
    let note = speak::tone_note(60, dir.path(), "minute").unwrap_or_else(|e| panic!("{e}"));
    let bytes = std::fs::read(note).unwrap();
    let mut added = Vec::new();
    for n in 0..samples {
        let marker = format!("answer {n}");
        s.model.push(Turn::reply(marker.clone()));
        let file = s.tg.add_file(bytes.clone(), "");
        s.tg.push_update(updates::voice_message(FIRST_ID, FIRST_ID, &file, 60));
        wait_all_answered(&s.tg, &s.bot, &[FIRST_ID], &marker, WAIT).await;
        let get_file = s.tg.calls("getFile").last().unwrap().at;
        let t = s.audio.transcriptions().last().cloned().unwrap();
        let model_at = s.model.requests().last().unwrap().at;
        let before = t.received.duration_since(get_file);
        let after = model_at.duration_since(t.answered);
        added.push((before + after).as_secs_f64() * 1000.0);
    }
    assert!(s.audio.violations().is_empty(), "{:?}", s.audio.violations());
    added
}

/// Figure 3: `samples` answers to typed questions, one after the other, with `/voice mode`: from
/// the model request to the answer's `sendVoice` (spoken) or `sendMessage` (text) reaching the
/// Bot API double, the speech service's own time left out (ms).
async fn answer_latency(samples: usize, mode: &str) -> Vec<f64> {
    let s = setup().await;
    let dir = tempfile::tempdir().unwrap();
    let speech = speak::tone_note(5, dir.path(), "answer").unwrap_or_else(|e| panic!("{e}"));
    s.audio.set_speech(std::fs::read(speech).unwrap());
    s.tg.push_update(updates::text_message(FIRST_ID, FIRST_ID, &format!("/voice {mode}")));
    wait_all_answered(&s.tg, &s.bot, &[FIRST_ID], "Answers are", WAIT).await;
    let (method, service) = match mode {
        "on" => ("sendVoice", SERVICE_TIME),
        _ => ("sendMessage", Duration::ZERO),
    };
    let mut added = Vec::new();
    for n in 0..samples {
        let marker = format!("answer number {n}");
        s.model.push(Turn::reply(marker.clone()));
        s.tg.push_update(updates::text_message(FIRST_ID, FIRST_ID, &format!("question {n}")));
        wait_all_answered(&s.tg, &s.bot, &[FIRST_ID], &marker, WAIT).await;
        let sent = s.tg.calls(method).last().unwrap().at;
        let asked = s.model.requests().last().unwrap().at;
        added.push(sent.duration_since(asked).saturating_sub(service).as_secs_f64() * 1000.0);
    }
    assert_eq!(s.audio.speeches().len(), if mode == "on" { samples } else { 0 });
    assert!(s.audio.violations().is_empty(), "{:?}", s.audio.violations());
    added
}

/// Figure 2: the bot's peak RSS growth (MiB) around one `mb` MB audio file.
async fn rss_growth(mb: usize) -> f64 {
    let s = setup().await;
    // Warm: a first small note, so the clients and pools exist before measuring.
    s.model.push(Turn::reply("warm"));
    let small = s.tg.add_file(vec![7u8; 4096], "warm.mp3");
    s.tg.push_update(updates::audio_message(
        FIRST_ID,
        FIRST_ID,
        &small,
        1,
        "warm.mp3",
        "audio/mpeg",
    ));
    wait_all_answered(&s.tg, &s.bot, &[FIRST_ID], "warm", WAIT).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pid = s.bot.child.id();
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
    let before = s.bot.rss_mib();
    s.model.push(Turn::reply("big heard"));
    let big: Vec<u8> = (0..mb * 1000 * 1000).map(|i| (i % 251) as u8).collect();
    let file = s.tg.add_file(big, "big.mp3");
    s.tg.push_update(updates::audio_message(
        FIRST_ID,
        FIRST_ID,
        &file,
        3600,
        "big.mp3",
        "audio/mpeg",
    ));
    wait_all_answered(&s.tg, &s.bot, &[FIRST_ID], "big heard", WAIT).await;
    let t = s.audio.transcriptions().last().cloned().unwrap();
    assert_eq!(t.size, mb * 1000 * 1000, "the whole file was uploaded");
    s.bot.status_mib("VmHWM") - before
}

fn row(figure: &str, measured: f64, unit: &str, goal: &str, met: bool) {
    let met = if met { "yes" } else { "NO" };
    println!(
        "| {figure:<60} | {:>12} | {goal:>14} | {met:<4} |",
        format!("{measured:.2} {unit}")
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (samples, mb) = if full { (30, 20) } else { (2, 2) };
    let rt = common::runtime();
    rt.block_on(async {
        let added = added_latency(samples).await;
        eprintln!("added latency samples (ms): {added:.2?}");
        let growth = rss_growth(mb).await;
        let spoken = answer_latency(samples, "on").await;
        let written = answer_latency(samples, "off").await;
        eprintln!("spoken answer samples (ms): {spoken:.2?}\nwritten answer samples (ms): {written:.2?}");
        println!(
            "\nvolcanic-bot voice bench ({}; binary {})",
            if full { "full" } else { "smoke" },
            bin()
        );
        println!("| {:<60} | {:>12} | {:>14} | met? |", "figure", "measured", "goal");
        println!("|{:-<62}|{:-<14}|{:-<16}|------|", "", "", "");
        let p50 = percentile(&added, 50.0);
        row(
            &format!("added latency around a 60 s note p50 ({} notes)", added.len()),
            p50,
            "ms",
            "<= 50 ms",
            p50 <= 50.0,
        );
        row("added latency p99", percentile(&added, 99.0), "ms", "(reported)", true);
        row(
            &format!("peak RSS growth, {mb} MB audio file"),
            growth,
            "MiB",
            "<= 25 MiB",
            growth <= 25.0,
        );
        row(
            &format!("spoken answer: model request to sendVoice p50 ({samples})"),
            percentile(&spoken, 50.0),
            "ms",
            "(reported)",
            true,
        );
        row("spoken answer p99", percentile(&spoken, 99.0), "ms", "(reported)", true);
        row(
            &format!("text answer: model request to sendMessage p50 ({samples})"),
            percentile(&written, 50.0),
            "ms",
            "(reported)",
            true,
        );
    });
}
