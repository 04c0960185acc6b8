//! `UserInterface` on Telegram: `select`/`confirm` as inline-keyboard buttons answered by callback
//! query, `input` as the user's next message in the chat (or topic), `notify` as a message,
//! `status` as a chat action. Answers reach the waiting call through [`Pending`], fed by the router
//! (which never waits for a run, so a run waiting for a button does not block the chat).
//!
//! A question too long for one message is shortened to fit, its whole text sent just before as
//! a file; a question Telegram refuses is an [`AskError`] ("could not ask the user: ..."), never
//! an answer: the `try_` forms return it, the plain forms tell the chat and return `None`.

use crate::features::port::Target;
use crate::telegram::outbound::api::{Tg, Upload, refusal};
use crate::telegram::outbound::ledger::Ledger;
use crate::telegram::outbound::render::utf16_len;
use crate::telegram::outbound::texts;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::ui::{AskError, NotifyLevel, UserInterface};

/// Prefix of the callback data of UI buttons: `ui:<request>:<option index>`.
pub const UI_PREFIX: &str = "ui:";

/// The person a question is asked for: the sender of the prompt the run is working on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asker {
    /// Telegram user id.
    pub id: i64,
    /// Display name, for the toast others get.
    pub name: String,
}

/// A question with buttons: where it was asked, its options, for whom, who waits for the answer.
#[derive(Debug)]
struct Question {
    at: Target,
    options: Vec<String>,
    /// `None`: nobody's prompt (a scheduled job, a resumed run, a command): see [`Pending::press`].
    asked_for: Option<Asker>,
    tx: oneshot::Sender<String>,
}

/// What a press on a question's button did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Press {
    /// It answered the question with this option.
    Answered(String),
    /// The presser may not answer it: it is for the person named (`None`: for an owner). The
    /// question stays open.
    NotFor(Option<String>),
    /// Pressed on a message of another chat or topic than the question's; it stays open.
    Elsewhere,
    /// No question waits for this button (already answered, or not a question's button).
    Nothing,
}

/// Questions waiting for a button press or the next message.
#[derive(Debug, Default)]
pub struct Pending {
    next: AtomicU64,
    buttons: Mutex<HashMap<u64, Question>>,
    inputs: Mutex<HashMap<Target, Input>>,
}

/// A question waiting for a typed answer: for whom, who waits for it.
#[derive(Debug)]
struct Input {
    /// As [`Question::asked_for`].
    asked_for: Option<Asker>,
    tx: oneshot::Sender<String>,
}

/// Whether `who` may answer a question asked in `at` for `asked_for`: that person or an
/// `owner`; one asked for nobody in particular, the user of its private chat or an owner
/// (deny by default in a group).
fn may_answer(asked_for: Option<&Asker>, at: Target, who: i64, owner: bool) -> bool {
    owner
        || match asked_for {
            Some(asker) => asker.id == who,
            None => at.chat_id == who,
        }
}

impl Pending {
    /// Delivers a button press (`ui:<request>:<index>`) by user `presser` on a message in `at`.
    /// A question is answered only from its own chat and topic, and only as [`may_answer`] says.
    pub fn press(&self, at: Target, presser: i64, owner: bool, data: &str) -> Press {
        let Some((req, idx)) = parse_button(data) else {
            return Press::Nothing;
        };
        let mut map = self.buttons.lock().unwrap_or_else(|e| e.into_inner());
        let Some(q) = map.get(&req) else {
            return Press::Nothing;
        };
        if q.at != at {
            return Press::Elsewhere;
        }
        if !may_answer(q.asked_for.as_ref(), at, presser, owner) {
            return Press::NotFor(q.asked_for.as_ref().map(|a| a.name.clone()));
        }
        let Some(choice) = q.options.get(idx).cloned() else {
            return Press::Nothing;
        };
        let answered = map.remove(&req).is_some_and(|q| q.tx.send(choice.clone()).is_ok());
        if answered {
            Press::Answered(choice)
        } else {
            Press::Nothing
        }
    }

    /// Hands a message of user `from` in `chat` to the `input` waiting there, if it is theirs
    /// to answer ([`may_answer`]); `false` when none waits for them (the message is then a
    /// prompt like any other).
    pub fn answer_input(&self, chat: Target, from: i64, owner: bool, text: &str) -> bool {
        let mut inputs = self.inputs.lock().unwrap_or_else(|e| e.into_inner());
        let theirs = inputs
            .get(&chat)
            .is_some_and(|i| may_answer(i.asked_for.as_ref(), chat, from, owner));
        theirs && inputs.remove(&chat).is_some_and(|i| i.tx.send(text.to_owned()).is_ok())
    }
}

