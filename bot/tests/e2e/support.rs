//! Running the real binary in a temporary home.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temporary directory with a config, a workspace and a HOME for one test.
pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    /// A config pointing the built-in `anthropic` and `openai` providers at `model_url`.
    pub fn new(model_url: &str, extra_config: &str) -> Env {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let config = format!(
            "model = \"anthropic/claude-sonnet-4-5\"\nharden_process = false\nstate_dir = \"{state}\"\nworkspaces_dir = \"{ws}\"\n{extra_config}\n\
             [providers.anthropic]\nbase_url = \"{model_url}\"\napi_key_env = \"E2E_ANTHROPIC_KEY\"\n\
             [providers.openai]\nbase_url = \"{model_url}/v1\"\napi_key_env = \"E2E_OPENAI_KEY\"\n\
             [sandbox]\nread_paths = {peers:?}\n",
            state = dir.path().join("data").display(),
            ws = dir.path().join("workspaces").display(),
            peers = peer_paths(),
        );
        std::fs::write(dir.path().join("volcanic.toml"), config).unwrap();
        Env { dir }
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// `volcanic-bot --config <cfg> console --workspace <ws> ARGS` with keys set.
    pub fn console(&self, args: &[&str]) -> Output {
        self.console_with_env(
            args,
            &[("E2E_ANTHROPIC_KEY", "test-key"), ("E2E_OPENAI_KEY", "test-key")],
        )
    }

    /// `volcanic-bot --config <cfg> console --workspace <ws> ARGS` with a clean environment
    /// (PATH, HOME and `env`).
    fn console_command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_volcanic-bot"));
        c.arg("--config")
            .arg(self.dir.path().join("volcanic.toml"))
            .arg("console")
            .arg("--workspace")
            .arg(self.workspace())
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .current_dir(self.dir.path());
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }

    pub fn console_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.console_command(args, env).output().unwrap()
    }

    /// `console ARGS` fed `stdin` (the interactive mode), with keys set; runs off the async
    /// runtime so the test's doubles keep serving.
    pub async fn console_stdin(&self, args: &[&str], stdin: String) -> Output {
        use std::io::Write;
        let mut c = self.console_command(
            args,
            &[("E2E_ANTHROPIC_KEY", "test-key"), ("E2E_OPENAI_KEY", "test-key")],
        );
        c.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        tokio::task::spawn_blocking(move || {
            let mut child = c.spawn().unwrap();
            let mut input = child.stdin.take().unwrap();
            let writer = std::thread::spawn(move || input.write_all(stdin.as_bytes()));
            let out = child.wait_with_output().unwrap();
            writer.join().unwrap().unwrap();
            out
        })
        .await
        .unwrap()
    }

    /// The session files the console wrote.
    pub fn session_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        collect(&self.home().join(".volcanic/agent/sessions"), &mut out);
        out.sort();
        out
    }
}

/// What the tests' peers (MCP servers, scripts) need to read inside the sandbox: the repository
/// and the installed test dependencies with the interpreter the venv links to (an owner lists
/// such paths in `[sandbox] read_paths` the same way).
fn peer_paths() -> Vec<String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let deps = repo.join(".testdeps");
    let mut paths = vec![repo.clone(), deps.join("node_modules"), deps.join("venv")];
    if let Ok(python) = std::fs::canonicalize(deps.join("venv/bin/python")) {
        paths.extend(python.parent().and_then(Path::parent).map(Path::to_owned));
    }
    paths
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .map(|p| p.display().to_string())
        .collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The real binary running the Telegram host; killed on drop.
pub struct BotProcess {
    pub child: std::process::Child,
    pub log: PathBuf,
}

impl BotProcess {
    /// Starts `volcanic-bot --config <cfg>` with the bot token and model keys in its environment.
    pub fn start(env: &Env, token: &str) -> BotProcess {
        BotProcess::start_logging(env, token, Some("info"))
    }

    /// [`start`](Self::start) with `VOLCANIC_LOG` set to `level` (`None`: unset, the default).
    pub fn start_logging(env: &Env, token: &str, level: Option<&str>) -> BotProcess {
        BotProcess::start_with(env, token, level, &[])
    }

    /// [`start_logging`](Self::start_logging) with `extra` variables in the bot's environment.
    pub fn start_with(env: &Env, token: &str, level: Option<&str>, extra: &[(&str, &str)]) -> BotProcess {
        BotProcess::start_wrapped(env, token, level, extra, &[])
    }

