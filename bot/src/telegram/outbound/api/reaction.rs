//! `setMessageReaction` for the reactions on the messages the bot works on
//! ([`live::reaction`](crate::telegram::outbound::live::reaction)). Best effort, as drafts:
//! a reaction gives way to everything else ([`Tg::gives_way`]), is sent once (a 429 holds
//! only the chat's live updates; a refusal forgets the message), and runs in its own task, so
//! no answer waits for it.

use super::Tg;
use super::draft::DraftSent;
use crate::features::port::Target;
use crate::telegram::outbound::live::reaction::{ACCEPTED, Outcome};
use std::sync::Arc;
use teloxide::prelude::*;
use teloxide::types::{MessageId, ReactionType};

impl Tg {
    /// Marks the message `message_id` of update `update_id` in `to` as accepted, if
    /// `[telegram] reactions` is on. Returns at once.
    pub fn react_accepted(self: &Arc<Self>, update_id: i64, to: Target, message_id: i64) {
        let Ok(message_id) = i32::try_from(message_id) else {
            return;
        };
        if !self.live.reactions {
            return;
        }
        if self.reactions.accept(update_id, to.chat_id, message_id).is_some() {
            tokio::spawn(self.clone().react(update_id, to.chat_id, message_id, ACCEPTED));
        }
    }

    /// Notes that update `update_id` (message `message_id` in `to`) was marked accepted before a
    /// restart, so its outcome is shown when it comes. Sends nothing.
    pub fn react_recovered(&self, update_id: i64, to: Target, message_id: i64) {
        if let Ok(message_id) = i32::try_from(message_id)
            && self.live.reactions
        {
            self.reactions.recovered(update_id, to.chat_id, message_id);
        }
    }

    /// Marks the messages of `update_ids` with `outcome` (those marked accepted). Returns at
    /// once.
    pub fn react_finished(self: &Arc<Self>, update_ids: &[i64], outcome: Outcome) {
        for &id in update_ids {
            if let Some((m, emoji)) = self.reactions.finish(id, outcome) {
                tokio::spawn(self.clone().react(id, m.chat, m.message_id, emoji));
            }
        }
    }

    /// The sender of one message's reactions: sets `emoji`, then whatever it should show
    /// meanwhile, each once.
    async fn react(self: Arc<Self>, update_id: i64, chat: i64, message_id: i32, mut emoji: &'static str) {
        loop {
            if self.set_reaction(chat, message_id, emoji).await == DraftSent::Refused {
                self.reactions.drop_refused(update_id);
                return;
            }
            match self.reactions.next(update_id, emoji) {
                Some(changed) => emoji = changed,
                None => return,
            }
        }
    }

    /// Sets `emoji` as the bot's reaction on `message_id` in `chat`, once; gives way as a draft
    /// does.
    async fn set_reaction(&self, chat: i64, message_id: i32, emoji: &str) -> DraftSent {
        if self.gives_way(chat).await {
            return DraftSent::Skipped;
        }
        let sent = self
            .bot
            .set_message_reaction(ChatId(chat), MessageId(message_id))
            .reaction([ReactionType::Emoji {
                emoji: emoji.to_owned(),
            }])
            .await;
        self.live_outcome(chat, sent.map(|_| ()))
    }
}