/// `ui:<request>:<index>` as numbers.
fn parse_button(data: &str) -> Option<(u64, usize)> {
    let (req, idx) = data.strip_prefix(UI_PREFIX)?.split_once(':')?;
    Some((req.parse().ok()?, idx.parse().ok()?))
}

/// Telegram's limit for the text of one message, in UTF-16 units (Bot API `sendMessage`:
/// "1-4096 characters after entities parsing").
pub const MESSAGE_LIMIT: usize = 4096;

/// `text` cut to fit `limit` UTF-16 units with `tail` after it on a line of its own; `None`
/// when it fits as it is. A cut never splits a character.
pub fn fit(text: &str, limit: usize, tail: &str) -> Option<String> {
    if utf16_len(text) <= limit {
        return None;
    }
    let budget = limit.saturating_sub(utf16_len(tail) + 1);
    let mut used = 0;
    let end = text
        .char_indices()
        .find(|(_, c)| {
            used += c.len_utf16();
            used > budget
        })
        .map_or(text.len(), |(i, _)| i);
    Some(format!("{}\n{tail}", text[..end].trim_end()))
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
    /// The conversation's prompts in flight: whom a question is for ([`Ledger::asker`]).
    pub ledger: Arc<Ledger>,
}

impl TelegramUi {
    /// Sends a question as plain text. One too long for a message (with `reserve` units left
    /// for what is added when it is answered) goes first whole, as [`texts::QUESTION_FILE`],
    /// then shortened with the buttons: the user always sees what they decide on. Returns the
    /// message and its text as shown.
    async fn put_question(
        &self,
        text: &str,
        reserve: usize,
        markup: Option<InlineKeyboardMarkup>,
    ) -> Result<(i32, String), AskError> {
        let shown = match fit(text, MESSAGE_LIMIT.saturating_sub(reserve), texts::QUESTION_SHORTENED) {
            None => text.to_owned(),
            Some(short) => {
                self.tg
                    .send_bytes(
                        self.target,
                        Upload::Document,
                        texts::QUESTION_FILE,
                        text.as_bytes().to_vec(),
                        Some(texts::QUESTION_FILE_CAPTION),
                    )
                    .await
                    .map_err(|e| {
                        AskError(format!(
                            "the question is too long for a message and Telegram refused it as a file ({})",
                            refusal(&e)
                        ))
                    })?;
                short
            }
        };
        match self.tg.send_plain(self.target, &shown, markup).await {
            Ok(m) => Ok((m.id.0, shown)),
            Err(e) => Err(AskError(format!("Telegram refused the question ({})", refusal(&e)))),
        }
    }

    /// Tells the chat that a question could not be shown, for callers of the plain forms,
    /// which can only get "no answer" (best effort: the question's own send just failed).
    async fn tell_not_asked(&self, e: &AskError) {
        tracing::warn!(chat = self.target.chat_id, "{e}");
        let text = texts::could_not_ask(&e.0);
        let text = fit(&text, MESSAGE_LIMIT, texts::SHORTENED).unwrap_or(text);
        if let Err(e) = self.tg.send_plain(self.target, &text, None).await {
            tracing::warn!(
                chat = self.target.chat_id,
                "cannot tell the chat either: {}",
                refusal(&e)
            );
        }
    }

    fn forget_buttons(&self, req: u64) {
        self.pending
            .buttons
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&req);
    }

    fn forget_input(&self) {
        self.pending
            .inputs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.target);
    }
}

#[async_trait]
impl UserInterface for TelegramUi {
    async fn select(&self, title: &str, options: &[String], cancel: CancellationToken) -> Option<String> {
        match self.try_select(title, options, cancel).await {
            Ok(choice) => choice,
            Err(e) => {
                self.tell_not_asked(&e).await;
                None
            }
        }
    }

    async fn confirm(&self, title: &str, message: &str, cancel: CancellationToken) -> Option<bool> {
        match self.try_confirm(title, message, cancel).await {
            Ok(yes) => yes,
            Err(e) => {
                self.tell_not_asked(&e).await;
                None
            }
        }
    }

