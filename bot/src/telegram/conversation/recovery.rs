//! After a crash or restart: every update the journal holds unfinished is finished, message by
//! message, by the rule docs/exactly-once.md gives:
//!
//! - its prompt never reached the session (`accepted`): handled now, as if it just arrived;
//! - its answer is in the transcript but was not (wholly) delivered: the rest is sent, from the
//!   chunk after the last one Telegram took or had on the wire when the process died
//!   ([`Chunks::resume_at`](crate::telegram::inbound::journal::Chunks)), never run again;
//! - its run was cut off before any tool ran on its behalf (`started`): run again, once (from the
//!   transcript when its prompt is the last message there, else handed over again);
//! - its run was cut off after a tool ran (`tool`): the chat is told, with a Retry button;
//!   cut off again in its one automatic re-run: the chat is told, with a Retry button.
//!
//! What happened to each message is told once per chat, with the scheduler's catch-up, in its
//! "while I was down" report ([`down_report`](super::down_report::DownReport)): a message not run again gets
//! its Retry button there.
//!
//! A pressed Retry is an update of its own (a `callback_query`), journaled like a message and
//! finished only when the retried run's answer is delivered: its copy of the message stays in
//! `<state_dir>/retry/` until then, so a crash during the retried run is recovered like any
//! message. Each conversation's updates are recovered in order before that conversation's new prompts (its
//! turnstile ticket is taken before polling starts), so a new message's answer is never taken
//! for an old one's.

use crate::features::port::{Target, answer_after};
use crate::telegram::TelegramHost;
use crate::telegram::conversation::conversations::Conversation;
use crate::telegram::conversation::down_report::{self, Line};
use crate::telegram::inbound::journal::{Progress, Unfinished, prompt_digest};
use crate::telegram::inbound::merge::Ticket;
use crate::telegram::inbound::update::{self, InMessage, Inbound};
use crate::telegram::outbound::live::reaction::Outcome;
use crate::telegram::outbound::texts::{self, down};
use crate::telegram::outbound::ui::Asker;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup};
use volcanic_abstractions::messages::Message;
use volcanic_core::agent::{AgentSession, SessionError};

/// Callback data of the Retry button: `retry:<update_id>`.
pub const RETRY_PREFIX: &str = "retry:";

/// An unfinished update with the message its prompt was made from.
struct Item {
    u: Unfinished,
    /// The message (for a pressed Retry: the message being retried).
    m: InMessage,
    /// The message's update as received (kept for a Retry button).
    message_update: Value,
}

/// Starts recovering `unfinished` (in id order). Call before polling starts: each conversation's place
/// in line is taken here, ahead of any new message.
pub fn recover(host: &Arc<TelegramHost>, unfinished: Vec<Unfinished>) {
    let pressed_live: HashSet<i64> = unfinished.iter().map(|u| u.id).collect();
    host.sweep_retry_files(&pressed_live);
    let mut by_conversation: BTreeMap<(i64, i32), Vec<Item>> = BTreeMap::new();
    for u in unfinished {
        match host.resolve(u.id, &u.update) {
            Some((m, message_update)) => by_conversation
                .entry((m.chat_id, m.thread.unwrap_or(0)))
                .or_default()
                .push(Item { u, m, message_update }),
            // Not a prompt (a command, a button, anything else): handled again, as it came.
            None => {
                let host = host.clone();
                tokio::spawn(async move { host.handle(u.id, u.update).await });
            }
        }
    }
    host.down_report.expect(by_conversation.len());
    for items in by_conversation.into_values() {
        let Some(first) = items.first() else { continue };
        let conversation = host.chats.conversation(Target {
            chat_id: first.m.chat_id,
            thread: first.m.thread,
        });
        let turn = conversation.intake.order.ticket();
        let host = host.clone();
        tokio::spawn(async move { recover_conversation(&host, items, turn).await });
    }
}

