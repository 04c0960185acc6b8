//! What a compaction summarises and where it cuts (pi's `prepareCompaction`/`findCutPoint`).

use super::tokens::estimate_tokens;
use serde_json::Value;
use std::collections::BTreeSet;
use volcanic_abstractions::messages::{AssistantContent, Message};
use volcanic_abstractions::sessions::{EntryKind, SessionEntry};

/// Why a compaction cannot run.
#[derive(Debug, thiserror::Error)]
pub enum CompactionError {
    /// Nothing lies before the newest turn: there is nothing to summarise.
    #[error("nothing to compact yet: the context holds at most one turn")]
    NothingToCompact,
    /// No model is selected.
    #[error("no model selected to write the summary")]
    NoModel,
    /// The session file could not be read or written (the sessions slice's error, naming it).
    #[error("session file: {0}")]
    Store(#[from] crate::sessions::ManagerError),
    /// The summary request failed.
    #[error("the summary request failed: {0}")]
    Summary(String),
    /// An extension cancelled it (`session_before_compact`).
    #[error("cancelled by an extension")]
    Cancelled,
    /// The run was aborted while the summary was written.
    #[error("aborted")]
    Aborted,
}

/// The same failure: `Store` errors compare by their text (an I/O error has no equality).
impl PartialEq for CompactionError {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (CompactionError::Store(a), CompactionError::Store(b)) => a.to_string() == b.to_string(),
            (CompactionError::Summary(a), CompactionError::Summary(b)) => a == b,
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }
}

/// A planned compaction: the messages to summarise and the first entry kept verbatim.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionPlan {
    /// Messages before the cut (from the previous compaction's kept part on), oldest first.
    pub messages_to_summarize: Vec<Message>,
    /// Entry id of the first message kept verbatim.
    pub first_kept_entry_id: String,
    /// Context tokens before compaction.
    pub tokens_before: u64,
    /// The previous compaction's summary (without its file lists), to be updated.
    pub previous_summary: Option<String>,
    /// Files read (`read` tool), carried forward from earlier compactions.
    pub read_files: BTreeSet<String>,
    /// Files written or edited (`write`, `edit`), carried forward.
    pub modified_files: BTreeSet<String>,
    /// Tokens used by every assistant message on the branch up to here (input + output + cache).
    pub total_tokens: u64,
    /// Cost in USD of the same.
    pub total_cost: f64,
}

/// Whether the context may start at this message: never at a tool result, so a tool call is
/// never separated from its results (an assistant cut keeps the results that follow it).
fn is_cut_point(m: &Message) -> bool {
    !matches!(m, Message::ToolResult(_))
}

/// The message an entry contributes to the context (`message`, `custom_message`,
/// `branch_summary`).
fn entry_message(e: &SessionEntry) -> Option<Message> {
    match &e.kind {
        EntryKind::Message(m) => Some(m.clone()),
        EntryKind::CustomMessage {
            custom_type,
            content,
            display,
            details,
        } => Some(Message::Custom(volcanic_abstractions::messages::CustomMessage {
            custom_type: custom_type.clone(),
            content: content.clone(),
            display: *display,
            details: details.clone(),
            timestamp: 0,
        })),
        EntryKind::BranchSummary { from_id, summary, .. } if !summary.is_empty() => Some(Message::BranchSummary(
            volcanic_abstractions::messages::SummaryMessage {
                summary: summary.clone(),
                tokens_before: None,
                from_id: Some(from_id.clone()),
                timestamp: 0,
            },
        )),
        // An empty branch summary, and entries that are not messages (compactions are handled apart).
        EntryKind::BranchSummary { .. }
        | EntryKind::ModelChange { .. }
        | EntryKind::ThinkingLevelChange { .. }
        | EntryKind::Compaction(_)
        | EntryKind::Custom { .. }
        | EntryKind::Label { .. }
        | EntryKind::SessionInfo { .. }
        | EntryKind::Unknown { .. } => None,
    }
}

