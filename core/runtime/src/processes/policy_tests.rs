use super::*;
use pretty_assertions::assert_eq;
use std::collections::BTreeMap;
use std::sync::Arc;
use volcanic_abstractions::processes::{
    ProcessPurpose, ProcessSpawnHook, ProcessSpawnPolicy as _, ProcessSpawnRequest, SecretRedactor as _,
};

fn source(vars: &[(&str, &str)]) -> EnvSource {
    let vars: Vec<(String, String)> = vars.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect();
    Arc::new(move || vars.clone())
}

fn request() -> ProcessSpawnRequest {
    ProcessSpawnRequest::new(ProcessPurpose::Bash, "bash", "/tmp")
}

fn prepared(options: ProcessEnvironmentOptions, vars: &[(&str, &str)]) -> BTreeMap<String, String> {
    let policy = ProcessSpawnPolicy::with_env_source(options, source(vars));
    match policy.prepare(&request()) {
        Ok(context) => context.env,
        Err(e) => panic!("prepare failed: {e}"),
    }
}

fn names(env: &BTreeMap<String, String>) -> Vec<&str> {
    env.keys().map(String::as_str).collect()
}

#[test]
fn deny_list_removes_secret_suffixes_their_section_forms_and_known_names_ignoring_case() {
    let env = prepared(
        ProcessEnvironmentOptions::default(),
        &[
            ("PATH", "/usr/bin"),
            ("OPENAI_API_KEY", "sk-1"),
            ("github_token", "ghp"),
            ("DB_PASSWORD", "pw"),
            ("APP_SECRET", "s"),
            ("Telegram__Token", "t"),
            ("Providers__OpenAi__ApiKey", "k"),
            ("DB__PASSWORD", "p"),
            ("Google__Secret", "g"),
            ("GOOGLE_CLIENT_SECRET", "g"),
            ("AWS_SECRET_ACCESS_KEY", "a"),
            ("TELEGRAM_BOT_TOKEN", "b"),
            ("TOKENIZER", "keep"),
            ("HOME", "/home/u"),
        ],
    );
    assert_eq!(names(&env), vec!["HOME", "PATH", "TOKENIZER"]);
}

