//! The built-in catalogue: current Anthropic models and the provider registration using them.

use crate::Messages;
use volcanic_abstractions::model::{Api, InputKind, Model, ModelCost};
use volcanic_abstractions::provider::ProviderRegistration;

/// Anthropic's API base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// Environment variable holding the key.
pub const API_KEY_ENV: &str = "ANTHROPIC_API_KEY";

/// `(id, name, input $/Mtok, output, cache read, cache write, context window, max output)`.
/// One catalogue row.
type Row = (&'static str, &'static str, f64, f64, f64, f64, u64, u64);

/// The catalogue as of **2026-11-30** (prices in USD per million tokens and token limits, from
/// https://www.anthropic.com/pricing and the models overview). Prices change: a config section adds or replaces models
/// without a release (`[[providers.anthropic.models]]` with `id`, `context_window`, `max_tokens`,
/// `reasoning`, `input`, `cost`; a replaced model keeps its display name).
#[rustfmt::skip]
const MODELS: &[Row] = &[
    ("claude-sonnet-4-5", "Claude Sonnet 4.5", 3.0, 15.0, 0.3, 3.75, 200_000, 64_000),
    ("claude-opus-4-5", "Claude Opus 4.5", 5.0, 25.0, 0.5, 6.25, 200_000, 64_000),
    ("claude-haiku-4-5", "Claude Haiku 4.5", 1.0, 5.0, 0.1, 1.25, 200_000, 64_000),
    ("claude-opus-4-1", "Claude Opus 4.1", 15.0, 75.0, 1.5, 18.75, 200_000, 32_000),
    ("claude-sonnet-4-0", "Claude Sonnet 4", 3.0, 15.0, 0.3, 3.75, 200_000, 64_000),
];

/// The catalogue, served from `base_url`.
pub fn models(base_url: &str) -> Vec<Model> {
    MODELS
        .iter()
        .map(
            |&(id, name, input, output, cache_read, cache_write, context_window, max_tokens)| Model {
                id: id.into(),
                name: name.into(),
                provider: "anthropic".into(),
                api: Api::AnthropicMessages,
                base_url: base_url.into(),
                reasoning: true,
                input: vec![InputKind::Text, InputKind::Image],
                cost: ModelCost {
                    input,
                    output,
                    cache_read,
                    cache_write,
                },
                context_window,
                max_tokens,
            },
        )
        .collect()
}

/// The `anthropic` provider with its catalogue, keyed by `ANTHROPIC_API_KEY`. A config section
/// `[providers.anthropic]` may override the base URL and key.
///
/// # Errors
/// When the HTTP client cannot be built (TLS set-up).
pub fn registration() -> crate::Result<ProviderRegistration> {
    volcanic_provider_support::registration::<Messages>("anthropic", models(DEFAULT_BASE_URL), Some(API_KEY_ENV))
}
