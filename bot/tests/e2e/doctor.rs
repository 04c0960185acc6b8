//! `volcanic-bot doctor` against the doubles: a setup that works passes (exit 0), each broken
//! part fails with its fix (exit 1), and beside a running bot the lock and the listener are
//! notes, not failures.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use std::process::Output;
use std::time::Duration;
use volcanic_testkit::bot_api::BotApiServer;
use volcanic_testkit::google::GoogleServer;
use volcanic_testkit::model_server::{ModelServer, Turn};

const CLIENT_ID: &str = "doctor-client.apps.googleusercontent.com";
const CLIENT_SECRET: &str = "doctor-secret";

/// `volcanic-bot --config <cfg> doctor` with a clean environment plus `vars`.
async fn doctor(env: &Env, vars: &[(&str, &str)]) -> Output {
    doctor_in(env, vars, env.dir.path()).await
}

/// [`doctor`] started in the folder `cwd`.
async fn doctor_in(env: &Env, vars: &[(&str, &str)], cwd: &std::path::Path) -> Output {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_volcanic-bot"));
    c.arg("--config")
        .arg(env.dir.path().join("volcanic.toml"))
        .arg("doctor")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", env.home())
        .current_dir(cwd);
    for (k, v) in vars {
        c.env(k, v);
    }
    tokio::time::timeout(Duration::from_secs(90), c.output())
        .await
        .expect("doctor finished within 90 s")
        .unwrap()
}

/// The checklist line of `what` (the first one), e.g. `[ok]   token           @…`.
fn line<'a>(out: &'a str, what: &str) -> &'a str {
    out.lines()
        .find(|l| l.get(7..).is_some_and(|rest| rest.starts_with(&format!("{what} "))))
        .unwrap_or_else(|| panic!("no `{what}` line in:\n{out}"))
}

/// The `fix:` line right under the line of `what`.
fn fix_of<'a>(out: &'a str, what: &str) -> &'a str {
    let l = line(out, what);
    let mut lines = out.lines().skip_while(|x| *x != l).skip(1);
    lines
        .next()
        .map(str::trim)
        .filter(|f| f.starts_with("fix: "))
        .unwrap_or_else(|| panic!("no fix under `{what}` in:\n{out}"))
}

fn google_section(g: &GoogleServer, secret: &str) -> String {
    format!(
        "[google]\nclient_id = \"{CLIENT_ID}\"\nclient_secret = \"{secret}\"\ntoken_url = \"{}\"\n\
         auth_url = \"{}\"\nrevoke_url = \"{}\"\napi_base_url = \"{}\"\n",
        g.token_url(),
        g.auth_url(),
        g.revoke_url(),
        g.api_base_url()
    )
}

