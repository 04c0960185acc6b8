//! Live answers: the reply shows while the model writes it (docs/telegram.md, "Live answers").
//!
//! In private chats a draft (`sendMessageDraft`, [`draft`]) with Telegram's own Stop button,
//! whose press ([`stop`]) aborts the run as `/stop` does; in groups and forum topics a preview
//! message edited in place, with an inline Stop button for the person who asked ([`preview`]).
//! The final answer goes out through the journal as every answer does. A message the bot
//! accepted is marked with a reaction, changed when its answer is delivered or failed
//! ([`reaction`]). Configured by `[telegram] streaming`, `stream_interval_ms` and `reactions`
//! ([`LiveConfig`]).

pub(crate) mod draft;
pub(crate) mod preview;
pub(crate) mod reaction;
pub(crate) mod stop;

use crate::config::{LiveConfig, Streaming};
use crate::features::port::Target;

/// What a chat's answer looks like while it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A draft (private chats).
    Drafts,
    /// A preview message edited in place.
    Edits,
    /// The progress line, then the answer.
    Off,
}

/// The mode for `to` under `live`: drafts only in private chats (positive chat ids), as the
/// Bot API allows them only there; `auto` edits a preview in groups, `drafts` keeps the progress
/// line there; `edits` edits a preview everywhere.
pub fn mode(live: LiveConfig, to: Target) -> Mode {
    let private = to.chat_id > 0;
    match live.streaming {
        Streaming::Auto | Streaming::Drafts if private => Mode::Drafts,
        Streaming::Auto | Streaming::Edits => Mode::Edits,
        Streaming::Drafts | Streaming::Off => Mode::Off,
    }
}

/// Marks an answer cut off by Stop (the native button or `/stop`): its text so far, then this.
pub const STOPPED_MARK: &str = "⏹ _Stopped._";

/// Told when Stop cut off a run before the model wrote any of its answer (the only outcome of
/// that Stop: `/stop` itself replies nothing more).
pub const STOPPED: &str = "Stopped.";
