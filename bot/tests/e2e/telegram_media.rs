//! Inbound media and merged prompts on the Telegram host, end to end: photos as image content
//! (or saved when the model cannot see), documents and voice notes saved in the chat's
//! `inbox/`, albums and split pastes as one prompt, short messages not delayed, and files over
//! the Bot API's download limit refused with a clear reply.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use base64::Engine;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, RecordedRequest, Turn};

/// A 1×1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0D, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0xF0, 0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D,
    0x1D, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

/// A distinct PNG per `n` (the signature is what the host checks; the tail tells them apart).
fn png(n: u8) -> Vec<u8> {
    let mut bytes = PNG.to_vec();
    bytes.push(n);
    bytes
}

/// The bot running against both doubles, with the chat's workspace at hand.
struct Setup {
    model: ModelServer,
    tg: BotApiServer,
    env: Env,
    bot: BotProcess,
}

impl Setup {
    async fn start() -> Setup {
        Self::start_with(|_, _| {}).await
    }

    /// Starts the bot after `edit` changed the config file (given the model server's URL).
    async fn start_with(edit: impl FnOnce(&mut String, &str)) -> Setup {
        let model = ModelServer::start().await.unwrap();
        let tg = BotApiServer::start(TOKEN).await.unwrap();
        let env = Env::new(&model.url(), &telegram_config(&tg, ""));
        let path = env.dir.path().join("volcanic.toml");
        let mut config = std::fs::read_to_string(&path).unwrap();
        edit(&mut config, &model.url());
        std::fs::write(&path, config).unwrap();
        let bot = BotProcess::start(&env, TOKEN);
        // Polling has started: what follows measures handling, not start-up.
        tg.wait_for(|s| !s.get_updates_calls().is_empty(), T)
            .await
            .unwrap_or_else(|e| panic!("{e}\n{}", bot.log()));
        Setup { model, tg, env, bot }
    }

    fn inbox(&self) -> PathBuf {
        self.env
            .dir
            .path()
            .join("workspaces")
            .join(OWNER.to_string())
            .join("inbox")
    }

    /// File names in the inbox, sorted.
    fn inbox_files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.inbox())
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    fn texts(&self) -> Vec<String> {
        self.tg
            .messages(OWNER)
            .into_iter()
            .map(|m| m.visible_text.unwrap_or_default())
            .collect()
    }

    /// Waits until the chat shows a message containing `needle`.
    async fn wait_for_text(&self, needle: &str) {
        self.tg
            .wait_for(|s| texts(s, OWNER).iter().any(|t| t.contains(needle)), T)
            .await
            .unwrap_or_else(|e| panic!("{e}\nmessages: {:?}\nbot log:\n{}", self.texts(), self.bot.log()));
    }

    async fn requests(&self, n: usize) -> Vec<RecordedRequest> {
        self.model
            .wait_for_requests(n, T)
            .await
            .unwrap_or_else(|e| panic!("{e}\nbot log:\n{}", self.bot.log()))
    }
}

/// The content blocks of the last user message of a request.
fn user_blocks(request: &RecordedRequest) -> Vec<Value> {
    let last = request
        .messages()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap_or_default();
    match &last["content"] {
        Value::Array(blocks) => blocks.clone(),
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        _ => Vec::new(),
    }
}

