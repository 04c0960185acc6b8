//! Memory (issue 28, curated part): every session gets the `memory` extension
//! ([`volcanic_memory`]) bound to its memory key (its chat's, a forum topic sharing its group's;
//! an A2A caller's own), and the chats get `/memory` (the entries with a delete button each and,
//! for owners, "share everywhere") and `/forget` (after a confirmation button). A fact becomes
//! global only by an owner's press: on `/memory`, or on the question the tool's
//! `scope: "global"` sends the owners ([`consent`]).
//!
//! ```toml
//! [memory]
//! enabled = true      # false: no memory tool, no memory in the system prompt
//! max_chars = 4000    # the cap of a chat's entries (and of the global ones), in characters
//! auto = true         # curate automatically when a session is compacted or ended with /new
//! ```
//!
//! The files are in `state_dir/memory/` ([`files`]), outside every workspace, so no tool of a
//! session reads or changes them behind the model's back.

pub mod consent;
pub mod files;
pub mod list;

use super::port::{ChatPort, Target, chat_key};
use super::{CommandCall, FeatureCommand, HostFeature, Press, Services, SessionPlace, Turn};
use async_trait::async_trait;
use consent::OwnerConsent;
use files::StateFiles;
use list::Action;
use std::path::PathBuf;
use std::sync::Arc;
use volcanic_abstractions::extensions::{Extension, ExtensionFactory};
use volcanic_memory::{DEFAULT_MAX_CHARS, Memories, MemoryExtension, Scope, Setup, caller_key};

/// The prefix of the feature's button data.
pub const PREFIX: &str = "mem:";

/// The largest `max_chars` accepted: the block goes into every request's system prompt.
const MAX_CAP: usize = 100_000;

/// `[memory]`: see the module docs; a key left out takes its default.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Memory at all (`false`: no tool, no block in the system prompt). Default `true`.
    pub enabled: bool,
    /// The cap in characters. Default [`DEFAULT_MAX_CHARS`].
    pub max_chars: usize,
    /// Automatic curation. Default `true`.
    pub auto: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            max_chars: DEFAULT_MAX_CHARS,
            auto: true,
        }
    }
}

/// The `[memory]` section (defaults when absent). Errors name the key: an unknown key, a wrong
/// type, `max_chars` 0 or above 100,000.
pub fn settings(services: &Services) -> anyhow::Result<Settings> {
    let s = services.section::<Settings>("memory")?.unwrap_or_default();
    if s.max_chars == 0 || s.max_chars > MAX_CAP {
        anyhow::bail!(
            "config key `memory.max_chars`: {} is out of range; give 1 to {MAX_CAP} characters",
            s.max_chars
        );
    }
    Ok(s)
}

/// The memory feature.
#[derive(Debug)]
pub struct MemoryFeature {
    memories: Arc<Memories>,
    files: Arc<StateFiles>,
    auto: bool,
    owners: Vec<i64>,
    chats: Option<Arc<dyn ChatPort>>,
    consent: Option<Arc<OwnerConsent>>,
}

/// Builds it unless `[memory] enabled = false`: in the Telegram host (a chat's memory, an A2A
/// caller's) and in the console (its working directory's memory, as recall searches that
/// directory's sessions; no global facts, as there is no owner to ask).
pub fn build(services: &Services) -> anyhow::Result<Option<Arc<dyn HostFeature>>> {
    let s = settings(services)?;
    if !s.enabled {
        return Ok(None);
    }
    let files = Arc::new(StateFiles::new(&services.state_dir));
    let owners = services.config.telegram.owners.clone();
    let consent = services
        .chats
        .clone()
        .map(|chats| Arc::new(OwnerConsent::new(chats, owners.clone())));
    Ok(Some(Arc::new(MemoryFeature {
        memories: Arc::new(Memories::new(files.clone(), s.max_chars)),
        files,
        auto: s.auto,
        owners,
        chats: services.chats.clone(),
        consent,
    })))
}

const COMMANDS: &[FeatureCommand] = &[
    FeatureCommand {
        name: "memory",
        description: "What the assistant remembers in this chat",
        turn: Turn::Waits,
    },
    FeatureCommand {
        name: "forget",
        description: "Clear this chat's memory",
        turn: Turn::Waits,
    },
];

impl MemoryFeature {
    /// `/memory`'s text and buttons for the chat `key`, as `owner` sees it.
    fn listing(&self, key: &str, owner: bool) -> (String, Vec<Vec<super::port::PressButton>>) {
        match self.memories.view(key) {
            Ok(view) => {
                let (mut text, rows) = list::listing(&view, self.memories.max_chars(), owner);
                for path in &view.set_aside {
                    text.push_str(&format!(
                        "\n⚠️ The memory file could not be read; it was set aside as {}.",
                        path.display()
                    ));
                }
                (text, rows)
            }
            Err(e) => (format!("⚠️ {e}"), Vec::new()),
        }
    }

