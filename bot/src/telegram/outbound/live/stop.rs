//! Stop: Telegram's Stop button on a draft (`stopped_message_generation`, Bot API 10.3) and
//! `/stop` abort the chat's run the same way ([`TelegramHost::stop_run`]), and the chat learns it
//! once: the text written so far is delivered as the answer, marked as stopped
//! ([`STOPPED_MARK`](super::STOPPED_MARK)), or, when the model had written nothing yet,
//! [`STOPPED`](super::STOPPED) is sent. A press for a draft that is no longer shown (its answer
//! was delivered, or a later answer's draft shows) is ignored quietly.

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
        let to = Target {
            chat_id: s.chat_id,
            thread: s.thread,
        };
        if !self.chats.conversation(to).output.shows_draft(s.draft_id) {
            tracing::debug!(
                chat = s.chat_id,
                draft = s.draft_id,
                "Stop for a draft no longer shown: ignored"
            );
            return;
        }
        if self.stop_run(to).await {
            tracing::info!(chat = s.chat_id, draft = s.draft_id, "Stop pressed: the run is aborted");
        } else {
            tracing::debug!(chat = s.chat_id, "Stop pressed after the run ended: ignored");
        }
    }

    /// Aborts the run of `to`, if one is in progress (then returns `true`); the chat is told
    /// once, as the module docs say.
    pub(crate) async fn stop_run(&self, to: Target) -> bool {
        let conversation = self.chats.conversation(to);
        match self.chats.loaded(&conversation).await {
            Some(session) if !session.is_idle() => {
                conversation.output.stopping();
                session.abort();
                true
            }
            _ => false,
        }
    }
}
