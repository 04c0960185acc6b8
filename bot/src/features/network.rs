//! `/network` (Telegram only): a chat's network policy for its agent processes. Everyone in the
//! chat sees it; owners (`[telegram] owners`) change it: `/network on | off | default` or
//! `/network allow host1 host2 ...`. Kept per chat across restarts
//! (`<state_dir>/network/<chat key>`, [`ChatNetworks`]) and read by the sandbox at every spawn
//! of the chat's processes, so it applies from the next command. A2A callers and the console get
//! the bot's `[sandbox]` default (docs/sandbox.md).

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use volcanic_sandbox::{AllowList, ChatNetworks, KernelSupport, NetworkPolicy, SandboxMode};

use super::port::chat_key;
use super::{CommandCall, FeatureCommand, HostFeature, Services, Turn};

/// The feature.
#[derive(Debug)]
pub struct Network {
    chats: ChatNetworks,
    owners: Vec<i64>,
    /// `[sandbox]`'s policy.
    default: NetworkPolicy,
    /// `[sandbox] mode = "off"`: nothing is confined, a policy would apply to nothing.
    sandbox_off: bool,
    /// The kernel lets the allow-list work.
    user_namespaces: bool,
}

/// Builds it in the Telegram host.
pub fn build(services: &Services) -> anyhow::Result<Option<Arc<dyn HostFeature>>> {
    if services.chats.is_none() {
        return Ok(None);
    }
    let config = &services.config;
    Ok(Some(Arc::new(Network {
        chats: ChatNetworks::under(&config.state_dir),
        owners: config.telegram.owners.clone(),
        default: config.sandbox.network.clone(),
        sandbox_off: config.sandbox.mode == SandboxMode::Off,
        user_namespaces: KernelSupport::probe().user_namespaces,
    })))
}

const COMMANDS: &[FeatureCommand] = &[FeatureCommand {
    name: "network",
    description: "This chat's network policy for its tools (owners change it)",
    turn: Turn::Holds,
}];

const USAGE: &str = "Use /network (show), or, as an owner, /network on | off | default, or /network allow host1 host2 \
                     (names such as api.github.com or *.example.com).";

/// The policy in words.
fn describe(policy: &NetworkPolicy) -> String {
    match policy {
        NetworkPolicy::On => "on: any host".to_owned(),
        NetworkPolicy::Off => "off: no network at all".to_owned(),
        NetworkPolicy::AllowList(list) if list.hosts().is_empty() => {
            "allow-list: no host (only HTTP(S) through the bot's proxy, to nothing)".to_owned()
        }
        NetworkPolicy::AllowList(list) => format!(
            "allow-list: {} (over HTTP(S), through the bot's proxy)",
            list.hosts().join(", ")
        ),
    }
}

impl Network {
    /// What `/network <args>` from user `from` in chat `chat` answers.
    fn run(&self, from: i64, chat: &str, args: &str) -> String {
        let mut words = args.split_whitespace();
        let wanted = match (words.next(), words.clone().count()) {
            (None, _) => return self.show(chat),
            (Some("on"), 0) => Some(NetworkPolicy::On),
            (Some("off"), 0) => Some(NetworkPolicy::Off),
            (Some("default"), 0) => None,
            (Some("allow"), n) if n > 0 => match AllowList::parse(&words.collect::<Vec<_>>()) {
                Ok(list) => Some(NetworkPolicy::AllowList(list)),
                Err(e) => return format!("Not changed: {e}."),
            },
            _ => return USAGE.to_owned(),
        };
        if !self.owners.contains(&from) {
            return format!(
                "Only an owner can change this chat's network policy.\n{}",
                self.show(chat)
            );
        }
        if self.sandbox_off {
            return "Not changed: the sandbox is off ([sandbox] mode = \"off\"), so no policy applies; turn it on \
                    in the bot's config first."
                .to_owned();
        }
        if matches!(wanted, Some(NetworkPolicy::AllowList(_))) && !self.user_namespaces {
            return "Not changed: the allow-list needs user namespaces, which this kernel refuses \
                    (`volcanic-bot doctor`)."
                .to_owned();
        }
        match self.chats.set(chat, wanted.as_ref()) {
            Ok(()) => format!("From the next command: {}", self.show(chat)),
            Err(e) => {
                tracing::error!(chat, "cannot keep the chat's network policy: {e}");
                format!("Not changed: cannot keep it ({e}).")
            }
        }
    }

    /// The chat's policy, and where it comes from.
    fn show(&self, chat: &str) -> String {
        let (policy, source) = match self.chats.get(chat) {
            Ok(Some(policy)) => (policy, "this chat's own, set by an owner"),
            Ok(None) => (self.default.clone(), "the bot's default, [sandbox] in its config"),
            Err(e) => return format!("This chat's network policy cannot be read: {e}"),
        };
        let off = if self.sandbox_off {
            "\nThe sandbox is off ([sandbox] mode = \"off\"): agent processes run unconfined."
        } else {
            ""
        };
        format!(
            "Network for this chat's tools: {} ({source}).{off}\n{USAGE}",
            describe(&policy)
        )
    }
}

#[async_trait]
impl HostFeature for Network {
    fn name(&self) -> &'static str {
        "network"
    }

    fn commands(&self) -> &[FeatureCommand] {
        COMMANDS
    }

    async fn command(&self, _name: &str, call: CommandCall<'_>) -> Option<String> {
        Some(self.run(call.message.from_id, &chat_key(call.message.chat_id), call.args))
    }

    fn help(&self) -> &[&'static str] {
        &["/network [on|off|default|allow host ...] - this chat's network policy for its tools (owners change it)"]
    }

    fn chat_files(&self, chat_key: &str) -> Vec<PathBuf> {
        self.chats.file(chat_key).into_iter().collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn feature(dir: &std::path::Path) -> Network {
        Network {
            chats: ChatNetworks::under(dir),
            owners: vec![1],
            default: NetworkPolicy::On,
            sandbox_off: false,
            user_namespaces: true,
        }
    }

    #[test]
    fn owners_change_the_policy_and_others_only_see_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = feature(dir.path());
        assert!(f.run(2, "5", "").contains("on: any host (the bot's default"));
        assert!(f.run(2, "5", "off").starts_with("Only an owner"));
        assert!(f.chats.get("5").unwrap().is_none());
        assert!(
            f.run(1, "5", "allow api.github.com *.pypi.org")
                .contains("allow-list: api.github.com, *.pypi.org")
        );
        assert!(matches!(f.chats.get("5").unwrap(), Some(NetworkPolicy::AllowList(_))));
        assert!(f.run(1, "5", "allow https://x").starts_with("Not changed: `https://x`"));
        assert!(f.run(1, "5", "off now").starts_with("Use /network"));
        assert!(f.run(1, "5", "default").contains("the bot's default"));
        assert!(f.chats.get("5").unwrap().is_none());
    }
}
