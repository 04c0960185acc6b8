//! Token figures of a context: the provider's usage where it is fresh, estimates elsewhere.

use volcanic_abstractions::messages::{Message, StopReason};

/// Characters per token of the estimate (pi's heuristic; English text and code average 3.5-4.5).
pub const CHARS_PER_TOKEN: u64 = 4;

/// Estimated tokens of one message: its characters / 4, an image counted as 1,200 tokens
/// (4,800 characters, see `Message::estimated_chars`).
pub fn estimate_tokens(message: &Message) -> u64 {
    (message.estimated_chars() as u64).div_ceil(CHARS_PER_TOKEN)
}

/// Estimated tokens of a text (characters / 4, rounded up).
pub fn estimate_text_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(CHARS_PER_TOKEN)
}

/// How [`context_tokens`] arrived at its figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContextTokens {
    /// Context tokens: the newest fresh usage plus estimates for the messages after it.
    pub tokens: u64,
    /// Tokens taken from the provider's usage (0 when everything is estimated).
    pub from_usage: u64,
    /// Tokens estimated.
    pub estimated: u64,
}

/// Context tokens of `messages` (the session's context, oldest first).
///
/// The newest assistant message with usage (and no error or abort) gives the size of the context
/// up to and including it, as the provider counted it: system prompt, tools, messages, output.
/// Messages after it are estimated. The usage of the first `stale` messages (those from before
/// the newest compaction: the summary and the kept messages) counted the messages the summary
/// replaced and is ignored. Without a usable figure every message is estimated and `overhead`
/// (system prompt and tool definitions, estimated by the caller) is added.
pub fn context_tokens(messages: &[Message], stale: usize, overhead: u64) -> ContextTokens {
    let fresh = messages
        .iter()
        .enumerate()
        .skip(stale)
        .rev()
        .find_map(|(i, m)| match m {
            Message::Assistant(a)
                if a.usage.context_tokens() > 0
                    && !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) =>
            {
                Some((i, a.usage.context_tokens()))
            }
            Message::Assistant(_)
            | Message::User(_)
            | Message::ToolResult(_)
            | Message::Custom(_)
            | Message::BashExecution(_)
            | Message::BranchSummary(_)
            | Message::CompactionSummary(_) => None,
        });
    match fresh {
        Some((i, used)) => {
            let estimated: u64 = messages[i + 1..].iter().map(estimate_tokens).sum();
            ContextTokens {
                tokens: used + estimated,
                from_usage: used,
                estimated,
            }
        }
        None => {
            let estimated = messages.iter().map(estimate_tokens).sum::<u64>() + overhead;
            ContextTokens {
                tokens: estimated,
                from_usage: 0,
                estimated,
            }
        }
    }
}