/// Plans a compaction of `branch` (root to leaf) that keeps about `keep_tokens` of the newest
/// messages. Walking back from the leaf it adds up estimates until `keep_tokens` is reached, then
/// cuts at the nearest message that may start a context at or after that point (before it, if
/// only tool results follow). When the whole context is smaller than `keep_tokens` it keeps only
/// the newest turn (from the last user message). Errors with `NothingToCompact` when nothing
/// would be summarised.
pub(crate) fn plan(
    branch: &[SessionEntry],
    keep_tokens: u64,
    tokens_before: u64,
) -> Result<CompactionPlan, CompactionError> {
    let prev_at = branch.iter().rposition(|e| matches!(e.kind, EntryKind::Compaction(_)));
    let previous = prev_at.and_then(|at| {
        let EntryKind::Compaction(c) = &branch[at].kind else {
            return None;
        };
        Some((at, c))
    });
    let start = previous.map_or(0, |(at, c)| {
        branch[..at]
            .iter()
            .position(|e| e.id == c.first_kept_entry_id)
            .unwrap_or(at + 1)
    });
    // (branch index, message) of the current context, oldest first.
    let context: Vec<(usize, Message)> = (start..branch.len())
        .filter(|&i| Some(i) != prev_at)
        .filter_map(|i| entry_message(&branch[i]).map(|m| (i, m)))
        .collect();

    let mut cut: Option<usize> = None;
    let mut kept = 0u64;
    for k in (0..context.len()).rev() {
        kept += estimate_tokens(&context[k].1);
        if kept >= keep_tokens {
            cut = (k..context.len())
                .find(|&j| is_cut_point(&context[j].1))
                .or_else(|| (0..k).rev().find(|&j| is_cut_point(&context[j].1)));
            break;
        }
    }
    let cut = match cut {
        // The allowance was reached only at the oldest message (one huge prompt or tool
        // result): keep less rather than nothing to summarise, from the next place a context
        // may start.
        Some(0) => (1..context.len()).find(|&j| is_cut_point(&context[j].1)).unwrap_or(0),
        Some(c) => c,
        None => context
            .iter()
            .rposition(|(_, m)| matches!(m, Message::User(_)))
            .unwrap_or(0),
    };
    if cut == 0 {
        return Err(CompactionError::NothingToCompact);
    }

    let mut read_files = BTreeSet::new();
    let mut modified_files = BTreeSet::new();
    let (mut total_tokens, mut total_cost) = (0u64, 0.0f64);
    if let Some((_, c)) = previous {
        let details = c.details.as_ref();
        read_files.extend(string_list(details, "readFiles"));
        modified_files.extend(string_list(details, "modifiedFiles"));
        total_tokens = details
            .and_then(|d| d.get("totalTokens"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        total_cost = details
            .and_then(|d| d.get("cost"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
    }
    for e in &branch[prev_at.map_or(0, |at| at + 1)..] {
        if let EntryKind::Message(Message::Assistant(a)) = &e.kind {
            total_tokens += a.usage.context_tokens();
            total_cost += a.usage.cost.total;
        }
    }
    let messages_to_summarize: Vec<Message> = context[..cut].iter().map(|(_, m)| m.clone()).collect();
    for m in &messages_to_summarize {
        collect_file_ops(m, &mut read_files, &mut modified_files);
    }
    // A file both read and modified is listed once, as modified.
    read_files.retain(|f| !modified_files.contains(f));
    Ok(CompactionPlan {
        messages_to_summarize,
        first_kept_entry_id: branch[context[cut].0].id.clone(),
        tokens_before,
        previous_summary: previous.map(|(_, c)| strip_file_lists(&c.summary)),
        read_files,
        modified_files,
        total_tokens,
        total_cost,
    })
}

fn string_list(details: Option<&Value>, key: &str) -> Vec<String> {
    details
        .and_then(|d| d.get(key))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Files named by `read`, `write` and `edit` calls in an assistant message.
fn collect_file_ops(m: &Message, read: &mut BTreeSet<String>, modified: &mut BTreeSet<String>) {
    let Message::Assistant(a) = m else { return };
    for c in &a.content {
        let AssistantContent::ToolCall(call) = c else { continue };
        let Some(path) = call.arguments.get("path").and_then(Value::as_str) else {
            continue;
        };
        match call.name.as_str() {
            "read" => {
                read.insert(path.to_owned());
            }
            "write" | "edit" => {
                modified.insert(path.to_owned());
            }
            _ => {}
        }
    }
}

/// The summary without the `<read-files>`/`<modified-files>` blocks appended to it, which are
/// rebuilt from the entry's details.
pub(crate) fn strip_file_lists(summary: &str) -> String {
    let cut = ["\n\n<read-files>", "\n\n<modified-files>"]
        .iter()
        .filter_map(|tag| summary.find(tag))
        .min()
        .unwrap_or(summary.len());
    summary[..cut].to_owned()
}
