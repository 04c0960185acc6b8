//! Routing one accepted update: access (deny by default), group addressing, commands, and
//! prompts handed to the chat's session without waiting for the run (teloxide-style handlers
//! that await a run would block the chat's own button presses and `/stop`).

use crate::features::port::Target;
use crate::features::port::chat_key;
use crate::telegram::TelegramHost;
use crate::telegram::conversation::commands;
use crate::telegram::inbound::journal::Progress;
use crate::telegram::inbound::merge;
use crate::telegram::inbound::update::{self, InCallback, InMessage, Inbound};
use crate::telegram::outbound::texts;
use crate::telegram::outbound::ui::Press;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// How long album parts in a group wait for the part that addresses the bot.
const ALBUM_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Parts of a group album seen so far.
#[derive(Debug)]
pub struct Album {
    since: Instant,
    addressed: bool,
    waiting: Vec<(i64, InMessage)>,
}

impl TelegramHost {
    /// Handles one journaled update. Returns quickly: runs are started in their own tasks.
    pub async fn handle(self: &Arc<Self>, update_id: i64, update: Value) {
        match update::parse(&update) {
            Inbound::Message(m) => self.on_message(update_id, m).await,
            Inbound::Callback(c) => self.on_callback(update_id, c).await,
            Inbound::Stop(s) => self.on_draft_stopped(update_id, s).await,
            Inbound::CallbackWithoutChat(id) => {
                self.answer_press(&id, Some(texts::PRESS_REFUSED)).await;
                self.journal.mark(update_id, Progress::Done);
            }
            Inbound::Other => self.journal.mark(update_id, Progress::Done),
        }
    }

    fn target(m: &InMessage) -> Target {
        Target {
            chat_id: m.chat_id,
            thread: m.thread,
        }
    }

    /// In a group the bot answers only when mentioned, replied to, or addressed as `/cmd@bot`.
    fn is_addressed(&self, m: &InMessage) -> bool {
        if !m.is_group() {
            return true;
        }
        let mention = format!("@{}", self.bot_username).to_lowercase();
        let mentioned = m
            .entities
            .iter()
            .any(|(kind, off, len)| kind == "mention" && m.entity_text(*off, *len).to_lowercase() == mention);
        let command_to_me = m
            .text
            .split_whitespace()
            .next()
            .is_some_and(|w| w.starts_with('/') && w.to_lowercase().ends_with(&mention));
        let reply_to_me = m.reply_to.as_ref().is_some_and(|(from, _)| *from == self.bot_id);
        mentioned || command_to_me || reply_to_me
    }

    async fn on_message(self: &Arc<Self>, update_id: i64, m: InMessage) {
        if let Some(new_id) = m.migrate_to {
            self.migrate(m.chat_id, new_id);
            self.journal.mark(update_id, Progress::Done);
            return;
        }
        let addressed = self.is_addressed(&m);
        let chat_ok = !m.is_group() || self.access.is_allowed_chat(m.chat_id);
        if !chat_ok || !self.access.is_allowed_user(m.from_id) {
            self.journal.mark(update_id, Progress::Done);
            // An unlisted group stays silent; a stranger gets one short reply per hour.
            // Not awaited here: a chat held by flood control must not hold up polling.
            if chat_ok && addressed && self.access.should_reply_to_stranger(m.from_id, Instant::now()) {
                let tg = self.tg.clone();
                tokio::spawn(async move {
                    let _ = tg.send_plain(Self::target(&m), &texts::stranger(m.from_id), None).await;
                });
            }
            return;
        }
        // A message a feature takes (e.g. a pasted Google sign-in address): taken here, never
        // shown to a session or the model.
        let pasted = self.strip_mention(&m.text);
        if let Some(feature) = self.features.taker(&pasted) {
            let host = self.clone();
            tokio::spawn(async move {
                feature.take(&m.incoming(), &pasted).await;
                host.journal.mark(update_id, Progress::Done);
            });
            return;
        }
        let m = if m.is_group() && m.media_group_id.is_some() {
            // Only one part of an album carries the caption that mentions the bot: the others
            // wait for it, then go to the merge buffer with it.
            match self.album_gate(update_id, m, addressed) {
                Some(m) => m,
                None => return,
            }
        } else if !addressed {
            self.journal.mark(update_id, Progress::Done);
            return;
        } else {
            m
        };
        let text = self.strip_mention(&m.text);
        // A tool or extension asked its sender (or an owner) for input: this message is the
        // answer, not a prompt.
        let owner = self.access.is_owner(m.from_id);
        if !text.starts_with('/') && self.pending.answer_input(Self::target(&m), m.from_id, owner, &text) {
            self.journal.mark(update_id, Progress::Done);
            return;
        }
        if text.starts_with('/') {
            // In arrival order with the chat's prompts (taken here, before the task starts), after
            // an album or long paste of the sender's still being gathered.
            let turn = commands::takes_turn(self, &text).then(|| {
                let conversation = self.chats.conversation(Self::target(&m));
                conversation.intake.buffer.release(m.from_id);
                conversation.intake.order.ticket()
            });
            let host = self.clone();
            tokio::spawn(async move {
                commands::handle(&host, &m, &text, turn).await;
                host.journal.mark(update_id, Progress::Done);
            });
            return;
        }
        // Accepted: marked for the asker at once (best effort, never waited for).
        self.tg.react_accepted(update_id, Self::target(&m), m.message_id);
        self.prompt(update_id, m, text);
    }

