//! Helpers: a provider with short delays, a model pointed at a server, options with a key, the
//! API's dialect for the provider contract; the provider-independent ones (event collection with a timeout, the
//! event grammar check, the `bash` tool context) come from `volcanic_provider_support::testing`.

use volcanic_abstractions::{Api, InputKind, Model, ModelCost, StreamOptions};
use volcanic_anthropic::AnthropicProvider;
use volcanic_provider_support::testing::{self, contract, contract::Dialect};
pub use volcanic_provider_support::testing::{ask, collect, done, fast_config, result_for, server};

/// A provider with [`fast_config`].
pub fn provider() -> AnthropicProvider {
    testing::provider_with(fast_config())
}

/// A reasoning, image-taking model served at `base_url`, priced 3 / 15 / 0.3 / 3.75 USD per
/// million input / output / cache-read / cache-write tokens.
pub fn model(base_url: &str) -> Model {
    Model {
        id: "claude-sonnet-4-5".into(),
        name: "Claude Sonnet 4.5".into(),
        provider: "anthropic".into(),
        api: Api::AnthropicMessages,
        base_url: base_url.into(),
        reasoning: true,
        input: vec![InputKind::Text, InputKind::Image],
        cost: ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        },
        context_window: 200_000,
        max_tokens: 64_000,
    }
}

/// Options with an API key.
pub fn options() -> StreamOptions {
    DIALECT.options()
}

/// How the scripted model server speaks this wire API, for the provider contract
/// (`volcanic_provider_support::testing::contract`, run from `contract.rs`).
pub const DIALECT: Dialect = Dialect {
    format: contract::ANTHROPIC,
    model,
    endpoint_path: "/v1/messages",
    ended_early: "stream ended before message_stop",
    // message_start, ping; then content_block_start and the text deltas.
    events_before_content: 2,
    events_to_first_delta: 4,
    events_into_text: 5,
    stream_error: ("Overloaded", "overloaded_error: Overloaded"),
};