/// Recovers one conversation's updates, holding its place in line while it reads the transcript.
async fn recover_conversation(host: &Arc<TelegramHost>, items: Vec<Item>, mut turn: Ticket) {
    turn.wait().await;
    let Some(first) = items.first() else { return };
    let target = Target {
        chat_id: first.m.chat_id,
        thread: first.m.thread,
    };
    let conversation = host.chats.conversation(target);
    for i in items.iter().filter(|i| crate::telegram::voice::answer::spoke(&i.m)) {
        conversation.output.heard(i.u.id);
    }
    let (mut again, started): (Vec<Item>, Vec<Item>) = items
        .into_iter()
        .partition(|i| i.u.progress == Progress::Accepted && i.u.retries == 0);
    let mut lines: Vec<Line> = again
        .iter()
        .map(|i| line(i, "answered", down::ANSWERED, None))
        .collect();
    let mut offers: Vec<Vec<Item>> = Vec::new();
    let session = match host.chats.session(&conversation).await {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::error!(chat = target.chat_id, "recovery cannot open the chat's session: {e:#}");
            None
        }
    };
    let messages = session.as_ref().map(|s| s.messages()).unwrap_or_default();
    let mut answered: HashSet<usize> = HashSet::new();
    for (digest, group) in prompt_groups(started) {
        let ids: Vec<i64> = group.iter().map(|i| i.u.id).collect();
        // Marked 👀 before the crash: the outcome of what follows replaces it.
        for i in &group {
            host.tg.react_recovered(i.u.id, target, i.m.message_id);
        }
        let at = digest.as_deref().and_then(|d| locate(&messages, d));
        if let Some((index, text)) = at.and_then(|i| answer_after(&messages, i)) {
            if answered.insert(index) {
                lines.extend(group.first().map(|lead| held_back_line(lead, &group)));
                deliver_held_back(&conversation, &group, ids, text);
            } else {
                conversation.output.done(ids);
            }
            continue;
        }
        if not_run_again(&group) {
            offers.push(group);
            continue;
        }
        host.journal.mark_all(&ids, Progress::Retried);
        lines.extend(group.first().map(|lead| line(lead, "rerun", down::RERUN, None)));
        let last = messages.len().checked_sub(1);
        match (&session, digest) {
            (Some(session), Some(d)) if at.is_some() && at == last && session.is_idle() => {
                continue_cut_off(host, &conversation, session, &d, group).await;
            }
            _ => again.extend(group),
        }
    }
    offer_retries(host, target, lines, offers).await;
    // New prompts of this conversation may go now; what runs again lines up behind them.
    drop(turn);
    again.sort_by_key(|i| i.u.id);
    for i in again {
        host.handle(i.u.id, i.u.update).await;
    }
}

/// The updates of one prompt (an album, a paste) share its digest; without one (cut off before
/// its prompt reached the session again) each stands alone.
fn prompt_groups(started: Vec<Item>) -> Vec<(Option<String>, Vec<Item>)> {
    let mut groups: Vec<(Option<String>, Vec<Item>)> = Vec::new();
    for i in started {
        match groups.iter_mut().find(|(d, _)| d.is_some() && *d == i.u.prompt) {
            Some((_, g)) => g.push(i),
            None => groups.push((i.u.prompt.clone(), vec![i])),
        }
    }
    groups
}

/// Delivers the answer (`text`) the transcript holds for `group` (updates `ids`), from the chunk
/// after the last one Telegram took or had on the wire.
fn deliver_held_back(conversation: &Conversation, group: &[Item], ids: Vec<i64>, text: String) {
    let chat = conversation.target.chat_id;
    let from = group.iter().map(|i| i.u.chunks.resume_at()).max().unwrap_or(0);
    if group.iter().any(|i| i.u.chunks.in_flight.is_some()) {
        tracing::info!(
            chat,
            ?ids,
            "a chunk of this answer was on its way to Telegram when the bot stopped: counted as shown"
        );
    }
    // After chunks sent early the rest was cut on its own: cut it the same way again.
    let (rest, first) = group
        .iter()
        .find(|i| i.u.chunks.rest.is_some())
        .map_or((text.as_str(), 0), |i| i.u.chunks.layout(&text));
    tracing::info!(chat, ?ids, first, from, "delivering an answer a crash held back");
    conversation.output.answer(rest.to_owned(), ids, first, from);
}

