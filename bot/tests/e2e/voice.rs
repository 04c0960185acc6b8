//! Voice through the real binary: real spoken notes (espeak-ng → opusenc) go from the Bot API
//! double's `getFile` to the strict transcription double, and the model's request holds the
//! transcript; a reminder spoken as a note becomes a job in the chat's zone; over-long and
//! over-size notes are kept and not sent; 401, 429 and 5xx from the service are retried or
//! reported, and the model still hears that a note came; what was heard leads the draft, or the
//! progress line without live answers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::kinds::last_user_text;
use crate::support::*;
use chrono::{Datelike, TimeZone};
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use volcanic_testkit::audio::{AudioServer, parse_opus, speak};
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, RecordedRequest, Turn};

/// The transcription key the bot reads from `E2E_VOICE_KEY`.
pub(crate) const KEY: &str = "sk-voice-e2e-key-0123456789";

/// The bot with the model, Bot API and audio doubles.
pub(crate) struct Voice {
    pub(crate) model: ModelServer,
    pub(crate) tg: BotApiServer,
    pub(crate) audio: AudioServer,
    pub(crate) env: Env,
    pub(crate) bot: BotProcess,
}

/// The doubles and the state of a [`Voice`] whose bot was killed.
pub(crate) struct Stopped {
    pub(crate) model: ModelServer,
    pub(crate) tg: BotApiServer,
    pub(crate) audio: AudioServer,
    pub(crate) env: Env,
}

impl Stopped {
    /// Starts the bot again on the same state and doubles.
    pub(crate) async fn restart(self) -> Voice {
        self.start_wrapped(&[]).await
    }

    /// Starts the bot through `wrapper` (a program and its arguments, the bot's command line
    /// appended).
    pub(crate) async fn start_wrapped(self, wrapper: &[&std::ffi::OsStr]) -> Voice {
        let bot = start_bot(&self.env, &self.tg, wrapper).await;
        let Stopped { model, tg, audio, env } = self;
        Voice {
            model,
            tg,
            audio,
            env,
            bot,
        }
    }
}

