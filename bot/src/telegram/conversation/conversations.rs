//! Chats and their sessions: a workspace per chat (`workspaces/<chat key>/`), one `AgentSession`
//! per chat (per forum topic in forums) resumed from `<state_dir>/sessions/<chat key>/<topic or
//! main>/`, loaded lazily and evicted from memory when idle and no one uses it ([`SessionUse`]).

use crate::config::Config;
use crate::features::port::{OwnSession, Target, chat_key};
use crate::features::{Features, SessionPlace};
use crate::telegram::conversation::settings::SettingsStore;
use crate::telegram::inbound::journal::Journal;
use crate::telegram::outbound::api::Tg;
use crate::telegram::outbound::channel::TelegramChannel;
use crate::telegram::outbound::ledger::Ledger;
use crate::telegram::outbound::output::Output;
use crate::telegram::outbound::ui::{Pending, TelegramUi};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use volcanic_core::agent::{AgentSession, AgentSessionFactory, AgentSessionOptions, SessionSelect};

/// One conversation: a chat, or a topic of a forum.
pub struct Conversation {
    /// Where its output goes.
    pub target: Target,
    session: tokio::sync::Mutex<Option<AgentSession>>,
    /// The [`SessionUse`]s alive: counted under `session`'s lock, which eviction checks it under.
    in_use: AtomicUsize,
    /// Delivery of its output.
    pub output: Output,
    /// When its session was last used (the newest [`SessionUse`] dropped).
    last_active: Mutex<Instant>,
    /// Its prompts in flight, message by message (journal progress).
    pub ledger: Arc<Ledger>,
    /// Albums and long pastes being gathered, and the order prompts reach the session in.
    pub intake: crate::telegram::inbound::merge::Intake,
}

impl Conversation {
    /// How long ago its session was last used.
    fn idle_for(&self) -> Duration {
        self.last_active.lock().unwrap_or_else(|e| e.into_inner()).elapsed()
    }

    /// `session` taken for a use; call it holding the `session` lock.
    fn take(self: &Arc<Self>, session: AgentSession) -> SessionUse {
        self.in_use.fetch_add(1, Ordering::SeqCst);
        SessionUse {
            session,
            conversation: self.clone(),
        }
    }
}

/// How many sessions a prompt or a delivery meets closed ([`SessionError::Closed`](volcanic_core::agent::SessionError::Closed))
/// before it gives up: only the shutdown closes a session in use (eviction waits for its uses),
/// so a second closed one in a row means something else keeps closing them.
pub const CLOSED_TRIES: usize = 3;

/// A chat's session taken by [`Chats::session`] for one use (a prompt's hand-over and run, a
/// feature's delivery, a command): while it lives the session is not evicted, so what it hands
/// in reaches this instance, which stays the conversation's. Otherwise an eviction between
/// taking the session and prompting it left the prompt in an instance no longer the
/// conversation's while the next message loaded a second one from the same file: each one's
/// append after the other's wrote failed with "changed on disk", and its prompt was lost
/// (issue 25, soak). The session's idle time starts when the last use is dropped. Derefs to the
/// session; a clone of that is a handle without this guard.
pub struct SessionUse {
    session: AgentSession,
    conversation: Arc<Conversation>,
}

impl std::ops::Deref for SessionUse {
    type Target = AgentSession;
    fn deref(&self) -> &AgentSession {
        &self.session
    }
}

impl Drop for SessionUse {
    fn drop(&mut self) {
        *self.conversation.last_active.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        self.conversation.in_use.fetch_sub(1, Ordering::SeqCst);
    }
}

impl std::fmt::Debug for SessionUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionUse")
            .field("target", &self.conversation.target)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// Every chat the bot has in memory.
pub struct Chats {
    deps: ChatsDeps,
    conversations: Mutex<HashMap<Target, Arc<Conversation>>>,
    /// Set at shutdown: runs aborted from then on keep their journal marks (recovered after the
    /// restart), while a user's `/stop` finishes them.
    shutting_down: Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for Chats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chats").finish_non_exhaustive()
    }
}

