//! Helpers: a provider with short delays, a model pointed at a server, options with a key, the
//! API's dialect for the provider contract; the provider-independent ones come from
//! `volcanic_provider_support::testing`.

use volcanic_abstractions::{Api, InputKind, Model, ModelCost, StreamOptions};
use volcanic_openai_responses::OpenAiResponsesProvider;
use volcanic_provider_support::testing::{self, contract, contract::Dialect};
pub use volcanic_provider_support::testing::{ask, collect, done, failed, fast_config, finish, result_for, server};

/// A provider with [`fast_config`].
pub fn provider() -> OpenAiResponsesProvider {
    testing::provider_with(fast_config())
}

/// A reasoning, image-taking Responses model `id` served at `base_url`, priced 1.25 / 10 /
/// 0.125 USD per million input / output / cache-read tokens.
pub fn model_named(id: &str, base_url: &str) -> Model {
    Model {
        id: id.into(),
        name: id.into(),
        provider: "openai".into(),
        api: Api::OpenAiResponses,
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

/// `gpt-test` at `base_url` (see [`model_named`]).
pub fn model(base_url: &str) -> Model {
    model_named("gpt-test", base_url)
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
    endpoint_path: "/v1/responses",
    ended_early: "stream ended before response.completed",
    // created, in_progress; then output_item.added, content_part.added and the text deltas.
    events_before_content: 2,
    events_to_first_delta: 5,
    events_into_text: 5,
    stream_error: ("Internal error", "server_error: Internal error"),
};
