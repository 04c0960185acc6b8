//! The section: strict keys, callers' tokens from variables, tool policies, errors naming keys.

use super::*;

fn section(text: &str) -> ServerSection {
    toml::from_str(text).unwrap_or_else(|e| panic!("{e}"))
}

const CALLER: &str = "[[callers]]\nname = \"laptop\"\ntoken_env = \"TOK\"\n";

fn env(name: &str) -> Option<String> {
    match name {
        "TOK" => Some("a-long-enough-token-0123".into()),
        "SHORT" => Some("short".into()),
        _ => None,
    }
}

#[test]
fn callers_get_tokens_from_variables_and_no_bash_write_or_edit_by_default() {
    let (config, policies) =
        server_config(&section(CALLER), "https://bot.example.org/", env).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.callers[0].token, "a-long-enough-token-0123");
    assert_eq!(config.card.public_url.as_deref(), Some("https://bot.example.org"));
    let tools = &policies[0].1.tools;
    for denied in DENIED_BY_DEFAULT {
        assert!(!tools.allows(denied), "{denied}");
    }
    assert!(tools.allows("read") && tools.allows("calendar"));
    let (_, policies) = server_config(
        &section(&format!("{CALLER}tools = [\"read\", \"bash\"]\nchat = 42")),
        "https://b.example",
        env,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let p = &policies[0].1;
    assert!(p.tools.allows("bash") && p.tools.allows("read") && !p.tools.allows("write"));
    assert_eq!(p.acts_for.map(|t| t.chat_id), Some(42));
    let (_, policies) = server_config(&section(&format!("{CALLER}tools = [\"*\"]")), "https://b.example", env)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(policies[0].1.tools.allows("bash"));
}

#[test]
fn bad_sections_name_their_key() {
    for (text, public, needle) in [
        (CALLER.to_owned(), "", "needs `[http] public_url`"),
        (
            "[[callers]]\nname = \"lap top\"\ntoken_env = \"TOK\"".to_owned(),
            "https://b.example",
            "a2a.server.callers[0].name",
        ),
        (
            "[[callers]]\nname = \"x\"\ntoken_env = \"MISSING\"".to_owned(),
            "https://b.example",
            "callers[0].token_env`: the variable MISSING is not set",
        ),
        (
            "[[callers]]\nname = \"x\"\ntoken_env = \"SHORT\"".to_owned(),
            "https://b.example",
            "shorter than 16 characters",
        ),
        (format!("{CALLER}max_parts = 0"), "https://b.example", "callers"),
        ("max_parts = 0".to_owned(), "https://b.example", "a2a.server.max_parts"),
    ] {
        let Ok(s) = toml::from_str::<ServerSection>(&text) else {
            // `max_parts` inside a caller is not a caller key: refused by the parser.
            assert!(text.contains("max_parts"), "{text}");
            continue;
        };
        let e = server_config(&s, public, env)
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
