//! Volcanic provider for the Anthropic Messages API (`anthropic-messages`), for Anthropic and
//! compatible servers.
//!
//! [`AnthropicProvider`] (`volcanic-provider-support`'s `SseProvider` over [`Messages`])
//! implements [`volcanic_abstractions::Provider`]: each call streams
//! `POST {base_url}/v1/messages` and yields pi's event sequence
//!
//! ```text
//! start
//! ( text_start text_delta* text_end
//! | thinking_start thinking_delta* thinking_end
//! | toolcall_start toolcall_delta* toolcall_end )*
//! done | error          <- exactly one, always last
//! ```
//!
//! Layers, one file each: `request.rs` builds the body from the transcript, `wire.rs` decodes
//! SSE events, `mapper.rs` maps them to provider events, `provider.rs` names the endpoint and
//! headers ([`Messages`]), `catalog.rs` lists the models and registers them. Everything between
//! the HTTP client and the provider stream (the provider itself, attempts and retries, reading
//! a response body with its idle timeout and cancellation, the error type, pi's wording of the
//! agent's own roles, the contract tests) is `volcanic-provider-support`, shared with the
//! OpenAI providers.
//!
//! ```no_run
//! # async fn demo(model: volcanic_abstractions::Model) -> Result<(), volcanic_anthropic::AnthropicError> {
//! use futures::StreamExt;
//! use volcanic_abstractions::{Message, Provider, ProviderContext, StreamOptions};
//! use volcanic_anthropic::AnthropicProvider;
//!
//! let provider = AnthropicProvider::new()?;
//! let context = ProviderContext {
//!     system_prompt: "Be brief.".into(),
//!     messages: vec![Message::user_text("Hi", 0)],
//!     tools: vec![],
//! };
//! let options = StreamOptions { api_key: Some("sk-ant-...".into()), ..StreamOptions::default() };
//! let mut events = provider.stream(&model, context, options);
//! while let Some(event) = events.next().await {
//!     if event.is_terminal() {
//!         break;
//!     }
//! }
//! # Ok(())
//! # }
//! ```
#![warn(missing_docs, unreachable_pub)]

mod catalog;
mod mapper;
mod provider;
mod request;
mod wire;

#[cfg(test)]
#[path = "stream_tests.rs"]
mod stream_tests;

pub use catalog::{API_KEY_ENV, DEFAULT_BASE_URL, models, registration};
pub use provider::{ANTHROPIC_VERSION, AnthropicProvider, Messages};
pub use request::thinking_budget;
pub use volcanic_provider_support::ProviderConfig;

/// The crate's error type, shared with the other providers. A provider call never returns it:
/// [`AnthropicProvider`]'s stream turns every failure into the stream's final `error` event
/// whose `errorMessage` is the error's `Display`. Only [`AnthropicProvider::new`] returns it
/// directly.
pub type AnthropicError = volcanic_provider_support::ProviderError;

/// Result alias of this crate.
pub type Result<T, E = AnthropicError> = std::result::Result<T, E>;
