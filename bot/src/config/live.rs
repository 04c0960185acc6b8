//! `[telegram] streaming`, `stream_interval_ms` and `reactions`: how an answer shows while the
//! model writes it (docs/telegram.md, "Live answers"). Every error names its key.

use super::{ConfigError, invalid};
use std::time::Duration;

/// How a chat sees an answer being written (`[telegram] streaming`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streaming {
    /// `auto` (the default): drafts in private chats, an edited preview in groups.
    Auto,
    /// `drafts`: drafts in private chats; groups keep the progress line (drafts are private-chat
    /// only in the Bot API).
    Drafts,
    /// `edits`: an edited preview message in every chat.
    Edits,
    /// `off`: the progress line with the tool names, then the answer, as before live answers.
    Off,
}

/// The resolved live-answer keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveConfig {
    /// `streaming`.
    pub streaming: Streaming,
    /// `stream_interval_ms`: the least time between two updates of one draft or preview.
    pub interval: Duration,
    /// `reactions` (default on): an accepted message is marked with a reaction, changed when
    /// its answer is delivered or failed.
    pub reactions: bool,
}

/// Default `stream_interval_ms`: under Telegram's "about one message a second in a chat" (Bots
/// FAQ) while still reading as live.
pub const DEFAULT_INTERVAL_MS: u64 = 700;
/// Bounds of `stream_interval_ms`: under 100 ms would spend the bot's global pace on drafts;
/// over 10 s a draft would look stuck (it is refreshed at least every 20 s anyway).
const INTERVAL_MS: std::ops::RangeInclusive<u64> = 100..=10_000;

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            streaming: Streaming::Auto,
            interval: Duration::from_millis(DEFAULT_INTERVAL_MS),
            reactions: true,
        }
    }
}

/// Checks `streaming` (`auto`, `drafts`, `edits`, `off`) and `stream_interval_ms` (100–10000);
/// `reactions` defaults to on.
pub(super) fn resolve_live(
    streaming: Option<String>,
    interval_ms: Option<u64>,
    reactions: Option<bool>,
) -> Result<LiveConfig, ConfigError> {
    let streaming = match streaming.as_deref().unwrap_or("auto") {
        "auto" => Streaming::Auto,
        "drafts" => Streaming::Drafts,
        "edits" => Streaming::Edits,
        "off" => Streaming::Off,
        other => {
            return Err(invalid(
                "telegram.streaming",
                format!("`{other}`: use \"auto\", \"drafts\", \"edits\" or \"off\""),
            ));
        }
    };
    let ms = interval_ms.unwrap_or(DEFAULT_INTERVAL_MS);
    if !INTERVAL_MS.contains(&ms) {
        return Err(invalid(
            "telegram.stream_interval_ms",
            format!(
                "{ms}: use {} to {} (milliseconds between two updates of a draft)",
                INTERVAL_MS.start(),
                INTERVAL_MS.end()
            ),
        ));
    }
    Ok(LiveConfig {
        streaming,
        interval: Duration::from_millis(ms),
        reactions: reactions.unwrap_or(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_refusals_name_the_key() {
        assert_eq!(resolve_live(None, None, None).ok(), Some(LiveConfig::default()));
        assert!(LiveConfig::default().reactions, "reactions are on by default");
        let off = resolve_live(Some("off".into()), Some(250), Some(false)).ok();
        assert_eq!(
            off.map(|c| (c.streaming, c.interval.as_millis(), c.reactions)),
            Some((Streaming::Off, 250, false))
        );
        let bad = resolve_live(Some("live".into()), None, None)
            .err()
            .map(|e| e.to_string());
        assert!(bad.is_some_and(|e| e.contains("telegram.streaming") && e.contains("\"edits\"")));
        let fast = resolve_live(None, Some(5), None).err().map(|e| e.to_string());
        assert!(fast.is_some_and(|e| e.contains("telegram.stream_interval_ms")));
    }
}