/// A prompt cut off after a tool started for it, or cut off a second time, is not run again.
fn not_run_again(group: &[Item]) -> bool {
    group.iter().any(|i| i.u.progress == Progress::Tool || i.u.retries > 0)
}

/// The report's line for `lead`'s message: `what` happened to it (`kind` names the outcome in
/// its key), a Retry button for `retry`.
fn line(lead: &Item, kind: &str, what: &str, retry: Option<i64>) -> Line {
    Line {
        key: format!("u{}:{kind}", lead.u.id),
        text: down::line(&down_report::quote(&lead.m.text), what),
        retry,
    }
}

/// The line of an answer the transcript held back, delivered now (whole, or from a chunk on).
fn held_back_line(lead: &Item, group: &[Item]) -> Line {
    let from = group.iter().map(|i| i.u.chunks.resume_at()).max().unwrap_or(0);
    if from == 0 {
        line(lead, "held", down::HELD, None)
    } else {
        line(lead, "rest", down::REST, None)
    }
}

/// Tells the chat what recovery did (`lines`) and offers a Retry for each of `offers` (prompts
/// not run again) in its down report; their updates are finished once the report holds them.
/// If the report cannot be written, each is offered in a message of its own, as before.
async fn offer_retries(host: &TelegramHost, target: Target, mut lines: Vec<Line>, offers: Vec<Vec<Item>>) {
    for group in &offers {
        let Some(lead) = group.first() else { continue };
        host.keep_for_retry(lead.u.id, &lead.message_update);
        lines.push(if after_tool(group) {
            line(lead, "tool", down::AFTER_TOOL, Some(lead.u.id))
        } else {
            line(lead, "twice", down::TWICE, Some(lead.u.id))
        });
    }
    let kept = host.down_report.recovered(target, lines).await;
    for group in offers {
        let Some(lead) = group.first() else { continue };
        if let Err(e) = &kept {
            tracing::error!(
                chat = target.chat_id,
                "cannot write the down report: {e}; a Retry is offered on its own"
            );
            let quoted: String = lead.m.text.chars().take(200).collect();
            let text = if after_tool(&group) {
                texts::interrupted(&quoted)
            } else {
                texts::interrupted_twice(&quoted)
            };
            host.offer_retry(target, lead.u.id, &text).await;
        }
        let ids: Vec<i64> = group.iter().map(|i| i.u.id).collect();
        host.journal.mark_all(&ids, Progress::Done);
        host.tg.react_finished(&ids, Outcome::Failed);
    }
}

/// Whether a tool had started for `group`'s prompt (else it was cut off twice).
fn after_tool(group: &[Item]) -> bool {
    group.iter().any(|i| i.u.progress == Progress::Tool)
}

/// Continues the run a crash cut off right after `group`'s prompt (digest `digest`, the
/// transcript's last message). Polled once here, while the conversation's place in line is
/// held: the run is started (the session busy) before a new message may reach the session.
/// Else a new message could start a run with this prompt still waiting before it, and both
/// would be answered there, this one again by its own run.
async fn continue_cut_off(
    host: &Arc<TelegramHost>,
    conversation: &Arc<Conversation>,
    session: &AgentSession,
    digest: &str,
    group: Vec<Item>,
) {
    let ids: Vec<i64> = group.iter().map(|i| i.u.id).collect();
    tracing::info!(
        chat = conversation.target.chat_id,
        ?ids,
        "continuing a run a crash cut off"
    );
    let Some(lead) = group.first() else { return };
    // Its questions are for the sender of the message it answers, as before the crash.
    let asker = Asker {
        id: lead.m.from_id,
        name: lead.m.from_name.clone(),
    };
    conversation.ledger.resume(&ids, digest, asker);
    let session = session.clone();
    let (host, conversation) = (host.clone(), conversation.clone());
    let mut run = Box::pin(async move {
        match session.continue_run().await {
            Ok(true) => {}
            // Closed by the shutdown: left unfinished in the journal, for the restart.
            Err(SessionError::Closed) if host.shutdown.is_cancelled() => {}
            // Busy after all, or closed otherwise: handed over again instead (a fresh session).
            Ok(false) | Err(SessionError::Closed) => {
                conversation.ledger.forget(&ids);
                for i in group {
                    host.handle(i.u.id, i.u.update).await;
                }
            }
            Err(e) => conversation
                .output
                .notice_for(crate::telegram::outbound::failures::session(&e), ids),
        }
    });
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(run.as_mut().poll(cx))).await;
    if first.is_pending() {
        tokio::spawn(run);
    }
}

