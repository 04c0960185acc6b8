//! The per-session extension: the `memory` tool, the memory block in the system prompt and,
//! with `auto`, curation when the session's messages are left behind.
//!
//! The block is read once per session (at its first run, again after `/new` or a switch) and then
//! kept, so a session's system prompt stays the same from request to request (the provider's
//! prompt cache holds) and what the model adds shows from the next session on.

use crate::store::{Memories, View};
use crate::tool::{Consent, MemoryTool};
use async_trait::async_trait;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::events::{
    BeforeAgentStartEvent, SessionBeforeCompactEvent, SessionBeforeSwitchEvent, SessionStartEvent,
};
use volcanic_abstractions::extensions::{BoxError, Extension, ExtensionApi, ExtensionApiExt, ExtensionContext};
use volcanic_abstractions::messages::Message;
use volcanic_abstractions::sessions::EntryKind;
use volcanic_abstractions::tools::typed;
use volcanic_abstractions::ui::NotifyLevel;

/// The extension's name.
pub const NAME: &str = "memory";

/// The memory of one session (see the module docs).
#[derive(Debug, Clone)]
pub struct MemoryExtension {
    inner: Arc<Inner>,
}

/// Whose memory a session has and what it may do with it.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Its memory key: a chat's key, or an A2A caller's ([`caller_key`](crate::caller_key)).
    pub key: String,
    /// Whether the global facts are shown (a chat's sessions: yes; an A2A caller's: no, they
    /// are the owners' chats' facts).
    pub global: bool,
    /// Who decides on global facts (`None`: the tool cannot propose them).
    pub consent: Option<Arc<dyn Consent>>,
    /// Automatic curation on compaction and `/new` (`[memory] auto`).
    pub auto: bool,
}

#[derive(Debug)]
struct Inner {
    memories: Arc<Memories>,
    setup: Setup,
    /// The block shown this session; `None` until its first run (or after `/new`).
    block: Mutex<Option<String>>,
}

impl MemoryExtension {
    /// The memory of one session: `setup`'s key in `memories`.
    pub fn new(memories: Arc<Memories>, setup: Setup) -> Self {
        MemoryExtension {
            inner: Arc::new(Inner {
                memories,
                setup,
                block: Mutex::new(None),
            }),
        }
    }
}

impl Inner {
    fn block(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.block.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session's view of its memory (without the global facts where they are not shown).
    fn view(&self) -> Option<View> {
        match self.memories.view(&self.setup.key) {
            Ok(v) if self.setup.global => Some(v),
            Ok(v) => Some(View {
                global: Vec::new(),
                ..v
            }),
            Err(e) => {
                tracing::warn!(key = %self.setup.key, "memory not read: {e}");
                None
            }
        }
    }

    /// The block for this session, read the first time; a file set aside on the way is told.
    async fn prompt_block(&self, ctx: &dyn ExtensionContext) -> Option<String> {
        if let Some(b) = self.block().clone() {
            return Some(b);
        }
        let view = self.view()?;
        if let Some(ui) = ctx.ui() {
            for path in &view.set_aside {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let text =
                    format!("The memory file could not be read; it was set aside as {name} and memory starts empty.");
                ui.notify(&text, NotifyLevel::Warning).await;
            }
        }
        let block = crate::prompt::block(&view, self.memories.max_chars());
        *self.block() = Some(block.clone());
        Some(block)
    }

    /// Curates `messages` and tells the chat what was kept.
    async fn curate(&self, messages: &[Message], ctx: &dyn ExtensionContext, cancel: CancellationToken) {
        let (Some(model), Some(view)) = (ctx.model(), self.view()) else {
            return;
        };
        let catalog = ctx.models();
        let session = ctx.session_id();
        let call = crate::curate::Call {
            catalog: &*catalog,
            model: &model,
            session: &session,
        };
        let line = crate::curate::run(&self.memories, &self.setup.key, view, call, messages, cancel).await;
        if let (Some(line), Some(ui)) = (line, ctx.ui()) {
            ui.notify(&line, NotifyLevel::Info).await;
        }
    }
}

/// The messages on the session's branch.
fn branch_messages(ctx: &dyn ExtensionContext) -> Vec<Message> {
    let Ok(view) = ctx.session() else { return Vec::new() };
    view.branch()
        .into_iter()
        .filter_map(|e| {
            if let EntryKind::Message(m) = e.kind {
                Some(m)
            } else {
                None
            }
        })
        .collect()
}

#[async_trait]
impl Extension for MemoryExtension {
    fn name(&self) -> &str {
        NAME
    }

    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        let inner = &self.inner;
        api.register_tool(typed(MemoryTool {
            memories: inner.memories.clone(),
            key: inner.setup.key.clone(),
            consent: inner.setup.consent.clone(),
        }));
        let me = inner.clone();
        api.on::<SessionStartEvent, _>(move |_e, _ctx, _cancel| {
            *me.block() = None;
            Box::pin(async { Ok(()) })
        });
        let me = inner.clone();
        api.on::<BeforeAgentStartEvent, _>(move |e, ctx, _cancel| {
            let me = me.clone();
            Box::pin(async move {
                if let Some(block) = me.prompt_block(&*ctx).await {
                    e.system_prompt_options
                        .sections
                        .push((crate::prompt::TITLE.to_owned(), block));
                }
                Ok(())
            })
        });
        if !inner.setup.auto {
            return Ok(());
        }
        let me = inner.clone();
        api.on::<SessionBeforeCompactEvent, _>(move |e, ctx, cancel| {
            let me = me.clone();
            Box::pin(async move {
                me.curate(&e.preparation.messages_to_summarize, &*ctx, cancel).await;
                Ok(())
            })
        });
        let me = inner.clone();
        api.on::<SessionBeforeSwitchEvent, _>(move |e, ctx, cancel| {
            let me = me.clone();
            // `/new` only (a switch leaves its session on disk to come back to).
            let new = e.target.is_none();
            Box::pin(async move {
                if new {
                    me.curate(&branch_messages(&*ctx), &*ctx, cancel).await;
                }
                Ok(())
            })
        });
        Ok(())
    }
}
