//! The Telegram host's side of the chat port ([`ChatPort`]): what host features do in chats,
//! done with the host's own parts (the Bot API client, each conversation's session and output,
//! the journal's delivery bookkeeping), none of which a feature sees.

use crate::features::port::{
    ChatPort, Delivered, DownLine, LinePrompt, OwnSession, PRESS_DATA_LIMIT, PortError, PressButton, Target, UrlButton,
    settled_answer,
};
use crate::telegram::TelegramHost;
use crate::telegram::conversation::conversations::{CLOSED_TRIES, Conversation};
use crate::telegram::conversation::down_report::Line;
use crate::telegram::inbound::journal::{Answering, prompt_digest};
use crate::telegram::inbound::shortage;
use crate::telegram::outbound::api::{Tg, Upload};
use async_trait::async_trait;
use std::sync::{Arc, OnceLock, Weak};
use teloxide::RequestError;
use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup};
use volcanic_abstractions::messages::Message;
use volcanic_abstractions::shortage::plain;
use volcanic_core::agent::{AgentSession, PromptInput, QueueMode, SessionError};

/// The chat port on Telegram: bound to the host once it exists (features are built before it,
/// since chat sessions get their extensions).
#[derive(Debug)]
pub struct TelegramPort {
    api: Arc<Tg>,
    host: OnceLock<Weak<TelegramHost>>,
}

impl TelegramPort {
    /// A port sending through `api`; [`bind`](Self::bind) it to the host before use.
    pub fn new(api: Arc<Tg>) -> Self {
        TelegramPort {
            api,
            host: OnceLock::new(),
        }
    }

    /// Connects it to the host.
    pub fn bind(&self, host: Weak<TelegramHost>) {
        let _ = self.host.set(host);
    }

    fn host(&self) -> Result<Arc<TelegramHost>, PortError> {
        self.host.get().and_then(Weak::upgrade).ok_or(PortError::ShuttingDown)
    }

    /// The conversation of `to` (created on first contact) and its host.
    fn conversation(&self, to: Target) -> Result<(Arc<TelegramHost>, Arc<Conversation>), PortError> {
        let host = self.host()?;
        let conversation = host.chats.conversation(to);
        Ok((host, conversation))
    }
}

#[async_trait]
impl ChatPort for TelegramPort {
    async fn send(&self, to: Target, text: &str, buttons: &[UrlButton]) -> Result<(), PortError> {
        let markup = (!buttons.is_empty()).then(|| {
            InlineKeyboardMarkup::new([buttons
                .iter()
                .map(|b| InlineKeyboardButton::url(b.text.clone(), b.url.clone()))])
        });
        self.api.send_plain(to, text, markup).await.map(|_| ()).map_err(refused)
    }

    async fn offer(&self, to: Target, text: &str, rows: &[Vec<PressButton>]) -> Result<i64, PortError> {
        let markup = press_markup(rows)?;
        self.api
            .send_plain(to, text, markup)
            .await
            .map(|m| i64::from(m.id.0))
            .map_err(refused)
    }

    async fn edit(&self, to: Target, message_id: i64, text: &str, rows: &[Vec<PressButton>]) -> Result<(), PortError> {
        let markup = press_markup(rows)?;
        let id = i32::try_from(message_id).map_err(|_| PortError::Refused(format!("no message {message_id}")))?;
        self.api.edit_with_buttons(to, id, text, markup).await.map_err(refused)
    }

    async fn send_photo(&self, to: Target, png: Vec<u8>, caption: &str) -> Result<(), PortError> {
        self.api
            .send_bytes(to, Upload::Photo, "chart.png", png, Some(caption))
            .await
            .map(|_| ())
            .map_err(refused)
    }

    async fn delete(&self, to: Target, message_id: i64) -> Result<(), PortError> {
        let id = i32::try_from(message_id).unwrap_or_default();
        self.api.try_delete(to, id).await.map_err(refused)
    }

    async fn notice(&self, to: Target, text: String) -> Result<(), PortError> {
        let (_, conversation) = self.conversation(to)?;
        let output = &conversation.output;
        let failed_before = output.failed_sends();
        output.notice(text);
        output.flush().await;
        if output.failed_sends() > failed_before {
            return Err(PortError::Refused("Telegram did not take the notice".into()));
        }
        Ok(())
    }