    /// Sends `text` with `rows` to `to`; the text itself when there is no port (console).
    async fn offer(&self, to: Target, text: String, rows: &[Vec<super::port::PressButton>]) -> Option<String> {
        let chats = self.chats.as_ref()?;
        match chats.offer(to, &text, rows).await {
            Ok(_) => None,
            Err(e) => Some(format!("⚠️ {e}")),
        }
    }

    /// Applies a press's action to the chat `key`.
    fn act(&self, key: &str, action: Action, owner: bool) -> Outcome {
        let done = match action {
            Action::DeleteGlobal(_) | Action::Share(_) if !owner => {
                return Outcome::Refused("Only an owner can do this.".into());
            }
            Action::Delete(id) => self
                .memories
                .remove(key, Scope::Chat, id)
                .map(|e| format!("Deleted: {}", e.text)),
            Action::DeleteGlobal(id) => self
                .memories
                .remove(key, Scope::Global, id)
                .map(|e| format!("Deleted: {}", e.text)),
            Action::Share(id) => self
                .memories
                .promote(key, id)
                .map(|e| format!("Shared with every chat: {}", e.text)),
            Action::Forget(false) => return Outcome::Close("Kept: nothing was forgotten.".into()),
            Action::Forget(true) => {
                let said = self
                    .memories
                    .clear(key)
                    .map(|n| format!("Forgot {n} entries of this chat's memory."));
                return Outcome::Close(said.unwrap_or_else(|e| format!("⚠️ {e}")));
            }
            // Answered in `press`, which owns the wait.
            Action::Consent(..) => return Outcome::Refused(String::new()),
        };
        Outcome::Relist(done.unwrap_or_else(|e| format!("⚠️ {e}")))
    }
}

/// What a press did, and so what its message shows.
enum Outcome {
    /// Nothing; the toast says why, the message stays as it was.
    Refused(String),
    /// A change (the toast says which); the message shows the list again.
    Relist(String),
    /// The question is settled; the message shows this in place of its buttons.
    Close(String),
}

#[async_trait]
impl HostFeature for MemoryFeature {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn session_extensions(&self, place: &SessionPlace<'_>) -> Vec<ExtensionFactory> {
        let setup = match (place.caller, place.chat) {
            (Some(caller), _) => Setup {
                key: caller_key(&caller.name),
                global: false,
                consent: None,
                auto: self.auto,
            },
            // The console: its working directory's memory (the folder name of its sessions).
            (None, None) => Setup {
                key: volcanic_core::sessions::cwd_scope(place.workspace),
                global: false,
                consent: None,
                auto: self.auto,
            },
            (None, Some(chat)) => Setup {
                key: chat_key(chat.chat_id),
                global: true,
                consent: self.consent.clone().map(|c| c as Arc<dyn volcanic_memory::Consent>),
                auto: self.auto,
            },
        };
        let memories = self.memories.clone();
        vec![Arc::new(move || {
            Box::new(MemoryExtension::new(memories.clone(), setup.clone())) as Box<dyn Extension>
        })]
    }

    fn commands(&self) -> &[FeatureCommand] {
        COMMANDS
    }

    async fn command(&self, name: &str, call: CommandCall<'_>) -> Option<String> {
        let key = chat_key(call.target.chat_id);
        if name == "forget" {
            return match self.memories.view(&key) {
                Ok(view) => match list::forget_question(&view) {
                    Some((text, rows)) => self.offer(call.target, text, &rows).await,
                    None => Some("This chat's memory is empty: nothing to forget.".into()),
                },
                Err(e) => Some(format!("⚠️ {e}")),
            };
        }
        let owner = self.owners.contains(&call.message.from_id);
        let (text, rows) = self.listing(&key, owner);
        self.offer(call.target, text, &rows).await
    }

    fn help(&self) -> &[&'static str] {
        &[
            "/memory - what the assistant remembers here, with buttons to delete (owners: share everywhere)",
            "/forget - clear this chat's memory (asks first)",
        ]
    }

    fn press_prefix(&self) -> Option<&'static str> {
        Some(PREFIX)
    }

    async fn press(&self, press: Press<'_>) -> Option<String> {
        let action = Action::parse(press.data)?;
        tracing::info!(
            chat = press.target.chat_id,
            user = press.from_id,
            ?action,
            "memory button pressed"
        );
        if let Action::Consent(id, yes) = action {
            let consent = self.consent.as_ref()?;
            return Some(consent.answer(id, yes, press.owner).await);
        }
        let key = chat_key(press.target.chat_id);
        let chats = self.chats.as_ref()?;
        let (toast, (text, rows)) = match self.act(&key, action, press.owner) {
            Outcome::Refused(toast) => return Some(toast),
            Outcome::Relist(toast) => (toast, self.listing(&key, press.owner)),
            Outcome::Close(text) => (text.clone(), (text, Vec::new())),
        };
        if let Err(e) = chats.edit(press.target, press.message_id, &text, &rows).await {
            tracing::debug!(chat = press.target.chat_id, "cannot update the memory list: {e}");
        }
        Some(toast)
    }

    fn chat_files(&self, chat_key: &str) -> Vec<PathBuf> {
        vec![self.files.path(chat_key)]
    }
}
