//! The built-in catalogue: current OpenAI models and the provider registration using them. The
//! reasoning models use the Responses API (`openai-responses`, served by
//! `volcanic-openai-responses`, which the host registers beside this provider); the others use
//! Chat Completions.

use crate::ChatCompletions;
use volcanic_abstractions::model::{Api, InputKind, Model, ModelCost};
use volcanic_abstractions::provider::ProviderRegistration;

/// OpenAI's API base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Environment variable holding the key.
pub const API_KEY_ENV: &str = "OPENAI_API_KEY";

/// `(id, name, reasoning, input $/Mtok, output, cache read, context window, max output)`.
/// One catalogue row.
type Row = (&'static str, &'static str, bool, f64, f64, f64, u64, u64);

/// The catalogue as of **2026-11-30** (prices in USD per million tokens and token limits, from
/// https://openai.com/api/pricing and the model pages). Prices change: a config section adds or replaces models
/// without a release (`[[providers.openai.models]]` with `id`, `context_window`, `max_tokens`,
/// `reasoning`, `input`, `cost`; a replaced model keeps its display name).
#[rustfmt::skip]
const MODELS: &[Row] = &[
    ("gpt-5", "GPT-5", true, 1.25, 10.0, 0.125, 400_000, 128_000),
    ("gpt-5-mini", "GPT-5 mini", true, 0.25, 2.0, 0.025, 400_000, 128_000),
    ("gpt-5-nano", "GPT-5 nano", true, 0.05, 0.4, 0.005, 400_000, 128_000),
    ("gpt-4.1", "GPT-4.1", false, 2.0, 8.0, 0.5, 1_047_576, 32_768),
    ("gpt-4o", "GPT-4o", false, 2.5, 10.0, 1.25, 128_000, 16_384),
    ("o4-mini", "o4-mini", true, 1.1, 4.4, 0.275, 200_000, 100_000),
];

/// The catalogue, served from `base_url`.
pub fn models(base_url: &str) -> Vec<Model> {
    MODELS
        .iter()
        .map(
            |&(id, name, reasoning, input, output, cache_read, context_window, max_tokens)| Model {
                id: id.into(),
                name: name.into(),
                provider: "openai".into(),
                api: if reasoning {
                    Api::OpenAiResponses
                } else {
                    Api::OpenAiCompletions
                },
                base_url: base_url.into(),
                reasoning,
                input: vec![InputKind::Text, InputKind::Image],
                cost: ModelCost {
                    input,
                    output,
                    cache_read,
                    cache_write: 0.0,
                },
                context_window,
                max_tokens,
            },
        )
        .collect()
}

/// The `openai` provider with its catalogue, keyed by `OPENAI_API_KEY`. A config section
/// `[providers.openai]` may override the base URL and key.
///
/// # Errors
/// When the HTTP client cannot be built (TLS set-up).
pub fn registration() -> crate::Result<ProviderRegistration> {
    volcanic_provider_support::registration::<ChatCompletions>("openai", models(DEFAULT_BASE_URL), Some(API_KEY_ENV))
}
