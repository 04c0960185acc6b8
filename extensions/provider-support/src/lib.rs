//! What the Volcanic provider extensions (`volcanic-anthropic`, `volcanic-openai`,
//! `volcanic-openai-responses`) share, so that each idea exists once:
//!
//! - [`SseProvider`] is the provider of every streamed HTTP API: generic over a [`WireApi`], it
//!   builds the body, POSTs it, retries transient failures ([`ProviderConfig`]: backoff,
//!   `retry-after`, idle and connect timeouts) and waits out a shortage of descriptors or memory
//!   on this machine met while connecting, honours cancellation, reads the response's SSE
//!   events (idle timeout) through the API's [`EventMapper`], and turns every failure into the
//!   stream's final `error` event. A provider crate names it for its API
//!   (`pub type AnthropicProvider = SseProvider<Messages>;`) and registers it with its
//!   catalogue through [`registration`];
//! - [`ProviderError`] is what can go wrong, with its retry verdict;
//! - what the OpenAI wire APIs share: the reasoning effort of a level ([`reasoning_effort`]) and
//!   the reading of their error object ([`error_fields`]);
//! - pi's wording for the agent's own roles ([`bash_execution_text`],
//!   [`compaction_summary_text`], [`branch_summary_text`], [`IMAGE_OMITTED`]), tool-call ids
//!   rewritten to an API's rule ([`sanitize_id`]) and streamed tool-call arguments read back
//!   ([`tool_arguments`]), a tool result's text and images ([`tool_result_text`]) and a call's
//!   priced usage ([`priced_usage`]).
//!
//! A wire API crate supplies the endpoint, headers, request body, error-body reader and event
//! mapper; everything between the HTTP client and the provider stream lives here. With the
//! `testing` feature, the `testing` module holds what the provider crates' tests share, among
//! it the contract every wire API's provider keeps (`testing::contract`, run by
//! `provider_contract_tests!`).
//!
//! Adding a provider is one crate: wire types and their decoding (`wire.rs`), the request body
//! (`request.rs`), an [`EventMapper`] (`mapper.rs`), a [`WireApi`] naming endpoint and headers
//! with `pub type NameProvider = SseProvider<TheApi>;`, a catalogue whose `registration()`
//! calls [`registration`], one `register_provider` line in the host, and one
//! `provider_contract_tests!` line in its tests.
#![warn(missing_docs, unreachable_pub)]

mod convert;
mod error;
mod http;
mod openai;
mod provider;
pub mod shortage;
mod stream;
#[cfg(feature = "testing")]
pub mod testing;

pub use convert::{
    IMAGE_OMITTED, bash_execution_text, branch_summary_text, compaction_summary_text, priced_usage, sanitize_id,
    tool_arguments, tool_result_text,
};
pub use error::{ProviderError, Result};
pub use http::{ProviderConfig, retry_after, truncate};
pub use openai::{TOOL_IMAGES_LEAD, error_fields, push_tool_results, reasoning_effort};
pub use provider::{RequestBody, SseProvider, WireApi, body_bytes, body_tree, registration};
pub use stream::{EventMapper, start_tool_call};
