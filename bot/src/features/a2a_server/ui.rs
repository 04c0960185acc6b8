//! A caller's session asks through the task: a question (`select`, `confirm`, `input`) turns
//! the task `input-required` with the question as its status message, and the caller's next
//! message to that task is the answer (A2A 1.0 §6.3, "input-required").

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::ui::{NotifyLevel, UserInterface};

use super::pool::{Shared, Update};

/// How many times a question is put again when the answer fits none of its options.
const ASK_AGAIN: usize = 3;

/// The session's UI: its questions go to the context's current task.
pub struct TaskUi {
    shared: Arc<Shared>,
}

impl TaskUi {
    /// The UI of the context `shared`.
    pub fn new(shared: Arc<Shared>) -> TaskUi {
        TaskUi { shared }
    }

    /// Puts `question` to the caller and waits for its next message to the task; `None` when
    /// no task is current, the task or the run is cancelled.
    async fn ask(&self, question: String, cancel: CancellationToken) -> Option<String> {
        let (tx, rx) = oneshot::channel();
        let task_cancel = {
            let mut state = self.shared.lock();
            let task = state.as_mut()?;
            task.question = Some(tx);
            task.cancel.clone()
        };
        self.shared.send(Update::Ask(question));
        tokio::select! {
            answer = rx => answer.ok(),
            () = cancel.cancelled() => None,
            () = task_cancel.cancelled() => None,
        }
    }
}

/// The option `answer` names: its text (any case) or its number from 1.
fn pick(options: &[String], answer: &str) -> Option<String> {
    let answer = answer.trim();
    if let Ok(n) = answer.parse::<usize>()
        && let Some(o) = n.checked_sub(1).and_then(|i| options.get(i))
    {
        return Some(o.clone());
    }
    options.iter().find(|o| o.trim().eq_ignore_ascii_case(answer)).cloned()
}

/// Yes or no in `answer`, if it says one.
fn yes_no(answer: &str) -> Option<bool> {
    match answer.trim().trim_end_matches(['.', '!']).to_ascii_lowercase().as_str() {
        "yes" | "y" | "true" | "ok" | "allow" | "confirm" => Some(true),
        "no" | "n" | "false" | "deny" | "cancel" => Some(false),
        _ => None,
    }
}

#[async_trait]
impl UserInterface for TaskUi {
    async fn select(&self, title: &str, options: &[String], cancel: CancellationToken) -> Option<String> {
        let list: Vec<String> = options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("{}. {o}", i + 1))
            .collect();
        let mut question = format!("{title}\nAnswer with one of:\n{}", list.join("\n"));
        for _ in 0..ASK_AGAIN {
            let answer = self.ask(question.clone(), cancel.clone()).await?;
            if let Some(o) = pick(options, &answer) {
                return Some(o);
            }
            question = format!(
                "\u{201c}{}\u{201d} is not one of the options. {question}",
                answer.trim()
            );
        }
        None
    }

    async fn confirm(&self, title: &str, message: &str, cancel: CancellationToken) -> Option<bool> {
        let mut question = format!("{title}\n{message}\nAnswer yes or no.");
        for _ in 0..ASK_AGAIN {
            let answer = self.ask(question.clone(), cancel.clone()).await?;
            if let Some(b) = yes_no(&answer) {
                return Some(b);
            }
            question = format!("Please answer yes or no. {question}");
        }
        None
    }

    async fn input(&self, title: &str, placeholder: Option<&str>, cancel: CancellationToken) -> Option<String> {
        let question = match placeholder {
            Some(p) if !p.is_empty() => format!("{title}\n(for example: {p})"),
            _ => title.to_owned(),
        };
        self.ask(question, cancel).await
    }

    async fn notify(&self, message: &str, _level: NotifyLevel) {
        self.shared.send(Update::Progress(message.to_owned()));
    }

    async fn status(&self, _key: &str, _text: Option<&str>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_pick_options_by_text_or_number_and_say_yes_or_no() {
        let options = vec!["Red".to_owned(), "Green".to_owned()];
        assert_eq!(pick(&options, " green "), Some("Green".into()));
        assert_eq!(pick(&options, "2"), Some("Green".into()));
        assert_eq!(pick(&options, "3"), None);
        assert_eq!(pick(&options, "blue"), None);
        assert_eq!(yes_no("Yes."), Some(true));
        assert_eq!(yes_no("no"), Some(false));
        assert_eq!(yes_no("maybe"), None);
    }
}
