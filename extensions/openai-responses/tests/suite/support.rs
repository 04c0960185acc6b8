//! Helpers: a provider with short delays, a model pointed at a server, options with a key, the
//! scripted model server; the provider-independent ones come from
//! `volcanic_provider_support::testing`.

use volcanic_abstractions::{Api, InputKind, Model, ModelCost, StreamOptions};
use volcanic_openai_responses::{OpenAiResponsesProvider, ProviderConfig};
pub use volcanic_provider_support::testing::{ask, collect, done, failed, fast_config, finish, result_for};
use volcanic_testkit::model_server::ModelServer;

/// A provider with [`fast_config`].
pub fn provider() -> OpenAiResponsesProvider {
    provider_with(fast_config())
}

/// A provider with `config`, after installing the ring TLS provider as the binary does.
pub fn provider_with(config: ProviderConfig) -> OpenAiResponsesProvider {
    let _ = rustls::crypto::ring::default_provider().install_default();
    OpenAiResponsesProvider::with_config(config).expect("provider builds")
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
    StreamOptions {
        api_key: Some("sk-test".into()),
        ..StreamOptions::default()
    }
}

/// A started scripted model server.
pub async fn server() -> ModelServer {
    ModelServer::start().await.expect("model server starts")
}
