//! What the server is told: the card's contents, the callers and their tokens, the limits.

use std::path::PathBuf;

/// One skill shown on the card (A2A 1.0 `AgentSkill`).
#[derive(Debug, Clone, Default)]
pub struct Skill {
    /// Stable id, e.g. `calendar`.
    pub id: String,
    /// Short name shown to users.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Keywords.
    pub tags: Vec<String>,
    /// Example prompts.
    pub examples: Vec<String>,
}

/// The agent card's contents (`/.well-known/agent-card.json`).
#[derive(Debug, Clone)]
pub struct CardInfo {
    /// The agent's name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// The agent's version (not the protocol's).
    pub version: String,
    /// The skills it lists.
    pub skills: Vec<Skill>,
    /// The base URL callers reach the server at (`https://host`); the JSON-RPC endpoint is
    /// `<base>/a2a`. `None`: taken from each request's `Host` header (plain `http`).
    pub public_url: Option<String>,
    /// Extra text for the authenticated extended card (`GetExtendedAgentCard`); `None`: the
    /// extended card is not configured (error -32007).
    pub extended_description: Option<String>,
    /// Serve `/.well-known/agent-card.json` as a strict A2A 1.0 card, without the 0.3 fields
    /// 0.3 clients read from that path (the A2A TCK's schema allows no other fields). Default
    /// `false`: the 0.3 fields are merged in, as the `a2a-sdk` server does.
    pub strict: bool,
}

impl Default for CardInfo {
    fn default() -> Self {
        CardInfo {
            name: "Volcanic".into(),
            description: "A personal assistant reachable over A2A".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            skills: Vec::new(),
            public_url: None,
            extended_description: None,
            strict: false,
        }
    }
}

/// One caller: a name (its tenant, e.g. `workspaces/a2a-<name>/`) and its bearer token.
#[derive(Clone)]
pub struct Caller {
    /// Tenant name: `[A-Za-z0-9_-]`, 1–64 characters (it names folders).
    pub name: String,
    /// The bearer token it presents (`Authorization: Bearer <token>`); never logged.
    pub token: String,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("name", &self.name)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// Bounds on what one request or one caller may ask for; exceeding one is a JSON-RPC error
/// that names the limit.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request body, bytes (HTTP 413 above it).
    pub max_body_bytes: usize,
    /// Most parts in one message.
    pub max_parts: usize,
    /// Most history messages kept per task (older ones are dropped) and returned.
    pub max_history: usize,
    /// Most tasks one caller may have running at once.
    pub max_concurrent_tasks: usize,
    /// Most tasks kept per caller (the oldest settled ones are forgotten first).
    pub max_tasks_kept: usize,
    /// Most push configs per task (each notification goes to every one).
    pub max_push_configs: usize,
    /// Most messages queued behind a running turn of one task (follow-ups).
    pub max_follow_ups: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 1024 * 1024,
            max_parts: 32,
            max_history: 200,
            max_concurrent_tasks: 16,
            max_tasks_kept: 10_000,
            max_push_configs: 10,
            max_follow_ups: 8,
        }
    }
}

/// Everything the server is built from.
#[derive(Debug, Clone, Default)]
pub struct ServerConfig {
    /// The card.
    pub card: CardInfo,
    /// Who may call; an empty list refuses everyone (401).
    pub callers: Vec<Caller>,
    /// The bounds.
    pub limits: Limits,
    /// Where tasks persist (`<state_dir>/a2a/<caller>/tasks/`); `None` keeps them in memory.
    pub state_dir: Option<PathBuf>,
    /// Allow push targets on loopback (`127.0.0.0/8`, `::1`, `localhost`): for tests only.
    /// Private, link-local and metadata addresses stay refused.
    pub allow_loopback_push: bool,
}

/// Whether `name` may name a caller (it becomes a folder name).
pub fn valid_caller_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('-')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}
