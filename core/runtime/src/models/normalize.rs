//! Transcript normalisation: one pure function applied before every provider call.
//!
//! Rules (DESIGN.md "Agent loop and sessions", from the bug history of pi and its peers):
//! 1. errored and aborted assistant messages are dropped (they stay in the session file);
//! 2. every tool call gets exactly one result directly after its assistant message: a missing one
//!    becomes an error result, a duplicate is dropped;
//! 3. a tool result without its call (in the assistant message right before) is dropped;
//! 4. any other message found between a tool call and its results is moved after the results;
//! 5. tool-call ids are mapped to what the target provider accepts (same mapping for the call and
//!    its result);
//! 6. thinking from another provider or model loses its signature: it becomes plain text (empty
//!    or redacted thinking is dropped), text and tool-call signatures are dropped;
//! 7. a tool call another wire API ran itself (a `providerToolCall`, e.g. Claude Code's) becomes
//!    plain text saying what ran and what came back ([`ProviderToolCall::as_text`]): no API has
//!    a block for another's, and as a `tool_use` it would need a result the runtime never made.
//!
//! [`ProviderToolCall::as_text`]: volcanic_abstractions::messages::ProviderToolCall::as_text

use std::collections::{HashMap, HashSet};
use volcanic_abstractions::messages::{
    AssistantContent, Message, StopReason, TextContent, ToolResultMessage, UserContent,
};
use volcanic_abstractions::model::{Api, Model};

/// Text of the error result added for a tool call without a result.
pub const MISSING_RESULT: &str = "No result provided";

/// Returns the transcript as `target` may receive it. Pure: same input, same output. Takes the
/// messages by value (called before every model request: they are moved, not copied).
pub fn normalize_transcript(messages: Vec<Message>, target: &Model) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut ids = IdMapper::new(&target.api);
    // Each message in an `Option`, so that a look-ahead can take one out of its place.
    let mut pending: Vec<Option<Message>> = messages.into_iter().map(Some).collect();
    let mut i = 0;
    while i < pending.len() {
        let Some(m) = pending[i].take() else {
            i += 1;
            continue;
        };
        i += 1;
        match m {
            Message::Assistant(mut a) => {
                if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                    continue;
                }
                let same_model = a.provider == target.provider && a.api == target.api.as_str() && a.model == target.id;
                let same_api = a.api == target.api.as_str();
                a.content = convert_blocks(std::mem::take(&mut a.content), same_model, same_api, &mut ids);
                let calls: Vec<(String, String)> = a.tool_calls().map(|c| (c.id.clone(), c.name.clone())).collect();
                if a.content.is_empty() {
                    continue;
                }
                out.push(Message::Assistant(a));
                if calls.is_empty() {
                    continue;
                }
                // Gather this batch's results; defer anything else seen before they are complete.
                let wanted: HashSet<&str> = calls.iter().map(|(id, _)| id.as_str()).collect();
                let mut results: HashMap<String, ToolResultMessage> = HashMap::new();
                let mut deferred: Vec<Message> = Vec::new();
                while i < pending.len() && results.len() < calls.len() {
                    if matches!(pending[i], Some(Message::Assistant(_))) {
                        break;
                    }
                    match pending[i].take() {
                        Some(Message::ToolResult(mut r)) => {
                            let mapped = ids.map(&r.tool_call_id);
                            if wanted.contains(mapped.as_str()) && !results.contains_key(&mapped) {
                                r.tool_call_id = mapped.clone();
                                results.insert(mapped, r);
                            }
                            // Orphans and duplicates are dropped.
                        }
                        Some(
                            other @ (Message::User(_)
                            | Message::Assistant(_)
                            | Message::Custom(_)
                            | Message::BashExecution(_)
                            | Message::BranchSummary(_)
                            | Message::CompactionSummary(_)),
                        ) => deferred.push(other),
                        None => {}
                    }
                    i += 1;
                }
                for (id, name) in &calls {
                    let r = results.remove(id).unwrap_or_else(|| ToolResultMessage {
                        tool_call_id: id.clone(),
                        tool_name: name.clone(),
                        content: vec![UserContent::Text(TextContent {
                            text: MISSING_RESULT.to_owned(),
                            text_signature: None,
                        })],
                        details: None,
                        is_error: true,
                        timestamp: 0,
                    });
                    out.push(Message::ToolResult(r));
                }
                out.extend(deferred);
            }
            // A result not directly after its call: an orphan.
            Message::ToolResult(_) => {}
            other @ (Message::User(_)
            | Message::Custom(_)
            | Message::BashExecution(_)
            | Message::BranchSummary(_)
            | Message::CompactionSummary(_)) => out.push(other),
        }
    }
    out
}

