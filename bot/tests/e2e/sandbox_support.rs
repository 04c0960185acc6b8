//! The sandbox rig: the real binary with planted secrets where a chat's tools must not reach
//! (`state_dir`, another chat's workspace, the config file, the bot user's home, the bot's
//! environment), a scripted model that runs the attempts, and the checks that nothing leaked.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, RecordedRequest, Turn};

/// Planted secrets, one per place a chat must not reach.
pub const IN_STATE: &str = "planted-state-5ecret-91c2";
pub const IN_OTHER_CHAT: &str = "planted-other-chat-5ecret-33ab";
pub const IN_CONFIG_DIR: &str = "planted-config-5ecret-7d01";
pub const IN_HOME: &str = "planted-home-5ecret-e4f9";
/// In the bot's environment under a name the deny-list keeps from children.
pub const IN_BOT_ENV: &str = "planted-env-5ecret-0b77";
/// Printed by an attempt only when it got through (spelled apart in the commands).
pub const ESCAPED: &str = "ESCAPED";
/// A PATH without the test user's own toolchains (the chat reaches the system's).
pub const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// One attempt: its name, the tool and its arguments.
pub struct Attempt {
    pub name: &'static str,
    pub tool: &'static str,
    pub args: Value,
}

/// A `bash` attempt: `command` must fail; `echo ESCAPED` follows it.
pub fn bash(name: &'static str, command: impl Into<String>) -> Attempt {
    let command = format!("{} && echo ESC''APED", command.into());
    Attempt {
        name,
        tool: "bash",
        args: json!({ "command": command }),
    }
}

/// The running bot and its doubles, with the secrets planted.
pub struct Rig {
    pub model: ModelServer,
    pub tg: BotApiServer,
    pub env: Env,
    pub bot: BotProcess,
}

impl Rig {
    /// Starts the bot with `[sandbox]` lines `sandbox` and `vars` in its environment.
    pub async fn start(sandbox: &str, vars: &[(&str, &str)]) -> Rig {
        Rig::start_on(DEFAULT_MODEL, "", sandbox, vars).await
    }

    /// [`start`](Self::start) with the chats on `model_key` and `sections` (TOML sections such
    /// as `[providers.claude-code]`) added to the config.
    pub async fn start_on(model_key: &str, sections: &str, sandbox: &str, vars: &[(&str, &str)]) -> Rig {
        let model = ModelServer::start().await.unwrap();
        let tg = BotApiServer::start(TOKEN).await.unwrap();
        let (env, config_file) = plant(&model, &tg, &format!("{sandbox}\n{sections}"), model_key);
        let bot = start_bot(&env, &config_file, vars);
        Rig { model, tg, env, bot }
    }

    /// Runs `attempts` in `OWNER`'s chat, `batch` tool calls per model turn; returns each
    /// attempt's output as the model got it back, in order.
    pub async fn run(&self, attempts: &[Attempt], batch: usize) -> Vec<String> {
        // Ids unique across runs of one rig.
        let run = self.model.requests().len();
        let mut turns = Vec::new();
        for (n, chunk) in attempts.chunks(batch).enumerate() {
            let mut turn = Turn::new();
            for (i, a) in chunk.iter().enumerate() {
                turn = turn.tool_call(format!("toolu_{run}_{n}_{i}"), a.tool, a.args.clone());
            }
            turns.push(turn);
        }
        let count = turns.len();
        self.model.push_all(turns);
        self.model.push(Turn::reply("attempts done"));
        self.tg
            .push_update(updates::text_message(OWNER, OWNER, "try everything"));
        wait_text(&self.tg, OWNER, "attempts done", &self.bot).await;
        let requests = wait_requests(&self.model, run + count + 1, &self.bot).await;
        (0..attempts.len())
            .map(|k| tool_output(&requests, &format!("toolu_{run}_{}_{}", k / batch, k % batch)))
            .collect()
    }

    /// The own workspace of `OWNER`'s chat.
    pub fn workspace(&self) -> PathBuf {
        own_workspace(&self.env)
    }

    /// Fails naming the place when a planted secret is in a tool result, the session files,
    /// the Bot API double's log or the bot's log.
    pub fn assert_no_secret_anywhere(&self) {
        let mut places: Vec<(String, String)> = Vec::new();
        for r in self.model.requests() {
            for (id, text) in r.tool_outputs() {
                places.push((format!("tool result {id}"), text));
            }
        }
        for file in jsonl_files(&self.env.dir.path().join("data")) {
            places.push((file.display().to_string(), std::fs::read_to_string(&file).unwrap()));
        }
        places.push((
            "Bot API log".into(),
            serde_json::to_string(&self.tg.sent().iter().map(|c| &c.params).collect::<Vec<_>>()).unwrap(),
        ));
        places.push(("bot log".into(), self.bot.log()));
        for (place, text) in places {
            for secret in [IN_STATE, IN_OTHER_CHAT, IN_CONFIG_DIR, IN_HOME, IN_BOT_ENV] {
                assert!(!text.contains(secret), "{secret} reached {place}:\n{text}");
            }
        }
    }
}

/// The chats' model unless a test says otherwise.
const DEFAULT_MODEL: &str = "anthropic/claude-sonnet-4-5";

