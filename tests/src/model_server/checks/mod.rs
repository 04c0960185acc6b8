//! Request checks, as strict as the real APIs, and the request size estimate.
//!
//! One file per wire API: `anthropic.rs`, `openai.rs`, `responses.rs`.
//!
//! Each check returns the first problem as a 400 [`Rejection`] whose message follows the real
//! API's wording where it is known (field paths like `messages.2.content.0`, OpenAI's
//! `messages.[2].role`), so a client test sees what production would answer.

use serde_json::Value;

mod anthropic;
mod openai;
mod responses;

pub(crate) use anthropic::check_anthropic;
pub(crate) use openai::check_openai;
pub(crate) use responses::check_responses;

use super::{Rejection, WireApi};

/// Size of a request in tokens as this server estimates it: the number of chars of the compact
/// JSON of `system`, `messages` and `tools` (those present), divided by 4 (integer division).
pub fn estimated_tokens(api: WireApi, body: &Value) -> u64 {
    let fields: &[&str] = match api {
        WireApi::Anthropic => &["system", "messages", "tools"],
        WireApi::OpenAi => &["messages", "tools"],
        WireApi::Responses => &["instructions", "input", "tools"],
    };
    let chars: usize = fields
        .iter()
        .filter_map(|field| body.get(*field))
        .map(|value| value.to_string().chars().count())
        .sum();
    chars as u64 / 4
}

fn invalid(message: impl Into<String>) -> Rejection {
    Rejection::invalid_request(message)
}

/// `^[a-zA-Z0-9_-]+$` with a length limit, the rule both APIs apply to tool names and Anthropic
/// applies to tool ids.
fn is_id_like(text: &str, max_len: usize) -> bool {
    !text.is_empty() && text.len() <= max_len && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}
