//! A group's (or forum topic's) answer preview: one message, sent silently at the first thing
//! to show, edited in place as the answer grows (paced as a draft is,
//! [`DraftStream`](super::draft::DraftStream)), with an inline Stop button. At the end it becomes
//! the answer's first chunk (the rest follow as messages); if that edit fails the chunk is sent
//! as a message and the preview deleted, so a preview is never left stale. Its message id is
//! remembered on disk while it is shown
//! ([`ProgressMarks`](crate::telegram::outbound::progress_marks::ProgressMarks)): after a crash
//! the next start deletes it.
//!
//! The Stop button is for the person who asked (or an owner); anyone else's press is refused
//! with a toast.

use crate::features::port::Target;
use crate::telegram::TelegramHost;
use crate::telegram::inbound::journal::Progress;
use crate::telegram::inbound::update::InCallback;
use std::sync::Arc;
use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup};

/// The Stop button's callback data: this, then the asker's user id (0 when unknown: owners
/// only).
pub const STOP_PREFIX: &str = "live-stop:";

/// The label of the Stop button.
const STOP_LABEL: &str = "⏹ Stop";
/// Toasts for a press of the Stop button.
const NOT_YOURS: &str = "Only the person who asked (or an owner) can stop this answer.";
const FINISHED: &str = "This answer is already finished.";
const STOPPING: &str = "Stopping…";

/// The preview's keyboard: the Stop button for `asker`.
pub fn stop_button(asker: i64) -> InlineKeyboardMarkup {
    InlineKeyboardMarkup::new([[InlineKeyboardButton::callback(
        STOP_LABEL,
        format!("{STOP_PREFIX}{asker}"),
    )]])
}

/// The asker named by a Stop button's callback `data`, if it is one.
pub fn stop_button_asker(data: &str) -> Option<i64> {
    data.strip_prefix(STOP_PREFIX)?.parse().ok()
}

impl TelegramHost {
    /// Handles a press of a preview's Stop button (`asker` from its data): the asker or an
    /// owner stops the run ([`stop_run`](Self::stop_run)); anyone else gets a toast, as does a
    /// press on a preview that is no longer shown. The update is finished here.
    pub(crate) async fn on_stop_button(self: &Arc<Self>, update_id: i64, c: &InCallback, asker: i64) {
        let to = Target {
            chat_id: c.chat_id,
            thread: c.thread,
        };
        let allowed = (asker != 0 && c.from_id == asker) || self.access.is_owner(c.from_id);
        let shown = i32::try_from(c.message_id).is_ok_and(|id| self.chats.conversation(to).output.shows_preview(id));
        let toast = if !allowed {
            NOT_YOURS
        } else if shown && self.stop_run(to).await {
            tracing::info!(chat = c.chat_id, "Stop pressed on a preview: the run is aborted");
            STOPPING
        } else {
            FINISHED
        };
        self.tg.answer_callback_toast(&c.id, toast).await;
        self.journal.mark(update_id, Progress::Done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_button_names_its_asker() {
        let markup = stop_button(77);
        let data = match &markup.inline_keyboard[0][0].kind {
            teloxide::types::InlineKeyboardButtonKind::CallbackData(d) => d.clone(),
            other => panic!("not a callback button: {other:?}"),
        };
        assert_eq!(stop_button_asker(&data), Some(77));
        assert_eq!(stop_button_asker("retry:5"), None);
        assert!(data.len() <= 64, "Telegram's callback data limit");
    }
}
