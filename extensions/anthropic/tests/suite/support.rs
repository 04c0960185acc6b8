//! Helpers: a provider with short delays, a model pointed at a server, options with a key, the
//! scripted model server; the provider-independent ones (event collection with a timeout, the
//! event grammar check, the `bash` tool context) come from `volcanic_provider_support::testing`.

use volcanic_abstractions::{Api, InputKind, Model, ModelCost, StreamOptions};
use volcanic_anthropic::{AnthropicProvider, ProviderConfig};
pub use volcanic_provider_support::testing::{ask, collect, done, failed, fast_config, finish, result_for};
use volcanic_testkit::model_server::ModelServer;

/// A provider with [`fast_config`].
pub fn provider() -> AnthropicProvider {
    provider_with(fast_config())
}

/// A provider with `config`, after installing the ring TLS provider as the binary does.
pub fn provider_with(config: ProviderConfig) -> AnthropicProvider {
    let _ = rustls::crypto::ring::default_provider().install_default();
    AnthropicProvider::with_config(config).expect("provider builds")
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
    StreamOptions {
        api_key: Some("sk-ant-test".into()),
        ..StreamOptions::default()
    }
}

/// A started scripted model server.
pub async fn server() -> ModelServer {
    ModelServer::start().await.expect("model server starts")
}
