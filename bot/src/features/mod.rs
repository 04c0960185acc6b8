//! Host features: what the bot adds to its chats besides the agent itself (the scheduler, Google
//! Calendar, the A2A client and server, MCP). A feature is one module and one line in
//! [`FEATURES`]; the host iterates the list and never names a feature (the way axum merges
//! `Router`s). A feature reaches the chats only through the chat port ([`port::ChatPort`]).
//!
//! A feature is built once per process from the host's [`Services`] (the config, the process
//! policy, the redactor, the state and workspaces folders, the shutdown signal and, in the
//! Telegram host, the chat port) and gives, each part optional
//! ([`HostFeature`]):
//! - per-session extension factories, given the session's chat, time zone and workspace
//!   ([`SessionPlace`]); the console asks with no chat;
//! - HTTP routes, merged into the bot's one listener;
//! - a start step (after polling has begun) and a stop step at shutdown (bounded by the host);
//! - its `/commands`, each with its menu description and its place in the chat's line
//!   ([`Turn`]), run by [`HostFeature::command`]; and text it adds to `/help`;
//! - messages it takes before any session sees them, and files it keeps per chat (moved with a
//!   group that becomes a supergroup);
//! - presses of the buttons it sent ([`port::PressButton`]), routed by the data's prefix.
//!
//! A feature's config is its own top-level section, `[<name>]`, read with [`Services::section`];
//! a section no feature reads is an error naming it. (Google Calendar keeps its older `[google]`.)

pub mod a2a_client;
pub mod a2a_server;
pub mod allowance;
pub mod calendar;
#[cfg(any(test, feature = "example-feature"))]
pub mod example;
pub mod mcp;
pub mod memory;
pub mod network;
pub mod port;
pub mod recall;
pub mod scheduler;
pub mod usage;

use crate::config::Config;
use async_trait::async_trait;
use port::{ChatPort, Incoming, Target};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::ExtensionFactory;
use volcanic_abstractions::processes::SecretRedactor;
use volcanic_core::processes::ProcessSpawnPolicy;

/// Builds a feature from the host's services; `Ok(None)`: not in this host (e.g. a Telegram-only
/// feature in the console) or not configured. Errors name the config key to fix.
pub type Build = fn(&Services) -> anyhow::Result<Option<Arc<dyn HostFeature>>>;

/// Every feature, in the order their extensions, commands and help lines appear. Adding one:
/// its module above and one line here. The example feature is in unit tests and in a binary
/// built with the cargo feature `example-feature` (the test command builds it so, for the
/// end-to-end tests of the feature seam; a release build leaves it out).
pub const FEATURES: &[Build] = &[
    scheduler::build,
    calendar::build,
    a2a_client::build,
    a2a_server::build,
    mcp::build,
    recall::build,
    network::build,
    memory::build,
    allowance::build,
    #[cfg(any(test, feature = "example-feature"))]
    example::build,
];

/// What the host shares with its features.
pub struct Services {
    /// Resolved configuration; a feature's own section comes through [`Services::section`].
    pub config: Arc<Config>,
    /// The policy every child process starts through.
    pub processes: Arc<ProcessSpawnPolicy>,
    /// Redacts the host's secrets (a feature adds its own, e.g. an OAuth token, at run time).
    pub redactor: Arc<dyn SecretRedactor>,
    /// Where a feature keeps its files (never inside a workspace): `state_dir` for the bot, the
    /// Volcanic home (`~/.volcanic/agent`) for the console.
    pub state_dir: PathBuf,
    /// The folder whose sub-folders are the chats' workspaces (canonical when it exists).
    pub workspaces_root: PathBuf,
    /// Cancelled when the host begins to shut down.
    pub shutdown: CancellationToken,
    /// The host's chats, as features reach them; `None` in the console, whose one session is
    /// no chat a feature can address (features that deliver into chats are not built there).
    pub chats: Option<Arc<dyn ChatPort>>,
    /// The feature sections read so far (one not read by any feature is an error).
    read: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("state_dir", &self.state_dir)
            .field("workspaces_root", &self.workspaces_root)
            .field("chats", &self.chats.is_some())
            .finish_non_exhaustive()
    }
}

