//! Models: what a provider can serve, addressed as `provider/id`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A wire API a provider speaks. One provider module per wire API, not per vendor.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum Api {
    /// Anthropic Messages (`POST /v1/messages`, SSE).
    AnthropicMessages,
    /// OpenAI Chat Completions (`POST /chat/completions`, SSE); also Ollama, vLLM, llama.cpp.
    OpenAiCompletions,
    /// OpenAI Responses (a later issue).
    OpenAiResponses,
    /// Any other API name, e.g. one registered by an extension.
    Other(String),
}

impl Api {
    /// The API's wire name, as pi writes it in `api`.
    pub fn as_str(&self) -> &str {
        match self {
            Api::AnthropicMessages => "anthropic-messages",
            Api::OpenAiCompletions => "openai-completions",
            Api::OpenAiResponses => "openai-responses",
            Api::Other(s) => s,
        }
    }
}

impl From<String> for Api {
    fn from(s: String) -> Self {
        match s.as_str() {
            "anthropic-messages" => Api::AnthropicMessages,
            "openai-completions" => Api::OpenAiCompletions,
            "openai-responses" => Api::OpenAiResponses,
            _ => Api::Other(s),
        }
    }
}

impl From<Api> for String {
    fn from(a: Api) -> Self {
        a.as_str().to_owned()
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Kinds of input a model accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputKind {
    /// Text.
    Text,
    /// Images.
    Image,
}

/// Price in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub struct ModelCost {
    /// USD per million uncached input tokens.
    #[serde(default)]
    pub input: f64,
    /// USD per million output tokens.
    #[serde(default)]
    pub output: f64,
    /// USD per million cache-read tokens.
    #[serde(default)]
    pub cache_read: f64,
    /// USD per million cache-write tokens.
    #[serde(default)]
    pub cache_write: f64,
}

/// One model of one provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Model id as the provider's API takes it, e.g. `claude-sonnet-4-5`.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Provider name, e.g. `anthropic` (the part before `/` in `provider/id`).
    pub provider: String,
    /// Wire API.
    pub api: Api,
    /// Base URL the API paths are appended to, e.g. `https://api.anthropic.com`.
    pub base_url: String,
    /// Whether the model can reason (thinking levels other than `off` apply).
    pub reasoning: bool,
    /// Accepted inputs.
    pub input: Vec<InputKind>,
    /// Price.
    pub cost: ModelCost,
    /// Context window in tokens.
    pub context_window: u64,
    /// Output token limit.
    pub max_tokens: u64,
}

impl Model {
    /// `provider/id`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.provider, self.id)
    }

    /// Whether the model accepts images.
    pub fn takes_images(&self) -> bool {
        self.input.contains(&InputKind::Image)
    }

    /// Cost of `usage` at this model's prices, in USD.
    pub fn cost_of(&self, usage: &crate::messages::Usage) -> crate::messages::Cost {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        let input = per(usage.input, self.cost.input);
        let output = per(usage.output, self.cost.output);
        let cache_read = per(usage.cache_read, self.cost.cache_read);
        let cache_write = per(usage.cache_write, self.cost.cache_write);
        crate::messages::Cost {
            input,
            output,
            cache_read,
            cache_write,
            total: input + output + cache_read + cache_write,
        }
    }
}

/// Reasoning effort, pi's levels. Each provider maps it to its own parameter (Anthropic thinking
/// budget, OpenAI `reasoning_effort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No reasoning.
    #[default]
    Off,
    /// Minimal.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Extra high.
    Xhigh,
}

impl ThinkingLevel {
    /// All levels in order.
    pub const ALL: [ThinkingLevel; 6] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::Xhigh,
    ];

    /// The level's name (`off` … `xhigh`).
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Xhigh => "xhigh",
        }
    }
}

impl fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A thinking level name that is not one of pi's six.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown thinking level `{0}`: use one of off, minimal, low, medium, high, xhigh")]
pub struct UnknownThinkingLevel(pub String);

impl FromStr for ThinkingLevel {
    type Err = UnknownThinkingLevel;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ThinkingLevel::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| UnknownThinkingLevel(s.to_owned()))
    }
}