    async fn deliver(&self, prompt: LinePrompt) -> Result<Delivered, PortError> {
        let (host, conversation) = self.conversation(prompt.to)?;
        // A session closed under its use took nothing: by the shutdown (the job is taken up
        // after the restart), else a fresh session takes it (see `handoff::submit`).
        for _ in 0..CLOSED_TRIES {
            let session = host
                .chats
                .session(&conversation)
                .await
                .map_err(|e| PortError::Session(format!("{:#}", shortage::plainly(e))))?;
            if let Some(delivered) = deliver_in(&host, &conversation, &session, &prompt).await? {
                return Ok(delivered);
            }
            if host.shutdown.is_cancelled() {
                return Err(PortError::ShuttingDown);
            }
            tracing::warn!(
                chat = conversation.target.chat_id,
                "the chat's session was closed under a delivery: handed to a fresh one"
            );
        }
        Err(not_run(SessionError::Closed))
    }

    async fn while_down(&self, lines: Vec<(Target, DownLine)>) -> Result<(), PortError> {
        let lines = lines
            .into_iter()
            .map(|(to, l)| {
                let line = Line {
                    key: l.key,
                    text: l.text,
                    retry: None,
                };
                (to, line)
            })
            .collect();
        self.host()?
            .down_report
            .caught_up(lines)
            .await
            .map_err(|e| PortError::Refused(format!("cannot write the down report: {}", plain(&e))))
    }

    async fn own_session(&self, spec: OwnSession) -> anyhow::Result<AgentSession> {
        self.host()?.chats.own_session(spec).await.map_err(shortage::plainly)
    }
}

/// [`ChatPort::deliver`] once the session is open: queued behind a run in progress, its answer's
/// delivery journaled under the prompt's key. `None`: the session was closed and took nothing.
async fn deliver_in(
    host: &TelegramHost,
    conversation: &Conversation,
    session: &AgentSession,
    prompt: &LinePrompt,
) -> Result<Option<Delivered>, PortError> {
    let output = &conversation.output;
    // Queued behind a run in progress: failures of that run's answer are not ours.
    session.wait_for_idle().await;
    output.flush().await;
    let failed_before = output.failed_sends();
    let listener = prompt
        .watch
        .clone()
        .map(|watch| session.subscribe(move |e| watch.on_event(e)));
    let key = prompt_digest(&prompt.key);
    // Cut off by a crash and handed in again: its prompt may be in the transcript already.
    let messages = session.messages();
    let earlier = messages
        .iter()
        .rposition(|m| matches!(m, Message::User(u) if (prompt.is_this)(&u.content.text())));
    if let Some((stamp, answer)) = earlier.and_then(|i| settled_answer(&messages, i)) {
        if let Some(l) = listener {
            session.unsubscribe(l);
        }
        deliver_earlier(host, conversation, key, stamp, answer).await;
        return Ok(Some(Delivered::Earlier));
    }
    // The prompt is the last message: its run goes on from it (not asked twice).
    let resumed = earlier.filter(|i| i + 1 == messages.len()).and_then(|i| {
        if let Message::User(u) = &messages[i] {
            Some(prompt_digest(&u.content.text()))
        } else {
            None
        }
    });
    let prompted = hand_over(conversation, session, prompt, key, resumed).await;
    // Queued behind a run in progress: it ran at that run's end.
    session.wait_for_idle().await;
    if let Some(l) = listener {
        session.unsubscribe(l);
    }
    match prompted {
        Err(SessionError::Closed) => return Ok(None),
        prompted => prompted.map_err(not_run)?,
    }
    output.flush().await;
    Ok(Some(Delivered::Ran {
        messages: session.messages(),
        undelivered: output.failed_sends() - failed_before,
    }))
}