/// The index of the last user message whose text has `digest`.
fn locate(messages: &[Message], digest: &str) -> Option<usize> {
    messages
        .iter()
        .rposition(|m| matches!(m, Message::User(u) if prompt_digest(&u.content.text()) == digest))
}

impl TelegramHost {
    fn retry_dir(&self) -> PathBuf {
        self.config.state_dir.join("retry")
    }

    /// The copy kept for a Retry button of `update_id`.
    fn retry_file(&self, update_id: i64) -> PathBuf {
        self.retry_dir().join(format!("{update_id}.json"))
    }

    /// The copy taken by the press `press_id` of that button (kept until the press is finished).
    fn pressed_file(&self, update_id: i64, press_id: i64) -> PathBuf {
        self.retry_dir().join(format!("{update_id}-pressed-{press_id}.json"))
    }

    /// Removes the copies of presses that are finished (not in `unfinished`).
    fn sweep_retry_files(&self, unfinished: &HashSet<i64>) {
        let Ok(entries) = std::fs::read_dir(self.retry_dir()) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let press = name
                .strip_suffix(".json")
                .and_then(|n| n.split_once("-pressed-"))
                .and_then(|(_, p)| p.parse::<i64>().ok());
            if press.is_some_and(|p| !unfinished.contains(&p)) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    /// The message an update's prompt is made from, and that message's update: the message
    /// itself, or for a pressed Retry the message it retries. `None` for anything else.
    fn resolve(&self, update_id: i64, update: &Value) -> Option<(InMessage, Value)> {
        match update::parse(update) {
            Inbound::Message(m) if !m.text.trim_start().starts_with('/') => Some((m, update.clone())),
            Inbound::Callback(c) => {
                let kept = c.data.strip_prefix(RETRY_PREFIX)?.parse::<i64>().ok()?;
                let v = load(&self.pressed_file(kept, update_id))?;
                match update::parse(&v) {
                    Inbound::Message(m) => Some((m, v)),
                    Inbound::Callback(_) | Inbound::Stop(_) | Inbound::CallbackWithoutChat(_) | Inbound::Other => None,
                }
            }
            Inbound::Message(_) | Inbound::Stop(_) | Inbound::CallbackWithoutChat(_) | Inbound::Other => None,
        }
    }

    /// Keeps the update `update_id` (`update`) for a Retry button.
    fn keep_for_retry(&self, update_id: i64, update: &Value) {
        let path = self.retry_file(update_id);
        if let Err(e) = crate::telegram::conversation::store_file::save_json(&path, update) {
            tracing::error!(file = %path.display(), "cannot keep the interrupted update for a retry: {e}");
        }
    }

    /// Tells the chat `to` that the run of update `update_id` was cut off (`text`), under a
    /// Retry button; the update is kept for it already ([`keep_for_retry`](Self::keep_for_retry)).
    async fn offer_retry(&self, to: Target, update_id: i64, text: &str) {
        let button = InlineKeyboardButton::callback("Retry", format!("{RETRY_PREFIX}{update_id}"));
        let r = self
            .tg
            .send_plain(to, text, Some(InlineKeyboardMarkup::new(vec![vec![button]])))
            .await;
        if let Err(e) = r {
            tracing::error!(chat = to.chat_id, "cannot tell the chat about the interrupted run: {e}");
        }
    }

    /// The Retry button of `kept`, pressed (update `press_id`): runs the kept message again as
    /// the press's own prompt. Once: the first press takes the kept copy; a press handled again
    /// after a crash finds the copy it took.
    /// Called on the polling path: what it sends is sent in the background.
    pub fn retry(self: &Arc<Self>, press_id: i64, kept: i64, target: Target, button_message: i64) {
        let offered = self.retry_file(kept);
        let pressed = self.pressed_file(kept, press_id);
        if offered.exists()
            && let Err(e) = std::fs::rename(&offered, &pressed)
        {
            tracing::error!(file = %offered.display(), "cannot take the kept message for a retry: {e}");
        }
        let update = load(&pressed);
        if let Ok(id) = i32::try_from(button_message) {
            let tg = self.tg.clone();
            // Under the down report, only the pressed line changes.
            let report = self.down_report.pressed(target, button_message, kept);
            tokio::spawn(async move {
                match report {
                    Some((text, markup)) => {
                        if let Err(e) = tg.edit_with_buttons(target, id, &text, markup).await {
                            tracing::warn!(chat = target.chat_id, "cannot mark a Retry in the down report: {e}");
                        }
                    }
                    None => tg.edit_progress(target, id, "🔁 Retrying.").await,
                }
            });
        }
        match update.map(|u| update::parse(&u)) {
            Some(Inbound::Message(m)) if m.chat_id == target.chat_id => {
                let text = crate::telegram::inbound::router::strip_mention(&m.text, &self.bot_username);
                self.prompt(press_id, m, text);
            }
            Some(
                Inbound::Message(_)
                | Inbound::Callback(_)
                | Inbound::Stop(_)
                | Inbound::CallbackWithoutChat(_)
                | Inbound::Other,
            )
            | None => {
                let host = self.clone();
                tokio::spawn(async move {
                    let _ = host.tg.send_plain(target, texts::RETRY_GONE, None).await;
                    host.journal.mark(press_id, Progress::Done);
                });
            }
        }
    }
}

fn load(path: &std::path::Path) -> Option<Value> {
    match crate::telegram::conversation::store_file::load_json(path) {
        Ok(crate::telegram::conversation::store_file::Loaded::Ok(v)) => Some(v),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use volcanic_abstractions::messages::{AssistantMessage, StopReason, UserBody, UserMessage};

    fn user(t: &str) -> Message {
        Message::User(UserMessage {
            content: UserBody::Text(t.into()),
            timestamp: 0,
        })
    }

    fn assistant(t: &str, stop: StopReason) -> Message {
        let mut a = AssistantMessage::empty("anthropic-messages", "anthropic", "m", 0);
        a.content.push(volcanic_abstractions::messages::AssistantContent::Text(
            volcanic_abstractions::messages::TextContent {
                text: t.into(),
                text_signature: None,
            },
        ));
        a.stop_reason = stop;
        Message::Assistant(a)
    }

    #[test]
    fn an_answer_is_the_first_final_message_after_its_prompt_and_the_prompts_taken_with_it() {
        let msgs = vec![
            user("p1"),
            assistant("a1", StopReason::Stop),
            user("p2"),
            user("p3"),
            assistant("a23", StopReason::Stop),
            user("p4"),
        ];
        let d = |t: &str| prompt_digest(t);
        assert_eq!(locate(&msgs, &d("p2")), Some(2));
        assert_eq!(answer_after(&msgs, 2), Some((4, "a23".into())));
        assert_eq!(answer_after(&msgs, 3), Some((4, "a23".into())));
        assert_eq!(answer_after(&msgs, 0), Some((1, "a1".into())));
        // Cut off: nothing after it, or only an aborted message.
        assert_eq!(answer_after(&msgs, 5), None);
        let cut = vec![user("p"), assistant("", StopReason::Aborted), user("q")];
        assert_eq!(answer_after(&cut, 0), None);
        assert_eq!(locate(&msgs, &d("nope")), None);
    }
}