fn user_text(request: &RecordedRequest) -> String {
    user_blocks(request)
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn images(request: &RecordedRequest) -> Vec<Value> {
    user_blocks(request)
        .into_iter()
        .filter(|b| b["type"] == "image")
        .collect()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_photo_reaches_the_model_as_image_content() {
    let s = Setup::start().await;
    s.model.push(Turn::reply("a tiny picture"));
    let file = s.tg.add_file(png(1), "pixel.png");
    s.tg.push_update(updates::photo_message(OWNER, OWNER, &file).caption("what is this?"));
    s.wait_for_text("a tiny picture").await;
    let request = &s.requests(1).await[0];
    let sources: Vec<Value> = images(request).iter().map(|b| b["source"].clone()).collect();
    assert_eq!(
        sources,
        vec![json!({"type": "base64", "media_type": "image/png", "data": b64(&png(1))})]
    );
    assert!(user_text(request).ends_with("what is this?"), "{}", user_text(request));
    assert!(s.inbox_files().is_empty(), "an image the model sees is not saved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_right_after_a_photo_does_not_overtake_it() {
    let s = Setup::start().await;
    s.model.push(Turn::reply("a picture"));
    s.model.push(Turn::reply("it is one pixel"));
    let file = s.tg.add_file(png(3), "pixel.png");
    s.tg.push_update(updates::photo_message(OWNER, OWNER, &file));
    s.tg.push_update(updates::text_message(OWNER, OWNER, "what is in it?"));
    s.wait_for_text("it is one pixel").await;
    let requests = s.requests(2).await;
    assert_eq!(images(&requests[0]).len(), 1, "the photo came first");
    assert!(!user_text(&requests[0]).contains("what is in it?"));
    assert!(user_text(&requests[1]).ends_with("what is in it?"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_photo_for_a_model_that_cannot_see_is_saved_and_the_user_told() {
    let s = Setup::start_with(|config, model_url| {
        *config = config.replace("model = \"anthropic/claude-sonnet-4-5\"", "model = \"local/text-only\"");
        config.push_str(&format!(
            "[providers.local]\napi = \"anthropic-messages\"\nbase_url = \"{model_url}\"\n\
             api_key_env = \"E2E_ANTHROPIC_KEY\"\nmodels = [{{ id = \"text-only\" }}]\n"
        ));
    })
    .await;

    s.model.push(Turn::reply("I can read the file name at least"));
    let file = s.tg.add_file(png(2), "pixel.png");
    s.tg.push_update(updates::photo_message(OWNER, OWNER, &file).caption("look"));
    s.wait_for_text("I can read the file name").await;
    let texts = s.texts();
    let notice = texts
        .iter()
        .find(|t| t.starts_with("This model can't see images; the photo was saved to inbox/photo-"))
        .unwrap_or_else(|| panic!("{texts:?}"));
    let files = s.inbox_files();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(notice.contains(&files[0]), "{notice}");
    assert_eq!(std::fs::read(s.inbox().join(&files[0])).unwrap(), png(2));
    let request = &s.requests(1).await[0];
    assert!(images(request).is_empty());
    let text = user_text(request);
    assert!(
        text.contains(&format!("[photo saved: inbox/{} (", files[0])) && text.ends_with("look"),
        "{text}"
    );
    // The notice came before the answer.
    let notice_at = texts.iter().position(|t| t.starts_with("This model")).unwrap();
    let answer_at = texts.iter().position(|t| t.contains("I can read")).unwrap();
    assert!(notice_at < answer_at, "{texts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_is_saved_in_the_inbox_and_named_in_the_prompt() {
    let s = Setup::start().await;
    s.model.push(Turn::reply("first report read"));
    s.model.push(Turn::reply("second report read"));
    let report = b"%PDF-1.4 quarterly numbers".to_vec();
    let file = s.tg.add_file(report.clone(), "report.pdf");
    s.tg.push_update(updates::document_message(OWNER, OWNER, &file).caption("summarise it"));
    s.wait_for_text("first report read").await;
    assert_eq!(std::fs::read(s.inbox().join("report.pdf")).unwrap(), report);
    let text = user_text(&s.requests(1).await[0]);
    assert!(
        text.contains("[file saved: inbox/report.pdf (26 B)]") && text.ends_with("summarise it"),
        "{text}"
    );
    // The same name again never replaces the first file.
    let again = s.tg.add_file(b"newer".to_vec(), "report.pdf");
    s.tg.push_update(updates::document_message(OWNER, OWNER, &again));
    s.wait_for_text("second report read").await;
    assert_eq!(s.inbox_files(), ["report-2.pdf", "report.pdf"]);
    assert_eq!(std::fs::read(s.inbox().join("report-2.pdf")).unwrap(), b"newer");
    assert!(user_text(&s.requests(2).await[1]).contains("[file saved: inbox/report-2.pdf (5 B)]"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_note_is_saved_in_the_inbox() {
    let s = Setup::start().await;
    s.model.push(Turn::reply("got your voice note"));
    let voice = b"OggS\x00\x02voice bytes".to_vec();
    let file = s.tg.add_file(voice.clone(), "");
    s.tg.push_update(updates::voice_message(OWNER, OWNER, &file, 7));
    s.wait_for_text("got your voice note").await;
    let files = s.inbox_files();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        files[0].starts_with("voice-") && files[0].ends_with(".ogg"),
        "{files:?}"
    );
    assert_eq!(std::fs::read(s.inbox().join(&files[0])).unwrap(), voice);
    let text = user_text(&s.requests(1).await[0]);
    assert!(
        text.contains(&format!("[voice note saved: inbox/{} (17 B, 0:07)]", files[0])),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_album_is_one_prompt_with_every_photo_and_the_caption() {
    let s = Setup::start().await;
    s.model.push(Turn::reply("three photos of one trip"));
    let files: Vec<String> = (1..=3).map(|n| s.tg.add_file(png(n), &format!("p{n}.png"))).collect();
    for (i, file) in files.iter().enumerate() {
        let mut part = updates::photo_message(OWNER, OWNER, file).media_group("album-1");
        // The caption may come with any part.
        if i == 1 {
            part = part.caption("our trip");
        }
        s.tg.push_update(part);
    }
    s.wait_for_text("three photos of one trip").await;
    // Long enough for a second prompt to have shown up if the parts were not merged.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let requests = s.model.requests();
    assert_eq!(requests.len(), 1, "one prompt for the album");
    let data: Vec<String> = images(&requests[0])
        .iter()
        .map(|b| b["source"]["data"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(data, (1..=3).map(|n| b64(&png(n))).collect::<Vec<_>>());
    assert!(user_text(&requests[0]).ends_with("our trip"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_album_addressed_by_its_caption_is_one_prompt() {
    const GROUP: i64 = -100_777;
    let s = Setup::start_with(|c, _| {
        *c = c.replacen("[telegram]\n", &format!("[telegram]\nallowed_chats = [{GROUP}]\n"), 1)
    })
    .await;
    s.model.push(Turn::reply("group album seen"));
    let files: Vec<String> = (1..=3).map(|n| s.tg.add_file(png(n), &format!("g{n}.png"))).collect();
    let mention = format!("@{} look", s.tg.bot_username());
    for (i, file) in files.iter().enumerate() {
        let mut part = updates::photo_message(GROUP, OWNER, file).media_group("album-g");
        // The mention is on the last part: the first two must wait for it.
        if i == 2 {
            part = part.caption(&mention);
        }
        s.tg.push_update(part);
    }
    s.tg.wait_for(
        |t| {
            t.messages(GROUP)
                .iter()
                .any(|m| m.visible_text.as_deref() == Some("group album seen"))
        },
        T,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\nbot log:\n{}", s.bot.log()));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let requests = s.model.requests();
    assert_eq!(requests.len(), 1, "one prompt for the album");
    assert_eq!(images(&requests[0]).len(), 3);
    assert!(user_text(&requests[0]).ends_with("look"), "{}", user_text(&requests[0]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_paste_split_by_telegram_is_one_prompt() {
    let s = Setup::start().await;
    s.model.push(Turn::reply("read the whole paste"));
    let head: String = "alpha ".repeat(700).chars().take(4090).collect();
    let tail: String = "omega ".repeat(100).chars().take(500).collect();
    s.tg.push_update(updates::text_message(OWNER, OWNER, &head));
    s.tg.push_update(updates::text_message(OWNER, OWNER, &tail));
    s.wait_for_text("read the whole paste").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let requests = s.model.requests();
    assert_eq!(requests.len(), 1, "one prompt for both parts");
    let text = user_text(&requests[0]);
    assert!(
        text.contains(head.trim_end()) && text.contains(tail.trim_end()),
        "{text}"
    );
    assert!(text.find("alpha") < text.find("omega"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_message_is_not_delayed() {
    let s = Setup::start().await;
    s.model.push(Turn::reply("warm"));
    s.model.push(Turn::reply("quick answer"));
    // The first message loads the session; the second shows what handling alone costs.
    s.tg.push_update(updates::text_message(OWNER, OWNER, "hello"));
    s.wait_for_text("warm").await;
    let pushed = Instant::now();
    s.tg.push_update(updates::text_message(OWNER, OWNER, "quick question"));
    let requests = s.requests(2).await;
    let waited = pushed.elapsed();
    assert!(
        waited < Duration::from_millis(800),
        "the request came {waited:?} after the push"
    );
    assert!(user_text(&requests[1]).ends_with("quick question"));
    s.wait_for_text("quick answer").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_over_the_download_limit_gets_a_clear_reply_and_nothing_is_saved() {
    let s = Setup::start().await;
    let file = s.tg.add_file(b"not really big".to_vec(), "huge.zip");
    s.tg.push_update(updates::document_message(OWNER, OWNER, &file).set(
        "document",
        json!({"file_id": file, "file_name": "huge.zip", "file_size": 25 * 1024 * 1024}),
    ));
    s.wait_for_text("is too large").await;
    let texts = s.texts();
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(
        texts[0].starts_with("⚠️ huge.zip (25.0 MB) is too large: bots can download files of at most 20.0 MB"),
        "{}",
        texts[0]
    );
    assert!(s.tg.calls("getFile").is_empty() && s.tg.downloads().is_empty());
    assert!(!s.inbox().exists());
    assert!(s.model.requests().is_empty());
}
