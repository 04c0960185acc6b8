//! The MCP feature (`volcanic-mcp`): a chat's agent uses MCP servers. On when the config has a
//! `[mcp]` section (even empty: then only workspaces' `.volcanic/mcp.json` files count):
//!
//! ```toml
//! [mcp]
//! start_wait_secs = 10          # how long a chat's first run waits for its servers (default 10)
//! max_tools = 100               # MCP tools per session; more are left out and reported
//! max_schema_bytes = 65536      # bytes of their schemas per session; likewise
//!
//! [mcp.servers.github]
//! command = "github-mcp-server"
//! args = ["stdio"]
//! env = { GITHUB_PERSONAL_ACCESS_TOKEN = "$GITHUB_TOKEN" }   # `$NAME`: the bot's environment
//! chats = ["123456789"]         # only these chats (default: every chat)
//! exclude_tools = ["delete_repository"]
//! call_timeout_secs = 60
//!
//! [mcp.servers.docs]
//! url = "https://mcp.example.com/mcp"
//! shared = true                 # one connection for all chats (default: one per chat)
//! ```
//!
//! Per session the extension `mcp` (servers started on the chat's first run, their tools as
//! `<server>__<tool>`, re-listed after `list_changed`, a crashed server restarted with backoff,
//! questions from servers asked through the chat's buttons); the host command `/mcp` lists the chat's servers and their state. Every
//! `$NAME` value resolved is added to the policy's redactor, which also drops any inherited
//! variable holding it from every child process: it reaches its own server only.

use super::{CommandCall, FeatureCommand, HostFeature, Services, SessionPlace, Turn};
use crate::telegram::{Target, chat_key};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use volcanic_abstractions::extensions::ExtensionFactory;
use volcanic_mcp::config::{RawEntry, WORKSPACE_FILE};
use volcanic_mcp::slot::Limits;
use volcanic_mcp::{DEFAULT_START_WAIT, McpHost};

/// `[mcp]`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Section {
    /// Seconds a chat's first run waits for its servers.
    #[serde(default)]
    start_wait_secs: Option<u64>,
    /// MCP tools per session (all servers), over it left out and reported.
    #[serde(default)]
    max_tools: Option<usize>,
    /// Bytes of the MCP tools' schemas and descriptions per session, over it left out and reported.
    #[serde(default)]
    max_schema_bytes: Option<usize>,
    /// `[mcp.servers.NAME]`, each checked on its own (a bad one never stops the others).
    #[serde(default)]
    servers: BTreeMap<String, toml::Value>,
}

/// The feature: the process-wide client.
#[derive(Debug)]
pub struct Mcp {
    host: Arc<McpHost>,
}

/// Builds it when the config has `[mcp]`.
pub fn build(services: &Services) -> anyhow::Result<Option<Arc<dyn HostFeature>>> {
    let Some(section) = services.section::<Section>("mcp")? else {
        return Ok(None);
    };
    let start_wait = match section.start_wait_secs {
        Some(0) => anyhow::bail!("config key `mcp.start_wait_secs`: must be at least 1"),
        Some(s) => Duration::from_secs(s),
        None => DEFAULT_START_WAIT,
    };
    let defaults = Limits::default();
    let limits = Limits {
        max_tools: section.max_tools.unwrap_or(defaults.max_tools),
        max_schema_bytes: section.max_schema_bytes.unwrap_or(defaults.max_schema_bytes),
    };
    if limits.max_tools == 0 || limits.max_schema_bytes == 0 {
        anyhow::bail!("config keys `mcp.max_tools` and `mcp.max_schema_bytes`: must be at least 1");
    }
    let entries = section
        .servers
        .into_iter()
        .map(|(name, value)| {
            let entry = value
                .try_into::<RawEntry>()
                .map_err(|e| format!("config key `mcp.servers.{name}`: {}", e.to_string().trim()));
            (name, entry)
        })
        .collect();
    let (host, secrets) = McpHost::new(entries, &|name| std::env::var(name).ok(), start_wait);
    // A shared server's process starts in the bot's own folder, never in a chat's workspace.
    let processes: Arc<dyn volcanic_abstractions::processes::ProcessSpawnPolicy> = services.processes.clone();
    let host = host
        .with_limits(limits)
        .with_processes(processes, services.state_dir.join("mcp-shared"));
    for secret in secrets {
        services.redactor.add_secret(&secret);
    }
    Ok(Some(Arc::new(Mcp { host: Arc::new(host) })))
}