const KEYS: [(&str, &str); 3] = [
    ("TELEGRAM_BOT_TOKEN", TOKEN),
    ("E2E_ANTHROPIC_KEY", "test-key"),
    ("E2E_OPENAI_KEY", "test-key"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_passes_a_working_setup_and_checks_each_part_for_real() {
    let model = ModelServer::start().await.unwrap();
    model.push_all([Turn::reply("ok"), Turn::reply("ok")]);
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let g = GoogleServer::start(CLIENT_ID, CLIENT_SECRET).await.unwrap();
    let port = free_port();
    let extra = format!(
        "{}[http]\nlisten = \"127.0.0.1:{port}\"\npublic_url = \"http://127.0.0.1:{port}\"\n{}",
        telegram_config(&tg, ""),
        google_section(&g, CLIENT_SECRET)
    );
    let env = Env::new(&model.url(), &extra);
    let out = doctor(&env, &KEYS).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));
    assert!(
        line(&text, "token").starts_with(&format!(
            "[ok]   token           @volcanic_test_bot (id 123456) at {}",
            tg.url()
        )),
        "{text}"
    );
    assert!(
        line(&text, "model anthropic").contains("[ok]   model anthropic anthropic/claude-sonnet-4-5 answered"),
        "{text}"
    );
    assert!(line(&text, "model openai").starts_with("[ok]"), "{text}");
    assert!(line(&text, "features").starts_with("[ok]"), "{text}");
    assert!(
        line(&text, "google").contains(&format!("the token endpoint accepts client {CLIENT_ID}")),
        "{text}"
    );
    for what in [
        "config",
        "allowed_users",
        "state_dir",
        "workspaces_dir",
        "lock",
        "listener",
        "public URL",
    ] {
        assert!(line(&text, what).starts_with("[ok]"), "{what}:\n{text}");
    }
    assert!(text.ends_with("All checks passed.\n"), "{text}");
    // Each check talked to its double: getMe, a one-token request per provider, Google's token
    // endpoint.
    assert_eq!(tg.calls("getMe").len(), 1);
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let limits: Vec<String> = requests
        .iter()
        .map(|r| {
            let b = &r.body;
            b.get("max_tokens")
                .or_else(|| b.get("max_completion_tokens"))
                .or_else(|| b.get("max_output_tokens"))
                .unwrap()
                .to_string()
        })
        .collect();
    // openai/gpt-5 is on the Responses API, whose smallest limit is 16.
    assert_eq!(limits, ["1", "16"]);
    assert!(g.requests().iter().any(|r| r.path == "/token"), "{:?}", g.requests());
    // Secrets never printed.
    for secret in [TOKEN, "test-key", CLIENT_SECRET] {
        assert!(!text.contains(secret), "{secret} in:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_fails_each_broken_part_with_its_fix() {
    let model = ModelServer::start().await.unwrap();
    model.push(Turn::error(401, "invalid x-api-key"));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let g = GoogleServer::start(CLIENT_ID, CLIENT_SECRET).await.unwrap();
    let (listen, public) = (free_port(), free_port());
    let env = Env::new(&model.url(), "");
    // state_dir under a file: it cannot be created.
    std::fs::write(env.dir.path().join("afile"), "").unwrap();
    let config = std::fs::read_to_string(env.dir.path().join("volcanic.toml"))
        .unwrap()
        .replace(
            &format!("state_dir = \"{}\"", env.dir.path().join("data").display()),
            &format!("state_dir = \"{}\"", env.dir.path().join("afile/data").display()),
        );
    // `[mpc]`: a typo of `[mcp]`, which the bot would refuse at start.
    let extra = format!(
        "{}[http]\nlisten = \"127.0.0.1:{listen}\"\npublic_url = \"http://127.0.0.1:{public}\"\n{}[mpc]\nstart_wait_secs = 1\n",
        telegram_config(&tg, ""),
        google_section(&g, "wrong-secret")
    );
    std::fs::write(env.dir.path().join("volcanic.toml"), format!("{config}\n{extra}")).unwrap();
    // No OpenAI key: that provider is a note; the token is refused.
    let out = doctor(
        &env,
        &[
            ("TELEGRAM_BOT_TOKEN", "999:WRONG-token"),
            ("E2E_ANTHROPIC_KEY", "test-key"),
        ],
    )
    .await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));
    assert!(line(&text, "token").contains("refused the bot token"), "{text}");
    assert!(
        line(&text, "features").contains("[FAIL] features        config key `mpc`: not a setting"),
        "{text}"
    );
    assert!(fix_of(&text, "features").contains("refuses to start"), "{text}");
    assert!(fix_of(&text, "token").contains("@BotFather"), "{text}");
    assert!(line(&text, "model anthropic").contains("[FAIL]"), "{text}");
    assert!(line(&text, "model anthropic").contains("invalid x-api-key"), "{text}");
    assert!(
        fix_of(&text, "model anthropic").contains("check the provider's key"),
        "{text}"
    );
    assert!(
        line(&text, "model openai").contains("[note] model openai    not checked: no API key"),
        "{text}"
    );
    assert!(line(&text, "google").contains("refused client"), "{text}");
    assert!(fix_of(&text, "google").contains("Credentials"), "{text}");
    assert!(line(&text, "state_dir").contains("afile is a file"), "{text}");
    assert!(
        fix_of(&text, "state_dir").contains("set `state_dir` to a folder path"),
        "{text}"
    );
    assert!(line(&text, "listener").starts_with("[ok]"), "{text}");
    assert!(
        line(&text, "public URL").contains("[FAIL] public URL      cannot reach"),
        "{text}"
    );
    assert!(
        fix_of(&text, "public URL").contains(&format!("reach 127.0.0.1:{listen}")),
        "{text}"
    );
    assert!(text.lines().last().unwrap().ends_with("check(s) failed."), "{text}");
    for secret in ["WRONG-token", "test-key", "wrong-secret"] {
        assert!(!text.contains(secret), "{secret} in:\n{text}");
    }

    // A config given explicitly that cannot be read is the first failure.
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_volcanic-bot"));
    c.args(["--config", "/nonexistent/volcanic.toml", "doctor"]).env_clear();
    let out = c.output().await.unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        line(&text, "config").starts_with("[FAIL] config          cannot read config file /nonexistent/volcanic.toml"),
        "{text}"
    );
}

