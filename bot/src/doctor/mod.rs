//! `volcanic-bot doctor`: checks a setup the way the bot will use it and prints a checklist,
//! with the fix for each failure. Exit status 0 when nothing failed, 1 otherwise.
//!
//! In order: the config file (loads, placement of the folders, someone allowed), the token
//! (`getMe`), the models (the default one is known and has a key; a one-token request to each
//! provider that has a key), Google (the token endpoint accepts the OAuth client), the state and
//! workspaces folders (writable, free space), the lock (whether a bot runs on this state
//! directory), the listener and the public URL (a probe on the OAuth callback route, sent
//! through `[http] public_url`, must come back to this listener). It can run beside the
//! service: a held lock and a listener in use by that running bot are notes, not failures.
//!
//! Nothing secret is printed: the token, keys and client secret never appear.

#![allow(clippy::print_stdout)]

mod checks;
mod reach;
mod recall;
mod sandbox;

pub use reach::{describe, get_me};

use crate::config::{Config, ConfigError};
use std::path::Path;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    /// Works.
    Ok,
    /// Worth knowing; not a failure (optional parts not set up, a running bot).
    Note,
    /// Will not work as configured.
    Fail,
}

/// One line of the checklist.
#[derive(Debug, Clone, PartialEq)]
struct Check {
    status: Status,
    what: String,
    detail: String,
    /// What to do, for failures.
    fix: Option<String>,
}

