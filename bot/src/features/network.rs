//! `/network` (Telegram only): a chat's network policy for its agent processes. Everyone in the
//! chat sees it; owners (`[telegram] owners`) change it: `/network on | off | default` or
//! `/network allow host1 host2 ...`, or with the buttons under `/network`'s answer (on, off,
//! the bot's default allow-list when it has one, the bot's default; others' presses are refused
//! with a toast). Kept per chat across restarts
//! (`<state_dir>/network/<chat key>`, [`ChatNetworks`]) and read by the sandbox at every spawn
//! of the chat's processes, so it applies from the next command. A2A callers and the console get
//! the bot's `[sandbox]` default (docs/sandbox.md).

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use volcanic_sandbox::{AllowList, ChatNetworks, KernelSupport, NetworkPolicy, SandboxMode};

use super::port::{ChatPort, PressButton, Target, chat_key};
use super::{CommandCall, FeatureCommand, HostFeature, Press, Services, Turn};

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
    /// The host's chats, for the buttons; `None` answers in plain text.
    port: Option<Arc<dyn ChatPort>>,
}

/// The prefix of `/network`'s buttons' data.
const PREFIX: &str = "net:";

/// What a button sets: its data after [`PREFIX`], its label.
const CHOICES: &[(&str, &str)] = &[
    ("on", "On"),
    ("off", "Off"),
    ("allow", "Allow-list (bot's hosts)"),
    ("default", "Bot default"),
];

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
        port: services.chats.clone(),
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
        match self.change(chat, wanted) {
            Ok(()) => format!("From the next command: {}", self.show(chat)),
            Err(why) => why,
        }
    }

    /// Sets the chat's policy to `wanted` (`None`: the bot's default), for an owner. Errors:
    /// the sentence saying why it was not changed.
    fn change(&self, chat: &str, wanted: Option<NetworkPolicy>) -> Result<(), String> {
        if self.sandbox_off {
            return Err(
                "Not changed: the sandbox is off ([sandbox] mode = \"off\"), so no policy applies; turn it on \
                    in the bot's config first."
                    .to_owned(),
            );
        }
        if matches!(wanted, Some(NetworkPolicy::AllowList(_))) && !self.user_namespaces {
            return Err(
                "Not changed: the allow-list needs user namespaces, which this kernel refuses \
                    (`volcanic-bot doctor`)."
                    .to_owned(),
            );
        }
        self.chats.set(chat, wanted.as_ref()).map_err(|e| {
            tracing::error!(chat, "cannot keep the chat's network policy: {e}");
            format!("Not changed: cannot keep it ({e}).")
        })
    }

    /// The buttons under the policy: on, off, the bot's allow-list (when its default is one),
    /// the bot's default.
    fn buttons(&self) -> Vec<Vec<PressButton>> {
        let default_list = matches!(self.default, NetworkPolicy::AllowList(_));
        let button = |(data, text): &(&str, &str)| PressButton {
            text: (*text).to_owned(),
            data: format!("{PREFIX}{data}"),
        };
        let row = CHOICES
            .iter()
            .filter(|(data, _)| *data != "allow" || default_list)
            .map(button)
            .collect();
        vec![row]
    }

    /// What a button's `data` sets: `Some(None)` for the bot's default; `None` for data no
    /// button carries (any client can send any data).
    fn choice(&self, data: &str) -> Option<Option<NetworkPolicy>> {
        match data {
            "on" => Some(Some(NetworkPolicy::On)),
            "off" => Some(Some(NetworkPolicy::Off)),
            "allow" => match &self.default {
                NetworkPolicy::AllowList(list) => Some(Some(NetworkPolicy::AllowList(list.clone()))),
                NetworkPolicy::On | NetworkPolicy::Off => None,
            },
            "default" => Some(None),
            _ => None,
        }
    }

    /// Sends `text` with the buttons to `to`; the text itself when that fails or without a port.
    async fn offer(&self, to: Target, text: String) -> Option<String> {
        let port = self.port.as_ref()?;
        match port.offer(to, &text, &self.buttons()).await {
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(chat = to.chat_id, "cannot offer /network's buttons: {e}");
                Some(text)
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
        let text = self.run(call.message.from_id, &chat_key(call.message.chat_id), call.args);
        match (call.args.is_empty(), &self.port) {
            (true, Some(_)) => self.offer(call.target, text).await,
            _ => Some(text),
        }
    }

    fn press_prefix(&self) -> Option<&'static str> {
        Some(PREFIX)
    }

    async fn press(&self, press: Press<'_>) -> Option<String> {
        let wanted = self.choice(press.data)?;
        if !press.owner {
            return Some("Only an owner can change this chat's network policy.".to_owned());
        }
        let chat = chat_key(press.target.chat_id);
        tracing::info!(
            chat,
            user = press.from_id,
            choice = press.data,
            "network button pressed"
        );
        let (toast, text) = match self.change(&chat, wanted) {
            Ok(()) => ("Changed, from the next command.".to_owned(), self.show(&chat)),
            Err(why) => (why.clone(), format!("{why}\n{}", self.show(&chat))),
        };
        let port = self.port.as_ref()?;
        if let Err(e) = port.edit(press.target, press.message_id, &text, &self.buttons()).await {
            tracing::debug!(chat, "cannot update /network's message: {e}");
        }
        Some(toast)
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
            port: None,
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

    #[test]
    fn buttons_offer_the_bots_allow_list_only_when_it_has_one_and_refuse_unknown_data() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = feature(dir.path());
        let data = |f: &Network| f.buttons()[0].iter().map(|b| b.data.clone()).collect::<Vec<_>>();
        assert_eq!(data(&f), ["net:on", "net:off", "net:default"]);
        assert!(f.choice("allow").is_none() && f.choice("bogus").is_none());
        f.default = NetworkPolicy::AllowList(AllowList::parse(&["api.github.com"]).unwrap());
        assert_eq!(data(&f), ["net:on", "net:off", "net:allow", "net:default"]);
        assert!(matches!(f.choice("allow"), Some(Some(NetworkPolicy::AllowList(_)))));
        assert!(matches!(f.choice("default"), Some(None)));
    }
}