    /// Album parts in a group: returns the part to handle now, after releasing the parts that
    /// waited for an addressed sibling; `None` when this part waits (or its album was never
    /// addressed). Albums not addressed within [`ALBUM_WAIT`] are dropped.
    fn album_gate(self: &Arc<Self>, update_id: i64, m: InMessage, addressed: bool) -> Option<InMessage> {
        let key = format!("{}:{}", m.chat_id, m.media_group_id.as_deref().unwrap_or_default());
        let (released, stale) = {
            let mut albums = self.albums.lock().unwrap_or_else(|e| e.into_inner());
            let stale: Vec<i64> = albums
                .iter()
                .filter(|(_, a)| a.since.elapsed() > ALBUM_WAIT)
                .flat_map(|(_, a)| a.waiting.iter().map(|(id, _)| *id).collect::<Vec<_>>())
                .collect();
            albums.retain(|_, a| a.since.elapsed() <= ALBUM_WAIT);
            let album = albums.entry(key).or_insert_with(|| Album {
                since: Instant::now(),
                addressed: false,
                waiting: Vec::new(),
            });
            if addressed {
                album.addressed = true;
                (std::mem::take(&mut album.waiting), stale)
            } else if album.addressed {
                (Vec::new(), stale)
            } else {
                album.waiting.push((update_id, m));
                for id in stale {
                    self.journal.mark(id, Progress::Done);
                }
                return None;
            }
        };
        for id in stale {
            self.journal.mark(id, Progress::Done);
        }
        for (id, part) in released {
            let text = self.strip_mention(&part.text);
            self.prompt(id, part, text);
        }
        Some(m)
    }

    /// Hands a prompt to the chat's session without waiting for it: the parts of an album or of
    /// a split long paste are gathered into one prompt first ([`merge`]), media are downloaded
    /// in the prompt's own task ([`media`](crate::telegram::conversation::handoff)).
    pub fn prompt(self: &Arc<Self>, update_id: i64, m: InMessage, text: String) {
        merge::offer(self, update_id, m, text);
    }

    fn strip_mention(&self, text: &str) -> String {
        strip_mention(text, &self.bot_username)
    }

    /// A button press, under the rules of a message: an allowed user, in a private chat or an
    /// allowed group; anything else is answered with a toast and changes nothing (a preview's
    /// Stop too). A question's
    /// button answers only its own question ([`Pending::press`](crate::telegram::outbound::ui::Pending::press)).
    async fn on_callback(self: &Arc<Self>, update_id: i64, c: InCallback) {
        let chat_ok = if c.is_group() {
            self.access.is_allowed_chat(c.chat_id)
        } else {
            c.chat_type == "private"
        };
        if !chat_ok || !self.access.is_allowed_user(c.from_id) {
            tracing::info!(chat = c.chat_id, user = c.from_id, "button press refused");
            self.answer_press(&c.id, Some(texts::PRESS_REFUSED)).await;
            self.journal.mark(update_id, Progress::Done);
            return;
        }
        // A group preview's Stop: for its asker or an owner (checked there).
        if let Some(asker) = crate::telegram::outbound::live::preview::stop_button_asker(&c.data) {
            self.on_stop_button(update_id, &c, asker).await;
            return;
        }
        let target = Target {
            chat_id: c.chat_id,
            thread: c.thread,
        };
        let retry = c
            .data
            .strip_prefix(crate::telegram::conversation::recovery::RETRY_PREFIX)
            .and_then(|i| i.parse::<i64>().ok());
        if let Some(kept) = retry {
            self.answer_press(&c.id, None).await;
            // Finished when the retried run's answer is delivered (a crash meanwhile is
            // recovered like any message).
            self.retry(update_id, kept, target, c.message_id);
            return;
        }
        if let Some(line) = crate::telegram::conversation::menus::command_line(&c.data) {
            self.answer_press(&c.id, None).await;
            self.menu_press(update_id, &c, target, line.to_owned()).await;
            return;
        }
        self.journal.mark(update_id, Progress::Done);
        let owner = self.access.is_owner(c.from_id);
        if let Some((feature, data)) = self.features.presser(&c.data) {
            // In a task of its own: a feature's press may write files or edit messages, and
            // the updates behind it must not wait for that.
            let (host, data) = (self.clone(), data.to_owned());
            tokio::spawn(async move {
                let press = crate::features::Press {
                    target,
                    message_id: c.message_id,
                    from_id: c.from_id,
                    owner,
                    data: &data,
                };
                let toast = feature.press(press).await;
                host.answer_press(&c.id, toast.as_deref()).await;
            });
            return;
        }
        let toast = match self.pending.press(target, c.from_id, owner, &c.data) {
            Press::Answered(choice) => {
                tracing::debug!(chat = c.chat_id, %choice, "question answered");
                None
            }
            Press::NotFor(whom) => Some(texts::question_for(whom.as_deref())),
            Press::Elsewhere => Some(texts::QUESTION_ELSEWHERE.to_owned()),
            Press::Nothing => {
                tracing::debug!(chat = c.chat_id, data = %c.data, "button without a waiting question");
                None
            }
        };
        self.answer_press(&c.id, toast.as_deref()).await;
    }