/// What [`Chats`] is made of.
pub struct ChatsDeps {
    /// Creates the sessions.
    pub factory: AgentSessionFactory,
    /// Resolved configuration.
    pub config: Arc<Config>,
    /// Per-chat settings.
    pub settings: Arc<SettingsStore>,
    /// Outgoing API.
    pub tg: Arc<Tg>,
    /// Inbound journal.
    pub journal: Arc<Journal>,
    /// Questions waiting for an answer.
    pub pending: Arc<Pending>,
    /// Progress messages on disk.
    pub marks: Arc<crate::telegram::outbound::progress_marks::ProgressMarks>,
    /// The host features, whose per-session extensions every chat session gets.
    pub features: Arc<Features>,
    /// `[voice]`: a chat's answers may be spoken; `None` without the section.
    pub voice: Option<Arc<crate::telegram::voice::Voice>>,
}

impl Chats {
    /// A registry creating sessions with `deps.factory`.
    pub fn new(deps: ChatsDeps) -> Self {
        Chats {
            deps,
            conversations: Mutex::new(HashMap::new()),
            shutting_down: Arc::default(),
        }
    }

    /// Marks the shutdown (see the field).
    pub fn shutting_down(&self) {
        self.shutting_down.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The settings store.
    pub fn settings(&self) -> &SettingsStore {
        &self.deps.settings
    }

    /// The conversation of `target` (created on first contact; its session loads on first use).
    pub fn conversation(&self, target: Target) -> Arc<Conversation> {
        let mut conversations = self.conversations.lock().unwrap_or_else(|e| e.into_inner());
        conversations
            .entry(target)
            .or_insert_with(|| {
                let ledger = Arc::new(Ledger::new(self.deps.journal.clone(), self.shutting_down.clone()));
                Arc::new(Conversation {
                    target,
                    session: tokio::sync::Mutex::new(None),
                    in_use: AtomicUsize::new(0),
                    output: Output::spawn(
                        self.deps.tg.clone(),
                        self.deps.journal.clone(),
                        self.deps.marks.clone(),
                        ledger.clone(),
                        target,
                        self.deps.voice.as_ref().map(|v| {
                            Arc::new(crate::telegram::voice::Speech::new(
                                v.clone(),
                                self.deps.settings.clone(),
                                chat_key(target.chat_id),
                            ))
                        }),
                    ),
                    last_active: Mutex::new(Instant::now()),
                    ledger,
                    intake: crate::telegram::inbound::merge::Intake::default(),
                })
            })
            .clone()
    }

    /// The workspace of a chat, created on first contact.
    pub fn workspace(&self, chat_id: i64) -> std::io::Result<PathBuf> {
        let dir = self.deps.config.workspaces_dir.join(chat_key(chat_id));
        std::fs::create_dir_all(&dir)?;
        std::fs::canonicalize(&dir)
    }

    /// The session of `conversation`, loading (resuming) it if needed, taken for a use: not
    /// evicted until the returned [`SessionUse`] is dropped. A closed one (the shutdown disposed
    /// it) is never handed out: a fresh one is loaded from its file.
    pub async fn session(&self, conversation: &Arc<Conversation>) -> anyhow::Result<SessionUse> {
        let mut guard = conversation.session.lock().await;
        if let Some(s) = guard.as_ref().filter(|s| !s.is_closed()) {
            return Ok(conversation.take(s.clone()));
        }
        let target = conversation.target;
        let key = chat_key(target.chat_id);
        let settings = self.deps.settings.get(&key);
        let tz = settings
            .time_zone
            .as_deref()
            .and_then(|z| z.parse::<chrono_tz::Tz>().ok())
            .unwrap_or(self.deps.config.default_time_zone);
        let topic = target.thread.map_or_else(|| "main".to_owned(), |t| t.to_string());
        let cwd = self.workspace(target.chat_id)?;
        let mut extra_extensions = crate::agent_setup::workspace_extensions(&cwd);
        let place = SessionPlace {
            chat: Some(target),
            time_zone: tz,
            workspace: &cwd,
            caller: None,
        };
        extra_extensions.extend(self.deps.features.session_extensions(&place));
        // Allowances count the sender of the message being answered (none for a delivery).
        let ledger = conversation.ledger.clone();
        let spend_gate = self
            .deps
            .features
            .spend_gate(&place, Arc::new(move || ledger.asker().map(|a| a.id)));
        let session = self
            .deps
            .factory
            .create(AgentSessionOptions {
                extra_extensions,
                cwd,
                scope: Some(format!("{key}/{topic}")),
                session: SessionSelect::ContinueRecent,
                time_zone: Some(tz),
                model: settings.model.clone(),
                fallback_models: settings.fallback_models.clone(),
                thinking: settings.thinking,
                no_skill_hooks: false,
                ui: Some(Arc::new(TelegramUi {
                    tg: self.deps.tg.clone(),
                    target,
                    pending: self.deps.pending.clone(),
                    ledger: conversation.ledger.clone(),
                })),
                channel: Some(Arc::new(TelegramChannel {
                    tg: self.deps.tg.clone(),
                    target,
                })),
                spend_gate,
            })
            .await?;
        let output = conversation.output.clone();
        let ledger = conversation.ledger.clone();
        session.subscribe(move |e| output.on_event(e, ledger.on_event(e)));
        *guard = Some(session.clone());
        Ok(conversation.take(session))
    }

    /// A session made for a feature outside any chat's line (e.g. an A2A caller's), like a
    /// chat's: the host's factory, the workspace's extensions, every feature's extensions for
    /// its place (with `acts_for`, that chat's: calendar, scheduler), then `spec`'s own. Time zone
    /// and model are the chat's it acts for, else the defaults; `spec.model` wins for a new
    /// session. Resumes the scope's most recent session.
    pub async fn own_session(&self, spec: OwnSession) -> anyhow::Result<AgentSession> {
        std::fs::create_dir_all(&spec.cwd)?;
        let cwd = std::fs::canonicalize(&spec.cwd)?;
        let settings = spec
            .acts_for
            .map(|t| self.deps.settings.get(&chat_key(t.chat_id)))
            .unwrap_or_default();
        let tz = settings
            .time_zone
            .as_deref()
            .and_then(|z| z.parse::<chrono_tz::Tz>().ok())
            .unwrap_or(self.deps.config.default_time_zone);
        // A caller without `bash` wrote what its workspace holds: none of it is loaded as code
        // (its extensions, its skills' hooks, and its MCP servers in the MCP feature).
        let workspace_code = spec.caller.as_ref().is_none_or(|c| c.bash);
        let mut extra_extensions = if workspace_code {
            crate::agent_setup::workspace_extensions(&cwd)
        } else {
            Vec::new()
        };
        let place = SessionPlace {
            chat: spec.acts_for,
            time_zone: tz,
            workspace: &cwd,
            caller: spec.caller.as_ref(),
        };
        extra_extensions.extend(self.deps.features.session_extensions(&place));
        let spend_gate = self.deps.features.spend_gate(&place, Arc::new(|| None));
        extra_extensions.extend(spec.extra_extensions);
        Ok(self
            .deps
            .factory
            .create(AgentSessionOptions {
                extra_extensions,
                cwd,
                scope: Some(spec.scope),
                session: SessionSelect::ContinueRecent,
                time_zone: Some(tz),
                model: spec.model.or(settings.model),
                fallback_models: settings.fallback_models,
                thinking: settings.thinking,
                ui: spec.ui,
                channel: None,
                no_skill_hooks: !workspace_code,
                spend_gate,
            })
            .await?)
    }

    /// The commands every chat session's extensions register (the host's and the features'; a
    /// workspace's own are that chat's), read from the `CommandRegistry` of an in-memory session
    /// made like a chat's: every command a chat can run is announced, with no list to keep.
    pub async fn extension_commands(&self) -> anyhow::Result<Vec<volcanic_abstractions::extensions::CommandInfo>> {
        let cwd = self.deps.config.state_dir.clone();
        let extra_extensions = self.deps.features.session_extensions(&SessionPlace {
            chat: Some(Target {
                chat_id: 0,
                thread: None,
            }),
            time_zone: self.deps.config.default_time_zone,
            workspace: &cwd,
            caller: None,
        });
        let session = self
            .deps
            .factory
            .create(AgentSessionOptions {
                cwd,
                session: SessionSelect::InMemory,
                extra_extensions,
                ..Default::default()
            })
            .await?;
        let commands = session.commands();
        session.dispose().await;
        Ok(commands)
    }

    /// The loaded sessions of every conversation of a chat (each forum topic has its own).
    pub async fn loaded_in_chat(&self, chat_id: i64) -> Vec<AgentSession> {
        let mut out = Vec::new();
        for conversation in self
            .all_conversations()
            .into_iter()
            .filter(|s| s.target.chat_id == chat_id)
        {
            if let Some(s) = self.loaded(&conversation).await {
                out.push(s);
            }
        }
        out
    }

    /// The loaded session of `conversation`, if any (no loading), without a [`SessionUse`]: an
    /// eviction may close it right after. Only for what acts at once and writes nothing to the
    /// session file: `/stop`'s abort, `/tz`'s zone and `/model fallback`'s list (both saved in
    /// the chat's settings first, which a fresh session reads when it loads), the shutdown's
    /// close (a second close is a no-op). A closed session refuses prompts and writes, so a
    /// handle used otherwise fails loudly ([`SessionError::Closed`](volcanic_core::agent::SessionError::Closed));
    /// take a use ([`Chats::session`]) for those.
    pub async fn loaded(&self, conversation: &Arc<Conversation>) -> Option<AgentSession> {
        conversation.session.lock().await.clone()
    }

    /// Drops from memory the sessions unused for longer than the configured minutes, neither
    /// running nor taken by a [`SessionUse`]; returns how many.
    pub async fn evict_idle(&self) -> usize {
        let mut evicted = 0;
        let idle = self.deps.config.session_idle;
        let conversations = self.all_conversations();
        for conversation in conversations {
            if conversation.idle_for() < idle {
                continue;
            }
            let mut guard = conversation.session.lock().await;
            // Under the lock `session` takes it under: a use taken before is seen here.
            if conversation.in_use.load(Ordering::SeqCst) > 0 || conversation.idle_for() < idle {
                continue;
            }
            if let Some(s) = guard.as_ref()
                && s.is_idle()
            {
                s.dispose().await;
                *guard = None;
                evicted += 1;
                tracing::info!(
                    chat = conversation.target.chat_id,
                    topic = ?conversation.target.thread,
                    "session evicted from memory after {} s idle",
                    idle.as_secs()
                );
            }
        }
        evicted
    }

    /// The output of every chat in memory (for shutdown).
    pub fn outputs(&self) -> Vec<Output> {
        let conversations = self.conversations.lock().unwrap_or_else(|e| e.into_inner());
        conversations.values().map(|s| s.output.clone()).collect()
    }

    fn all_conversations(&self) -> Vec<Arc<Conversation>> {
        self.conversations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// Every loaded session (for shutdown).
    pub async fn all_loaded(&self) -> Vec<AgentSession> {
        let conversations = self.all_conversations();
        let mut out = Vec::new();
        for s in conversations {
            if let Some(x) = s.session.lock().await.clone() {
                out.push(x);
            }
        }
        out
    }
}
