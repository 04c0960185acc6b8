//! The `memory` tool: `add`, `replace` and `remove` the chat's entries; `add` with
//! `scope: "global"` asks the owners first ([`Consent`]).

use crate::entry::Scope;
use crate::store::{Memories, MemoryError};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::tools::{ToolError, ToolInvocation, ToolResult, TypedTool};

/// The tool's name.
pub const NAME: &str = "memory";

/// How an owner answered a request to share a fact with every chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// An owner pressed "share everywhere".
    Shared,
    /// An owner declined.
    Declined,
    /// No owner answered in time.
    NoAnswer,
    /// The owners could not be asked; why.
    CannotAsk(String),
}

/// Asks the host's owners whether a fact may become global (shown in every chat).
#[async_trait]
pub trait Consent: Send + Sync + std::fmt::Debug {
    /// Asks about `text`, proposed in the chat whose memory key is `key`, and waits for the
    /// first owner's answer, a timeout of the host's, or `cancel`.
    async fn ask_global(&self, key: &str, text: &str, cancel: CancellationToken) -> Answer;
}

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Keep a new fact (needs `text`).
    Add,
    /// Rewrite entry `id` (needs `id` and `text`); also how entries are merged.
    Replace,
    /// Forget entry `id`.
    Remove,
}

/// Where an added fact is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScopeArg {
    /// In this chat only.
    #[default]
    Chat,
    /// In every chat; an owner is asked first and must agree.
    Global,
}

/// The tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// `add`, `replace` or `remove`.
    pub action: Action,
    /// The fact: one short sentence (a preference, a person, a standing decision).
    #[serde(default)]
    pub text: Option<String>,
    /// The entry to replace or remove, as shown in the memory list (e.g. `3`).
    #[serde(default)]
    pub id: Option<String>,
    /// For `add`: `chat` (default) or `global` (asks an owner, waits for the answer).
    #[serde(default)]
    pub scope: ScopeArg,
}

/// The `memory` tool of one session.
#[derive(Debug)]
pub struct MemoryTool {
    /// Every chat's memory.
    pub memories: Arc<Memories>,
    /// This session's memory key.
    pub key: String,
    /// Who decides on global facts; `None`: nobody can be asked here.
    pub consent: Option<Arc<dyn Consent>>,
}

#[async_trait]
impl TypedTool for MemoryTool {
    type Args = Args;

    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "Keeps short facts about this chat across sessions (shown in the system prompt of every \
         new session): a preference, a person, a standing decision. One fact per entry. `add` a \
         new fact, `replace` an entry (also to merge several), `remove` an outdated one. When \
         memory is full, consolidate first. `scope: \"global\"` shares a fact with every chat \
         after an owner agrees."
    }

    async fn run(&self, args: Args, inv: ToolInvocation, cancel: CancellationToken) -> Result<ToolResult, ToolError> {
        let session = inv.ctx.session_id();
        let m = &self.memories;
        let done = match args.action {
            Action::Add => {
                let text = need(args.text.as_deref(), "text")?;
                if args.scope == ScopeArg::Global {
                    return self.ask_global(text, &session, cancel).await;
                }
                m.add(&self.key, text, Scope::Chat, &session)
                    .map(|e| format!("Remembered as entry {}.", e.label()))
            }
            Action::Replace => {
                let id = chat_id(need(args.id.as_deref(), "id")?)?;
                let text = need(args.text.as_deref(), "text")?;
                m.replace(&self.key, id, text, &session)
                    .map(|e| format!("Entry {} now reads: {}", e.label(), e.text))
            }
            Action::Remove => {
                let id = chat_id(need(args.id.as_deref(), "id")?)?;
                m.remove(&self.key, Scope::Chat, id)
                    .map(|e| format!("Forgot entry {}: {}", e.label(), e.text))
            }
        };
        done.map(ToolResult::text).map_err(refusal)
    }
}

impl MemoryTool {
    /// Asks the owners, then adds `text` to the global memory if one agreed.
    async fn ask_global(&self, text: &str, session: &str, cancel: CancellationToken) -> Result<ToolResult, ToolError> {
        let Some(consent) = &self.consent else {
            return Err(ToolError::msg(
                "global facts cannot be proposed from here; add it to this chat's memory instead",
            ));
        };
        let said = match consent.ask_global(&self.key, text, cancel).await {
            Answer::Shared => self
                .memories
                .add(&self.key, text, Scope::Global, session)
                .map(|e| format!("An owner agreed: remembered for every chat as entry {}.", e.label()))
                .map_err(refusal)?,
            Answer::Declined => "An owner declined: the fact was not shared. Keep it in this chat with \
                                 scope \"chat\" if it matters here."
                .to_owned(),
            Answer::NoAnswer => "No owner answered in time: the fact was not shared.".to_owned(),
            Answer::CannotAsk(why) => return Err(ToolError::msg(format!("cannot ask an owner: {why}"))),
        };
        Ok(ToolResult::text(said))
    }
}

fn need<'a>(value: Option<&'a str>, key: &str) -> Result<&'a str, ToolError> {
    value.ok_or_else(|| ToolError::msg(format!("`{key}` is missing for this action")))
}

/// A chat entry's number from `id` (`3`); a global id (`g3`) is an owner's to change.
fn chat_id(id: &str) -> Result<u32, ToolError> {
    let id = id.trim();
    if id.starts_with('g') {
        return Err(ToolError::msg(format!(
            "entry {id} is global: only an owner changes it, with /memory"
        )));
    }
    id.parse()
        .map_err(|_| ToolError::msg(format!("`{id}` is not an entry id: use a number from the memory list")))
}

fn refusal(e: MemoryError) -> ToolError {
    ToolError::msg(e.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_global_entries_are_refused_and_numbers_parse() {
        assert_eq!(chat_id(" 7 ").unwrap(), 7);
        assert!(chat_id("g2").unwrap_err().to_string().contains("only an owner"));
        assert!(chat_id("x").unwrap_err().to_string().contains("not an entry id"));
    }
}
