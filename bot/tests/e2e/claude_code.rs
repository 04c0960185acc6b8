//! Claude Code as the model, through the real binary on Telegram: the `claude` of
//! `[providers.claude-code] command` is the test kit's fake, which refuses any environment
//! variable outside its allow-list (the bot's token and keys are in the bot's environment), so
//! an answer at all shows none leaked. A chat on `claude-code/sonnet` gets its answer in its
//! workspace and time zone, the next message resumes Claude's session with `--resume <id>`, a
//! turn in which Claude runs its own tool shows it on the progress line, and after `/new` a fresh
//! session starts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::ModelServer;

/// The session id in the fake's answer `fake claude (<new|resumed> session <id>, ...`.
fn session_of(answer: &str) -> String {
    let after = answer
        .split(" session ")
        .nth(1)
        .unwrap_or_else(|| panic!("no session in {answer:?}"));
    after.split(',').next().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_on_claude_code_gets_its_answer_and_resumes_the_session() {
    let fake = volcanic_testkit::fake_claude::path().unwrap_or_else(|e| panic!("the fake claude is needed: {e}"));
    // The model server is never called: Claude Code is the model.
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    // The progress message (with live answers the tools show in the draft instead).
    let env = Env::new(&model.url(), &telegram_config(&tg, "streaming = \"off\""));
    let path = env.dir.path().join("volcanic.toml");
    let config = std::fs::read_to_string(&path).unwrap().replace(
        "model = \"anthropic/claude-sonnet-4-5\"",
        "model = \"claude-code/sonnet\"\ndefault_time_zone = \"Asia/Tokyo\"",
    );
    let config = format!(
        "{config}[providers.claude-code]\ncommand = \"{}\"\npermission_mode = \"plan\"\nallowed_tools = [\"Read\"]\n",
        fake.display()
    );
    std::fs::write(&path, config).unwrap();
    let bot = BotProcess::start(&env, TOKEN);

    tg.push_update(updates::text_message(OWNER, OWNER, "hello claude"));
    let first = nth_text(&tg, OWNER, "fake claude (", 1, &bot).await;
    assert!(first.starts_with("fake claude (new session fake-"), "{first}");
    assert!(first.contains(", model sonnet, TZ Asia/Tokyo, cwd "), "{first}");
    let ws = env.dir.path().join("workspaces").join(OWNER.to_string());
    let ws = ws.canonicalize().unwrap_or(ws);
    assert!(first.contains(&ws.display().to_string()), "{first}");
    assert!(first.ends_with("hello claude"), "{first}");
    let session = session_of(&first);

    tg.push_update(updates::text_message(OWNER, OWNER, "and again"));
    let second = nth_text(&tg, OWNER, "fake claude (", 2, &bot).await;
    assert!(
        second.starts_with(&format!("fake claude (resumed session {session}, ")),
        "{second}"
    );
    assert!(second.ends_with("and again"), "{second}");

    // Claude runs its own Bash: the chat's progress line shows it, as for our own tools.
    tg.push_update(updates::text_message(OWNER, OWNER, "[tool] what is here?"));
    let third = nth_text(&tg, OWNER, "what is here?", 1, &bot).await;
    assert!(
        third.starts_with(&format!("fake claude (resumed session {session}, ")),
        "{third}"
    );
    let progress: Vec<String> = tg
        .calls("sendMessage")
        .iter()
        .filter_map(|c| c.params["text"].as_str().map(str::to_owned))
        .filter(|t| t.starts_with("⚙️"))
        .collect();
    assert_eq!(progress, ["⚙️ Bash"], "{:?}", texts(&tg, OWNER));

    tg.push_update(updates::text_message(OWNER, OWNER, "/new"));
    tg.push_update(updates::text_message(OWNER, OWNER, "from scratch"));
    let fresh = nth_text(&tg, OWNER, "from scratch", 1, &bot).await;
    assert!(fresh.starts_with("fake claude (new session fake-"), "{fresh}");
    assert_ne!(session_of(&fresh), session);
    assert!(model.requests().is_empty(), "the model server was called");
    drop(bot);
}

/// `claude` runs confined like every agent process (`[sandbox] mode = "required"`): Claude's own
/// tools (the fake's `[read <path>]`) read the chat's workspace but nothing of the bot's state,
/// another chat, the config folder, the bot user's home or the bot's environment; its own login
/// folder `~/.claude` stays readable and writable; no planted secret appears anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_reaches_its_workspace_and_login_folder_and_nothing_else() {
    use crate::sandbox_support::{IN_BOT_ENV, IN_CONFIG_DIR, IN_HOME, IN_OTHER_CHAT, IN_STATE, Rig};
    let fake = volcanic_testkit::fake_claude::path().unwrap_or_else(|e| panic!("the fake claude is needed: {e}"));
    let sections = format!("[providers.claude-code]\ncommand = \"{}\"\n", fake.display());
    let rig = Rig::start_on("claude-code/sonnet", &sections, "mode = \"required\"", &[]).await;
    let home = rig.env.home();
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::write(rig.workspace().join("notes.txt"), "own notes").unwrap();
    let dir = rig.env.dir.path().display().to_string();
    let bot = rig.bot.child.id();
    let refused = [
        (format!("{dir}/data/secret.txt"), IN_STATE),
        (format!("../{FRIEND}/notes.txt"), IN_OTHER_CHAT),
        (format!("{dir}/config/notes"), IN_CONFIG_DIR),
        (format!("{}/.ssh/id_ed25519", home.display()), IN_HOME),
        (format!("/proc/{bot}/environ"), IN_BOT_ENV),
    ];
    let mut n = 0;
    let mut ask = |text: String| {
        n += 1;
        rig.tg.push_update(updates::text_message(OWNER, OWNER, &text));
        n
    };
    for (path, secret) in &refused {
        let n = ask(format!("[read {path}]"));
        let answer = nth_text(&rig.tg, OWNER, "fake claude (", n, &rig.bot).await;
        assert!(
            answer.contains(&format!("read {path}: error: Permission denied")),
            "claude read {path}: {answer}"
        );
        assert!(!answer.contains(secret), "{answer}");
    }
    let n = ask("[read notes.txt] [state]".to_owned());
    let answer = nth_text(&rig.tg, OWNER, "fake claude (", n, &rig.bot).await;
    assert!(
        answer.ends_with("| read notes.txt: own notes | state: ok (kept)"),
        "{answer}"
    );
    assert_eq!(
        std::fs::read_to_string(home.join(".claude/fake-state")).unwrap(),
        "kept"
    );
    assert!(rig.model.requests().is_empty(), "the model server was called");
    rig.assert_no_secret_anywhere();
}
