//! Telegram's Stop button on a draft (`stopped_message_generation`, Bot API 10.3): aborts the
//! chat's run as `/stop` does, so the text written so far is delivered as the answer, marked as
//! stopped ([`STOPPED_MARK`](super::STOPPED_MARK)). A press for a draft that is no longer shown
//! (its answer was delivered, or a later answer's draft shows) is ignored quietly.

use crate::features::port::Target;
use crate::telegram::TelegramHost;
use crate::telegram::inbound::journal::Progress;
use crate::telegram::inbound::update::InStop;
use std::sync::Arc;

impl TelegramHost {
    /// Handles a Stop press (journaled like any update, finished here: a press a crash cut off
    /// is handled again after the restart, when its draft is gone and it is ignored).
    pub(crate) async fn on_draft_stopped(self: &Arc<Self>, update_id: i64, s: InStop) {
        // Drafts go to private chats only, where the chat is the user.
        if self.access.is_allowed_user(s.chat_id) {
            self.stop_draft(s).await;
        }
        self.journal.mark(update_id, Progress::Done);
    }

    async fn stop_draft(&self, s: InStop) {
        let conversation = self.chats.conversation(Target {
            chat_id: s.chat_id,
            thread: s.thread,
        });
        let Some(drafted) = conversation.output.draft(s.draft_id) else {
            tracing::debug!(
                chat = s.chat_id,
                draft = s.draft_id,
                "Stop for a draft no longer shown: ignored"
            );
            return;
        };
        match self.chats.loaded(&conversation).await {
            Some(session) if !session.is_idle() => {
                tracing::info!(chat = s.chat_id, draft = s.draft_id, "Stop pressed: the run is aborted");
                session.abort();
                if !drafted.has_text {
                    // Nothing written yet, so no partial answer says it: the chat is told.
                    conversation.output.notice(super::STOPPED_MARK);
                }
            }
            _ => tracing::debug!(chat = s.chat_id, "Stop pressed after the run ended: ignored"),
        }
    }
}
