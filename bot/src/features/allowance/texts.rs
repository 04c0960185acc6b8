//! What the allowance feature says (tests compare against these).

use super::runs::RunKind;
use chrono::DateTime;
use chrono_tz::Tz;
use volcanic_allowance::{Account, MicroUsd, Window};

/// "daily" / "monthly".
pub fn window_word(window: Window) -> &'static str {
    match window {
        Window::Daily => "daily",
        Window::Monthly => "monthly",
    }
}

/// Whose allowance, as a sentence starts: "This chat's", "Your", "This caller's".
fn whose(account: &Account) -> &'static str {
    match account {
        Account::Chat(_) => "This chat's",
        Account::User(_) => "Your",
        Account::Caller(_) => "This caller's",
    }
}

/// The one sentence for the person whose request was refused: what was reached, when it resets.
pub fn reached(account: &Account, window: Window, limit: MicroUsd, resets: DateTime<Tz>) -> String {
    format!(
        "{} {} allowance of {limit} is reached, so this was not sent to the model; it resets {}.",
        whose(account),
        window_word(window),
        when(resets)
    )
}

/// The chat's one notice per window when a run no one in it asked for was refused by its cap,
/// saying what the run was.
pub fn run_refused(kind: RunKind, window: Window, limit: MicroUsd, resets: DateTime<Tz>) -> String {
    let what = match kind {
        RunKind::ScheduledJob => return jobs_skipped(window, limit, resets),
        RunKind::Watcher => "a watcher's output was not given to the model",
        RunKind::Resumed => "the run a restart cut off was not continued",
        RunKind::Other => "a prompt no one here sent (an A2A result, say) was not answered",
    };
    format!(
        "This chat's {} allowance of {limit} is reached: {what}; such runs make no request until it resets {}.",
        window_word(window),
        when(resets)
    )
}

/// The chat's one notice per window when a scheduled job was refused by its cap.
fn jobs_skipped(window: Window, limit: MicroUsd, resets: DateTime<Tz>) -> String {
    format!(
        "This chat's {} allowance of {limit} is reached: its scheduled jobs are skipped (no request is made) until it resets {}.",
        window_word(window),
        when(resets)
    )
}

/// The chat's one notice per window when an A2A caller's run for it (the caller acting for the
/// chat) was refused by the chat's cap: the caller hears the sentence, the chat this.
pub fn caller_refused(caller: &str, window: Window, limit: MicroUsd, resets: DateTime<Tz>) -> String {
    format!(
        "This chat's {} allowance of {limit} is reached: the A2A caller `{caller}` acting for it makes no request until it resets {}.",
        window_word(window),
        when(resets)
    )
}

/// "at 00:00 on Mon 7 Dec (Europe/Berlin)".
pub fn when(at: DateTime<Tz>) -> String {
    format!("at {} ({})", at.format("%H:%M on %a %-d %b"), at.timezone().name())
}

/// The chat's notice at 80 %.
pub fn nearly(window: Window, counted: MicroUsd, limit: MicroUsd) -> String {
    format!(
        "This chat has used 80% of its {} allowance ({counted} of {limit}).",
        window_word(window)
    )
}

/// The owners' message when `account` (in chat `chat`) reached a cap.
pub fn owners_reached(account: &Account, chat: &str, window: Window, limit: MicroUsd, resets: DateTime<Tz>) -> String {
    let who = match account {
        Account::Chat(_) => format!("Chat {chat}"),
        Account::User(id) => format!("User {id} (in chat {chat})"),
        Account::Caller(name) => format!("A2A caller {name}"),
    };
    format!(
        "{who} reached its {} allowance of {limit}; it resets {}. Top up?",
        window_word(window),
        when(resets)
    )
}

/// The label of the button that lifts a cap until its window ends.
pub fn lift_label(window: Window) -> &'static str {
    match window {
        Window::Daily => "No limit until tomorrow",
        Window::Monthly => "No limit this month",
    }
}

/// What the owners' message says after a press.
pub fn topped_up(original: &str, what: &str, by: i64) -> String {
    format!("{original}\n→ {what} (by {by}).")
}

/// Only owners change allowances.
pub const OWNERS_ONLY: &str = "Only an owner can change allowances.";

/// A change that could not be kept.
pub fn not_kept(e: &std::io::Error) -> String {
    format!("Not changed: cannot keep it ({e}).")
}

/// Spending cannot be recorded: the request is not made (deny by default).
pub const NOT_RECORDED: &str =
    "Spending cannot be recorded right now (the bot's disk?), so this was not sent to the model; tell the bot's owner.";

/// `/allowance`'s usage line.
pub const USAGE: &str = "Use /allowance (show), or, as an owner: /allowance chat 5/day, /allowance chat 50/month, \
/allowance user <id> 10/month (an amount in USD, none for no limit, default for the config's).";
