//! The summary request: the conversation serialised as text (so the request carries no tool calls
//! and needs no tools), the previous summary to update, and the fixed sections.

use super::plan::CompactionPlan;
use super::tokens::{CHARS_PER_TOKEN, estimate_text_tokens};
use volcanic_abstractions::messages::{AssistantContent, Message, UserBody, UserContent};

/// System prompt of the summary request.
pub(crate) const SUMMARY_SYSTEM_PROMPT: &str = "You summarise conversations between a user and an AI agent \
so that the agent can continue the work from the summary alone. Read the conversation and write the \
summary in exactly the requested format. Do not continue the conversation, do not answer questions \
in it, do not call tools: output only the summary.";

/// The sections every summary has (DESIGN.md, compaction).
pub(crate) const SECTIONS: &str = "## Goal
What the user wants to achieve (several goals as a list).

## Constraints & Preferences
Requirements, limits and preferences the user stated (\"(none)\" if there are none).

## Progress
### Done
- [x] Completed work
### In Progress
- [ ] Work started but not finished
### Blocked
- Problems that stop progress, and why (\"(none)\" if there are none)

## Key Decisions
- **Decision**: why it was made

## Next Steps
1. What should happen next, in order

## Critical Context
- Data, names, paths, values, errors and references needed to continue (\"(none)\" if there are none)";

/// Characters of one tool result kept in the serialised conversation.
pub(crate) const TOOL_RESULT_CHARS: usize = 2_000;

/// The conversation as labelled text: `[User]: …`, `[Assistant]: …`, `[Assistant tool calls]: …`,
/// `[Tool result]: …` (cut to 2,000 characters), one block per message.
pub(crate) fn serialize(messages: &[Message]) -> Vec<String> {
    let mut out = Vec::new();
    for m in messages {
        match m {
            Message::User(u) => out.push(format!("[User]: {}", body_text(&u.content))),
            Message::Assistant(a) => {
                let mut text = String::new();
                let mut thinking = String::new();
                let mut calls = Vec::new();
                for c in &a.content {
                    match c {
                        AssistantContent::Text(t) => text.push_str(&t.text),
                        AssistantContent::Thinking(t) => thinking.push_str(&t.thinking),
                        AssistantContent::ToolCall(call) => calls.push(format!("{}({})", call.name, call.arguments)),
                        // Ran by the provider: the call and its result in one block.
                        AssistantContent::ProviderToolCall(call) => {
                            calls.push(cut(&call.as_text(), TOOL_RESULT_CHARS));
                        }
                    }
                }
                if !thinking.trim().is_empty() {
                    out.push(format!("[Assistant thinking]: {}", cut(&thinking, TOOL_RESULT_CHARS)));
                }
                if !text.trim().is_empty() {
                    out.push(format!("[Assistant]: {text}"));
                }
                if !calls.is_empty() {
                    out.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
                if let Some(e) = &a.error_message {
                    out.push(format!("[Assistant error]: {e}"));
                }
            }
            Message::ToolResult(r) => {
                let text: String = r
                    .content
                    .iter()
                    .map(|c| match c {
                        UserContent::Text(t) => t.text.as_str(),
                        UserContent::Image(_) => "[image]",
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                let label = if r.is_error { "Tool error" } else { "Tool result" };
                out.push(format!("[{label} {}]: {}", r.tool_name, cut(&text, TOOL_RESULT_CHARS)));
            }
            Message::Custom(c) => out.push(format!("[{}]: {}", c.custom_type, body_text(&c.content))),
            Message::BashExecution(b) => out.push(format!(
                "[User ran]: {}\n{}",
                b.command,
                cut(&b.output, TOOL_RESULT_CHARS)
            )),
            Message::BranchSummary(s) => out.push(format!("[Summary of another branch]: {}", s.summary)),
            Message::CompactionSummary(s) => out.push(format!("[Earlier summary]: {}", s.summary)),
        }
    }
    out
}

fn body_text(b: &UserBody) -> String {
    match b {
        UserBody::Text(t) => t.clone(),
        UserBody::Blocks(blocks) => blocks
            .iter()
            .map(|c| match c {
                UserContent::Text(t) => t.text.as_str(),
                UserContent::Image(_) => "[image]",
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// `text` cut to at most `max` bytes (on a char boundary), saying how much was left out.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[… {} more characters]", &text[..end], text.len() - end)
}

/// The user message of the summary request. `budget_tokens`: what the conversation text may
/// take; the oldest blocks are left out (and said to be) when it is over.
pub(crate) fn summary_prompt(plan: &CompactionPlan, instructions: Option<&str>, budget_tokens: u64) -> String {
    // One block may take at most half of the budget (a huge prompt or result is cut in the
    // middle of its text rather than crowding out everything else).
    let max_block = usize::try_from(budget_tokens.saturating_mul(CHARS_PER_TOKEN) / 2)
        .unwrap_or(usize::MAX)
        .max(TOOL_RESULT_CHARS);
    let blocks: Vec<String> = serialize(&plan.messages_to_summarize)
        .into_iter()
        .map(|b| cut(&b, max_block))
        .collect();
    let mut used = 0u64;
    let mut from = blocks.len();
    while from > 0 {
        let t = estimate_text_tokens(&blocks[from - 1]) + 1;
        if used + t > budget_tokens {
            break;
        }
        used += t;
        from -= 1;
    }
    let mut conversation = String::new();
    if from > 0 {
        conversation.push_str(&format!(
            "[{from} older messages left out: they did not fit in the summary request]\n\n"
        ));
    }
    conversation.push_str(&blocks[from..].join("\n\n"));
    let mut out = format!("<conversation>\n{conversation}\n</conversation>\n\n");
    match &plan.previous_summary {
        Some(previous) => out.push_str(&format!(
            "<previous-summary>\n{previous}\n</previous-summary>\n\nThe conversation above continues from \
             the previous summary. Update that summary with it: keep what still holds, move finished work \
             to Done, add new decisions and context, and drop what no longer matters. Use this format:\n\n"
        )),
        None => out.push_str("Write a summary of the conversation above in this format:\n\n"),
    }
    out.push_str(SECTIONS);
    if let Some(i) = instructions.map(str::trim).filter(|i| !i.is_empty()) {
        out.push_str(&format!("\n\nThe user asks the summary to focus on: {i}"));
    }
    out
}

/// The stored summary: the model's text plus the file lists, as pi appends them.
pub(crate) fn with_file_lists(summary: &str, plan: &CompactionPlan) -> String {
    let mut out = summary.trim().to_owned();
    if !plan.read_files.is_empty() {
        let list: Vec<&str> = plan.read_files.iter().map(String::as_str).collect();
        out.push_str(&format!("\n\n<read-files>\n{}\n</read-files>", list.join("\n")));
    }
    if !plan.modified_files.is_empty() {
        let list: Vec<&str> = plan.modified_files.iter().map(String::as_str).collect();
        out.push_str(&format!("\n\n<modified-files>\n{}\n</modified-files>", list.join("\n")));
    }
    out
}
