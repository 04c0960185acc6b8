//! What the Volcanic provider extensions (`volcanic-anthropic`, `volcanic-openai`) share, so
//! that each idea exists once:
//!
//! - [`SseProvider`] runs a call against a [`WireApi`]: builds the body, POSTs it, retries
//!   transient failures ([`ProviderConfig`]: backoff, `retry-after`, idle and connect
//!   timeouts), honours cancellation, reads the response's SSE events (idle timeout) through
//!   the API's [`EventMapper`], and turns every failure into the stream's final `error` event;
//! - [`ProviderError`] is what can go wrong, with its retry verdict;
//! - pi's wording for the agent's own roles ([`bash_execution_text`],
//!   [`compaction_summary_text`], [`branch_summary_text`], [`IMAGE_OMITTED`]), tool-call ids
//!   rewritten to an API's rule ([`sanitize_id`]) and streamed tool-call arguments read back
//!   ([`tool_arguments`]).
//!
//! A wire API crate supplies the endpoint, headers, request body, error-body reader and event
//! mapper; everything between the HTTP client and the provider stream lives here. With the
//! `testing` feature, the `testing` module holds what the provider crates' tests share.
#![warn(missing_docs, unreachable_pub)]

mod convert;
mod error;
mod http;
mod provider;
mod stream;
#[cfg(feature = "testing")]
pub mod testing;

pub use convert::{
    IMAGE_OMITTED, bash_execution_text, branch_summary_text, compaction_summary_text, sanitize_id, tool_arguments,
    tool_result_text,
};
pub use error::{ProviderError, Result};
pub use http::{ProviderConfig, truncate};
pub use provider::{SseProvider, WireApi, body_bytes, body_tree};
pub use stream::EventMapper;