impl Services {
    /// Services without chats (add the host's port with the field).
    pub fn new(
        config: Arc<Config>,
        processes: Arc<ProcessSpawnPolicy>,
        state_dir: PathBuf,
        workspaces_root: PathBuf,
        shutdown: CancellationToken,
    ) -> Self {
        let redactor = volcanic_abstractions::processes::ProcessSpawnPolicy::redactor(&*processes);
        Services {
            config,
            processes,
            redactor,
            state_dir,
            workspaces_root,
            shutdown,
            chats: None,
            read: Mutex::default(),
        }
    }

    /// The feature's section `[<name>]` as `T` (a `serde` struct; use
    /// `#[serde(deny_unknown_fields)]`), `None` when the config has none. Errors name the key.
    pub fn section<T: serde::de::DeserializeOwned>(&self, name: &str) -> anyhow::Result<Option<T>> {
        self.read
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_owned());
        let Some(table) = self.config.features.get(name) else {
            return Ok(None);
        };
        toml::Value::Table(table.clone())
            .try_into()
            .map(Some)
            .map_err(|e| anyhow::anyhow!("config key `{name}`: {}", e.to_string().trim()))
    }
}

/// Where a session lives, for [`HostFeature::session_extensions`].
#[derive(Debug, Clone, Copy)]
pub struct SessionPlace<'a> {
    /// Its chat (and forum topic); `None` in the console.
    pub chat: Option<Target>,
    /// Its time zone.
    // Read by the example feature only, so far; part of the seam for every feature.
    #[cfg_attr(not(feature = "example-feature"), allow(dead_code))]
    pub time_zone: chrono_tz::Tz,
    /// Its workspace (the session's working directory).
    pub workspace: &'a Path,
    /// The A2A caller it serves (`None`: a chat's own session, or the console's).
    pub caller: Option<&'a port::CallerGrant>,
}

/// Where a command takes its place among a chat's messages (its "line": the chat's prompts and
/// commands, taken in arrival order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Acts at once, out of the line: `/stop` must not wait behind what it stops.
    AtOnce,
    /// Waits for its place and keeps it until it is applied and answered, so that a message sent
    /// after it is handled with what it set (`/tz Asia/Tokyo`, then a question).
    Holds,
    /// Waits for its place, then lets the next one go before it runs (it may wait for a button
    /// or a sign-in).
    Waits,
}

/// A command of a feature. The name follows Telegram's rule `[a-z0-9_]{1,32}` (Bot API
/// `BotCommand`) and clashes with no other command (the host refuses to start otherwise); the
/// description has at most 256 characters.
#[derive(Debug, Clone, Copy)]
pub struct FeatureCommand {
    /// Name, without `/`.
    pub name: &'static str,
    /// Menu description (`setMyCommands`).
    pub description: &'static str,
    /// Its place in the chat's line.
    pub turn: Turn,
}

/// One run of a feature's command.
#[derive(Debug, Clone, Copy)]
pub struct CommandCall<'a> {
    /// The message (chat, topic, sender, group or not).
    pub message: &'a Incoming,
    /// Where the answer goes.
    pub target: Target,
    /// What follows the command's name, trimmed.
    pub args: &'a str,
    /// The chat's IANA time zone (its own, else the default).
    pub time_zone: &'a str,
    /// The bot's username, without `@`.
    pub bot_username: &'a str,
}

/// A press of a feature's button ([`port::PressButton`]), by an allowed user in an allowed chat
/// (the host refuses any other press before a feature sees it).
#[derive(Debug, Clone, Copy)]
pub struct Press<'a> {
    /// The chat (and topic) of the message carrying the button.
    pub target: Target,
    /// That message's id.
    pub message_id: i64,
    /// Who pressed (`from.id`).
    pub from_id: i64,
    /// Whether the presser is one of the bot's owners.
    pub owner: bool,
    /// The button's data after the feature's prefix (untrusted: any client can send any data).
    pub data: &'a str,
}

