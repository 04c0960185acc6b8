//! The owners' consent to a global fact: the tool's `scope: "global"` sends every owner (in their
//! private chat with the bot) the fact with "Share everywhere" / "Don't share" buttons and waits
//! for the first owner's press, or [`TIMEOUT`].

use super::PREFIX;
use crate::features::port::{ChatPort, PressButton, Target};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use volcanic_memory::Answer;

/// How long the tool waits for an owner.
pub const TIMEOUT: Duration = Duration::from_secs(600);

/// A question waiting for an owner: its answer's channel and where it was asked.
struct Waiting {
    answer: oneshot::Sender<bool>,
    asked: Vec<(Target, i64)>,
    text: String,
}

/// Asks the owners through the chat port.
pub struct OwnerConsent {
    chats: Arc<dyn ChatPort>,
    owners: Vec<i64>,
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, Waiting>>,
}

impl std::fmt::Debug for OwnerConsent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnerConsent")
            .field("owners", &self.owners)
            .finish_non_exhaustive()
    }
}

impl OwnerConsent {
    /// Asks `owners` (user ids, whose private chats have the same ids) through `chats`.
    pub fn new(chats: Arc<dyn ChatPort>, owners: Vec<i64>) -> OwnerConsent {
        OwnerConsent {
            chats,
            owners,
            next: AtomicU64::new(1),
            waiting: Mutex::default(),
        }
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Waiting>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An owner's press on question `id` (`yes`: share); returns the toast. The question's
    /// messages show the decision in place of their buttons.
    pub async fn answer(&self, id: u64, yes: bool, owner: bool) -> String {
        if !owner {
            return "Only an owner decides what every chat remembers.".into();
        }
        let Some(w) = self.waiting().remove(&id) else {
            return "This question was already answered or has expired.".into();
        };
        let _ = w.answer.send(yes);
        let shown = match yes {
            true => format!("Shared with every chat: \u{201c}{}\u{201d}", w.text),
            false => format!("Not shared: \u{201c}{}\u{201d}", w.text),
        };
        for (to, message_id) in w.asked {
            if let Err(e) = self.chats.edit(to, message_id, &shown, &[]).await {
                tracing::debug!(chat = to.chat_id, "cannot close a memory question: {e}");
            }
        }
        if yes { "Shared.".into() } else { "Not shared.".into() }
    }
}

#[async_trait]
impl volcanic_memory::Consent for OwnerConsent {
    async fn ask_global(&self, key: &str, text: &str, cancel: CancellationToken) -> Answer {
        if self.owners.is_empty() {
            return Answer::CannotAsk("the bot has no owners (telegram.owners)".into());
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let question =
            format!("The assistant in chat {key} asks to remember this in every chat:\n\u{201c}{text}\u{201d}");
        let buttons = [vec![
            PressButton {
                text: "Share everywhere".into(),
                data: format!("{PREFIX}q:{id}:y"),
            },
            PressButton {
                text: "Don't share".into(),
                data: format!("{PREFIX}q:{id}:n"),
            },
        ]];
        let mut asked = Vec::new();
        let mut refusals = Vec::new();
        for &owner in &self.owners {
            let to = Target {
                chat_id: owner,
                thread: None,
            };
            match self.chats.offer(to, &question, &buttons).await {
                Ok(message_id) => asked.push((to, message_id)),
                Err(e) => refusals.push(format!("owner {owner}: {e}")),
            }
        }
        if asked.is_empty() {
            return Answer::CannotAsk(refusals.join("; "));
        }
        self.waiting().insert(
            id,
            Waiting {
                answer: tx,
                asked,
                text: text.to_owned(),
            },
        );
        let answer = tokio::select! {
            a = rx => a.ok(),
            () = tokio::time::sleep(TIMEOUT) => None,
            () = cancel.cancelled() => None,
        };
        match answer {
            Some(true) => Answer::Shared,
            Some(false) => Answer::Declined,
            None => {
                self.waiting().remove(&id);
                Answer::NoAnswer
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::features::port::{Delivered, LinePrompt, OwnSession, PortError, UrlButton};
    use volcanic_core::agent::AgentSession;
    use volcanic_memory::Consent;

    /// A port that takes every offer (ids from 1) and keeps the edits.
    #[derive(Debug, Default)]
    struct Port {
        edits: Mutex<Vec<String>>,
        offers: AtomicU64,
    }

    #[async_trait]
    impl ChatPort for Port {
        async fn send(&self, _: Target, _: &str, _: &[UrlButton]) -> Result<(), PortError> {
            Ok(())
        }
        async fn offer(&self, _: Target, _: &str, _: &[Vec<PressButton>]) -> Result<i64, PortError> {
            Ok(self.offers.fetch_add(1, Ordering::Relaxed) as i64 + 1)
        }
        async fn edit(&self, _: Target, _: i64, text: &str, _: &[Vec<PressButton>]) -> Result<(), PortError> {
            self.edits.lock().unwrap().push(text.to_owned());
            Ok(())
        }
        async fn delete(&self, _: Target, _: i64) -> Result<(), PortError> {
            Ok(())
        }
        async fn notice(&self, _: Target, _: String) -> Result<(), PortError> {
            Ok(())
        }
        async fn deliver(&self, _: LinePrompt) -> Result<Delivered, PortError> {
            Err(PortError::ShuttingDown)
        }
        async fn own_session(&self, _: OwnSession) -> anyhow::Result<AgentSession> {
            anyhow::bail!("no sessions here")
        }
    }

    #[tokio::test(start_paused = true)]
    async fn without_an_answer_the_question_expires_and_a_late_press_is_told_so() {
        let port = Arc::new(Port::default());
        let consent = OwnerConsent::new(port.clone(), vec![1, 2]);
        let answer = consent.ask_global("g5", "Likes tea", CancellationToken::new()).await;
        assert_eq!(answer, Answer::NoAnswer);
        assert_eq!(port.offers.load(Ordering::Relaxed), 2, "every owner was asked");
        assert!(consent.answer(1, true, true).await.contains("expired"));
        assert!(port.edits.lock().unwrap().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn no_owners_cannot_be_asked() {
        let consent = OwnerConsent::new(Arc::new(Port::default()), Vec::new());
        let answer = consent.ask_global("g5", "Likes tea", CancellationToken::new()).await;
        assert!(matches!(answer, Answer::CannotAsk(why) if why.contains("no owners")));
    }
}
