#![allow(clippy::unwrap_used)]

use super::*;
use pretty_assertions::assert_eq;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use volcanic_abstractions::processes::{ProcessPurpose, ProcessSpawnPolicy as _, ProcessSpawnRequest};
use volcanic_core::processes::ProcessSpawnPolicy;

fn config(text: &str) -> Config {
    Config::parse(text, Path::new("test.toml")).unwrap()
}

fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let vars: BTreeMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    move |name| vars.get(name).cloned()
}

const FULL: &str = "\
[telegram]\ntoken = \"123456:file-held-bot-token\"\n\
[providers.anthropic]\napi_key = \"sk-ant-config-held-0123\"\n\
[providers.local]\napi = \"openai-completions\"\nbase_url = \"http://127.0.0.1:1/v1\"\napi_key_env = \"MY_LLM_AUTH\"\n\
[providers.tiny]\napi = \"openai-completions\"\nbase_url = \"http://127.0.0.1:2/v1\"\napi_key = \"nokey\"\n\
[google]\nclient_id = \"id.apps\"\nclient_secret = \"GOCSPX-file-held-secret\"\n";

#[test]
fn every_configured_secret_and_every_key_variable_is_known() {
    let secrets = Secrets::of(
        &config(FULL),
        env_of(&[
            ("MY_LLM_AUTH", "llm-env-key-0123456789"),
            ("TELEGRAM_BOT_TOKEN", "999:env-held-bot-token"),
            ("GOOGLE_CLIENT_SECRET", "GOCSPX-env-held"),
            ("OTHER_VAR", "not-a-secret-at-all"),
        ]),
    );
    let listed: Vec<(&str, &str)> = secrets
        .values
        .iter()
        .map(|s| (s.source.as_str(), s.value.as_str()))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("providers.anthropic.api_key", "sk-ant-config-held-0123"),
            ("MY_LLM_AUTH (providers.local.api_key_env)", "llm-env-key-0123456789"),
            ("providers.tiny.api_key", "nokey"),
            ("telegram.token", "123456:file-held-bot-token"),
            ("TELEGRAM_BOT_TOKEN (telegram.token)", "999:env-held-bot-token"),
            ("google.client_secret", "GOCSPX-file-held-secret"),
            ("GOOGLE_CLIENT_SECRET (google.client_secret)", "GOCSPX-env-held"),
        ]
    );
    assert_eq!(
        secrets.variables,
        ["MY_LLM_AUTH", "TELEGRAM_BOT_TOKEN", "GOOGLE_CLIENT_SECRET"]
    );
}

#[test]
fn unset_and_empty_values_are_skipped_and_duplicates_kept_once() {
    let secrets = Secrets::of(
        &config("[telegram]\ntoken = \"123456:same-token-twice\"\n"),
        env_of(&[
            ("TELEGRAM_BOT_TOKEN", "123456:same-token-twice"),
            ("GOOGLE_CLIENT_SECRET", ""),
        ]),
    );
    assert_eq!(secrets.values.len(), 1);
    assert_eq!(secrets.values[0].source, "telegram.token");
    let none = Secrets::of(&config(""), env_of(&[]));
    assert!(none.values.is_empty());
}

#[test]
fn values_shorter_than_the_minimum_are_named_in_a_warning_and_only_those() {
    let secrets = Secrets::of(&config(FULL), env_of(&[("MY_LLM_AUTH", "abc12")]));
    let warnings = secrets.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].starts_with("MY_LLM_AUTH (providers.local.api_key_env): the value is shorter than 8"));
    assert!(warnings[1].starts_with("providers.tiny.api_key: the value is shorter than 8"));
    for w in &warnings {
        assert!(
            !w.contains("abc12") && !w.contains("nokey"),
            "the value itself is not printed: {w}"
        );
    }
}

#[test]
fn debug_output_hides_the_values() {
    let secrets = Secrets::of(&config(FULL), env_of(&[]));
    let printed = format!("{secrets:?}");
    assert!(printed.contains("providers.anthropic.api_key"), "{printed}");
    assert!(!printed.contains("sk-ant-config-held-0123"), "{printed}");
}

/// The registration end to end through the runtime's policy: what a child process would get.
#[test]
fn registered_secrets_leave_child_environments_by_name_and_by_value_and_are_redacted() {
    let env = [
        ("PATH", "/usr/bin:/bin"),
        ("MY_LLM_AUTH", "llm-env-key-0123456789"),
        ("COPY_OF_IT", "llm-env-key-0123456789"),
        ("DEPLOY_NOTE", "bot=123456:file-held-bot-token"),
        ("ANTHROPIC_BACKUP", "sk-ant-config-held-0123"),
        ("GCAL", "GOCSPX-file-held-secret"),
        ("MODEL_HOST", "nokey"),
        ("SHLVL", "1"),
    ];
    let secrets = Secrets::of(&config(FULL), env_of(&env));
    let mut options = ProcessEnvironmentOptions::default();
    secrets.apply(&mut options);
    let vars: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    let policy = ProcessSpawnPolicy::with_env_source(options, Arc::new(move || vars.clone()));
    let request = ProcessSpawnRequest::new(ProcessPurpose::Bash, "bash", "/tmp");
    let child = policy.prepare(&request).unwrap().env;
    let names: Vec<&str> = child.keys().map(String::as_str).collect();
    // `nokey` (providers.tiny.api_key) is too short to count: MODEL_HOST and SHLVL stay.
    assert_eq!(names, vec!["MODEL_HOST", "PATH", "SHLVL"]);
    assert_eq!(
        policy.redactor().redact(
            "sk-ant-config-held-0123 llm-env-key-0123456789 123456:file-held-bot-token GOCSPX-file-held-secret nokey"
        ),
        "[REDACTED] [REDACTED] [REDACTED] [REDACTED] nokey"
    );
}

#[test]
fn a_short_key_variable_still_goes_by_its_name() {
    let env = [("MY_LLM_AUTH", "abc"), ("PATH", "/bin")];
    let secrets = Secrets::of(&config(FULL), env_of(&env));
    let mut options = ProcessEnvironmentOptions::default();
    secrets.apply(&mut options);
    let vars: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    let policy = ProcessSpawnPolicy::with_env_source(options, Arc::new(move || vars.clone()));
    let request = ProcessSpawnRequest::new(ProcessPurpose::Bash, "bash", "/tmp");
    let child = policy.prepare(&request).unwrap().env;
    assert_eq!(child.keys().map(String::as_str).collect::<Vec<_>>(), vec!["PATH"]);
}

#[test]
fn the_voice_keys_variables_are_secrets() {
    let text = "[voice]\nstt_api_key_env = \"GROQ_API_KEY\"\ntts_api_key_env = \"SPEECH_KEY\"\n";
    let secrets = Secrets::of(
        &config(text),
        env_of(&[
            ("GROQ_API_KEY", "gsk_env_held_0123456789"),
            ("SPEECH_KEY", "sk-speech-0123456789"),
        ]),
    );
    let listed: Vec<&str> = secrets.values.iter().map(|s| s.source.as_str()).collect();
    assert_eq!(
        listed,
        [
            "GROQ_API_KEY (voice.stt_api_key_env)",
            "SPEECH_KEY (voice.tts_api_key_env)"
        ]
    );
    assert_eq!(
        secrets.variables,
        [
            "TELEGRAM_BOT_TOKEN",
            "GOOGLE_CLIENT_SECRET",
            "GROQ_API_KEY",
            "SPEECH_KEY"
        ]
    );
}
