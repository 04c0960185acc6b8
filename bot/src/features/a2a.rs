//! The A2A client feature: every chat's session gets the `a2a` tool (`volcanic-a2a`), on when
//! the config has an `[a2a]` section (the tool costs every model request its
//! definition, so a bot that talks to no agent does not carry it):
//!
//! ```toml
//! [a2a]
//! send_wait_seconds = 60      # how long `send` waits for a final answer (1..=600)
//! max_hops = 3                # a chain of agents longer than this is refused
//! [a2a.credentials."https://agents.example.org"]   # an exact origin: scheme://host[:port]
//! token_env = "RESEARCH_AGENT_TOKEN"                        # sent as Authorization: Bearer …
//! # or an API key in a header: header = "X-API-Key", key_env = "RESEARCH_AGENT_KEY"
//! ```
//!
//! The agents themselves are listed per chat in its workspace, `.volcanic/a2a/agents.json`
//! (names and URLs only). A credential is sent only to its exact origin, also after redirects;
//! its value is redacted from tool output and its variable kept out of child processes
//! (`crate::secrets`). One client (HTTP and card cache) serves the whole process.
//!
//! Not yet: the watch registry that follows long tasks and delivers late results into the
//! chat, and `/agents`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use volcanic_a2a::{A2aClient, A2aSettings, Credential, DEFAULT_MAX_HOPS, DEFAULT_SEND_WAIT};
use volcanic_abstractions::extensions::ExtensionFactory;

use super::{HostFeature, Services, SessionPlace};

/// `[a2a]`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    /// Seconds `send` waits for a final answer.
    #[serde(default = "default_wait")]
    pub send_wait_seconds: u64,
    /// Longest chain of agents.
    #[serde(default = "default_hops")]
    pub max_hops: u32,
    /// Credentials by origin.
    #[serde(default)]
    pub credentials: BTreeMap<String, CredentialSection>,
    /// `[a2a.server]`: read by the A2A server feature (issue 15), not by the client.
    #[serde(default, rename = "server")]
    pub _server: Option<toml::Table>,
}

/// `[a2a.credentials."<origin>"]`: a bearer token or an API-key header, each read from
/// an environment variable (never written in the config).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialSection {
    /// The variable holding a bearer token.
    pub token_env: Option<String>,
    /// The header an API key goes in.
    pub header: Option<String>,
    /// The variable holding the API key.
    pub key_env: Option<String>,
}

fn default_wait() -> u64 {
    DEFAULT_SEND_WAIT.as_secs()
}

fn default_hops() -> u32 {
    DEFAULT_MAX_HOPS
}

/// The variables every credential is read from, with their config keys (for `crate::secrets`).
pub fn credential_variables(section: &toml::Table) -> Vec<(String, String)> {
    let Some(toml::Value::Table(credentials)) = section.get("credentials") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (origin, c) in credentials {
        for key in ["token_env", "key_env"] {
            if let Some(name) = c.get(key).and_then(toml::Value::as_str) {
                out.push((format!("a2a.credentials.\"{origin}\".{key}"), name.to_owned()));
            }
        }
    }
    out
}

/// The client's settings from the section; `env` reads a variable. Errors name the key.
pub fn settings(section: Section, env: impl Fn(&str) -> Option<String>) -> anyhow::Result<A2aSettings> {
    if !(1..=600).contains(&section.send_wait_seconds) {
        anyhow::bail!("config key `a2a.send_wait_seconds`: between 1 and 600 seconds");
    }
    let mut s = A2aSettings {
        send_wait: Duration::from_secs(section.send_wait_seconds),
        max_hops: section.max_hops,
        ..A2aSettings::default()
    };
    for (origin, c) in section.credentials {
        let key = format!("a2a.credentials.\"{origin}\"");
        let read = |field: &str, name: &str| {
            env(name)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| anyhow::anyhow!("config key `{key}.{field}`: the variable {name} is not set"))
        };
        let credential = match (&c.token_env, &c.header, &c.key_env) {
            (Some(var), None, None) => Credential::Bearer(read("token_env", var)?),
            (None, Some(header), Some(var)) => Credential::Header {
                name: header.clone(),
                value: read("key_env", var)?,
            },
            _ => anyhow::bail!("config key `{key}`: give token_env, or header and key_env"),
        };
        s.add_credential(&origin, credential)
            .map_err(|e| anyhow::anyhow!("config key `{key}`: {e}"))?;
    }
    Ok(s)
}

/// The feature: one client for the process.
#[derive(Debug)]
pub struct A2a {
    client: Arc<A2aClient>,
}

/// Builds it when the config has `[a2a]`.
pub fn build(services: &Services) -> anyhow::Result<Option<Arc<dyn HostFeature>>> {
    let Some(section) = services.section::<Section>("a2a")? else {
        return Ok(None);
    };
    let settings = settings(section, |name| std::env::var(name).ok())?;
    for c in settings.credentials.values() {
        services.redactor.add_secret(c.secret());
    }
    let client = A2aClient::new(settings).map_err(|e| anyhow::anyhow!("A2A client: {e}"))?;
    Ok(Some(Arc::new(A2a { client })))
}

impl HostFeature for A2a {
    fn name(&self) -> &'static str {
        "a2a"
    }

    fn session_extensions(&self, _place: &SessionPlace<'_>) -> Vec<ExtensionFactory> {
        vec![self.client.extension_factory()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str) -> Section {
        toml::from_str(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn credentials_come_from_variables_and_bad_ones_name_their_key() {
        let env = |n: &str| (n == "TOK").then(|| "tok-value-123".to_owned());
        let ok = settings(section("[credentials.\"https://a.example\"]\ntoken_env = \"TOK\""), env);
        let ok = ok.unwrap_or_else(|e| panic!("{e}"));
        let url = url::Url::parse("https://a.example/rpc").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            ok.credential_for(&url).map(|c| c.secret().to_owned()),
            Some("tok-value-123".into())
        );
        assert_eq!(ok.send_wait, DEFAULT_SEND_WAIT);
        for (text, needle) in [
            (
                "[credentials.\"https://a.example\"]\ntoken_env = \"MISSING\"",
                "MISSING is not set",
            ),
            (
                "[credentials.\"https://a.example\"]\nheader = \"X-Key\"",
                "give token_env, or header and key_env",
            ),
            (
                "[credentials.\"https://a.example/path\"]\ntoken_env = \"TOK\"",
                "without a path",
            ),
            ("send_wait_seconds = 0", "send_wait_seconds"),
        ] {
            let e = settings(section(text), env)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains(needle) && e.contains("a2a"), "{text}: {e}");
        }
        let table: toml::Table = toml::from_str("[credentials.\"https://a.example\"]\nheader = \"X\"\nkey_env = \"K\"")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            credential_variables(&table),
            vec![(
                "a2a.credentials.\"https://a.example\".key_env".to_owned(),
                "K".to_owned()
            )]
        );
    }
}
