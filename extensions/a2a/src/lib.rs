//! The A2A client of Volcanic chats: every chat's agent can hand work to other agents.
//!
//! - [`A2aClient`]: process-wide; a thin JSON-RPC + SSE client over reqwest speaking both wire
//!   dialects, A2A 1.0 (types from `a2a-lf`) and 0.3 (translated in [`dialect`], the crate
//!   `volcanic-a2a-dialect` the server shares), chosen per agent
//!   from its card ([`parse_card`]; 1.0 preferred). Cards are cached with their ETag for an hour.
//!   Credentials come from the host config only, bound to an exact origin ([`A2aSettings`]), and
//!   redirects are followed by hand so that no hop gets another origin's credential.
//! - The per-session [`A2aExtension`] registers the `a2a` tool ([`A2aArgs`]): `agents`, `send`,
//!   `status`, `cancel` over the workspace's `.volcanic/a2a/agents.json`. `send` waits a bounded
//!   time (default 60 s) for a settled task; a task still running then is answered with its id.
//! - The process-wide [`A2AWatchRegistry`] follows the tasks `send` left running (push,
//!   subscribe or polling; reconciled with `GetTask` at start-up and on a slow timer), keeps
//!   them in the chat's `.volcanic/a2a/pending.json` and hands each result to the chat once
//!   through the host's [`A2AResultDelivery`].

mod agents;
mod calls;
mod card;
mod client;
mod config;
mod error;
mod extension;
mod http;
mod pending;
mod push;
mod render;
mod tool;
mod watch;

pub use agents::{AGENTS_FILE, AgentEntry, agents_path, read_agents};
pub use card::{AgentCardInfo, parse_card};
pub use client::{A2aClient, HISTORY_TAIL, is_settled};
pub use config::{
    A2aSettings, CALL_TIMEOUT, CARD_MAX_AGE, CONNECT_TIMEOUT, Credential, DEFAULT_MAX_HOPS, DEFAULT_SEND_WAIT,
    origin_of,
};
pub use error::{A2aError, Result, rpc_code_name};
pub use extension::{A2aExtension, INBOUND_EVENT};
pub use http::{MAX_BODY, MAX_CARD, MAX_STREAM};
pub use pending::{ChatRef, PENDING_FILE, PendingTask, pending_path, read_pending, write_pending};
pub use push::{PUSH_ROUTE, PushSettings};
pub use render::{INBOX, parts_text, state_name};
pub use tool::{A2aArgs, A2aTool, Action, HOP_METADATA_KEY, MAX_FILE};
pub use volcanic_a2a_dialect::{self as dialect, CARD_PATH, Dialect, LEGACY_CARD_PATH};
pub use watch::{A2AResult, A2AResultDelivery, A2AWatchRegistry, PushRefused, WatchSettings};
