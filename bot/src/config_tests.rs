#![allow(clippy::unwrap_used)]

use super::*;
use volcanic_abstractions::model::{Api, InputKind};

fn parse(t: &str) -> Result<Config, ConfigError> {
    Config::parse(t, Path::new("test.toml"))
}

#[test]
fn defaults_apply_to_an_empty_file() {
    let c = parse("").unwrap();
    assert_eq!(c.model, DEFAULT_MODEL);
    assert_eq!(c.state_dir, PathBuf::from("data"));
    assert_eq!(c.default_time_zone, chrono_tz::UTC);
}

#[test]
fn unknown_key_is_named() {
    let e = parse("modle = \"x/y\"").unwrap_err().to_string();
    assert!(e.contains("modle"), "{e}");
    let e = parse("[telegram]\ntokne = \"x\"").unwrap_err().to_string();
    assert!(e.contains("tokne"), "{e}");
}

#[test]
fn bad_values_name_their_key() {
    for (text, key) in [
        ("default_time_zone = \"Mars/Base\"", "default_time_zone"),
        ("thinking = \"max\"", "thinking"),
        ("model = \"nope\"", "model"),
        ("queue_mode = \"later\"", "queue_mode"),
        ("session_idle_minutes = 0", "session_idle_minutes"),
        (
            "[providers.l]\napi = \"openai-completions\"\nbase_url = \"not a url\"",
            "providers.l.base_url",
        ),
        (
            "[providers.l]\napi = \"openai-completions\"\nbase_url = \"http://x\"\napi_key = \"k\"\napi_key_env = \"K\"",
            "providers.l.api_key",
        ),
        (
            "[providers.l]\napi = \"openai-completions\"\nbase_url = \"http://x\"\nmodels = [{ id = \"m\" }, { id = \"m\" }]",
            "providers.l.models[1].id",
        ),
        (
            "[providers.l]\napi = \"openai-completions\"\nbase_url = \"http://x\"\nmodels = [{ id = \"m\", context_window = 0 }]",
            "providers.l.models[0].context_window",
        ),
        (
            "[providers.l]\napi = \"openai-completions\"\nbase_url = \"http://x\"\nmodels = [{ id = \"m\", context_window = 1000, max_tokens = 5000 }]",
            "providers.l.models[0].max_tokens",
        ),
        (
            "[providers.l]\napi = \"openai-completions\"\nbase_url = \"http://x\"\nmodels = [{ id = \"m\", cost = { input = -5.0 } }]",
            "providers.l.models[0].cost.input",
        ),
        ("[telegram]\nmode = \"webhook\"", "http.public_url"),
        (
            "[telegram]\nmode = \"webhook\"\n[http]\npublic_url = \"http://plain\"",
            "http.public_url",
        ),
        ("session_idle_minutes = -5.0", "session_idle_minutes"),
        ("fallback_models = [\"gpt-4.1\"]", "fallback_models"),
        (
            "[providers.local]\napi = \"grpc\"\nbase_url = \"http://x\"",
            "providers.local.api",
        ),
        (
            "[providers.local]\napi = \"openai-completions\"",
            "providers.local.base_url",
        ),
        (
            "[providers.local]\napi = \"openai-completions\"\nbase_url = \"http://x\"\nmodels = [{ id = \"m\", input = [\"audio\"] }]",
            "providers.local.models[0].input",
        ),
        (
            "[google]\nclient_id = \"x\"\nclient_secret = \"y\"\nauth_url = \"ftp://x\"",
            "google.auth_url",
        ),
        ("[google]\nclient_id = \"x\"\nclient_scret = \"y\"", "client_scret"),
        ("[http]\npublic_url = \"bot.example.org\"", "http.public_url"),
    ] {
        let e = parse(text).unwrap_err().to_string();
        assert!(e.contains(key), "{text}: {e}");
    }
}

#[test]
fn google_resolves_to_the_calendar_config_with_the_public_url() {
    let c = parse(
        "[google]\nclient_id = \"id\"\nclient_secret = \"secret\"\napi_base_url = \"http://127.0.0.1:9/\"\n\
         [http]\npublic_url = \"https://bot.example.org/\"",
    )
    .unwrap();
    let g = c.google.unwrap();
    assert_eq!((g.client_id.as_str(), g.client_secret.as_str()), ("id", "secret"));
    assert_eq!(g.api_base_url, "http://127.0.0.1:9/");
    assert_eq!(g.token_url, volcanic_google_calendar::GOOGLE_TOKEN_URL);
    assert_eq!(g.public_url.as_deref(), Some("https://bot.example.org"));
    assert_eq!(
        g.redirect_uri(),
        format!("https://bot.example.org{}", volcanic_google_calendar::CALLBACK_PATH)
    );
}

