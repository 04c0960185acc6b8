//! `[providers.<name>]`: custom providers and their models, and the `claude-code` provider's
//! own keys. Every error names its key.

use super::{ConfigError, invalid};
use serde::Deserialize;
use volcanic_abstractions::model::{Api, InputKind, ModelCost};
use volcanic_core::models::{CustomModelConfig, CustomProviderConfig};

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProvider {
    api: Option<String>,
    base_url: Option<String>,
    api_key_env: Option<String>,
    api_key: Option<String>,
    #[serde(default)]
    models: Vec<RawModel>,
    /// `[providers.claude-code]` only: the `claude` executable, `--permission-mode`, `--allowedTools`.
    command: Option<String>,
    permission_mode: Option<String>,
    allowed_tools: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    id: String,
    context_window: Option<u64>,
    max_tokens: Option<u64>,
    reasoning: Option<bool>,
    input: Option<Vec<String>>,
    cost: Option<RawCost>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCost {
    #[serde(default)]
    input: f64,
    #[serde(default)]
    output: f64,
    #[serde(default)]
    cache_read: f64,
    #[serde(default)]
    cache_write: f64,
}

/// `[providers.claude-code]`: `api` (if set) must be `claude-code`; only `command`,
/// `permission_mode` and `allowed_tools` apply.
pub(super) fn resolve_claude_code(p: RawProvider) -> Result<volcanic_claude_code::ClaudeCodeConfig, ConfigError> {
    let key = |k: &str| format!("providers.claude-code.{k}");
    if p.api.as_deref().is_some_and(|a| a != volcanic_claude_code::API) {
        return Err(invalid(
            key("api"),
            "this provider's api is `claude-code` (or leave it out)",
        ));
    }
    for (k, set) in [
        ("base_url", p.base_url.is_some()),
        ("api_key", p.api_key.is_some()),
        ("api_key_env", p.api_key_env.is_some()),
        ("models", !p.models.is_empty()),
    ] {
        if set {
            return Err(invalid(
                key(k),
                "not used: `claude` uses its own login and models (sonnet, opus, haiku)",
            ));
        }
    }
    let (command, mode, tools) = (p.command, p.permission_mode, p.allowed_tools);
    let bad = |k: &'static str| move |e: volcanic_claude_code::ClaudeCodeError| invalid(key(k), e.to_string());
    volcanic_claude_code::ClaudeCodeConfig::new(command.clone(), None, None).map_err(bad("command"))?;
    volcanic_claude_code::ClaudeCodeConfig::new(None, mode.as_deref(), None).map_err(bad("permission_mode"))?;
    volcanic_claude_code::ClaudeCodeConfig::new(command, mode.as_deref(), tools).map_err(bad("allowed_tools"))
}

pub(super) fn resolve_provider(name: &str, p: RawProvider) -> Result<CustomProviderConfig, ConfigError> {
    let key = |k: &str| format!("providers.{name}.{k}");
    for (k, set) in [
        ("command", p.command.is_some()),
        ("permission_mode", p.permission_mode.is_some()),
        ("allowed_tools", p.allowed_tools.is_some()),
    ] {
        if set {
            return Err(invalid(
                key(k),
                "command, permission_mode and allowed_tools belong in [providers.claude-code]",
            ));
        }
    }
    let builtin = matches!(name, "anthropic" | "openai");
    if builtin && p.api.is_some() && p.models.is_empty() {
        return Err(invalid(
            key("api"),
            "on a built-in provider it applies only to the models this section lists (`models = [...]`); \
             the catalogue's models keep their own API. Remove it, or list the models it is for",
        ));
    }
    let api = match (p.api.as_deref(), name) {
        (Some("anthropic-messages"), _) | (None, "anthropic") => Api::AnthropicMessages,
        (Some("openai-completions"), _) | (None, "openai") => Api::OpenAiCompletions,
        (Some("openai-responses"), _) => Api::OpenAiResponses,
        (Some("claude-code"), _) => {
            return Err(invalid(
                key("api"),
                "claude-code is configured as [providers.claude-code]",
            ));
        }
        (Some(other), _) => {
            return Err(invalid(
                key("api"),
                format!("`{other}`: use anthropic-messages, openai-completions or openai-responses"),
            ));
        }
        (None, _) => {
            return Err(invalid(
                key("api"),
                "missing: set anthropic-messages, openai-completions or openai-responses",
            ));
        }
    };
    let base_url = p.base_url.unwrap_or_default();
    if base_url.is_empty() && !builtin {
        return Err(invalid(
            key("base_url"),
            "missing: the server's URL, e.g. http://127.0.0.1:11434/v1",
        ));
    }
    if !base_url.is_empty() && url::Url::parse(&base_url).map_or(true, |u| !matches!(u.scheme(), "http" | "https")) {
        return Err(invalid(
            key("base_url"),
            format!("`{base_url}` is not an http(s) URL, e.g. http://127.0.0.1:11434/v1"),
        ));
    }
    if p.api_key.is_some() && p.api_key_env.is_some() {
        return Err(invalid(key("api_key"), "set either api_key or api_key_env, not both"));
    }
    let mut models: Vec<CustomModelConfig> = Vec::new();
    for (i, m) in p.models.into_iter().enumerate() {
        let mk = |k: &str| format!("providers.{name}.models[{i}].{k}");
        if models.iter().any(|x| x.id == m.id) {
            return Err(invalid(mk("id"), format!("`{}` is listed twice", m.id)));
        }
        let context_window = m.context_window.unwrap_or(128_000);
        let max_tokens = m.max_tokens.unwrap_or(8_192);
        if context_window == 0 {
            return Err(invalid(mk("context_window"), "must be above 0 (tokens)"));
        }
        if max_tokens == 0 || max_tokens > context_window {
            return Err(invalid(
                mk("max_tokens"),
                format!("{max_tokens}: must be above 0 and at most context_window ({context_window})"),
            ));
        }
        let input = match m.input {
            None => vec![InputKind::Text],
            Some(list) => list
                .iter()
                .map(|s| match s.as_str() {
                    "text" => Ok(InputKind::Text),
                    "image" => Ok(InputKind::Image),
                    other => Err(invalid(mk("input"), format!("`{other}`: use \"text\" or \"image\""))),
                })
                .collect::<Result<_, _>>()?,
        };
        let cost = m.cost.unwrap_or_default();
        for (field, v) in [
            ("input", cost.input),
            ("output", cost.output),
            ("cache_read", cost.cache_read),
            ("cache_write", cost.cache_write),
        ] {
            if !(v.is_finite() && (0.0..=1_000_000.0).contains(&v)) {
                return Err(invalid(
                    mk(&format!("cost.{field}")),
                    format!("{v}: USD per million tokens, from 0 to 1000000"),
                ));
            }
        }
        models.push(CustomModelConfig {
            id: m.id,
            context_window,
            max_tokens,
            reasoning: m.reasoning.unwrap_or(false),
            input,
            cost: ModelCost {
                input: cost.input,
                output: cost.output,
                cache_read: cost.cache_read,
                cache_write: cost.cache_write,
            },
        });
    }
    Ok(CustomProviderConfig {
        name: name.to_owned(),
        api,
        base_url,
        api_key: p.api_key,
        api_key_env: p.api_key_env,
        models,
    })
}
