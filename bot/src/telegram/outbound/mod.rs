//! What goes out: the Bot API client with its flood control, a chat's answers and progress in
//! order, the ledger of what was delivered, Markdown rendered as Telegram HTML, buttons and
//! questions, the `send` tool's channel, and the texts a chat is told.

pub(crate) mod api;
pub(crate) mod channel;
pub(crate) mod failures;
pub(crate) mod ledger;
pub(crate) mod live;
pub(crate) mod output;
pub(crate) mod progress_marks;
pub mod render;
pub(crate) mod texts;
pub(crate) mod ui;
