//! `UserInterface` on Telegram: `select`/`confirm` as inline-keyboard buttons answered by callback
//! query, `input` as the user's next message in the chat (or topic), `notify` as a message,
//! `status` as a chat action. Answers reach the waiting call through [`Pending`], fed by the router
//! (which never waits for a run, so a run waiting for a button does not block the chat).

use super::api::{Target, Tg};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::ui::{NotifyLevel, UserInterface};

/// Prefix of the callback data of UI buttons: `ui:<request>:<option index>`.
pub const UI_PREFIX: &str = "ui:";

/// A question with buttons: where it was asked, its options, who waits for the answer.
type Question = (Target, Vec<String>, oneshot::Sender<String>);

/// Questions waiting for a button press or the next message.
#[derive(Debug, Default)]
pub struct Pending {
    next: AtomicU64,
    buttons: Mutex<HashMap<u64, Question>>,
    inputs: Mutex<HashMap<Target, oneshot::Sender<String>>>,
}

impl Pending {
    /// Delivers a button press (`ui:<request>:<index>` from `chat`). Returns the chosen option
    /// when it answered a waiting question.
    pub fn press(&self, chat: Target, data: &str) -> Option<String> {
        let rest = data.strip_prefix(UI_PREFIX)?;
        let (req, idx) = rest.split_once(':')?;
        let (req, idx): (u64, usize) = (req.parse().ok()?, idx.parse().ok()?);
        let mut map = self.buttons.lock().unwrap_or_else(|e| e.into_inner());
        // Only the chat the question was asked in may answer it.
        let (asked_in, options, _) = map.get(&req)?;
        if asked_in.chat_id != chat.chat_id {
            return None;
        }
        let choice = options.get(idx)?.clone();
        let (_, _, tx) = map.remove(&req)?;
        tx.send(choice.clone()).ok()?;
        Some(choice)
    }

    /// Hands the user's next message to a waiting `input`; `false` when none waits.
    pub fn answer_input(&self, chat: Target, text: &str) -> bool {
        let tx = self.inputs.lock().unwrap_or_else(|e| e.into_inner()).remove(&chat);
        tx.is_some_and(|tx| tx.send(text.to_owned()).is_ok())
    }
}

/// The UI of one chat (or topic).
#[derive(Debug)]
pub struct TelegramUi {
    /// Outgoing API.
    pub tg: Arc<Tg>,
    /// Where questions go.
    pub target: Target,
    /// Shared with the router.
    pub pending: Arc<Pending>,
}

#[async_trait]
impl UserInterface for TelegramUi {
    async fn select(&self, title: &str, options: &[String], cancel: CancellationToken) -> Option<String> {
        let req = self.pending.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending
            .buttons
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(req, (self.target, options.to_vec(), tx));
        let rows: Vec<Vec<InlineKeyboardButton>> = options
            .iter()
            .enumerate()
            .map(|(i, o)| {
                vec![InlineKeyboardButton::callback(
                    o.clone(),
                    format!("{UI_PREFIX}{req}:{i}"),
                )]
            })
            .collect();
        let sent = self
            .tg
            .send_plain(self.target, title, Some(InlineKeyboardMarkup::new(rows)))
            .await;
        let message_id = match sent {
            Ok(m) => m.id.0,
            Err(e) => {
                tracing::warn!(chat = self.target.chat_id, "cannot ask with buttons: {e}");
                self.pending
                    .buttons
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&req);
                return None;
            }
        };
        let choice = tokio::select! {
            c = rx => c.ok(),
            () = cancel.cancelled() => None,
        };
        self.pending
            .buttons
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&req);
        // Show what was chosen in place of the buttons.
        let shown = match &choice {
            Some(c) => format!("{title}\n→ {c}"),
            None => format!("{title}\n→ (no answer)"),
        };
        self.tg.edit_progress(self.target, message_id, &shown).await;
        choice
    }

    async fn confirm(&self, title: &str, message: &str, cancel: CancellationToken) -> Option<bool> {
        let text = if message.is_empty() {
            title.to_owned()
        } else {
            format!("{title}\n{message}")
        };
        let yes_no = ["Yes".to_owned(), "No".to_owned()];
        self.select(&text, &yes_no, cancel).await.map(|c| c == "Yes")
    }

    async fn input(&self, title: &str, placeholder: Option<&str>, cancel: CancellationToken) -> Option<String> {
        let (tx, rx) = oneshot::channel();
        self.pending
            .inputs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(self.target, tx);
        let text = match placeholder {
            Some(p) => format!("{title}\n(reply with a message, e.g. {p})"),
            None => format!("{title}\n(reply with a message)"),
        };
        if let Err(e) = self.tg.send_plain(self.target, &text, None).await {
            tracing::warn!(chat = self.target.chat_id, "cannot ask for input: {e}");
        }
        let answer = tokio::select! {
            a = rx => a.ok(),
            () = cancel.cancelled() => None,
        };
        self.pending
            .inputs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.target);
        answer
    }

    async fn notify(&self, message: &str, level: NotifyLevel) {
        let prefix = match level {
            NotifyLevel::Info => "ℹ️",
            NotifyLevel::Warning => "⚠️",
            NotifyLevel::Error => "❌",
        };
        if let Err(e) = self
            .tg
            .send_plain(self.target, &format!("{prefix} {message}"), None)
            .await
        {
            tracing::warn!(chat = self.target.chat_id, "cannot notify: {e}");
        }
    }

    async fn status(&self, _key: &str, text: Option<&str>) {
        if text.is_some() {
            self.tg.typing(self.target).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_press_answers_only_its_own_chat() {
        let p = Pending::default();
        let (tx, mut rx) = oneshot::channel();
        let here = Target {
            chat_id: 1,
            thread: None,
        };
        p.buttons
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(7, (here, vec!["Allow".into(), "Block".into()], tx));
        assert_eq!(
            p.press(
                Target {
                    chat_id: 2,
                    thread: None
                },
                "ui:7:0"
            ),
            None
        );
        assert_eq!(p.press(here, "ui:7:9"), None);
        assert_eq!(p.press(here, "ui:7:1").as_deref(), Some("Block"));
        assert_eq!(rx.try_recv().ok().as_deref(), Some("Block"));
        assert_eq!(p.press(here, "ui:7:0"), None, "answered once");
    }
}
