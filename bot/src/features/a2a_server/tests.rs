//! The section: strict keys, callers' tokens from variables, tool policies, errors naming keys.

use super::*;

fn section(text: &str) -> ServerSection {
    toml::from_str(text).unwrap_or_else(|e| panic!("{e}"))
}

const CALLER: &str = "[[callers]]\nname = \"laptop\"\ntoken_env = \"TOK\"\n";

fn env(name: &str) -> Option<String> {
    match name {
        "TOK" | "SAME" => Some("a-long-enough-token-0123".into()),
        "SHORT" => Some("short".into()),
        "BLANK" => Some("   ".into()),
        "TG" => Some("123456:telegram-bot-token-value".into()),
        "OTHER" => Some("another-long-enough-token-9".into()),
        _ => None,
    }
}

/// The host config with `public_url` (none when empty), the Telegram token `TG`'s value and
/// chat 42 allowed.
fn host(public: &str) -> Config {
    let http = if public.is_empty() {
        String::new()
    } else {
        format!("[http]\npublic_url = \"{public}\"\n")
    };
    let text = format!("{http}[telegram]\ntoken = \"123456:telegram-bot-token-value\"\nallowed_users = [42]\n");
    Config::parse(&text, std::path::Path::new("test.toml")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn callers_get_tokens_from_variables_and_no_bash_write_or_edit_by_default() {
    let (config, policies) =
        server_config(&section(CALLER), &host("https://bot.example.org/"), env).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.callers[0].token, "a-long-enough-token-0123");
    assert_eq!(config.card.public_url.as_deref(), Some("https://bot.example.org"));
    let tools = &policies[0].1.tools;
    for denied in DENIED_BY_DEFAULT {
        assert!(!tools.allows(denied), "{denied}");
    }
    assert!(tools.allows("read") && tools.allows("calendar"));
    let (_, policies) = server_config(
        &section(&format!("{CALLER}tools = [\"read\", \"bash\"]\nchat = 42")),
        &host("https://b.example"),
        env,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let p = &policies[0].1;
    assert!(p.tools.allows("bash") && p.tools.allows("read") && !p.tools.allows("write"));
    assert_eq!(p.acts_for.map(|t| t.chat_id), Some(42));
    let (_, policies) = server_config(
        &section(&format!("{CALLER}tools = [\"*\"]")),
        &host("https://b.example"),
        env,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(policies[0].1.tools.allows("bash"));
}

#[test]
fn bad_sections_name_their_key() {
    let b = "https://b.example";
    let second = "[[callers]]\nname = \"y\"\ntoken_env = \"SAME\"\n";
    for (text, public, needle) in [
        (CALLER.to_owned(), "", "needs `[http] public_url`"),
        (CALLER.to_owned(), "https://b.example/x?y=1", "query or fragment"),
        (String::new(), b, "a2a.server.callers`: none listed"),
        (
            "[[callers]]\nname = \"lap top\"\ntoken_env = \"TOK\"".to_owned(),
            b,
            "a2a.server.callers[0].name",
        ),
        (
            "[[callers]]\nname = \"-x\"\ntoken_env = \"TOK\"".to_owned(),
            b,
            "not starting with '-'",
        ),
        (
            "[[callers]]\nname = \"x\"\ntoken_env = \"MISSING\"".to_owned(),
            b,
            "callers[0].token_env`: the variable MISSING is not set",
        ),
        (
            "[[callers]]\nname = \"x\"\ntoken_env = \"BLANK\"".to_owned(),
            b,
            "the variable BLANK is empty",
        ),
        (
            "[[callers]]\nname = \"x\"\ntoken_env = \"SHORT\"".to_owned(),
            b,
            "shorter than 16 characters",
        ),
        (
            "[[callers]]\nname = \"x\"\ntoken_env = \"TG\"".to_owned(),
            b,
            "one of the bot's own secrets",
        ),
        (
            format!("{CALLER}{second}"),
            b,
            "callers[1].token_env`: caller \"y\" has the same token",
        ),
        (
            format!("{CALLER}[[callers]]\nname = \"laptop\"\ntoken_env = \"OTHER\"\n"),
            b,
            "callers[1].name`: caller \"laptop\" is listed twice",
        ),
        (
            format!("{CALLER}model = \"nope/nothing\""),
            b,
            "callers[0].model`: unknown model `nope/nothing`",
        ),
        (format!("{CALLER}chat = 999"), b, "callers[0].chat`: 999 is neither"),
        (format!("max_parts = 0\n{CALLER}"), b, "a2a.server.max_parts"),
    ] {
        let s = toml::from_str::<ServerSection>(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let e = server_config(&s, &host(public), env)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains(needle), "{text}: {e}");
    }
    assert!(toml::from_str::<ServerSection>("tokens = 1").is_err());
}

#[test]
fn token_variables_name_their_keys() {
    let table: toml::Table = toml::from_str("[server]\n[[server.callers]]\nname = \"a\"\ntoken_env = \"A_TOKEN\"")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        token_variables(&table),
        vec![("a2a.server.callers[0].token_env".to_owned(), "A_TOKEN".to_owned())]
    );
}