/// An answer the transcript already holds (stamped `stamp`): not asked again. Shown by this
/// process (a run that took the prompt along), or before a crash: delivered from the chunk
/// after the last one Telegram took or had on the wire, or not at all when it was delivered
/// whole.
async fn deliver_earlier(host: &TelegramHost, conversation: &Conversation, key: String, stamp: i64, answer: String) {
    let output = &conversation.output;
    if output.was_shown(stamp) {
        return;
    }
    match host.journal.delivery_resume_at(&key) {
        Some(from) => output.answer(answer, Answering::delivery(key), 0, from),
        None => tracing::info!(
            chat = conversation.target.chat_id,
            "a feature's answer was delivered before the restart"
        ),
    }
    output.flush().await;
}

/// Hands the prompt to the session, its answer's delivery noted in the ledger under `key`: as
/// a follow-up, or, when `resumed` (the digest of its user message, the transcript's last), by
/// continuing the run cut off after it.
async fn hand_over(
    conversation: &Conversation,
    session: &AgentSession,
    prompt: &LinePrompt,
    key: String,
    resumed: Option<String>,
) -> Result<(), SessionError> {
    let ledger = &conversation.ledger;
    if let Some(digest) = resumed {
        if let Some(watch) = &prompt.watch {
            watch.resumed();
        }
        ledger.resume_delivery(key.clone(), &digest);
        let went_on = session.continue_run().await;
        if !matches!(went_on, Ok(true)) {
            ledger.forget_delivery(key);
        }
        return went_on.map(|_| ());
    }
    ledger.queue_delivery(key.clone(), &prompt.text);
    let input = PromptInput {
        text: prompt.text.clone(),
        images: Vec::new(),
        queue: Some(QueueMode::FollowUp),
    };
    let prompted = session.prompt(input).await;
    if prompted.is_err() {
        ledger.forget_delivery(key);
    }
    prompted
}

/// Telegram's refusal `e` as the port error a feature passes on: a shortage on this machine
/// (no descriptor for the request) said plainly, never the OS error's text.
fn refused(e: RequestError) -> PortError {
    PortError::Refused(plain(&e))
}

/// Why a prompt handed to a chat's session did not run: the spend gate's refusal, or the
/// session's failure, a shortage (e.g. no descriptor to append to the session file) said
/// plainly, never the OS error's text (issue 25).
fn not_run(e: SessionError) -> PortError {
    match e {
        SessionError::Allowance(refused) => PortError::Spent(refused.message),
        e => PortError::Prompt(plain(&e)),
    }
}

/// `rows` as an inline keyboard (`None` when empty). Errors: a button's data past the Bot API's
/// limit.
fn press_markup(rows: &[Vec<PressButton>]) -> Result<Option<InlineKeyboardMarkup>, PortError> {
    if let Some(b) = rows.iter().flatten().find(|b| b.data.len() > PRESS_DATA_LIMIT) {
        return Err(PortError::Refused(format!(
            "button \u{201c}{}\u{201d}: its data has {} bytes, more than {PRESS_DATA_LIMIT}",
            b.text,
            b.data.len()
        )));
    }
    let rows: Vec<Vec<InlineKeyboardButton>> = rows
        .iter()
        .filter(|r| !r.is_empty())
        .map(|r| {
            r.iter()
                .map(|b| InlineKeyboardButton::callback(b.text.clone(), b.data.clone()))
                .collect()
        })
        .collect();
    Ok((!rows.is_empty()).then(|| InlineKeyboardMarkup::new(rows)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use volcanic_abstractions::sessions::SessionStoreError;

    #[test]
    fn a_prompt_that_met_a_shortage_is_a_port_error_without_the_os_text() {
        let store = |errno| {
            SessionError::Store(SessionStoreError::Io {
                action: "open for appending",
                path: "/data/sessions/1001/main/s.jsonl".into(),
                source: std::io::Error::from_raw_os_error(errno),
            })
        };
        let short = not_run(store(libc::EMFILE));
        assert!(matches!(&short, PortError::Prompt(_)), "{short:?}");
        assert_eq!(short.to_string(), "the bot's machine is short of open files");
        let denied = not_run(store(libc::EACCES)).to_string();
        assert!(
            denied.starts_with("session store: cannot open for appending /data/"),
            "{denied}"
        );
    }
}
