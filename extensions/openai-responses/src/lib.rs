//! Volcanic provider for the OpenAI Responses API (`openai-responses`), OpenAI's current API and
//! the one that gives its reasoning models their full behaviour (reasoning summaries, reasoning
//! carried across tool calls).
//!
//! [`OpenAiResponsesProvider`] (`volcanic-provider-support`'s `SseProvider` over [`Responses`])
//! implements [`volcanic_abstractions::Provider`]: each call streams `POST {base_url}/responses`
//! and yields pi's event sequence (`start`, text / thinking / tool-call blocks, then exactly one
//! `done` or `error`).
//!
//! It is stateless (`store: false`): nothing is kept on OpenAI's side, every call sends the
//! conversation, and a reasoning model's reasoning comes back encrypted
//! (`include: ["reasoning.encrypted_content"]`), kept as the thinking block's signature and
//! replayed only to the same provider and model. Tool-call ids are `{call_id}|{item id}`; the
//! other providers get them through the transcript normaliser's id mapping, and ids from them are
//! sent as `call_id` without an item id, so a conversation may switch between Anthropic, Chat
//! Completions and Responses.
//!
//! Layers, one file each: `request.rs` builds the body, `wire.rs` decodes events, `mapper.rs`
//! maps them to provider events, `provider.rs` names the endpoint and headers ([`Responses`])
//! and its [`registration`] (no catalogue: the `openai` one lists its models); the provider,
//! retries, `retry-after`, timeouts, error wording and the contract tests are
//! `volcanic-provider-support`'s.
#![warn(missing_docs, unreachable_pub)]

mod mapper;
mod provider;
mod request;
mod wire;

pub use provider::{OpenAiResponsesProvider, Responses, registration};
pub use volcanic_provider_support::ProviderConfig;
pub use volcanic_provider_support::reasoning_effort;

/// The crate's error type, shared with the other providers. A call never returns it: the stream
/// ends with an `error` event whose `errorMessage` is its `Display`. Only
/// [`OpenAiResponsesProvider::new`] returns it.
pub type ResponsesError = volcanic_provider_support::ProviderError;

/// Result alias of this crate.
pub type Result<T, E = ResponsesError> = std::result::Result<T, E>;