/// Where a session's servers are kept: its chat and topic (`console` without a chat).
fn scope(target: Option<Target>) -> String {
    match target {
        None => "console".into(),
        Some(Target { chat_id, thread: None }) => chat_key(chat_id),
        Some(Target {
            chat_id,
            thread: Some(t),
        }) => format!("{}/{t}", chat_key(chat_id)),
    }
}

const COMMANDS: &[FeatureCommand] = &[FeatureCommand {
    name: "mcp",
    description: "MCP servers of this chat and their state; /mcp restart NAME",
    turn: Turn::AtOnce,
}];

#[async_trait]
impl HostFeature for Mcp {
    fn name(&self) -> &'static str {
        "mcp"
    }

    fn session_extensions(&self, place: &SessionPlace<'_>) -> Vec<ExtensionFactory> {
        let chat = place.chat.map(|t| chat_key(t.chat_id));
        vec![
            self.host
                .factory(chat, scope(place.chat), place.workspace.to_path_buf()),
        ]
    }

    async fn stop(&self) {
        self.host.stop_all();
    }

    fn commands(&self) -> &[FeatureCommand] {
        COMMANDS
    }

    async fn command(&self, _name: &str, call: CommandCall<'_>) -> Option<String> {
        let mut words = call.args.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (None, _, _) => {}
            (Some("restart"), Some(name), None) => {
                return Some(self.host.restart(&scope(Some(call.target)), name));
            }
            _ => return Some("Usage: /mcp (the servers and their state) or /mcp restart NAME".into()),
        }
        let states = self
            .host
            .status(&chat_key(call.target.chat_id), &scope(Some(call.target)));
        if states.is_empty() {
            return Some(format!(
                "No MCP servers for this chat. Add one in the bot's config ([mcp.servers.NAME]) \
                 or in the workspace's {WORKSPACE_FILE}."
            ));
        }
        let lines: Vec<String> = states
            .iter()
            .map(|(name, state)| {
                let shared = if self.host.is_shared(name) { " (shared)" } else { "" };
                format!("- {name}{shared}: {state}")
            })
            .collect();
        Some(format!("MCP servers:\n{}", lines.join("\n")))
    }

    fn help(&self) -> &[&'static str] {
        &["/mcp - MCP servers of this chat and their state; /mcp restart NAME restarts one"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example config's `[mcp]` block (commented out there) is a valid section.
    #[test]
    fn the_example_configs_block_parses() {
        let text = include_str!("../../../config/volcanic.example.toml");
        let block: String = text
            .lines()
            .skip_while(|l| !l.starts_with("# [mcp]"))
            .take_while(|l| l.starts_with('#') && (!l.starts_with("# [") || l.starts_with("# [mcp")))
            .map(|l| l.trim_start_matches('#').trim_start())
            .collect::<Vec<_>>()
            .join("\n");
        let table: toml::Table = block.parse().unwrap_or_else(|e| panic!("{e}"));
        let section: Section = toml::Value::Table(table["mcp"].as_table().cloned().unwrap_or_default())
            .try_into()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(section.servers.len(), 2);
        for (name, value) in section.servers {
            let raw: RawEntry = value.try_into().unwrap_or_else(|e| panic!("{name}: {e}"));
            let lookup = |_: &str| Some("a-secret-value".to_owned());
            let spec = raw.resolve(&name, volcanic_mcp::config::Origin::Host, &lookup, &mut Vec::new());
            assert!(matches!(spec, Ok(Some(_))), "{name}: {spec:?}");
        }
    }
}