#[test]
fn keys_credentials_pats_dsns_agent_sockets_and_urls_with_a_password_are_denied() {
    let env = prepared(
        ProcessEnvironmentOptions::default(),
        &[
            ("FOO_API_KEY", "k1"),
            ("SSH_PRIVATE_KEY", "-----BEGIN"),
            ("GPG_KEY", "A035C8C19219BA821ECEA86B64E628F8D684696D"),
            ("Payments__Key", "k2"),
            ("X_CREDENTIALS", "c"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "/etc/sa.json"),
            ("GH_PAT", "github_pat_1"),
            ("DB_DSN", "host=db user=app"),
            ("SENTRY_DSN", "https://abc@o1.ingest.sentry.io/2"),
            ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
            ("PROXY_URL", "http://u:p@h"),
            ("DATABASE_URL", "postgres://app:hunter2@db:5432/app"),
            ("CACHE", "redis://:pw@cache:6379/0"),
            ("MIRRORS", "https://a.example/simple https://me:tok@b.example/simple"),
            // What legitimately stays: the basics, and URLs and names that only look close.
            ("PATH", "/usr/local/bin:/usr/bin"),
            ("HOME", "/home/u"),
            ("TZ", "Europe/Berlin"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C.UTF-8"),
            ("TERM", "xterm-256color"),
            ("SHELL", "/bin/bash"),
            ("USER", "u"),
            ("LD_LIBRARY_PATH", "/opt/lib"),
            ("SSH_CONNECTION", "10.0.0.1 5 10.0.0.2 22"),
            ("KEYMAP", "us"),
            ("PAGER", "less"),
            ("NO_PROXY", "localhost,127.0.0.1"),
            ("HTTP_PROXY", "http://proxy:3128"),
            ("REPO", "ssh://git@github.com/o/r.git"),
            ("DOCS", "https://example.com/a?x=1:2@3"),
            ("EMPTY_PW", "ftp://anonymous:@ftp.example"),
        ],
    );
    assert_eq!(
        names(&env),
        vec![
            "DOCS",
            "EMPTY_PW",
            "HOME",
            "HTTP_PROXY",
            "KEYMAP",
            "LANG",
            "LC_ALL",
            "LD_LIBRARY_PATH",
            "NO_PROXY",
            "PAGER",
            "PATH",
            "REPO",
            "SHELL",
            "SSH_CONNECTION",
            "TERM",
            "TZ",
            "USER",
        ]
    );
}

#[test]
fn the_value_of_a_url_with_a_password_is_redacted_like_a_denied_variables() {
    let policy = ProcessSpawnPolicy::with_env_source(
        ProcessEnvironmentOptions::default(),
        source(&[("UPSTREAM", "postgres://app:hunter2-long@db/app")]),
    );
    let out = policy
        .secret_redactor()
        .redact("dsn was postgres://app:hunter2-long@db/app");
    assert!(!out.contains("hunter2-long"), "{out}");
}

#[test]
fn urls_with_a_password_are_found_anywhere_in_a_value() {
    for (value, has) in [
        ("http://u:p@h", true),
        ("postgres://:secret@db", true),
        ("a b https://u:p@h/x c", true),
        ("https://u:p:q@h", true),
        ("http://h:8080/x", false),
        ("ssh://git@host/r", false),
        ("http://u:@h", false),
        ("https://h/p?q=u:p@x", false),
        ("user:pass@host", false),
        ("", false),
    ] {
        assert_eq!(super::policy::holds_url_password(value), has, "{value}");
    }
}

#[test]
fn name_patterns_match_wildcards_anywhere() {
    let p = NamePattern::new("*_API_KEY");
    assert!(p.matches("OPENAI_API_KEY"));
    assert!(p.matches("openai_api_key"));
    assert!(!p.matches("API_KEY"));
    assert!(!p.matches("OPENAI_API_KEYS"));
    let exact = NamePattern::new("LANG");
    assert!(exact.matches("lang"));
    assert!(!exact.matches("LANGUAGE"));
    let middle = NamePattern::new("A*B*C");
    assert!(middle.matches("A-B-C"));
    assert!(middle.matches("ABC"));
    assert!(!middle.matches("AC"));
    assert!(!NamePattern::new("ab*bc").matches("abc"));
    assert!(NamePattern::new("*").matches("anything"));
}

#[test]
fn allow_list_keeps_only_matching_names() {
    let options = ProcessEnvironmentOptions {
        allow: Some(vec!["PATH".into(), "LC_*".into(), "GH_TOKEN".into()]),
        ..ProcessEnvironmentOptions::default()
    };
    let env = prepared(
        options,
        &[("PATH", "/bin"), ("LC_ALL", "C"), ("HOME", "/h"), ("GH_TOKEN", "x")],
    );
    // The deny-list still applies to allowed names.
    assert_eq!(names(&env), vec!["LC_ALL", "PATH"]);
}

#[test]
fn a_variable_holding_a_secret_value_is_dropped() {
    let options = ProcessEnvironmentOptions {
        secret_values: vec!["hunter2-secret".into()],
        ..ProcessEnvironmentOptions::default()
    };
    let env = prepared(
        options,
        &[
            ("DATABASE_URL", "postgres://u:hunter2-secret@db/x"),
            ("ANTHROPIC_API_KEY", "sk-ant-0123456789"),
            ("CONFIG_BLOB", "key=sk-ant-0123456789"),
            ("PATH", "/bin"),
        ],
    );
    // CONFIG_BLOB carries the value of a denied variable, which seeded the secret set.
    assert_eq!(names(&env), vec!["PATH"]);
}

#[test]
fn explicit_request_env_is_never_filtered_and_none_removes() {
    let policy = ProcessSpawnPolicy::with_env_source(
        ProcessEnvironmentOptions::default(),
        source(&[("PATH", "/bin"), ("HOME", "/h")]),
    );
    let mut req = request();
    req.env.insert("GH_TOKEN".into(), Some("ghp_explicit".into()));
    req.env.insert("HOME".into(), None);
    let context = match policy.prepare(&req) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(names(&context.env), vec!["GH_TOKEN", "PATH"]);
    assert_eq!(context.env["GH_TOKEN"], "ghp_explicit");
    assert_eq!(context.command, "bash");
}

#[test]
fn inherit_false_starts_empty() {
    let options = ProcessEnvironmentOptions {
        inherit: false,
        ..ProcessEnvironmentOptions::default()
    };
    assert!(prepared(options, &[("PATH", "/bin")]).is_empty());
}

#[test]
fn time_zone_becomes_tz_after_explicit_env() {
    let policy = ProcessSpawnPolicy::with_env_source(ProcessEnvironmentOptions::default(), source(&[("TZ", "UTC")]));
    let mut req = request();
    req.env.insert("TZ".into(), Some("America/New_York".into()));
    req.time_zone = Some("Europe/Berlin".into());
    let env = policy.prepare(&req).map(|c| c.env).unwrap_or_default();
    assert_eq!(env.get("TZ").map(String::as_str), Some("Europe/Berlin"));
}

#[test]
fn hooks_run_in_order_and_a_failing_hook_fails_the_spawn() {
    let first: ProcessSpawnHook = Arc::new(|_req, ctx| {
        ctx.env.insert("STEP".into(), "1".into());
        Ok(())
    });
    let second: ProcessSpawnHook = Arc::new(|_req, ctx| {
        let step = ctx.env.get("STEP").cloned().unwrap_or_default();
        ctx.env.insert("STEP".into(), format!("{step}2"));
        ctx.args.push("--extra".into());
        Ok(())
    });
    let options = ProcessEnvironmentOptions {
        hooks: vec![first.clone(), second.clone()],
        ..ProcessEnvironmentOptions::default()
    };
    let policy = ProcessSpawnPolicy::with_env_source(options, source(&[]));
    let context = policy.prepare(&request());
    let context = context.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(context.env["STEP"], "12");
    assert_eq!(context.args, vec!["--extra".to_owned()]);

    let failing: ProcessSpawnHook = Arc::new(|_req, _ctx| Err("no spawning today".into()));
    let options = ProcessEnvironmentOptions {
        hooks: vec![first, failing],
        ..ProcessEnvironmentOptions::default()
    };
    let policy = ProcessSpawnPolicy::with_env_source(options, source(&[]));
    let error = policy.prepare(&request()).err().map(|e| e.to_string());
    assert_eq!(
        error.as_deref(),
        Some("process environment hook failed: no spawning today")
    );
}

#[test]
fn a_panicking_hook_fails_the_spawn() {
    let panicking: ProcessSpawnHook = Arc::new(|_req, _ctx| panic!("hook bug"));
    let options = ProcessEnvironmentOptions {
        hooks: vec![panicking],
        ..ProcessEnvironmentOptions::default()
    };
    let policy = ProcessSpawnPolicy::with_env_source(options, source(&[]));
    assert!(policy.prepare(&request()).is_err());
}

#[test]
fn redactor_is_seeded_from_denied_host_variables_and_secret_values() {
    let options = ProcessEnvironmentOptions {
        secret_values: vec!["configured-secret".into()],
        ..ProcessEnvironmentOptions::default()
    };
    let policy = ProcessSpawnPolicy::with_env_source(
        options,
        source(&[
            ("OPENAI_API_KEY", "sk-live-abcdef"),
            ("SHORT_TOKEN", "1234567"),
            ("PATH", "/usr/local/bin"),
        ]),
    );
    let redactor = policy.redactor();
    assert_eq!(
        redactor.redact("sk-live-abcdef configured-secret 1234567 /usr/local/bin"),
        "[REDACTED] [REDACTED] 1234567 /usr/local/bin"
    );
}

#[test]
fn a_child_gets_exactly_the_prepared_environment() {
    let policy = ProcessSpawnPolicy::with_env_source(
        ProcessEnvironmentOptions::default(),
        source(&[
            ("PATH", "/usr/bin:/bin"),
            ("OPENAI_API_KEY", "sk-should-not-leak"),
            ("KEEP_ME", "yes"),
        ]),
    );
    let mut req = ProcessSpawnRequest::new(ProcessPurpose::Other, "env", std::env::temp_dir());
    req.time_zone = Some("Asia/Tokyo".into());
    let context = policy.prepare(&req).unwrap_or_else(|e| panic!("{e}"));
    let output = context.to_std_command().output().unwrap_or_else(|e| panic!("env: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, vec!["KEEP_ME=yes", "PATH=/usr/bin:/bin", "TZ=Asia/Tokyo"]);
}

#[test]
fn policy_is_send_sync_static() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<ProcessSpawnPolicy>();
    assert_send_sync::<Redactor>();
}

#[test]
fn hardening_disabled_is_a_no_op() {
    assert!(matches!(harden_host_process(false), Ok(false)));
    #[cfg(target_os = "linux")]
    assert!(matches!(nix::sys::prctl::get_dumpable(), Ok(true)));
}

#[test]
fn configured_values_shorter_than_the_minimum_are_neither_redacted_nor_matched_by_value() {
    let options = ProcessEnvironmentOptions {
        secret_values: vec!["a".into(), "ollama".into(), "1234567".into(), "12345678".into()],
        ..ProcessEnvironmentOptions::default()
    };
    let policy = ProcessSpawnPolicy::with_env_source(
        options,
        source(&[
            ("PATH", "/usr/local/bin:/bin"),
            ("SHLVL", "1"),
            ("LOCAL_MODEL", "ollama"),
            ("SEVEN", "1234567"),
            ("EIGHT", "x12345678x"),
        ]),
    );
    let env = policy.prepare(&request()).map(|c| c.env).unwrap_or_default();
    assert_eq!(names(&env), vec!["LOCAL_MODEL", "PATH", "SEVEN", "SHLVL"]);
    assert_eq!(policy.secret_redactor().len(), 1);
    assert_eq!(
        policy.redactor().redact("a ollama 1234567 12345678"),
        "a ollama 1234567 [REDACTED]"
    );
    assert!(!is_host_secret("1234567"));
    assert!(is_host_secret("12345678"));
    // Characters, not bytes: seven Cyrillic letters are 14 bytes and still too short.
    assert!(!is_host_secret("секретн"));
}

#[test]
fn a_custom_named_key_variable_added_to_the_deny_list_goes_by_name_and_by_value() {
    let mut options = ProcessEnvironmentOptions::default();
    options.deny.push("MY_LLM_KEY".into());
    let policy = ProcessSpawnPolicy::with_env_source(
        options,
        source(&[
            ("MY_LLM_KEY", "llm-key-0123456789"),
            ("COPY_OF_IT", "Bearer llm-key-0123456789"),
            ("PATH", "/bin"),
        ]),
    );
    let env = policy.prepare(&request()).map(|c| c.env).unwrap_or_default();
    assert_eq!(names(&env), vec!["PATH"]);
    assert_eq!(policy.redactor().redact("k=llm-key-0123456789"), "k=[REDACTED]");
}

#[test]
fn a_secret_added_at_run_time_also_removes_variables_holding_it() {
    let policy = ProcessSpawnPolicy::with_env_source(
        ProcessEnvironmentOptions::default(),
        source(&[("SESSION_NOTE", "ya29.run-time-token"), ("PATH", "/bin")]),
    );
    policy.redactor().add_secret("ya29.run-time-token");
    let env = policy.prepare(&request()).map(|c| c.env).unwrap_or_default();
    assert_eq!(names(&env), vec!["PATH"]);
}