/// A host feature (see the module docs). Every method has a default that gives nothing.
#[async_trait]
pub trait HostFeature: Send + Sync {
    /// Its name (logs).
    fn name(&self) -> &'static str;

    /// Extensions for a session at `place`, added after the workspace's own.
    fn session_extensions(&self, _place: &SessionPlace<'_>) -> Vec<ExtensionFactory> {
        Vec::new()
    }

    /// Routes for the bot's HTTP listener (which runs when some feature or webhook mode has
    /// routes and `[http] public_url` is set).
    fn routes(&self) -> Option<axum::Router> {
        None
    }

    /// Starts its background work; called once, after polling has begun.
    fn start(&self) {}

    /// Finishes at shutdown, after the chats' runs ended or were aborted and before the sessions
    /// are closed. The host bounds it ([`Features::stop`]).
    async fn stop(&self) {}

    /// Its commands.
    fn commands(&self) -> &[FeatureCommand] {
        &[]
    }

    /// Runs its command `name`; returns the answer, or `None` when it already answered.
    async fn command(&self, _name: &str, _call: CommandCall<'_>) -> Option<String> {
        None
    }

    /// Lines it adds to `/help` (`/name args - what it does`).
    fn help(&self) -> &[&'static str] {
        &[]
    }

    /// Whether it takes this (allowed, addressed) text before any session sees it.
    fn takes(&self, _text: &str) -> bool {
        false
    }

    /// Handles a text it [takes](HostFeature::takes).
    async fn take(&self, _message: &Incoming, _text: &str) {}

    /// Files it keeps for the chat `chat_key` outside the workspace (moved when a group becomes
    /// a supergroup).
    fn chat_files(&self, _chat_key: &str) -> Vec<PathBuf> {
        Vec::new()
    }

    /// The prefix of its buttons' data (e.g. `mem:`); presses of buttons whose data starts with
    /// it come to [`press`](HostFeature::press). It must not be a prefix of another feature's,
    /// nor of the host's own (`cmd:` menus, `retry:`, questions' numbers).
    fn press_prefix(&self) -> Option<&'static str> {
        None
    }

    /// Handles a press of one of its buttons; returns the toast shown to the presser, if any.
    async fn press(&self, _press: Press<'_>) -> Option<String> {
        None
    }

    /// The check before each model request of a session at `place` (allowances); `sender`
    /// says whom the session's current run answers. `None`: this feature checks nothing.
    fn spend_gate(
        &self,
        _place: &SessionPlace<'_>,
        _sender: allowance::gate::Sender,
    ) -> Option<Arc<dyn volcanic_abstractions::spend::SpendGate>> {
        None
    }
}

/// The page a browser lands on at the end of a sign-in (Google Calendar, an MCP server's
/// OAuth): `title` and `body` as plain text, HTML-escaped.
pub fn sign_in_page(title: &str, body: &str) -> axum::response::Html<String> {
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    axum::response::Html(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{t}</title></head>\
         <body><h1>{t}</h1><p>{b}</p></body></html>",
        t = esc(title),
        b = esc(body)
    ))
}

/// How long one feature's stop step may take.
pub const STOP_BOUND: Duration = Duration::from_secs(10);

/// The features a host runs, in [`FEATURES`] order.
#[derive(Clone, Default)]
pub struct Features {
    list: Vec<Arc<dyn HostFeature>>,
}

impl std::fmt::Debug for Features {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.list.iter().map(|x| x.name())).finish()
    }
}

impl Features {
    /// Builds every feature of [`FEATURES`] that `services` allow; fails on the first error, or
    /// when the config has a section that is neither a setting nor read by a feature.
    pub fn build(services: &Services) -> anyhow::Result<Features> {
        Self::build_from(FEATURES, services)
    }

