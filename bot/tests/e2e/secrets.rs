//! Secrets from the config, end to end: the real binary runs `bash` for the scripted model, and
//! what the model gets back is checked. A key, a token or a client secret the config gives the bot
//! is not in any child's environment (whatever the variable holding it is called) and is replaced
//! by `[REDACTED]` in tool output; the config and state lying inside the workspaces is warned about.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::sandbox_support::tool_output;
use crate::support::*;
use serde_json::json;
use std::path::Path;
use std::process::Command;
use volcanic_testkit::bot_api::{BotApiServer, updates};
use volcanic_testkit::model_server::{ModelServer, Turn};

/// `[providers.anthropic] api_key` in the config file.
const CONFIG_KEY: &str = "sk-ant-config-held-5f3a9c";
/// The value of `MY_LLM_AUTH`, named by `[providers.local] api_key_env`.
const ENV_KEY: &str = "llm-env-held-7e21b0";
/// `[google] client_secret` in the config file.
const GOOGLE_SECRET: &str = "GOCSPX-file-held-c0ffee";

/// A config for the doubles: `state_dir` and `workspaces_dir` under `dir`, the model
/// `anthropic/claude-sonnet-4-5` with [`CONFIG_KEY`] in the file, a local provider whose key is
/// in `MY_LLM_AUTH`, the `[telegram]` section `telegram`, and `extra` appended.
fn write_config(dir: &Path, model: &ModelServer, telegram: &str, state: &str, workspaces: &str, extra: &str) {
    let config = format!(
        "model = \"anthropic/claude-sonnet-4-5\"\nharden_process = false\n\
         state_dir = \"{state}\"\nworkspaces_dir = \"{workspaces}\"\n{telegram}\n\
         [providers.anthropic]\nbase_url = \"{url}\"\napi_key = \"{CONFIG_KEY}\"\n\
         [providers.local]\napi = \"openai-completions\"\nbase_url = \"{url}/v1\"\napi_key_env = \"MY_LLM_AUTH\"\n\
         models = [{{ id = \"m1\" }}]\n{extra}\n",
        state = dir.join(state).display(),
        workspaces = dir.join(workspaces).display(),
        url = model.url(),
    );
    std::fs::write(dir.join("volcanic.toml"), config).unwrap();
}

