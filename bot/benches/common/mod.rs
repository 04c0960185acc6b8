//! What the bench binaries share: a config home, the bot process under test (the real release
//! binary), answers waited for, percentiles. Knobs (environment): `HOST_BENCH_BIN=<path>` measures
//! another build of the binary; `HOST_BENCH_LOG=<filter>` sets the bot's `VOLCANIC_LOG`;
//! `HOST_BENCH_LOG_COPY=<file>` keeps each bot's log as `<file>.<n>`; `HOST_BENCH_WRAP="strace -f
//! -tt -o <file>"` starts the bot under another program.

// Each bench uses its own part of this module.
#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

use tokio::time::Instant;
use volcanic_testkit::bot_api::BotApiServer;

/// The bot token of every bench.
pub const TOKEN: &str = "123456:BENCH-token";
const BIN: &str = env!("CARGO_BIN_EXE_volcanic-bot");

/// The binary under test: `HOST_BENCH_BIN` (another build, to compare), else this build's.
pub fn bin() -> String {
    std::env::var("HOST_BENCH_BIN").unwrap_or_else(|_| BIN.to_owned())
}

/// The benches' own runtime (the doubles and the driver): two worker threads, as many as the
/// reference machine has cores.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The first chat (and user) id of a bench.
pub const FIRST_ID: i64 = 100_000;

/// A temporary home with a config for one bot process.
pub struct Env {
    /// The folder: `volcanic.toml`, `data/` (state), `workspaces/`, `home/`, `bot.log`.
    pub dir: tempfile::TempDir,
}

impl Env {
    /// A config for the model server at `model_url` and the Bot API double at `tg_url`, with
    /// `users` allowed (the first an owner) and `extra` top-level keys.
    pub fn new(model_url: &str, tg_url: &str, users: &[i64], extra: &str) -> Env {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("workspaces")).unwrap();
        let ids: Vec<String> = users.iter().map(i64::to_string).collect();
        let config = format!(
            "model = \"anthropic/claude-sonnet-4-5\"\nharden_process = false\n{extra}\nstate_dir = \"{state}\"\nworkspaces_dir = \"{ws}\"\n\
             [telegram]\napi_url = \"{tg_url}\"\nallowed_users = [{ids}]\nowners = [{owner}]\n\
             [providers.anthropic]\nbase_url = \"{model_url}\"\napi_key_env = \"BENCH_ANTHROPIC_KEY\"\n",
            state = dir.path().join("data").display(),
            ws = dir.path().join("workspaces").display(),
            ids = ids.join(", "),
            owner = users.first().copied().unwrap_or(FIRST_ID),
        );
        std::fs::write(dir.path().join("volcanic.toml"), config).unwrap();
        Env { dir }
    }

    /// Appends `section` (a TOML table, e.g. `[metrics]`) to the config, after every top-level key.
    pub fn add_section(&self, section: &str) {
        let path = self.dir.path().join("volcanic.toml");
        let config = std::fs::read_to_string(&path).unwrap();
        std::fs::write(path, format!("{config}\n{section}\n")).unwrap();
    }

    /// The state dir.
    pub fn state(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The workspaces dir.
    pub fn workspaces(&self) -> PathBuf {
        self.dir.path().join("workspaces")
    }
}

/// The bot process (in a process group of its own); killed on drop.
pub struct Bot {
    /// The process.
    pub child: Child,
    log: PathBuf,
    /// Started under `HOST_BENCH_WRAP`: the whole group is killed, not just the wrapper.
    wrapped: bool,
}

impl Bot {
    /// Starts the binary under test with `env`'s config.
    pub fn start(env: &Env) -> Bot {
        Bot::start_logging(env, "warn")
    }

    /// [`start`](Self::start) with `filter` as the bot's `VOLCANIC_LOG` unless `HOST_BENCH_LOG`
    /// says otherwise.
    pub fn start_logging(env: &Env, filter: &str) -> Bot {
        let log = env.dir.path().join("bot.log");
        let out = std::fs::File::create(&log).unwrap();
        let wrap = std::env::var("HOST_BENCH_WRAP").unwrap_or_default();
        let mut parts = wrap.split_whitespace();
        let mut cmd = match parts.next() {
            Some(program) => {
                let mut c = Command::new(program);
                c.args(parts).arg(bin());
                c
            }
            None => Command::new(bin()),
        };
        let child = cmd
            .process_group(0)
            .arg("--config")
            .arg(env.dir.path().join("volcanic.toml"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", env.dir.path().join("home"))
            .env("TELEGRAM_BOT_TOKEN", TOKEN)
            .env("BENCH_ANTHROPIC_KEY", "test-key")
            .env(
                "VOLCANIC_LOG",
                std::env::var("HOST_BENCH_LOG").unwrap_or_else(|_| filter.into()),
            )
            .current_dir(env.dir.path())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        Bot {
            child,
            log,
            wrapped: !wrap.trim().is_empty(),
        }
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// VmRSS in MiB.
    pub fn rss_mib(&self) -> f64 {
        self.status_mib("VmRSS")
    }

    /// A `kB` line of `/proc/<pid>/status` (`VmRSS`, `RssAnon`, `RssFile`, ...) in MiB.
    pub fn status_mib(&self, field: &str) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kb: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("{field} in /proc/<pid>/status"));
        kb / 1024.0
    }
}

impl Drop for Bot {
    fn drop(&mut self) {
        if self.wrapped {
            // Killing only the wrapper (strace, perf) would leave the bot running.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.child.id())])
                .status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Ok(to) = std::env::var("HOST_BENCH_LOG_COPY") {
            static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let _ = std::fs::copy(&self.log, format!("{to}.{n}"));
        }
    }
}

/// Whether one of the chat's newest messages contains `marker` (only the newest are looked at:
/// polling every message of a hundred chats every 50 ms would load the machine being measured).
pub fn answered(tg: &BotApiServer, chat: i64, marker: &str) -> bool {
    tg.newest_messages(chat, 3)
        .iter()
        .any(|m| m.visible_text.as_deref().unwrap_or_default().contains(marker))
}

/// Polls until every chat has a visible message containing `marker`.
pub async fn wait_all_answered(tg: &BotApiServer, bot: &Bot, chats: &[i64], marker: &str, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    let mut pending: Vec<i64> = chats.to_vec();
    loop {
        pending.retain(|&c| !answered(tg, c, marker));
        if pending.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {} chats unanswered after {timeout:?}\nbot log:\n{}",
            pending.len(),
            chats.len(),
            bot.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The `p`th percentile (0-100) of `values`, nearest rank.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}