#[test]
fn example_config_documents_valid_keys() {
    let text = include_str!("../../config/volcanic.example.toml");
    let c = parse(text).unwrap();
    assert_eq!(c.model, DEFAULT_MODEL);
    // Every commented-out provider example parses too.
    let uncommented: String = text
        .lines()
        .map(|l| {
            l.strip_prefix("# ")
                .filter(|r| {
                    r.starts_with("[providers")
                        || r.split_once(" = ")
                            .is_some_and(|(k, _)| k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
                })
                .unwrap_or(l)
        })
        .collect::<Vec<_>>()
        .join("\n");
    parse(&uncommented).unwrap();
}

#[test]
fn custom_provider_resolves() {
    let c = parse(
        "[providers.local]\napi = \"openai-completions\"\nbase_url = \"http://127.0.0.1:1/v1\"\napi_key_env = \"LOCAL_KEY\"\nmodels = [{ id = \"qwen3\", context_window = 32768, max_tokens = 4096, input = [\"text\", \"image\"] }]",
    )
    .unwrap();
    let p = &c.providers[0];
    assert_eq!(p.api, Api::OpenAiCompletions);
    assert_eq!(p.models[0].context_window, 32768);
    assert_eq!(p.models[0].input, vec![InputKind::Text, InputKind::Image]);
    let c = parse("[providers.azure]\napi = \"openai-responses\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodels = [{ id = \"o3\", reasoning = true }]")
        .unwrap();
    assert_eq!(c.providers[0].api, Api::OpenAiResponses);
}

#[test]
fn debug_output_leaves_out_every_secret() {
    let c = parse(
        "[telegram]\ntoken = \"123:bot-token-in-file\"\n\
         [providers.anthropic]\napi_key = \"sk-ant-in-file-0123\"\n\
         [google]\nclient_id = \"id\"\nclient_secret = \"GOCSPX-in-file\"",
    )
    .unwrap();
    let printed = format!("{c:?}");
    for secret in ["123:bot-token-in-file", "sk-ant-in-file-0123", "GOCSPX-in-file"] {
        assert!(!printed.contains(secret), "{secret} in {printed}");
    }
    assert!(
        printed.contains("anthropic") && printed.contains("[hidden]"),
        "{printed}"
    );
}

#[test]
fn claude_code_section_resolves_and_rejects_what_does_not_apply() {
    let c = parse("[providers.claude-code]\ncommand = \"/opt/claude\"\npermission_mode = \"acceptEdits\"\nallowed_tools = [\"Read\"]")
        .unwrap();
    assert!(c.providers.is_empty());
    let cc = c.claude_code.unwrap();
    assert_eq!(cc.command, "/opt/claude");
    assert_eq!(cc.permission_mode, volcanic_claude_code::PermissionMode::AcceptEdits);
    assert_eq!(cc.allowed_tools, ["Read"]);
    assert_eq!(parse("").unwrap().claude_code, None);
    let empty = parse("[providers.claude-code]").unwrap().claude_code;
    assert_eq!(empty, Some(volcanic_claude_code::ClaudeCodeConfig::default()));
    for (text, key) in [
        (
            "[providers.claude-code]\npermission_mode = \"yolo\"",
            "providers.claude-code.permission_mode",
        ),
        (
            "[providers.claude-code]\nbase_url = \"http://x\"",
            "providers.claude-code.base_url",
        ),
        (
            "[providers.claude-code]\ncommand = \"\"",
            "providers.claude-code.command",
        ),
        ("[providers.cc]\napi = \"claude-code\"", "providers.cc.api"),
        (
            "[providers.l]\napi = \"openai-completions\"\nbase_url = \"http://x\"\ncommand = \"c\"",
            "providers.l.command",
        ),
        (
            "[providers.l]\napi = \"openai-completions\"\nbase_url = \"http://x\"\nallowed_tools = [\"Read\"]",
            "providers.l.allowed_tools",
        ),
    ] {
        let e = parse(text).unwrap_err().to_string();
        assert!(e.contains(key), "{text}: {e}");
    }
}

#[test]
fn api_on_a_built_in_provider_without_models_is_refused_not_ignored() {
    let e = parse("[providers.openai]\napi = \"openai-responses\"")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("providers.openai.api") && e.contains("only to the models this section lists"),
        "{e}"
    );
    // With the models it is for, it applies to them.
    let c = parse(
        "[providers.openai]\napi = \"openai-responses\"\nmodels = [{ id = \"o-new\", context_window = 200000, max_tokens = 100000 }]",
    )
    .unwrap();
    assert_eq!(c.providers[0].models[0].id, "o-new");
}