/// Starts the bot on `env` with [`KEY`] (through `wrapper`, if any) and waits until it polls.
async fn start_bot(env: &Env, tg: &BotApiServer, wrapper: &[&std::ffi::OsStr]) -> BotProcess {
    let bot = BotProcess::start_wrapped(env, TOKEN, Some("info"), &[("E2E_VOICE_KEY", KEY)], wrapper);
    let polls = tg.get_updates_calls().len();
    tg.wait_for(|s| s.get_updates_calls().len() > polls, T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
    bot
}

impl Voice {
    /// Starts everything; the audio double wants `double_key`, the bot has [`KEY`]; `extra` goes
    /// into `[voice]`, `top` at the config's top level.
    pub(crate) async fn start(double_key: &str, top: &str, extra: &str) -> Voice {
        Voice::doubles(double_key, top, extra).await.restart().await
    }

    /// The doubles and the state of [`Voice::start`], the bot not started yet.
    pub(crate) async fn doubles(double_key: &str, top: &str, extra: &str) -> Stopped {
        Voice::doubles_in(double_key, top, "", extra).await
    }

    /// [`Voice::start`] with `telegram` in the `[telegram]` section.
    pub(crate) async fn start_in(double_key: &str, top: &str, telegram: &str, extra: &str) -> Voice {
        Voice::doubles_in(double_key, top, telegram, extra)
            .await
            .restart()
            .await
    }

    /// [`Voice::doubles`] with `telegram` in the `[telegram]` section.
    pub(crate) async fn doubles_in(double_key: &str, top: &str, telegram: &str, extra: &str) -> Stopped {
        let model = ModelServer::start().await.unwrap();
        let tg = BotApiServer::start(TOKEN).await.unwrap();
        let audio = AudioServer::start(Some(double_key)).await.unwrap();
        let voice = format!(
            "[voice]\nstt_base_url = \"{url}\"\ntts_base_url = \"{url}\"\nstt_api_key_env = \"E2E_VOICE_KEY\"\n{extra}\n",
            url = audio.base_url()
        );
        let env = Env::new(
            &model.url(),
            &format!("{top}\n{}{voice}", telegram_config(&tg, telegram)),
        );
        Stopped { model, tg, audio, env }
    }

    /// The audio double as messages name the service (`127.0.0.1:<port>`).
    pub(crate) fn service(&self) -> String {
        let url = self.audio.base_url();
        url.trim_start_matches("http://").trim_end_matches("/v1").to_owned()
    }

    /// Kills the bot with `kill -9`.
    pub(crate) fn kill9(self) -> Stopped {
        let Voice {
            model,
            tg,
            audio,
            env,
            bot,
        } = self;
        bot.kill9();
        Stopped { model, tg, audio, env }
    }

    /// A real spoken note of `text`, registered with the Bot API double: its file id, bytes and
    /// duration (whole seconds). Fails naming the package when espeak-ng or opusenc is missing.
    pub(crate) fn note(&self, text: &str, stem: &str) -> (String, Vec<u8>, u32) {
        let (path, secs) = speak::spoken_note(text, self.env.dir.path(), stem).unwrap_or_else(|e| panic!("{e}"));
        let bytes = std::fs::read(path).unwrap();
        (self.tg.add_file(bytes.clone(), ""), bytes, secs)
    }

    /// `path` in the chat's workspace.
    fn in_workspace(&self, path: &str) -> PathBuf {
        self.env.dir.path().join(format!("workspaces/{OWNER}/{path}"))
    }

    fn inbox(&self) -> PathBuf {
        self.in_workspace("inbox")
    }

    /// The one file in the inbox.
    fn saved(&self) -> (String, Vec<u8>) {
        let entries: Vec<_> = std::fs::read_dir(self.inbox()).unwrap().flatten().collect();
        assert_eq!(entries.len(), 1, "{entries:?}");
        let name = entries[0].file_name().to_string_lossy().into_owned();
        (name, std::fs::read(entries[0].path()).unwrap())
    }

    pub(crate) async fn wait_text(&self, needle: &str) {
        wait_text(&self.tg, OWNER, needle, &self.bot).await;
    }

    pub(crate) async fn requests(&self, n: usize) -> Vec<RecordedRequest> {
        wait_requests(&self.model, n, &self.bot).await
    }
}

/// The texts the bot gave the Bot API double's `method` (drafts, edits), in order.
fn call_texts(tg: &BotApiServer, method: &str) -> Vec<String> {
    tg.calls(method)
        .iter()
        .filter_map(|c| c.text().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spoken_note_reaches_the_model_as_its_transcript_and_the_user_sees_what_was_heard() {
    let v = Voice::start(KEY, "", "").await;
    let said = "what is the weather like in Lisbon today";
    v.audio.set_transcript(said);
    // The model takes a moment: the draft shows what was heard meanwhile.
    v.model
        .push(Turn::reply("Sunny, 21 degrees.").delay(std::time::Duration::from_millis(700)));
    let (file, bytes, secs) = v.note(said, "weather");
    v.tg.push_update(updates::voice_message(OWNER, OWNER, &file, secs));
    v.wait_text("Sunny, 21 degrees.").await;

    // The strict double got the note itself: same bytes, valid OGG/Opus of the same duration.
    assert_eq!(v.audio.violations(), Vec::<String>::new());
    let got = v.audio.transcriptions();
    assert_eq!(got.len(), 1, "{got:?}");
    let t = &got[0];
    let (name, saved) = v.saved();
    assert_eq!(saved, bytes, "the file stays in inbox/ as received");
    assert_eq!(
        (t.model.as_str(), t.file_name.as_str()),
        ("gpt-4o-mini-transcribe", name.as_str())
    );
    assert_eq!((t.content_type.as_str(), t.size), ("audio/ogg", bytes.len()));
    assert_eq!(t.language, None);
    let sent = t.opus.clone().unwrap();
    assert_eq!(sent, parse_opus(&bytes).unwrap());
    assert!((sent.seconds.ceil() as u32) == secs, "{sent:?} vs {secs} s");

    // The model heard it, marked as a voice note with its duration; the user saw the quote on the
    // draft while the answer was written, and then only the answer.
    let requests = v.requests(1).await;
    let text = last_user_text(&requests[0]);
    assert!(
        text.contains(&format!("[voice note, 0:0{secs}, transcribed]: {said}")),
        "{text}"
    );
    assert!(text.contains(&format!("[voice note saved: inbox/{name}")), "{text}");
    assert!(
        !conversation(&requests[0]).contains(KEY),
        "the key never reaches the model"
    );
    assert_eq!(texts(&v.tg, OWNER), ["Sunny, 21 degrees."]);
    let drafts = call_texts(&v.tg, "sendMessageDraft");
    assert!(drafts.contains(&format!("🎤 “{said}”")), "{drafts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_live_answers_the_progress_line_leads_with_what_was_heard() {
    let v = Voice::start_in(KEY, "", "streaming = \"off\"", "").await;
    let said = "run the slow job";
    v.audio.set_transcript(said);
    v.model
        .push(Turn::call("toolu_v1", "bash", json!({"command": "sleep 2; echo ok"})));
    v.model.push(Turn::reply("The job is done."));
    let (file, _, secs) = v.note(said, "job");
    v.tg.push_update(updates::voice_message(OWNER, OWNER, &file, secs));
    v.wait_text("The job is done.").await;

    let quote = format!("🎤 “{said}”");
    let line =
        v.tg.calls("sendMessage")
            .into_iter()
            .find(|c| c.text() == Some(quote.as_str()));
    assert!(
        line.is_some(),
        "the progress line showed the quote first: {:?}",
        v.tg.calls("sendMessage")
    );
    let edits = call_texts(&v.tg, "editMessageText");
    assert!(edits.contains(&format!("{quote}\n⚙️ bash")), "{edits:?}");
    // The progress line went with the run: only the answer stays.
    v.tg.wait_for(|s| texts(s, OWNER) == ["The job is done."], T)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{:?}", texts(&v.tg, OWNER)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_sets_the_language_its_notes_are_heard_in() {
    let v = Voice::start(KEY, "", "language = \"en\"").await;
    v.tg.push_update(updates::text_message(OWNER, OWNER, "/voice lang DE"));
    v.wait_text("transcribed as de.").await;
    v.audio.set_transcript("Ruf Anna an");
    v.model.push(Turn::reply("Mache ich."));
    let (file, _, secs) = v.note("ruf Anna an", "anna");
    v.tg.push_update(updates::voice_message(OWNER, OWNER, &file, secs));
    v.wait_text("Mache ich.").await;
    assert_eq!(v.audio.transcriptions()[0].language.as_deref(), Some("de"));
    v.tg.push_update(updates::text_message(OWNER, OWNER, "/voice lang auto"));
    v.wait_text("the language the service detects").await;
    v.tg.push_update(updates::text_message(OWNER, OWNER, "/voice"));
    v.wait_text("in en. Change").await;
    assert_eq!(v.audio.violations(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reminder_spoken_as_a_note_becomes_a_job_in_the_chats_zone() {
    let v = Voice::start(KEY, "default_time_zone = \"Asia/Tokyo\"", "").await;
    let said = "remind me at nine tomorrow to call Anna";
    v.audio.set_transcript(said);
    let tokyo = chrono_tz::Asia::Tokyo;
    let tomorrow = (chrono::Utc::now().with_timezone(&tokyo) + chrono::Duration::days(1)).date_naive();
    let at = format!("{} 09:00", tomorrow.format("%Y-%m-%d"));
    v.model.push(Turn::call(
        "call_1",
        "schedule",
        json!({"action": "add", "at": at, "text": "Remind the user to call Anna."}),
    ));
    v.model.push(Turn::reply("I'll remind you at nine tomorrow."));
    let (file, _, secs) = v.note(said, "remind");
    v.tg.push_update(updates::voice_message(OWNER, OWNER, &file, secs));
    v.wait_text("I'll remind you at nine tomorrow.").await;
    let requests = v.requests(1).await;
    assert!(
        last_user_text(&requests[0]).contains(said),
        "{}",
        last_user_text(&requests[0])
    );
    let jobs_path = v.in_workspace(".volcanic/scheduler/jobs.json");
    let jobs: Value = serde_json::from_str(&std::fs::read_to_string(jobs_path).unwrap()).unwrap();
    let job = &jobs["jobs"][0];
    assert_eq!(job["schedule"]["time_zone"], "Asia/Tokyo", "{jobs:#}");
    let due = chrono::DateTime::parse_from_rfc3339(job["next_run"].as_str().unwrap()).unwrap();
    let want = tokyo
        .with_ymd_and_hms(tomorrow.year(), tomorrow.month(), tomorrow.day(), 9, 0, 0)
        .unwrap();
    assert_eq!(due, want, "{jobs:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_over_long_note_is_kept_not_sent_and_the_chat_told_why() {
    let v = Voice::start(KEY, "", "max_seconds = 60").await;
    v.model.push(Turn::reply("I could not hear that one."));
    let (file, bytes, _) = v.note("a long story", "long");
    // Telegram's `duration` is what counts.
    v.tg.push_update(updates::voice_message(OWNER, OWNER, &file, 61));
    v.wait_text("I could not hear that one.").await;
    assert_eq!(v.audio.requests(), 0, "nothing went to the service");
    assert_eq!(v.saved().1, bytes, "the note is kept");
    let shown = texts(&v.tg, OWNER);
    assert!(
        shown[0].starts_with("🎤 The voice note (1:01) is longer than the 1:00 I transcribe"),
        "{shown:?}"
    );
    let text = last_user_text(&v.requests(1).await[0]);
    assert!(
        text.contains("[a voice note that could not be transcribed (1:01 long, over the 1:00 this bot transcribes)]"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_over_size_note_is_refused_before_download() {
    let v = Voice::start(KEY, "", "").await;
    let file = v.tg.add_file(b"OggS pretend".to_vec(), "");
    v.tg.push_update(updates::voice_message(OWNER, OWNER, &file, 30).set(
        "voice",
        json!({"file_id": file, "duration": 30, "mime_type": "audio/ogg", "file_size": 21 * 1024 * 1024}),
    ));
    v.wait_text("is too large").await;
    assert_eq!(v.audio.requests(), 0);
    assert!(v.tg.downloads().is_empty());
    assert!(v.model.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_is_reported_naming_the_service_and_the_variable() {
    let v = Voice::start("sk-another-key-entirely-000", "", "").await;
    v.model.push(Turn::reply("Noted that a note came."));
    let (file, _, secs) = v.note("hello", "hello");
    v.tg.push_update(updates::voice_message(OWNER, OWNER, &file, secs));
    v.wait_text("Noted that a note came.").await;
    assert_eq!(v.audio.requests(), 1, "a refused key is not tried again");
    let service = v.service();
    let shown = texts(&v.tg, OWNER);
    assert_eq!(
        shown[0],
        format!(
            "🎤 The voice note could not be transcribed: {service} refused the key (HTTP 401); check the key in \
             E2E_VOICE_KEY ([voice] stt_api_key_env) and that it may use gpt-4o-mini-transcribe. The model got the note without its words."
        )
    );
    let text = last_user_text(&v.requests(1).await[0]);
    assert!(
        text.contains(&format!(
            "[a voice note that could not be transcribed ({service} refused the key (HTTP 401))]"
        )),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_is_waited_out_and_server_errors_tried_again_then_reported() {
    let v = Voice::start(KEY, "", "").await;
    v.audio.set_transcript("first note");
    v.audio.fail_next(429, Some(1));
    v.audio.fail_next(503, None);
    v.model.push(Turn::reply("Heard the first."));
    let (file, _, secs) = v.note("first note", "first");
    let asked = std::time::Instant::now();
    v.tg.push_update(updates::voice_message(OWNER, OWNER, &file, secs));
    v.wait_text("Heard the first.").await;
    assert!(
        asked.elapsed() >= std::time::Duration::from_secs(1),
        "retry-after was honoured"
    );
    assert_eq!(v.audio.requests(), 3);
    assert_eq!(v.audio.transcriptions().len(), 1);
    assert!(last_user_text(&v.requests(1).await[0]).contains("transcribed]: first note"));

    // Failing every time: three attempts, then one sentence.
    for _ in 0..3 {
        v.audio.fail_next(502, None);
    }
    v.model.push(Turn::reply("Heard that a second came."));
    let (file, _, secs) = v.note("second note", "second");
    v.tg.push_update(updates::voice_message(OWNER, OWNER, &file, secs));
    v.wait_text("Heard that a second came.").await;
    assert_eq!(v.audio.requests(), 6);
    let told: Vec<String> = texts(&v.tg, OWNER)
        .into_iter()
        .filter(|t| t.starts_with("🎤 The voice note"))
        .collect();
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(
        told[0].contains("answered HTTP 502") && told[0].contains("try again later"),
        "{told:?}"
    );
    let text = last_user_text(&v.requests(2).await[1]);
    assert!(text.contains("[a voice note that could not be transcribed ("), "{text}");
    assert_eq!(v.audio.violations(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_that_does_not_answer_in_time_is_reported_once() {
    let v = Voice::start(KEY, "", "timeout_secs = 1").await;
    v.audio.set_delay(std::time::Duration::from_secs(3));
    v.model.push(Turn::reply("Noted the silent note."));
    let (file, _, secs) = v.note("anyone there", "slow");
    v.tg.push_update(updates::voice_message(OWNER, OWNER, &file, secs));
    v.wait_text("Noted the silent note.").await;
    assert_eq!(v.audio.requests(), 1, "a timeout is not tried again");
    let shown = texts(&v.tg, OWNER);
    assert!(
        shown[0].contains("did not answer within 1 s; check the service, or raise [voice] timeout_secs"),
        "{shown:?}"
    );
    let text = last_user_text(&v.requests(1).await[0]);
    assert!(text.contains("did not answer within 1 s)]"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notes_merged_into_one_prompt_keep_their_order_and_the_last_answer_is_the_services_prompt() {
    let v = Voice::start(KEY, "", "").await;
    v.model.push(Turn::reply("Should I call Anna or Jörg?"));
    v.tg.push_update(updates::text_message(OWNER, OWNER, "who was it again?"));
    v.wait_text("Anna or Jörg?").await;

    // Two recordings sent as one album: one prompt, each heard as itself, in order.
    let (a, a_bytes, a_secs) = v.note("call Anna first", "first");
    let (b, b_bytes, b_secs) = v.note("then call Jörg", "second");
    v.audio.set_transcript_for(&a_bytes, "call Anna first");
    v.audio.set_transcript_for(&b_bytes, "then call Jörg");
    v.model.push(Turn::reply("Both heard."));
    for (file, secs, name) in [(&a, a_secs, "one.ogg"), (&b, b_secs, "two.ogg")] {
        v.tg.push_update(updates::audio_message(OWNER, OWNER, file, secs, name, "audio/ogg").media_group("recordings"));
    }
    v.wait_text("Both heard.").await;
    let requests = v.requests(2).await;
    assert_eq!(requests.len(), 2, "one prompt for the album");
    let text = last_user_text(&requests[1]);
    let first = text
        .find("transcribed]: call Anna first")
        .unwrap_or_else(|| panic!("{text}"));
    let second = text
        .find("transcribed]: then call Jörg")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(first < second, "in the album's order: {text}");
    let got = v.audio.transcriptions();
    let prompts: Vec<Option<&str>> = got.iter().map(|t| t.prompt.as_deref()).collect();
    assert_eq!(prompts, [Some("Should I call Anna or Jörg?"); 2]);
    assert_eq!(v.audio.violations(), Vec::<String>::new());
}

/// A full disk where notes are saved: the bot runs in a mount namespace of its own (`unshare
/// -Urm`) whose chat `inbox/` is a 1 MiB tmpfs, filled but for 4 KiB, less than the note. The
/// note is not left half-written: the chat is told once, and once there is space the note is
/// saved whole, once, and heard.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_meeting_a_full_disk_waits_and_is_saved_whole_once() {
    let s = Voice::doubles(KEY, "", "").await;
    let inbox = s.env.dir.path().join(format!("workspaces/{OWNER}/inbox"));
    std::fs::create_dir_all(&inbox).unwrap();
    let mount = "mount -t tmpfs -o size=1m tmpfs \"$1\" && shift && exec \"$@\"";
    let program = ["unshare", "-Urm", "sh", "-c", mount, "sh"].map(std::ffi::OsStr::new);
    let wrapper: Vec<&std::ffi::OsStr> = program.into_iter().chain([inbox.as_os_str()]).collect();
    let v = s.start_wrapped(&wrapper).await;
    let seen = std::path::PathBuf::from(format!("/proc/{}/root{}", v.bot.child.id(), inbox.display()));
    let filler = seen.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap_or_else(|e| panic!("{e}\n{}", v.bot.log()));
    let block = vec![0u8; 4096];
    while f.write_all(&block).and_then(|()| f.sync_all()).is_ok() {}
    let full = f.metadata().unwrap().len();
    f.set_len(full - 4096).unwrap();
    f.sync_all().unwrap();
    // Closed: an unlinked file still open would keep its space.
    drop(f);

    v.audio.set_transcript("saved on a full disk");
    v.model.push(Turn::reply("Heard it after all."));
    let (file, bytes, secs) = v.note(
        "a note for a full disk, long enough to need more than four kilobytes",
        "full",
    );
    assert!(bytes.len() > 4096, "{} bytes", bytes.len());
    v.tg.push_update(updates::voice_message(OWNER, OWNER, &file, secs));
    v.wait_text("The bot's disk is full.").await;
    std::fs::remove_file(&filler).unwrap();
    v.wait_text("Heard it after all.").await;

    let saved: Vec<_> = std::fs::read_dir(&seen).unwrap().flatten().collect();
    assert_eq!(saved.len(), 1, "one file, none half-written: {saved:?}");
    assert_eq!(std::fs::read(saved[0].path()).unwrap(), bytes);
    assert_eq!(
        v.tg.calls("getFile").len(),
        1,
        "downloaded once, saved when there was space"
    );
    assert_eq!(count(&v.tg, OWNER, "The bot's disk is full."), 1);
    assert!(last_user_text(&v.requests(1).await[0]).contains("transcribed]: saved on a full disk"));
}