impl Check {
    fn ok(what: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            status: Status::Ok,
            what: what.into(),
            detail: detail.into(),
            fix: None,
        }
    }

    fn note(what: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            status: Status::Note,
            what: what.into(),
            detail: detail.into(),
            fix: None,
        }
    }

    fn fail(what: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            status: Status::Fail,
            what: what.into(),
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

/// Runs every check for the config at `path` (`required`: given explicitly, so a missing file
/// fails), prints the checklist to stdout and returns the exit status.
pub async fn run(path: &Path, required: bool) -> i32 {
    let checks = collect(path, required).await;
    print!("{}", render(&checks));
    i32::from(checks.iter().any(|c| c.status == Status::Fail))
}

async fn collect(path: &Path, required: bool) -> Vec<Check> {
    let mut out = Vec::new();
    let config = match Config::load(path, required) {
        Ok(c) => c,
        Err(e) => {
            let fix = config_fix(&e);
            out.push(Check::fail("config", e.to_string(), fix));
            return out;
        }
    };
    out.extend(config_checks(&config, path));
    out.push(features_check(&config));
    out.push(checks::token(&config).await);
    out.extend(checks::models(&config).await);
    out.extend(checks::google(&config).await);
    out.push(sandbox::check(&config, volcanic_sandbox::KernelSupport::probe()));
    out.push(checks::folder("state_dir", &config.state_dir));
    out.push(checks::folder("workspaces_dir", &config.workspaces_dir));
    out.push(recall::check(&config.state_dir));
    out.push(checks::folder(
        "memory",
        &config.state_dir.join(crate::features::memory::files::FOLDER),
    ));
    let holder = crate::lock::probe(&config.state_dir);
    out.push(checks::lock(&config.state_dir, &holder));
    out.extend(checks::listener(&config, holder.ok()).await);
    out
}

/// What to do about a config that does not load: a missing file is created from the examples,
/// one the bot's user cannot read is made readable, a wrong key is fixed where the message says.
fn config_fix(error: &ConfigError) -> String {
    match error {
        ConfigError::Read { path, error } if error.kind() == std::io::ErrorKind::NotFound => format!(
            "create it: copy config/volcanic.example.toml (every key, documented) or deploy/volcanic.toml (a \
             service's) to {}, or name another file with --config or VOLCANIC_CONFIG",
            path.display()
        ),
        ConfigError::Read { path, .. } => format!(
            "make {} readable by the bot's user (e.g. `chown root:volcanic` and `chmod 640`), or name another \
             file with --config",
            path.display()
        ),
        ConfigError::Parse { .. } | ConfigError::Invalid { .. } => {
            "fix what the message names; config/volcanic.example.toml documents every key".to_owned()
        }
    }
}

/// The feature sections (`[a2a]`, `[mcp]`, …), checked as the bot's start checks them: each
/// feature reads its own section, and a section no feature reads is an error. Built as the
/// console builds them (no Telegram side), so nothing is started or written.
fn features_check(config: &Config) -> Check {
    let services = crate::features::Services::new(
        std::sync::Arc::new(config.clone()),
        crate::agent_setup::process_policy(config),
        config.state_dir.clone(),
        config.workspaces_dir.clone(),
        tokio_util::sync::CancellationToken::new(),
    );
    // The A2A server exists only in the Telegram host; its section is checked as its start does.
    let built = crate::features::Features::build(&services)
        .and_then(|_| crate::features::a2a_server::configured(&services).map(|_| ()));
    match built {
        Ok(()) => {
            let mut sections: Vec<&String> = config.features.keys().collect();
            sections.sort();
            Check::ok(
                "features",
                if sections.is_empty() {
                    "no feature sections".to_owned()
                } else {
                    let names: Vec<String> = sections.iter().map(|s| format!("[{s}]")).collect();
                    format!("{} read", names.join(", "))
                },
            )
        }
        Err(e) => Check::fail(
            "features",
            e.to_string(),
            "fix the key the message names (config/volcanic.example.toml documents every section); \
             the bot refuses to start with it",
        ),
    }
}

fn config_checks(config: &Config, path: &Path) -> Vec<Check> {
    let mut out = Vec::new();
    let shown = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    if path.exists() {
        out.push(Check::ok("config", format!("{} loads", shown.display())));
    } else {
        out.push(Check::note(
            "config",
            format!("no file at {}: the defaults apply", shown.display()),
        ));
    }
    // As the bot at start, which warns and runs (`crate::placement`): a note, not a failure.
    let file = path.exists().then_some(path);
    for warning in crate::placement::warnings(config, file) {
        out.push(Check::note("placement", warning));
    }
    if let Some(warning) = crate::placement::root_warning() {
        out.push(Check::note("user", warning));
    }
    if config.telegram.allowed_users.is_empty() {
        out.push(Check::fail(
            "allowed_users",
            "telegram.allowed_users is empty: the bot answers nobody",
            "add your numeric Telegram id to [telegram] allowed_users (a stranger's message makes the bot \
             tell them their id)",
        ));
    } else {
        out.push(Check::ok(
            "allowed_users",
            format!(
                "{} user(s), {} group chat(s)",
                config.telegram.allowed_users.len(),
                config.telegram.allowed_chats.len()
            ),
        ));
    }
    out
}

/// The checklist as printed: one line per check, the fix indented under a failure, a summary.
fn render(checks: &[Check]) -> String {
    let mut text = format!("volcanic-bot {} doctor\n", env!("CARGO_PKG_VERSION"));
    for c in checks {
        let mark = match c.status {
            Status::Ok => "[ok]  ",
            Status::Note => "[note]",
            Status::Fail => "[FAIL]",
        };
        text.push_str(&format!("{mark} {:<15} {}\n", c.what, c.detail));
        if let Some(fix) = &c.fix {
            text.push_str(&format!("{:22}fix: {fix}\n", ""));
        }
    }
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    if failed == 0 {
        text.push_str("All checks passed.\n");
    } else {
        text.push_str(&format!("{failed} check(s) failed.\n"));
    }
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_checklist_shows_each_fix_under_its_failure() {
        let text = render(&[
            Check::ok("token", "@bot (id 1)"),
            Check::note("google", "not configured"),
            Check::fail("state_dir", "/x: not writable", "chown it"),
        ]);
        let want = format!(
            "volcanic-bot {} doctor\n\
             [ok]   token           @bot (id 1)\n\
             [note] google          not configured\n\
             [FAIL] state_dir       /x: not writable\n\
             \x20                     fix: chown it\n\
             1 check(s) failed.\n",
            env!("CARGO_PKG_VERSION")
        );
        assert_eq!(text, want);
    }

    #[test]
    fn a_state_dir_inside_the_workspaces_is_a_note_as_the_bot_only_warns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("volcanic.toml");
        let text = format!(
            "state_dir = \"{0}/workspaces/state\"\nworkspaces_dir = \"{0}/workspaces\"\n",
            dir.path().display()
        );
        std::fs::write(&path, &text).unwrap();
        let config = Config::load(&path, true).unwrap();
        let checks = config_checks(&config, &path);
        let placement: Vec<&Check> = checks.iter().filter(|c| c.what == "placement").collect();
        assert_eq!(placement.len(), 1, "{checks:?}");
        assert_eq!(placement[0].status, Status::Note);
        // The same sentence the bot logs at start.
        assert_eq!(placement[0].detail, crate::placement::warnings(&config, Some(&path))[0]);
    }

    #[tokio::test]
    async fn a_missing_config_file_is_told_how_to_create_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("volcanic.toml");
        let checks = collect(&path, true).await;
        assert_eq!(checks.len(), 1, "{checks:?}");
        assert_eq!(checks[0].status, Status::Fail);
        assert!(checks[0].detail.starts_with("cannot read config file"), "{checks:?}");
        let fix = checks[0].fix.clone().unwrap();
        assert!(fix.starts_with("create it: copy config/volcanic.example.toml"), "{fix}");
        assert!(fix.contains(&path.display().to_string()), "{fix}");
        // A file that is there but wrong keeps the fix that points at the key.
        std::fs::write(&path, "modle = 1\n").unwrap();
        let checks = collect(&path, true).await;
        let fix = checks[0].fix.clone().unwrap();
        assert!(fix.starts_with("fix what the message names"), "{checks:?}");
    }

    #[tokio::test]
    async fn a_missing_claude_is_told_to_install_it_not_to_check_a_key() {
        // The built-in providers get a key variable nobody sets: only `claude` is tried. The
        // sandbox is off: this test's folder is no agent's workspace.
        let text = "[sandbox]\nmode = \"off\"\n\
                    [providers.claude-code]\ncommand = \"/nonexistent/volcanic-test/claude\"\n\
                    [providers.anthropic]\nbase_url = \"http://127.0.0.1:9\"\napi_key_env = \"VOLCANIC_TEST_UNSET\"\n\
                    [providers.openai]\nbase_url = \"http://127.0.0.1:9\"\napi_key_env = \"VOLCANIC_TEST_UNSET\"\n";
        let config = Config::parse(text, Path::new("test.toml")).unwrap();
        let checks = checks::models(&config).await;
        let claude = checks
            .iter()
            .find(|c| c.what == "model claude-code")
            .unwrap_or_else(|| panic!("{checks:?}"));
        assert_eq!(claude.status, Status::Fail, "{claude:?}");
        assert!(
            claude.detail.contains("was not found: install Claude Code"),
            "{claude:?}"
        );
        let fix = claude.fix.clone().unwrap();
        assert!(
            fix.starts_with("do what the message says: Claude Code runs here"),
            "{fix}"
        );
        assert!(!fix.contains("check the provider's key"), "{fix}");
    }
}