/// A config on `model_key` with `[sandbox]` lines `sandbox` (further sections may follow them)
/// for the doubles, and the secrets planted; returns the place and the config file.
fn plant(model: &ModelServer, tg: &BotApiServer, sandbox: &str, model_key: &str) -> (Env, PathBuf) {
    let env = Env::new(&model.url(), "");
    let dir = env.dir.path();
    let config = format!(
        "model = \"{model_key}\"\nharden_process = false\n\
         state_dir = \"{state}\"\nworkspaces_dir = \"{ws}\"\n# {IN_CONFIG_DIR}\n{telegram}\n\
         [providers.anthropic]\nbase_url = \"{url}\"\napi_key_env = \"E2E_ANTHROPIC_KEY\"\n\
         [sandbox]\n{sandbox}\n",
        state = dir.join("data").display(),
        ws = dir.join("workspaces").display(),
        telegram = telegram_config(tg, ""),
        url = model.url(),
    );
    std::fs::create_dir_all(dir.join("config")).unwrap();
    let config_file = dir.join("config/volcanic.toml");
    std::fs::write(&config_file, config).unwrap();
    std::fs::write(dir.join("config/notes"), IN_CONFIG_DIR).unwrap();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/secret.txt"), IN_STATE).unwrap();
    std::fs::write(dir.join("data/tool.sh"), format!("#!/bin/sh\necho {IN_STATE}\n")).unwrap();
    set_mode(&dir.join("data/tool.sh"), 0o755);
    let other = dir.join("workspaces").join(FRIEND.to_string());
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), IN_OTHER_CHAT).unwrap();
    std::fs::create_dir_all(env.home().join(".ssh")).unwrap();
    std::fs::write(env.home().join(".ssh/id_ed25519"), IN_HOME).unwrap();
    std::fs::create_dir_all(own_workspace(&env)).unwrap();
    (env, config_file)
}

/// `volcanic-bot doctor` on a planted config with `[sandbox]` lines `sandbox` and `vars` in its
/// environment: its stdout.
pub async fn doctor(sandbox: &str, vars: &[(&str, &str)]) -> String {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::reply("ok"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let (env, config_file) = plant(&model, &tg, sandbox, DEFAULT_MODEL);
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_volcanic-bot"));
    c.arg("--config")
        .arg(&config_file)
        .arg("doctor")
        .env_clear()
        .env("PATH", SYSTEM_PATH)
        .env("HOME", env.home())
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .env("E2E_ANTHROPIC_KEY", "test-key")
        .envs(vars.iter().copied())
        .current_dir(env.dir.path());
    let out = tokio::time::timeout(std::time::Duration::from_secs(90), c.output())
        .await
        .expect("doctor finished within 90 s")
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `workspaces/<OWNER>`.
fn own_workspace(env: &Env) -> PathBuf {
    env.dir.path().join("workspaces").join(OWNER.to_string())
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The bot on `config`, with a system PATH, the planted variable and `vars`.
fn start_bot(env: &Env, config: &Path, vars: &[(&str, &str)]) -> BotProcess {
    let log = env.dir.path().join("bot.log");
    let out = std::fs::File::create(&log).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_volcanic-bot"));
    command
        .arg("--config")
        .arg(config)
        .env_clear()
        .env("PATH", SYSTEM_PATH)
        .env("HOME", env.home())
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .env("E2E_ANTHROPIC_KEY", "test-key")
        .env("PLANTED_API_KEY", IN_BOT_ENV)
        .env("VOLCANIC_LOG", "info")
        .envs(vars.iter().copied())
        .current_dir(env.dir.path())
        .stdout(out.try_clone().unwrap())
        .stderr(out);
    BotProcess {
        child: command.spawn().unwrap(),
        log,
    }
}

/// A Python connection to `host`:`port`, printing `CONNECTED` when it got through.
pub fn python_connect(name: &'static str, family: &str, host: &str, port: u16) -> Attempt {
    bash(
        name,
        format!(
            "/usr/bin/python3 -c 'import socket; s=socket.socket(socket.{family}); s.settimeout(5); \
             s.connect((\"{host}\", {port})); print(\"CONNECTED\")'"
        ),
    )
}

/// A `bash` attempt run as written (its output is judged by the test).
pub fn shell(name: &'static str, command: impl Into<String>) -> Attempt {
    Attempt {
        name,
        tool: "bash",
        args: json!({ "command": command.into() }),
    }
}

/// What [`listener`] answers.
pub const ANSWER: &str = "loopback-listener-answer";

/// A listener on 127.0.0.1 answering every connection, after reading its request, with a tiny
/// HTTP response carrying [`ANSWER`]; its port.
pub async fn listener() -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut head = [0u8; 4096];
            let _ = stream.read(&mut head).await;
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{ANSWER}",
                ANSWER.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
        }
    });
    port
}

/// Waits until the bot listens on 127.0.0.1:`port` (its `[http] listen`).
pub async fn wait_listening(port: u16, bot: &BotProcess) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the bot never listened on {port}:\n{}", bot.log());
}

/// The output of the tool call `id` as the model got it back.
pub fn tool_output(requests: &[RecordedRequest], id: &str) -> String {
    requests
        .iter()
        .flat_map(RecordedRequest::tool_outputs)
        .find(|(call, _)| call == id)
        .map(|(_, text)| text)
        .unwrap_or_else(|| panic!("no output of {id} in the recorded requests"))
}
