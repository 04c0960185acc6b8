//! The bot's home (config, state and workspaces that survive restarts) and its process:
//! started, killed with SIGKILL, stopped with SIGTERM.

use std::io::Write as _;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

pub const TOKEN: &str = "123456:KILL-bench-token";
const BIN: &str = env!("CARGO_BIN_EXE_volcanic-bot");

/// The binary under test: `KILL_BENCH_BIN` (another build), else this build's.
pub fn bin() -> String {
    std::env::var("KILL_BENCH_BIN").unwrap_or_else(|_| BIN.to_owned())
}

/// One home for every start of the bot: `data/` (state), `workspaces/`, `home/`, the config,
/// the tool-run log and the bot's log, all in a temporary folder (kept with `KILL_BENCH_KEEP`).
pub struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    /// A config like the end-to-end tests' (`telegram_config`): the model server as the
    /// `anthropic` provider, every chat's user allowed, the first one owner, the groups
    /// allowed; live answers on (drafts in private chats, previews in groups, paced at 100 ms)
    /// with reactions.
    pub fn new(model_url: &str, tg_url: &str, users: &[i64], groups: &[i64]) -> Env {
        let dir = tempfile::Builder::new().prefix("volcanic-kill-").tempdir().unwrap();
        for sub in ["home", "workspaces", "data", "tools"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let list = |ids: &[i64]| ids.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
        let config = format!(
            "model = \"anthropic/claude-sonnet-4-5\"\nharden_process = false\nstate_dir = \"{state}\"\nworkspaces_dir = \"{ws}\"\n\
             [telegram]\napi_url = \"{tg_url}\"\nallowed_users = [{ids}]\nowners = [{owner}]\nallowed_chats = [{groups}]\n\
             streaming = \"auto\"\nstream_interval_ms = 100\nreactions = true\n\
             [providers.anthropic]\nbase_url = \"{model_url}\"\napi_key_env = \"KILL_BENCH_ANTHROPIC_KEY\"\n\
             [sandbox]\nwrite_paths = [\"{tools}\"]\n",
            state = dir.path().join("data").display(),
            ws = dir.path().join("workspaces").display(),
            tools = dir.path().join("tools").display(),
            ids = list(users),
            groups = list(groups),
            owner = users[0],
        );
        std::fs::write(dir.path().join("volcanic.toml"), config).unwrap();
        Env { dir }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn workspaces(&self) -> PathBuf {
        self.dir.path().join("workspaces")
    }

    /// Where each `bash` run of the scripted model appends `<marker> <unix ms>`: outside the
    /// workspaces and the state dir, so the bot never touches it; its folder is the one the
    /// sandbox lets the agents write besides their workspace (`[sandbox] write_paths`).
    pub fn tool_log(&self) -> PathBuf {
        self.dir.path().join("tools").join("tool-runs.log")
    }

    pub fn bot_log(&self) -> PathBuf {
        self.dir.path().join("bot.log")
    }

    /// Keeps the folder after the run (for a look at the logs), returning its path.
    pub fn keep(self) -> PathBuf {
        self.dir.keep()
    }
}

/// The bot process (in a process group of its own, so a terminal's Ctrl-C does not reach it);
/// killed on drop.
pub struct Bot {
    child: Child,
}

impl Bot {
    /// Starts the bot; its output is appended to the one log of the run, after a line naming
    /// the start.
    pub fn start(env: &Env, n: usize) -> Bot {
        let mut out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(env.bot_log())
            .unwrap();
        writeln!(out, "===== kill bench: bot start {n} =====").unwrap();
        let child = Command::new(bin())
            .process_group(0)
            .arg("--config")
            .arg(env.root().join("volcanic.toml"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", env.root().join("home"))
            .env("TELEGRAM_BOT_TOKEN", TOKEN)
            .env("KILL_BENCH_ANTHROPIC_KEY", "test-key")
            .env(
                "VOLCANIC_LOG",
                std::env::var("KILL_BENCH_LOG").unwrap_or_else(|_| "info".into()),
            )
            .current_dir(env.root())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        Bot { child }
    }

    /// `kill -9` (the bot only: its `bash` children live on, as they would).
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGTERM, then waits up to `within` for the exit code (`None`: still running, killed).
    pub fn terminate(mut self, within: Duration) -> Option<i32> {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Bot {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