    /// Features made elsewhere (tests).
    #[cfg(test)]
    pub fn of(list: Vec<Arc<dyn HostFeature>>) -> Features {
        Features { list }
    }

    /// [`Features::build`] from another list.
    pub fn build_from(builders: &[Build], services: &Services) -> anyhow::Result<Features> {
        let mut list = Vec::new();
        for build in builders {
            if let Some(f) = build(services)? {
                list.push(f);
            }
        }
        let read = services.read.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(unread) = services.config.features.keys().find(|k| !read.contains(*k)) {
            let mut known: Vec<&String> = read.iter().collect();
            known.sort();
            anyhow::bail!(
                "config key `{unread}`: not a setting, and no feature reads it{}",
                if known.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (features: {})",
                        known.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
                    )
                }
            );
        }
        Ok(Features { list })
    }

    /// The extensions every feature gives a session at `place`, in feature order.
    pub fn session_extensions(&self, place: &SessionPlace<'_>) -> Vec<ExtensionFactory> {
        self.list.iter().flat_map(|f| f.session_extensions(place)).collect()
    }

    /// Every feature's routes merged; `None` when no feature has any.
    pub fn routes(&self) -> Option<axum::Router> {
        self.list.iter().filter_map(|f| f.routes()).reduce(axum::Router::merge)
    }

    /// Starts every feature.
    pub fn start(&self) {
        for f in &self.list {
            f.start();
        }
    }

    /// Stops every feature, together, each within [`STOP_BOUND`] (one that takes longer is
    /// logged and left).
    pub async fn stop(&self) {
        let stops = self.list.iter().map(|f| async move {
            if tokio::time::timeout(STOP_BOUND, f.stop()).await.is_err() {
                tracing::warn!(feature = f.name(), "did not stop within {} s", STOP_BOUND.as_secs());
            }
        });
        futures::future::join_all(stops).await;
    }

    /// The feature whose command `name` is, with the command.
    pub fn command(&self, name: &str) -> Option<(&Arc<dyn HostFeature>, FeatureCommand)> {
        self.list
            .iter()
            .find_map(|f| f.commands().iter().find(|c| c.name == name).map(|c| (f, *c)))
    }

    /// Every feature's commands, in feature order.
    pub fn commands(&self) -> Vec<FeatureCommand> {
        self.list.iter().flat_map(|f| f.commands().iter().copied()).collect()
    }

    /// Every feature's `/help` lines, in feature order.
    pub fn help(&self) -> Vec<&'static str> {
        self.list.iter().flat_map(|f| f.help().iter().copied()).collect()
    }

    /// The feature that takes `text`, if one does.
    pub fn taker(&self, text: &str) -> Option<Arc<dyn HostFeature>> {
        self.list.iter().find(|f| f.takes(text)).cloned()
    }

    /// The feature whose button `data` is, with `data` after its prefix.
    pub fn presser<'d>(&self, data: &'d str) -> Option<(Arc<dyn HostFeature>, &'d str)> {
        self.list.iter().find_map(|f| {
            let rest = data.strip_prefix(f.press_prefix()?)?;
            Some((f.clone(), rest))
        })
    }

    /// The first spend gate a feature gives a session at `place` (see
    /// [`HostFeature::spend_gate`]).
    pub fn spend_gate(
        &self,
        place: &SessionPlace<'_>,
        sender: allowance::gate::Sender,
    ) -> Option<Arc<dyn volcanic_abstractions::spend::SpendGate>> {
        self.list.iter().find_map(|f| f.spend_gate(place, sender.clone()))
    }

    /// The files every feature keeps for the chat `chat_key`.
    pub fn chat_files(&self, chat_key: &str) -> Vec<PathBuf> {
        self.list.iter().flat_map(|f| f.chat_files(chat_key)).collect()
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
