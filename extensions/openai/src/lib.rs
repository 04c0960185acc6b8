//! Volcanic provider for the OpenAI Chat Completions API (`openai-completions`), for OpenAI and
//! compatible servers: Ollama, vLLM, llama.cpp, LM Studio, OpenRouter.
//!
//! [`OpenAiCompletionsProvider`] (`volcanic-provider-support`'s `SseProvider` over
//! [`ChatCompletions`]) implements [`volcanic_abstractions::Provider`]: each call streams
//! `POST {base_url}/chat/completions` and yields pi's event sequence
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
//! SSE chunks, `mapper.rs` maps them to provider events, `provider.rs` names the endpoint and
//! headers ([`ChatCompletions`]), `catalog.rs` lists the models and registers them. Everything
//! between the HTTP client and the provider stream (the provider itself, attempts and retries,
//! reading a response body with its idle timeout and cancellation, the error type, pi's
//! wording of the agent's own roles, what both OpenAI APIs share, the contract tests) is
//! `volcanic-provider-support`, shared with the other providers.
//!
//! ```no_run
//! # async fn demo(model: volcanic_abstractions::Model) -> Result<(), volcanic_openai::OpenAiError> {
//! use futures::StreamExt;
//! use volcanic_abstractions::{Message, Provider, ProviderContext, StreamOptions};
//! use volcanic_openai::OpenAiCompletionsProvider;
//!
//! let provider = OpenAiCompletionsProvider::new()?;
//! let context = ProviderContext {
//!     system_prompt: "Be brief.".into(),
//!     messages: vec![Message::user_text("Hi", 0)],
//!     tools: vec![],
//! };
//! // A local server (Ollama) takes no key: leave `api_key` as `None`.
//! let mut events = provider.stream(&model, context, StreamOptions::default());
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
pub use provider::{ChatCompletions, OpenAiCompletionsProvider};
pub use volcanic_provider_support::ProviderConfig;
pub use volcanic_provider_support::reasoning_effort;

/// The crate's error type, shared with the other providers. A provider call never returns it:
/// [`OpenAiCompletionsProvider`]'s stream turns every failure into the stream's final `error`
/// event whose `errorMessage` is the error's `Display`. Only [`OpenAiCompletionsProvider::new`]
/// returns it directly.
pub type OpenAiError = volcanic_provider_support::ProviderError;

/// Result alias of this crate.
pub type Result<T, E = OpenAiError> = std::result::Result<T, E>;