fn convert_blocks(
    blocks: Vec<AssistantContent>,
    same_model: bool,
    same_api: bool,
    ids: &mut IdMapper,
) -> Vec<AssistantContent> {
    let mut out = Vec::with_capacity(blocks.len());
    for b in blocks {
        match b {
            AssistantContent::Thinking(t) if !same_model => {
                if t.redacted != Some(true) && !t.thinking.trim().is_empty() {
                    out.push(AssistantContent::Text(TextContent {
                        text: t.thinking,
                        text_signature: None,
                    }));
                }
            }
            AssistantContent::Text(mut t) => {
                if !same_model {
                    t.text_signature = None;
                }
                out.push(AssistantContent::Text(t));
            }
            AssistantContent::ToolCall(mut c) => {
                c.id = ids.map(&c.id);
                if !same_model {
                    c.thought_signature = None;
                }
                out.push(AssistantContent::ToolCall(c));
            }
            thinking @ AssistantContent::Thinking(_) => out.push(thinking),
            AssistantContent::ProviderToolCall(c) if !same_api => out.push(AssistantContent::Text(TextContent {
                text: c.as_text(),
                text_signature: None,
            })),
            own @ AssistantContent::ProviderToolCall(_) => out.push(own),
        }
    }
    out
}

/// Maps tool-call ids to a provider's rules, the same way for a call and its result.
struct IdMapper {
    max_len: usize,
    strict_chars: bool,
    seen: HashMap<String, String>,
    used: HashSet<String>,
}

impl IdMapper {
    fn new(api: &Api) -> Self {
        let (max_len, strict_chars) = match api {
            // Anthropic: ^[a-zA-Z0-9_-]{1,64}$.
            Api::AnthropicMessages => (64, true),
            // OpenAI Chat Completions: at most 40 characters.
            Api::OpenAiCompletions => (40, false),
            // Responses: `{call_id}|{item id}` pairs (pi's form), which the provider splits and
            // sanitizes itself (call ids up to 64 characters, item ids kept for its own calls).
            Api::OpenAiResponses => (129, false),
            Api::Other(_) => (64, true),
        };
        IdMapper {
            max_len,
            strict_chars,
            seen: HashMap::new(),
            used: HashSet::new(),
        }
    }

    fn map(&mut self, id: &str) -> String {
        if let Some(m) = self.seen.get(id) {
            return m.clone();
        }
        let ok = !id.is_empty()
            && id.len() <= self.max_len
            && (!self.strict_chars || id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
        let mut mapped = if ok {
            id.to_owned()
        } else {
            let clean: String = id
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let hash = format!("{:016x}", fnv1a(id.as_bytes()));
            let keep = self.max_len.saturating_sub(hash.len() + 1);
            let prefix: String = clean.chars().take(keep).collect();
            if prefix.is_empty() {
                format!("t_{hash}")
            } else {
                format!("{prefix}_{hash}")
            }
        };
        // Another id already maps here: add a counter, keeping within the length limit.
        let base = mapped.clone();
        let mut n = 0;
        while self.used.contains(&mapped) {
            n += 1;
            let suffix = format!("_{n}");
            let keep = self.max_len.saturating_sub(suffix.len());
            mapped = base.chars().take(keep).collect::<String>() + &suffix;
        }
        self.used.insert(mapped.clone());
        self.seen.insert(id.to_owned(), mapped.clone());
        mapped
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;
