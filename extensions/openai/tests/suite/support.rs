//! Helpers: a provider with short delays, a model pointed at a server, options with a key, the
//! API's dialect for the provider contract; the provider-independent ones (event collection with a timeout, the
//! event grammar check, the `bash` tool context) come from `volcanic_provider_support::testing`.

use volcanic_abstractions::{Api, InputKind, Model, ModelCost, StreamOptions};
use volcanic_openai::OpenAiCompletionsProvider;
use volcanic_provider_support::testing::{self, contract, contract::Dialect};
pub use volcanic_provider_support::testing::{ask, collect, done, fast_config, result_for, server};

/// A provider with [`fast_config`].
pub fn provider() -> OpenAiCompletionsProvider {
    testing::provider_with(fast_config())
}

/// A reasoning, image-taking model served at `base_url`, priced 1.25 / 10 / 0.125 USD per
/// million input / output / cache-read tokens.
pub fn model(base_url: &str) -> Model {
    Model {
        id: "gpt-test".into(),
        name: "GPT Test".into(),
        provider: "openai".into(),
        api: Api::OpenAiCompletions,
        base_url: base_url.into(),
        reasoning: true,
        input: vec![InputKind::Text, InputKind::Image],
        cost: ModelCost {
            input: 1.25,
            output: 10.0,
            cache_read: 0.125,
            cache_write: 0.0,
        },
        context_window: 400_000,
        max_tokens: 128_000,
    }
}

/// Options with an API key.
pub fn options() -> StreamOptions {
    DIALECT.options()
}

/// How the scripted model server speaks this wire API, for the provider contract
/// (`volcanic_provider_support::testing::contract`, run from `contract.rs`).
pub const DIALECT: Dialect = Dialect {
    format: contract::OPENAI,
    model,
    endpoint_path: "/v1/chat/completions",
    ended_early: "stream ended before [DONE]",
    // The role chunk; then the text pieces.
    events_before_content: 1,
    events_to_first_delta: 2,
    events_into_text: 3,
    stream_error: ("The server had an error", "server_error: The server had an error"),
};