    async fn input(&self, title: &str, placeholder: Option<&str>, cancel: CancellationToken) -> Option<String> {
        match self.try_input(title, placeholder, cancel).await {
            Ok(answer) => answer,
            Err(e) => {
                self.tell_not_asked(&e).await;
                None
            }
        }
    }

    async fn try_select(
        &self,
        title: &str,
        options: &[String],
        cancel: CancellationToken,
    ) -> Result<Option<String>, AskError> {
        if options.is_empty() {
            return Err(AskError("the question had no options to choose from".into()));
        }
        let title = if title.trim().is_empty() { "Choose one:" } else { title };
        let req = self.pending.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let question = Question {
            at: self.target,
            options: options.to_vec(),
            asked_for: self.ledger.asker(),
            tx,
        };
        self.pending
            .buttons
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(req, question);
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
        // Room for "\n→ <choice>" shown once answered.
        let reserve = 3 + options.iter().map(|o| utf16_len(o)).max().unwrap_or(0);
        let sent = tokio::select! {
            sent = self.put_question(title, reserve, Some(InlineKeyboardMarkup::new(rows))) => sent,
            () = cancel.cancelled() => {
                self.forget_buttons(req);
                return Ok(None);
            }
        };
        let (message_id, shown) = match sent {
            Ok(sent) => sent,
            Err(e) => {
                self.forget_buttons(req);
                return Err(e);
            }
        };
        let choice = tokio::select! {
            c = rx => c.ok(),
            () = cancel.cancelled() => None,
        };
        self.forget_buttons(req);
        // Show what was chosen in place of the buttons.
        let shown = match &choice {
            Some(c) => format!("{shown}\n→ {c}"),
            None => format!("{shown}\n→ (no answer)"),
        };
        self.tg.edit_progress(self.target, message_id, &shown).await;
        Ok(choice)
    }

    async fn try_confirm(
        &self,
        title: &str,
        message: &str,
        cancel: CancellationToken,
    ) -> Result<Option<bool>, AskError> {
        let text = if message.is_empty() {
            title.to_owned()
        } else {
            format!("{title}\n{message}")
        };
        let yes_no = ["Yes".to_owned(), "No".to_owned()];
        Ok(self.try_select(&text, &yes_no, cancel).await?.map(|c| c == "Yes"))
    }

    async fn try_input(
        &self,
        title: &str,
        placeholder: Option<&str>,
        cancel: CancellationToken,
    ) -> Result<Option<String>, AskError> {
        let (tx, rx) = oneshot::channel();
        self.pending.inputs.lock().unwrap_or_else(|e| e.into_inner()).insert(
            self.target,
            Input {
                asked_for: self.ledger.asker(),
                tx,
            },
        );
        let text = match placeholder {
            Some(p) => format!("{title}\n(reply with a message, e.g. {p})"),
            None => format!("{title}\n(reply with a message)"),
        };
        let sent = tokio::select! {
            sent = self.put_question(&text, 0, None) => sent,
            () = cancel.cancelled() => {
                self.forget_input();
                return Ok(None);
            }
        };
        if let Err(e) = sent {
            self.forget_input();
            return Err(e);
        }
        let answer = tokio::select! {
            a = rx => a.ok(),
            () = cancel.cancelled() => None,
        };
        self.forget_input();
        Ok(answer)
    }