    /// Answers a button press (stops its spinner), with `toast` shown to the presser; a failure
    /// is only logged (the press was handled either way).
    async fn answer_press(&self, id: &str, toast: Option<&str>) {
        if let Err(e) = self.tg.bot_answer_callback(id, toast).await {
            tracing::debug!("cannot answer a button press: {e}");
        }
    }

    /// A menu button was pressed ([`menus`](crate::telegram::conversation::menus)): its buttons give way to the choice,
    /// and its command runs as if the presser had typed it, in its place in the chat's line.
    async fn menu_press(self: &Arc<Self>, update_id: i64, c: &InCallback, target: Target, line: String) {
        if let Ok(message_id) = i32::try_from(c.message_id) {
            let shown = format!("{}\n→ {line}", c.message_text);
            self.tg.edit_progress(target, message_id, &shown).await;
        }
        let m = InMessage {
            message_id: c.message_id,
            chat_id: c.chat_id,
            chat_type: c.chat_type.clone(),
            from_id: c.from_id,
            thread: c.thread,
            text: line.clone(),
            ..InMessage::default()
        };
        let turn = commands::takes_turn(self, &line).then(|| self.chats.conversation(target).intake.order.ticket());
        let host = self.clone();
        tokio::spawn(async move {
            commands::handle(&host, &m, &line, turn).await;
            host.journal.mark(update_id, Progress::Done);
        });
    }

    /// A group became a supergroup: its workspace, settings, sessions and the features' files
    /// of the chat (e.g. its Google Calendar tokens) move to the new key.
    fn migrate(&self, old_id: i64, new_id: i64) {
        let (old, new) = (chat_key(old_id), chat_key(new_id));
        let mut moves = vec![
            (
                self.config.workspaces_dir.join(&old),
                self.config.workspaces_dir.join(&new),
            ),
            (
                self.config.state_dir.join("sessions").join(&old),
                self.config.state_dir.join("sessions").join(&new),
            ),
        ];
        moves.extend(
            self.features
                .chat_files(&old)
                .into_iter()
                .zip(self.features.chat_files(&new)),
        );
        for (from, to) in moves {
            if from.exists()
                && !to.exists()
                && let Err(e) = std::fs::rename(&from, &to)
            {
                tracing::error!(from = %from.display(), to = %to.display(), "migration move failed: {e}");
            }
        }
        if let Err(e) = self.chats.settings().rename(&old, &new) {
            tracing::error!("migration of chat settings failed: {e}");
        }
        if let Err(e) = self.access.migrate_chat(old_id, new_id) {
            tracing::error!("migration of the allowed chat failed: {e}");
        }
        tracing::info!(old_id, new_id, "group migrated to a supergroup");
    }
}

/// `text` without any `@username` of the bot, in any case (Telegram usernames are
/// case-insensitive), so `/cmd@Bot args` becomes `/cmd args`; `@usernameX` is left alone.
pub fn strip_mention(text: &str, username: &str) -> String {
    let mention = format!("@{username}");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('@') {
        let (before, from_at) = rest.split_at(at);
        out.push_str(before);
        let matched = from_at
            .get(..mention.len())
            .is_some_and(|m| m.eq_ignore_ascii_case(&mention))
            && !from_at[mention.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_alphanumeric() || c == '_');
        if matched {
            rest = &from_at[mention.len()..];
        } else {
            out.push('@');
            rest = &from_at[1..];
        }
    }
    out.push_str(rest);
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::strip_mention;

    #[test]
    fn mentions_are_stripped_in_any_case() {
        assert_eq!(
            strip_mention("@MyBot http://127.0.0.1/?code=x", "mybot"),
            "http://127.0.0.1/?code=x"
        );
        assert_eq!(strip_mention("@mybot hi", "MyBot"), "hi");
        assert_eq!(strip_mention("/calendar@MYBOT connect", "MyBot"), "/calendar connect");
        assert_eq!(strip_mention("ask @MyBotX or @other", "MyBot"), "ask @MyBotX or @other");
        assert_eq!(strip_mention("é@MyBot", "MyBot"), "é");
    }
}