/// Starts the bot with exactly `vars` (plus PATH, HOME and the log level) in its environment.
fn start(env: &Env, vars: &[(&str, &str)]) -> BotProcess {
    let log = env.dir.path().join("bot.log");
    let out = std::fs::File::create(&log).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_volcanic-bot"));
    command
        .arg("--config")
        .arg(env.dir.path().join("volcanic.toml"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", env.home())
        .env("VOLCANIC_LOG", "info")
        .current_dir(env.dir.path())
        .stdout(out.try_clone().unwrap())
        .stderr(out);
    for (name, value) in vars {
        command.env(name, value);
    }
    BotProcess {
        child: command.spawn().unwrap(),
        log,
    }
}

/// Runs `bash` with `env`, then `cat keys.txt`, in `OWNER`'s chat; returns both outputs as the
/// model saw them.
async fn env_and_cat(model: &ModelServer, tg: &BotApiServer, bot: &BotProcess) -> (String, String) {
    model.push(Turn::call("toolu_env", "bash", json!({"command": "env"})));
    model.push(Turn::call("toolu_cat", "bash", json!({"command": "cat keys.txt"})));
    model.push(Turn::reply("checked the environment"));
    tg.push_update(updates::text_message(OWNER, OWNER, "show me your environment"));
    wait_text(tg, OWNER, "checked the environment", bot).await;
    let requests = wait_requests(model, 3, bot).await;
    (tool_output(&requests, "toolu_env"), tool_output(&requests, "toolu_cat"))
}

/// Writes `keys.txt` with `lines` into `OWNER`'s workspace before the chat starts.
fn keys_file(env: &Env, lines: &str) {
    let ws = env.dir.path().join("workspaces").join(OWNER.to_string());
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("keys.txt"), lines).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_held_key_and_a_custom_named_key_variable_are_not_in_bash_and_are_redacted_from_cat() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), "");
    // The bot token is in the file too, so no variable is named after it.
    let telegram = telegram_config(&tg, &format!("token = \"{TOKEN}\""));
    write_config(env.dir.path(), &model, &telegram, "data", "workspaces", "");
    keys_file(
        &env,
        &format!("anthropic={CONFIG_KEY}\nlocal={ENV_KEY}\nbot={TOKEN}\nplain=nothing-secret\n"),
    );
    let bot = start(
        &env,
        &[
            ("MY_LLM_AUTH", ENV_KEY),
            // Copies under names no deny pattern matches: removed by value.
            ("BACKUP_OF_THE_CONFIG", CONFIG_KEY),
            ("DEPLOY_NOTES", &format!("bot={TOKEN}; llm={ENV_KEY}")),
            ("KEEP_ME", "visible-to-the-agent"),
        ],
    );
    let (env_out, cat_out) = env_and_cat(&model, &tg, &bot).await;

    assert!(env_out.contains("KEEP_ME=visible-to-the-agent"), "{env_out}");
    for absent in [
        CONFIG_KEY,
        ENV_KEY,
        TOKEN,
        "MY_LLM_AUTH",
        "BACKUP_OF_THE_CONFIG",
        "DEPLOY_NOTES",
    ] {
        assert!(
            !env_out.contains(absent),
            "{absent} in the bash environment:\n{env_out}"
        );
    }
    // Removed, not merely redacted.
    assert!(!env_out.contains("[REDACTED]"), "{env_out}");

    assert_eq!(
        cat_out.trim_end(),
        "anthropic=[REDACTED]\nlocal=[REDACTED]\nbot=[REDACTED]\nplain=nothing-secret"
    );
    // The bot itself still uses its key, and nothing it wrote down holds one.
    let requests = model.requests();
    assert!(requests.iter().all(|r| r.header("x-api-key") == Some(CONFIG_KEY)));
    for file in jsonl_files(&env.dir.path().join("data")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for secret in [CONFIG_KEY, ENV_KEY, TOKEN] {
            assert!(!text.contains(secret), "{secret} in {}", file.display());
        }
    }
    let log = bot.log();
    assert!(!log.contains(CONFIG_KEY) && !log.contains(ENV_KEY), "{log}");
    // The default layout (config, data and workspaces side by side) gives no placement warning.
    assert!(!log.contains("is inside `"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bot_token_from_the_environment_and_the_google_secret_are_not_in_bash() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), "");
    let google = format!("[google]\nclient_id = \"e2e.apps.example\"\nclient_secret = \"{GOOGLE_SECRET}\"");
    write_config(
        env.dir.path(),
        &model,
        &telegram_config(&tg, ""),
        "data",
        "workspaces",
        &google,
    );
    keys_file(&env, &format!("token={TOKEN}\ngoogle={GOOGLE_SECRET}\n"));
    let bot = start(
        &env,
        &[
            ("TELEGRAM_BOT_TOKEN", TOKEN),
            ("MY_LLM_AUTH", ENV_KEY),
            ("TOKEN_COPY", TOKEN),
            ("CALENDAR_SETUP", GOOGLE_SECRET),
            ("KEEP_ME", "visible-to-the-agent"),
        ],
    );
    let (env_out, cat_out) = env_and_cat(&model, &tg, &bot).await;

    assert!(env_out.contains("KEEP_ME=visible-to-the-agent"), "{env_out}");
    for absent in [
        TOKEN,
        GOOGLE_SECRET,
        ENV_KEY,
        "TELEGRAM_BOT_TOKEN",
        "TOKEN_COPY",
        "CALENDAR_SETUP",
    ] {
        assert!(
            !env_out.contains(absent),
            "{absent} in the bash environment:\n{env_out}"
        );
    }
    assert_eq!(cat_out.trim_end(), "token=[REDACTED]\ngoogle=[REDACTED]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_keys_credentials_pats_dsns_the_ssh_agent_and_a_url_password_are_not_in_bash() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), "");
    let telegram = telegram_config(&tg, &format!("token = \"{TOKEN}\""));
    write_config(env.dir.path(), &model, &telegram, "data", "workspaces", "");
    keys_file(&env, "url=http://u:proxy-pass-77@h\n");
    let planted = [
        ("FOO_API_KEY", "foo-api-key-value-1"),
        ("DB_DSN", "host=db user=app password=dsn-value-2"),
        ("GH_PAT", "github_pat_value_3"),
        ("X_CREDENTIALS", "credentials-value-4"),
        ("SSH_AUTH_SOCK", "/tmp/ssh-agent-value-5/agent.1"),
        ("PROXY_URL", "http://u:proxy-pass-77@h"),
    ];
    let mut vars = planted.to_vec();
    vars.extend([("TZ", "Europe/Berlin"), ("LANG", "C.UTF-8"), ("TERM", "dumb")]);
    let bot = start(&env, &vars);
    let (env_out, cat_out) = env_and_cat(&model, &tg, &bot).await;

    for (name, value) in planted {
        assert!(
            !env_out.contains(name) && !env_out.contains(value),
            "{name} in the bash environment:\n{env_out}"
        );
    }
    // What a shell needs stays (TZ is the chat's zone, set for every child).
    for kept in ["PATH=", "HOME=", "TZ=", "LANG=C.UTF-8", "TERM=dumb"] {
        assert!(env_out.contains(kept), "{kept} missing:\n{env_out}");
    }
    // The URL's value counts as a secret: a copy in a file is redacted too.
    assert_eq!(cat_out.trim_end(), "url=[REDACTED]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_dir_inside_the_workspaces_is_warned_about_at_start() {
    let model = ModelServer::start().await.unwrap();
    let tg = BotApiServer::start(TOKEN).await.unwrap();
    let env = Env::new(&model.url(), "");
    write_config(
        env.dir.path(),
        &model,
        &telegram_config(&tg, ""),
        "workspaces/state",
        "workspaces",
        "",
    );
    let bot = start(&env, &[("TELEGRAM_BOT_TOKEN", TOKEN), ("MY_LLM_AUTH", ENV_KEY)]);
    // The check runs before the Telegram host starts: once it called getMe, the log has it.
    tg.wait_for(|s| !s.calls("getMe").is_empty(), T)
        .await
        .unwrap_or_else(|e| panic!("{e}\nbot log:\n{}", bot.log()));
    let log = bot.log();
    let warning = log
        .lines()
        .find(|l| l.contains("WARN") && l.contains("`state_dir` ("))
        .unwrap_or_else(|| panic!("no placement warning:\n{log}"));
    assert!(warning.contains("is inside `workspaces_dir`"), "{warning}");
    assert!(warning.contains("/workspaces/state)"), "{warning}");
}