    async fn notify(&self, message: &str, level: NotifyLevel) {
        let prefix = match level {
            NotifyLevel::Info => "ℹ️",
            NotifyLevel::Warning => "⚠️",
            NotifyLevel::Error => "❌",
        };
        let text = format!("{prefix} {message}");
        let text = fit(&text, MESSAGE_LIMIT, texts::SHORTENED).unwrap_or(text);
        if let Err(e) = self.tg.send_plain(self.target, &text, None).await {
            tracing::warn!(chat = self.target.chat_id, "cannot notify: {}", refusal(&e));
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

    const TOPIC: Target = Target {
        chat_id: -100,
        thread: Some(5),
    };

    fn ask(p: &Pending, req: u64, at: Target, asked_for: Option<Asker>) -> oneshot::Receiver<String> {
        let (tx, rx) = oneshot::channel();
        let question = Question {
            at,
            options: vec!["Allow".into(), "Block".into()],
            asked_for,
            tx,
        };
        p.buttons
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(req, question);
        rx
    }

    fn ann() -> Asker {
        Asker {
            id: 7,
            name: "Ann".into(),
        }
    }

    #[test]
    fn a_press_answers_only_in_its_own_chat_and_topic_and_once() {
        let p = Pending::default();
        let here = Target {
            chat_id: 1,
            thread: None,
        };
        let mut rx = ask(&p, 7, here, None);
        let other_chat = Target {
            chat_id: 2,
            thread: None,
        };
        assert_eq!(p.press(other_chat, 2, true, "ui:7:0"), Press::Elsewhere);
        let other_topic = Target {
            chat_id: 1,
            thread: Some(3),
        };
        assert_eq!(p.press(other_topic, 1, true, "ui:7:0"), Press::Elsewhere);
        assert_eq!(p.press(here, 1, false, "ui:7:9"), Press::Nothing);
        assert_eq!(p.press(here, 1, false, "ui:7:1"), Press::Answered("Block".into()));
        assert_eq!(rx.try_recv().ok().as_deref(), Some("Block"));
        assert_eq!(p.press(here, 1, false, "ui:7:0"), Press::Nothing, "answered once");
    }

    #[test]
    fn a_question_is_for_its_asker_or_an_owner() {
        let p = Pending::default();
        let mut rx = ask(&p, 1, TOPIC, Some(ann()));
        assert_eq!(p.press(TOPIC, 8, false, "ui:1:0"), Press::NotFor(Some("Ann".into())));
        assert!(rx.try_recv().is_err(), "the question stays open");
        assert_eq!(p.press(TOPIC, 7, false, "ui:1:0"), Press::Answered("Allow".into()));
        let _rx = ask(&p, 2, TOPIC, Some(ann()));
        assert_eq!(p.press(TOPIC, 1, true, "ui:2:1"), Press::Answered("Block".into()));
    }

    #[test]
    fn a_typed_answer_is_taken_only_from_its_asker_or_an_owner_in_its_topic() {
        let p = Pending::default();
        let wait = |asked_for: Option<Asker>| {
            let (tx, rx) = oneshot::channel();
            p.inputs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(TOPIC, Input { asked_for, tx });
            rx
        };
        let mut rx = wait(Some(ann()));
        let other_topic = Target {
            chat_id: TOPIC.chat_id,
            thread: None,
        };
        assert!(!p.answer_input(other_topic, 7, false, "elsewhere"));
        assert!(!p.answer_input(TOPIC, 8, false, "not Bob's"));
        assert!(rx.try_recv().is_err(), "still waiting");
        assert!(p.answer_input(TOPIC, 7, false, "build/"));
        assert_eq!(rx.try_recv().ok().as_deref(), Some("build/"));
        let mut rx = wait(None);
        assert!(!p.answer_input(TOPIC, 7, false, "a member, for nobody"));
        assert!(p.answer_input(TOPIC, 1, true, "an owner"));
        assert_eq!(rx.try_recv().ok().as_deref(), Some("an owner"));
    }

    #[test]
    fn a_question_for_nobody_is_the_private_chats_user_or_an_owners() {
        let p = Pending::default();
        // A scheduled job's prompt, handed in by no one.
        let _rx = ask(&p, 1, TOPIC, None);
        assert_eq!(p.press(TOPIC, 7, false, "ui:1:0"), Press::NotFor(None));
        assert_eq!(p.press(TOPIC, 1, true, "ui:1:0"), Press::Answered("Allow".into()));
        let private = Target {
            chat_id: 42,
            thread: None,
        };
        let _rx = ask(&p, 2, private, None);
        assert_eq!(p.press(private, 42, false, "ui:2:1"), Press::Answered("Block".into()));
    }

    #[test]
    fn a_question_too_long_is_cut_to_fit_without_splitting_a_character() {
        assert_eq!(fit("short", 10, "(cut)"), None);
        let long = format!("Run `rm -rf build # {}`?", "x".repeat(6000));
        let cut = fit(&long, MESSAGE_LIMIT - 10, "(cut)").unwrap_or_default();
        assert!(utf16_len(&cut) <= MESSAGE_LIMIT - 10, "{}", utf16_len(&cut));
        assert!(utf16_len(&cut) >= MESSAGE_LIMIT - 20, "as much as fits is kept");
        assert!(
            cut.starts_with("Run `rm -rf build # xxx") && cut.ends_with("x\n(cut)"),
            "{cut}"
        );
        // 😀 is two UTF-16 units: a limit falling inside one keeps the whole emoji out.
        let emoji = "😀".repeat(10);
        let cut = fit(&emoji, 9, "…").unwrap_or_default();
        assert_eq!(cut, format!("{}\n…", "😀".repeat(3)));
    }
}
