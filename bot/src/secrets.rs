//! The secrets the configuration gives the bot, registered with the process policy.
//!
//! Each value is added to the policy's redactor (tool output, progress, errors: whatever the
//! policy redacts) and, like the values of deny-listed variables, removes from every child
//! environment (`bash`, skill hooks, watcher and scheduled scripts) any inherited variable that
//! holds it, whatever that variable's name. Each variable a secret is read from is also denied by
//! name, so it is gone even when its value is too short to count as a secret
//! ([`MIN_HOST_SECRET_CHARS`] characters; shorter values are placeholders such as `none`).
//!
//! [`Secrets::of`] lists every source in one place: a new credential in the config (an A2A
//! agent's token, an MCP server's key) is one [`Secrets::value`] or [`Secrets::variable`] line
//! there.

use crate::config::Config;
use volcanic_core::processes::{MIN_HOST_SECRET_CHARS, ProcessEnvironmentOptions, is_host_secret};

/// One secret value and where it came from.
#[derive(Clone, PartialEq, Eq)]
pub struct KnownSecret {
    /// Where it came from, for messages: a config key (`providers.local.api_key`) or a variable
    /// and the key that names it (`MY_LLM_AUTH (providers.local.api_key_env)`).
    pub source: String,
    /// The value (never printed: `Debug` hides it).
    pub value: String,
}

impl std::fmt::Debug for KnownSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnownSecret")
            .field("source", &self.source)
            .field("value", &format_args!("[{} chars hidden]", self.value.chars().count()))
            .finish()
    }
}

/// The secrets the bot knows from its configuration: values, and the variables they are read from.
#[derive(Debug, Default, Clone)]
pub struct Secrets {
    values: Vec<KnownSecret>,
    variables: Vec<String>,
}

impl Secrets {
    /// Every secret `config` gives the bot; `env` reads a variable (the process environment in
    /// the binary). The sources:
    /// - each provider's `api_key`, and the variable its `api_key_env` names (any name);
    /// - `telegram.token` and `TELEGRAM_BOT_TOKEN`;
    /// - `google.client_secret` (resolved: the file's, else `GOOGLE_CLIENT_SECRET`);
    /// - the variables `[a2a.credentials.*]` name (`token_env`, `key_env`), and those of the A2A
    ///   server's callers (`[[a2a.server.callers]] token_env`);
    /// - the variables `[voice]` reads its keys from (`stt_api_key_env`, `tts_api_key_env`);
    /// - the variable `[metrics] token_env` names (the scrape's bearer token).
    pub fn of(config: &Config, env: impl Fn(&str) -> Option<String>) -> Secrets {
        let mut s = Secrets::default();
        for p in &config.providers {
            s.value(format!("providers.{}.api_key", p.name), p.api_key.as_deref());
            if let Some(name) = &p.api_key_env {
                s.variable(&format!("providers.{}.api_key_env", p.name), name, &env);
            }
        }
        s.value("telegram.token", config.telegram.token.as_deref());
        s.variable("telegram.token", "TELEGRAM_BOT_TOKEN", &env);
        s.value(
            "google.client_secret",
            config.google.as_ref().map(|g| g.client_secret.as_str()),
        );
        s.variable("google.client_secret", "GOOGLE_CLIENT_SECRET", &env);
        if let Some(a2a) = config.features.get("a2a") {
            for (key, name) in crate::features::a2a_client::credential_variables(a2a) {
                s.variable(&key, &name, &env);
            }
            for (key, name) in crate::features::a2a_server::token_variables(a2a) {
                s.variable(&key, &name, &env);
            }
        }
        if let Some(voice) = &config.voice {
            s.variable("voice.stt_api_key_env", &voice.stt_api_key_env, &env);
            s.variable("voice.tts_api_key_env", &voice.tts_api_key_env, &env);
        }
        if let Some(name) = config.metrics.as_ref().and_then(|m| m.token_env.as_deref()) {
            s.variable("metrics.token_env", name, &env);
        }
        // A2A agents' and MCP servers' credentials go here, one line each, when they arrive.
        s
    }

    /// Adds a value from the config key `source` (`None` or empty: nothing).
    pub fn value(&mut self, source: impl Into<String>, value: Option<&str>) {
        let Some(value) = value.filter(|v| !v.is_empty()) else {
            return;
        };
        if !self.values.iter().any(|s| s.value == value) {
            self.values.push(KnownSecret {
                source: source.into(),
                value: value.to_owned(),
            });
        }
    }

    /// Adds the variable `name` (named by the config key `key`): denied by name, and its value
    /// (read with `env`, if set) added like [`value`](Self::value).
    pub fn variable(&mut self, key: &str, name: &str, env: impl Fn(&str) -> Option<String>) {
        if name.is_empty() {
            return;
        }
        if !self.variables.iter().any(|v| v == name) {
            self.variables.push(name.to_owned());
        }
        self.value(format!("{name} ({key})"), env(name).as_deref());
    }

    /// Registers everything with a process policy's options: each variable joins the deny-list
    /// (an exact name), each value the secret values.
    pub fn apply(&self, options: &mut ProcessEnvironmentOptions) {
        for name in &self.variables {
            if !options.deny.iter().any(|d| d.eq_ignore_ascii_case(name)) {
                options.deny.push(name.clone());
            }
        }
        options
            .secret_values
            .extend(self.values.iter().map(|s| s.value.clone()));
    }

    /// One warning per value too short to count as a secret, naming where it came from.
    pub fn warnings(&self) -> Vec<String> {
        self.values
            .iter()
            .filter(|s| !is_host_secret(&s.value))
            .map(|s| {
                format!(
                    "{}: the value is shorter than {MIN_HOST_SECRET_CHARS} characters, so it is not treated as a \
                     secret (not redacted from tool output, not looked for in child environments); \
                     fine for a placeholder such as \"none\", otherwise check the value",
                    s.source
                )
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "secrets_tests.rs"]
mod tests;
