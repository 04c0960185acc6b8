//! `Compactor`: when to compact, what to summarise, the summary request (spec: architecture.md,
//! "The agent loop"; DESIGN.md, "compaction").
//!
//! - **When**: context tokens (fresh usage plus estimates, [`context_tokens`]) exceed the model's
//!   window minus the reserve, reserve = min(`reserve_tokens`, window / 4); or the provider
//!   answered with a context-overflow error (the session then compacts once and retries once).
//! - **What**: the newest ≈ min(`keep_recent_tokens`, window × 0.4) tokens stay verbatim; the cut
//!   never falls between a tool call and its results. Everything before it (from the previous
//!   compaction's kept part on) is summarised, updating the previous summary.
//! - **How**: one request to the session's model without tools: the conversation serialised as
//!   text, the fixed sections (goal, constraints, progress done / in progress / blocked, key
//!   decisions, next steps, critical context). Files read and modified are carried forward in
//!   the entry's `details` (`readFiles`, `modifiedFiles`, as pi) and listed after the summary.

mod plan;
mod prompt;
mod tokens;

#[cfg(test)]
mod tests;

pub use plan::{CompactionError, CompactionPlan};
pub use tokens::{CHARS_PER_TOKEN, ContextTokens, context_tokens, estimate_text_tokens, estimate_tokens};

use serde_json::json;
use volcanic_abstractions::extensions::events::{CompactionOverride, CompactionPreparation};
use volcanic_abstractions::messages::{Message, TextContent, UserBody, UserContent, UserMessage};
use volcanic_abstractions::model::Model;
use volcanic_abstractions::provider::ProviderContext;
use volcanic_abstractions::sessions::{CompactionEntry, SessionEntry};

/// Compaction settings (tokens). The defaults are DESIGN.md's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionSettings {
    /// Whether threshold compaction runs (overflow recovery and `/compact` work regardless).
    pub enabled: bool,
    /// Cap of the reserve kept free for the answer: reserve = min(this, window / 4).
    pub reserve_tokens: u64,
    /// Cap of the recent history kept verbatim: keep = min(this, window × 0.4).
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        }
    }
}

/// Tokens the summary request sets aside for its own instructions.
const PROMPT_OVERHEAD_TOKENS: u64 = 1_500;

/// Decides and prepares compactions. Cheap to copy; one per session.
#[derive(Debug, Clone, Copy, Default)]
pub struct Compactor {
    settings: CompactionSettings,
}

impl Compactor {
    /// A compactor with these settings.
    pub fn new(settings: CompactionSettings) -> Self {
        Compactor { settings }
    }

    /// The settings.
    pub fn settings(&self) -> CompactionSettings {
        self.settings
    }

    /// Tokens kept free for the answer: min(`reserve_tokens`, window / 4).
    pub fn reserve(&self, window: u64) -> u64 {
        self.settings.reserve_tokens.min(window / 4)
    }

    /// Tokens of recent history kept verbatim: min(`keep_recent_tokens`, window × 0.4).
    pub fn keep(&self, window: u64) -> u64 {
        self.settings.keep_recent_tokens.min(window * 2 / 5)
    }

    /// Whether a context of `tokens` must be compacted before the next call to a model with
    /// this `window` (0 = unknown: never).
    pub fn should_compact(&self, tokens: u64, window: u64) -> bool {
        self.settings.enabled && window > 0 && tokens > window - self.reserve(window)
    }

    /// Plans a compaction of `branch` (the session's entries from root to leaf).
    pub fn plan(
        &self,
        branch: &[SessionEntry],
        window: u64,
        tokens_before: u64,
    ) -> Result<CompactionPlan, CompactionError> {
        plan::plan(branch, self.keep(window), tokens_before)
    }

    /// Output tokens the summary may take: 80 % of the reserve, at most the model's limit.
    pub fn summary_max_tokens(&self, model: &Model) -> u64 {
        let cap = self.reserve(model.context_window) * 4 / 5;
        let cap = if model.max_tokens > 0 {
            cap.min(model.max_tokens)
        } else {
            cap
        };
        cap.max(1_024)
    }

    /// The summary request for `plan`: no tools, the conversation as text (cut to what fits the
    /// window), the previous summary, the sections and the user's `instructions`.
    pub fn summary_request(&self, plan: &CompactionPlan, model: &Model, instructions: Option<&str>) -> ProviderContext {
        let previous = plan.previous_summary.as_deref().map_or(0, estimate_text_tokens);
        let budget = model
            .context_window
            .saturating_sub(self.summary_max_tokens(model) + PROMPT_OVERHEAD_TOKENS + previous)
            // Serialised text is counted by its JSON encoding on the wire; leave room for escapes.
            * 4
            / 5;
        let text = prompt::summary_prompt(plan, instructions, budget);
        ProviderContext {
            system_prompt: prompt::SUMMARY_SYSTEM_PROMPT.to_owned(),
            messages: vec![Message::User(UserMessage {
                content: UserBody::Blocks(vec![UserContent::Text(TextContent {
                    text,
                    text_signature: None,
                })]),
                timestamp: crate::models::now_ms(),
            })],
            tools: Vec::new(),
        }
    }

    /// The `compaction` entry for `plan` with `summary` (the model's text or an extension's
    /// override): the summary followed by the file lists, `details` with `readFiles`,
    /// `modifiedFiles`, `totalTokens` and `cost` (the branch's usage up to here; an extension's
    /// own details are kept under `extension`).
    pub fn entry(
        &self,
        plan: &CompactionPlan,
        summary: &str,
        from_extension: Option<&CompactionOverride>,
    ) -> CompactionEntry {
        let mut details = json!({
            "readFiles": plan.read_files,
            "modifiedFiles": plan.modified_files,
            "totalTokens": plan.total_tokens,
            "cost": plan.total_cost,
        });
        if let Some(extra) = from_extension.and_then(|o| o.details.clone()) {
            details["extension"] = extra;
        }
        CompactionEntry {
            summary: prompt::with_file_lists(summary, plan),
            first_kept_entry_id: plan.first_kept_entry_id.clone(),
            tokens_before: plan.tokens_before,
            details: Some(details),
            from_hook: from_extension.map(|_| true),
        }
    }
}

impl CompactionPlan {
    /// What `session_before_compact` handlers see.
    pub fn preparation(&self) -> CompactionPreparation {
        CompactionPreparation {
            messages_to_summarize: self.messages_to_summarize.clone(),
            first_kept_entry_id: self.first_kept_entry_id.clone(),
            tokens_before: self.tokens_before,
            previous_summary: self.previous_summary.clone(),
        }
    }
}