    /// [`start_with`](Self::start_with) under `wrapper` (a program and its arguments, e.g.
    /// `unshare -Urm ...`), which is given the bot's command line to run.
    pub fn start_wrapped(
        env: &Env,
        token: &str,
        level: Option<&str>,
        extra: &[(&str, &str)],
        wrapper: &[&std::ffi::OsStr],
    ) -> BotProcess {
        let log = env.dir.path().join(format!(
            "bot-{}.log",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let out = std::fs::File::create(&log).unwrap();
        let bot = env!("CARGO_BIN_EXE_volcanic-bot");
        let mut command = match wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(bot);
                c
            }
            None => Command::new(bot),
        };
        command
            .arg("--config")
            .arg(env.dir.path().join("volcanic.toml"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", env.home())
            .env("TELEGRAM_BOT_TOKEN", token)
            .env("E2E_ANTHROPIC_KEY", "test-key")
            .env("E2E_OPENAI_KEY", "test-key");
        if let Some(level) = level {
            command.env("VOLCANIC_LOG", level);
        }
        command.envs(extra.iter().copied());
        let child = command
            .current_dir(env.dir.path())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", command.get_program()));
        BotProcess { child, log }
    }

    /// The bot's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGTERM and waits for the exit code (bounded).
    pub fn terminate(mut self, within: std::time::Duration) -> Option<i32> {
        let pid = self.child.id();
        let _ = Command::new("kill").arg("-TERM").arg(pid.to_string()).status();
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        None
    }

    /// `kill -9`.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for BotProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The test bot's token (the Bot API double accepts only this one).
pub const TOKEN: &str = "123456:TEST-token";
/// An allowed user who is also an owner.
pub const OWNER: i64 = 1001;
/// Another allowed user.
pub const FRIEND: i64 = 1002;
/// How long "eventually" may take.
pub const T: std::time::Duration = std::time::Duration::from_secs(20);

/// A `[telegram]` section pointing the bot at the double, with `OWNER` and `FRIEND` allowed and
/// `extra` lines added to the section.
pub fn telegram_config(tg: &volcanic_testkit::bot_api::BotApiServer, extra: &str) -> String {
    format!(
        "[telegram]\napi_url = \"{}\"\nallowed_users = [{OWNER}, {FRIEND}]\nowners = [{OWNER}]\n{extra}\n",
        tg.url()
    )
}

/// The bot's visible messages in a chat, in message id order.
pub fn texts(tg: &volcanic_testkit::bot_api::BotApiServer, chat: i64) -> Vec<String> {
    tg.messages(chat)
        .into_iter()
        .map(|m| m.visible_text.unwrap_or_default())
        .collect()
}

/// Waits (up to `T`) until `chat` shows `n` bot messages containing `needle`; returns the `n`th.
/// Fails with the bot's log.
pub async fn nth_text(
    tg: &volcanic_testkit::bot_api::BotApiServer,
    chat: i64,
    needle: &str,
    n: usize,
    bot: &BotProcess,
) -> String {
    let matching = |tg: &volcanic_testkit::bot_api::BotApiServer| -> Vec<String> {
        texts(tg, chat).into_iter().filter(|t| t.contains(needle)).collect()
    };
    tg.wait_for(|s| matching(s).len() >= n, T).await.unwrap_or_else(|e| {
        panic!(
            "waiting for {needle:?} #{n} in chat {chat}: {e}\nbot log:\n{}",
            bot.log()
        )
    });
    matching(tg).swap_remove(n - 1)
}

/// Presses the button labelled `label` on the newest message of `chat` that has buttons
/// (waits up to `T` for it).
pub async fn press_button(tg: &volcanic_testkit::bot_api::BotApiServer, chat: i64, label: &str) {
    press_as(tg, chat, chat, label).await;
}

/// [`press_button`] by the user `from` (e.g. someone else in a group).
pub async fn press_as(tg: &volcanic_testkit::bot_api::BotApiServer, chat: i64, from: i64, label: &str) {
    let has = |m: &volcanic_testkit::bot_api::ChatMessage| {
        m.reply_markup
            .as_ref()
            .is_some_and(|k| k.to_string().contains(&format!("\"text\":\"{label}\"")))
    };
    tg.wait_for(|s| s.messages(chat).iter().rev().any(has), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\nmessages: {:?}", tg.messages(chat)));
    let m = tg.messages(chat).into_iter().rev().find(|m| has(m)).unwrap();
    let data = m.reply_markup.as_ref().unwrap()["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r.as_array().unwrap().iter())
        .find(|b| b["text"] == label)
        .unwrap()["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();
    tg.push_update(volcanic_testkit::bot_api::updates::callback_query(
        from,
        m.message_id,
        chat,
        &data,
    ));
}

/// The session files (`*.jsonl`) under a folder.
pub fn jsonl_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else { return out };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(jsonl_files(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// A TCP port free on 127.0.0.1 right now (for the bot's HTTP listener).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An `[http]` section listening on `port` of 127.0.0.1, which is also its public URL.
pub fn http_section(port: u16) -> String {
    format!("[http]\nlisten = \"127.0.0.1:{port}\"\npublic_url = \"http://127.0.0.1:{port}\"\n")
}

/// How many of the bot's messages in `chat` contain `needle`.
pub fn count(tg: &volcanic_testkit::bot_api::BotApiServer, chat: i64, needle: &str) -> usize {
    texts(tg, chat).iter().filter(|t| t.contains(needle)).count()
}

/// Everything a model request sends as conversation, as one JSON string.
pub fn conversation(r: &volcanic_testkit::model_server::RecordedRequest) -> String {
    serde_json::to_string(r.messages()).unwrap()
}

/// `@` and the bot's username.
pub fn mention(tg: &volcanic_testkit::bot_api::BotApiServer) -> String {
    format!("@{}", tg.bot_username())
}

/// Waits until `chat` shows a message containing `needle`; fails with the bot's log.
pub async fn wait_text(tg: &volcanic_testkit::bot_api::BotApiServer, chat: i64, needle: &str, bot: &BotProcess) {
    tg.wait_for(|s| count(s, chat, needle) > 0, T)
        .await
        .unwrap_or_else(|e| panic!("waiting for {needle:?} in chat {chat}: {e}\nbot log:\n{}", bot.log()));
}

/// Waits until the model got `n` requests; fails with the bot's log.
pub async fn wait_requests(
    model: &volcanic_testkit::model_server::ModelServer,
    n: usize,
    bot: &BotProcess,
) -> Vec<volcanic_testkit::model_server::RecordedRequest> {
    model
        .wait_for_requests(n, T)
        .await
        .unwrap_or_else(|e| panic!("{e}\nbot log:\n{}", bot.log()))
}

/// Polls a condition that no double observes (files on disk) every 50 ms, up to `T`.
pub async fn eventually(what: &str, bot: &BotProcess, mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + T;
    while !check() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}\nbot log:\n{}",
            bot.log()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// An HTTP client for the tests' own requests (rustls with the ring provider installed).
pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}