/// `doctor` checks `fallback_models` with start-up's own check: a model the config does not
/// know, or whose provider has no key, fails with the sentence start-up stops with (the console's
/// start here), and a usable list passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_the_fallback_models_as_start_up_does() {
    let model = ModelServer::start().await.unwrap();
    model.set_responder(|_, _| Some(Turn::reply("ok")));
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let anthropic_only = [KEYS[0], KEYS[1]];
    for (list, keys, refused) in [
        (
            "\"anthropic/claude-nope-9\"",
            &KEYS[..],
            "unknown model `anthropic/claude-nope-9`",
        ),
        (
            "\"openai/gpt-5-mini\"",
            &anthropic_only[..],
            "set the environment variable E2E_OPENAI_KEY",
        ),
    ] {
        let env = Env::new(
            &model.url(),
            &format!("fallback_models = [{list}]\n{}", telegram_config(&tg, "")),
        );
        let out = doctor(&env, keys).await;
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));
        let failed = line(&text, "fallback_models");
        assert!(
            failed.starts_with("[FAIL] fallback_models config key `fallback_models`: ") && failed.contains(refused),
            "{text}"
        );
        assert!(fix_of(&text, "fallback_models").contains("refuses to start"), "{text}");
        let start = env.console_with_env(&["-p", "hi"], keys);
        assert_ne!(start.status.code(), Some(0));
        let reason = failed.trim_start_matches("[FAIL] fallback_models ").trim();
        assert!(
            stderr(&start).contains(reason),
            "start-up: {}\ndoctor: {reason}",
            stderr(&start)
        );
    }
    let env = Env::new(
        &model.url(),
        &format!(
            "fallback_models = [\"openai/gpt-5-mini\"]\n{}",
            telegram_config(&tg, "")
        ),
    );
    let out = doctor(&env, &KEYS).await;
    let text = stdout(&out);
    assert!(
        line(&text, "fallback_models").starts_with("[ok]   fallback_models openai/gpt-5-mini"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_beside_the_running_bot_names_it_and_probes_its_public_url() {
    let model = ModelServer::start().await.unwrap();
    model.push_all([Turn::reply("ok"), Turn::reply("ok")]);
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let port = free_port();
    let extra = format!(
        "{}[http]\nlisten = \"127.0.0.1:{port}\"\npublic_url = \"http://127.0.0.1:{port}\"\n",
        telegram_config(&tg, "")
    );
    let env = Env::new(&model.url(), &extra);
    let bot = BotProcess::start(&env, TOKEN);
    tg.wait_for(|s| !s.get_updates_calls().is_empty(), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\nbot log:\n{}", bot.log()));
    let out = doctor(&env, &KEYS).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));
    let pid = bot.child.id();
    assert!(
        line(&text, "lock").starts_with(&format!("[note] lock            held by PID {pid}")),
        "{text}"
    );
    assert!(
        line(&text, "listener").contains(&format!("127.0.0.1:{port} is in use by the running bot (PID {pid})")),
        "{text}"
    );
    assert!(
        line(&text, "public URL").contains("answers as the bot's callback route"),
        "{text}"
    );
    assert!(
        line(&text, "google").starts_with("[note] google          not configured"),
        "{text}"
    );
    // The running bot was not disturbed: its lock is its own.
    assert_eq!(
        std::fs::read_to_string(env.dir.path().join("data/volcanic-bot.lock")).unwrap(),
        format!("{pid}\n")
    );
}

/// Issue 31's mends of doctor, through the binary: a missing config file is told how to create
/// one; a `claude` that is not there is told to install it, not to check a key; a `state_dir`
/// inside the workspaces is a note, as the bot only warns about it at start (`placement`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_fits_each_fix_to_its_failure_and_notes_a_state_dir_inside_the_workspaces() {
    let model = ModelServer::start().await.unwrap();
    model.push_all([Turn::reply("ok"), Turn::reply("ok")]);
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let claude = "[providers.claude-code]\ncommand = \"/nonexistent/volcanic-test/claude\"\n";
    let env = Env::new(&model.url(), &format!("{}{claude}", telegram_config(&tg, "")));
    let cfg = env.dir.path().join("volcanic.toml");
    let state = env.dir.path().join("workspaces/state");
    let config = std::fs::read_to_string(&cfg).unwrap().replace(
        &format!("state_dir = \"{}\"", env.dir.path().join("data").display()),
        &format!("state_dir = \"{}\"", state.display()),
    );
    std::fs::write(&cfg, config).unwrap();
    // Started in a folder of its own: Claude Code's probe runs in the current folder, which the
    // sandbox refuses when it holds `state_dir` (as the test's folder does).
    let out = doctor_in(&env, &KEYS, &env.workspace()).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));
    let claude = line(&text, "model claude-code");
    assert!(claude.starts_with("[FAIL]"), "{text}");
    assert!(claude.contains("was not found: install Claude Code"), "{text}");
    let fix = fix_of(&text, "model claude-code");
    assert!(
        fix.starts_with("fix: do what the message says: Claude Code runs here"),
        "{text}"
    );
    assert!(!fix.contains("check the provider's key"), "{text}");
    let placement = line(&text, "placement");
    assert!(placement.starts_with("[note] placement"), "{text}");
    assert!(
        placement.contains(&format!("`state_dir` ({}) is inside `workspaces_dir`", state.display())),
        "{text}"
    );
    assert!(line(&text, "config").starts_with("[ok]"), "{text}");
    assert!(line(&text, "state_dir").starts_with("[ok]"), "{text}");
    assert!(text.ends_with("1 check(s) failed.\n"), "{text}");

    // No file where --config points: how to make one.
    let missing = env.dir.path().join("missing.toml");
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_volcanic-bot"));
    c.arg("--config").arg(&missing).arg("doctor").env_clear();
    let out = c.output().await.unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let fix = fix_of(&text, "config");
    assert!(
        fix.starts_with("fix: create it: copy config/volcanic.example.toml"),
        "{text}"
    );
    assert!(fix.contains(&missing.display().to_string()), "{text}");
}
