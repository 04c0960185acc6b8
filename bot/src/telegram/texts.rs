//! User-visible strings in one place (tests compare against these), and the prompt envelope.

use super::inbound::InMessage;
use chrono::TimeZone;

/// The one short reply a stranger gets (at most once per hour).
pub fn stranger(user_id: i64) -> String {
    format!(
        "Sorry, this is a private assistant. Your Telegram user id is {user_id}. \
         To be allowed, ask the bot's owner to add it to allowed_users (or to send /allow {user_id})."
    )
}

/// `/start` and `/help`.
pub const HELP: &str = "I am an AI agent with my own workspace for this chat: I can run commands, \
read and write files, and answer questions. Just write to me.\n\n\
/new - start a new session\n\
/stop - stop the current run\n\
/model [provider/id] - show or change the model\n\
/thinking [level] - off, minimal, low, medium, high, xhigh\n\
/tz [zone] - show or set the time zone (IANA, e.g. Europe/Berlin)\n\
/session - model, tokens, cost, session file\n\
/compact - summarise the conversation so far\n\
/allow ID, /deny ID - owners: let a user in or out";

/// Told after a restart when a message's run was cut off after tools had run (not retried
/// automatically, since the tools may have had effects).
pub fn interrupted(quoted: &str) -> String {
    format!(
        "⚠️ I was restarted while working on your message:\n> {quoted}\n\nTools had already run, so I did not \
         start over on my own. Send it again if you want me to retry."
    )
}

/// Unknown command hint.
pub fn unknown_command(name: &str) -> String {
    format!("Unknown command /{name}. Send /help for the list.")
}

/// A prompt as the model sees it: local time in the chat's zone, the sender in groups, and the
/// quoted message it replies to.
pub fn envelope(m: &InMessage, text: &str, tz: chrono_tz::Tz) -> String {
    let when = tz
        .timestamp_opt(m.date, 0)
        .single()
        .map(|t| t.format("%a %Y-%m-%d %H:%M").to_string())
        .unwrap_or_default();
    let mut head = format!("[{when}]");
    if m.is_group() {
        head.push(' ');
        head.push_str(&m.from_name);
    }
    let mut out = String::new();
    if let Some((_, quoted)) = &m.reply_to
        && !quoted.is_empty()
    {
        let short: String = quoted.chars().take(300).collect();
        let ellipsis = if quoted.chars().count() > 300 { "…" } else { "" };
        head.push_str(" (replying to)");
        for line in format!("{short}{ellipsis}").lines() {
            out.push_str("> ");
            out.push_str(line);
            out.push('\n');
        }
    }
    format!("{head}\n{out}{text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_has_time_sender_and_quote() {
        let m = InMessage {
            chat_type: "group".into(),
            from_name: "Ann".into(),
            date: 1_767_225_600, // 2026-01-01 00:00 UTC
            reply_to: Some((1, "earlier words".into())),
            ..Default::default()
        };
        let e = envelope(&m, "and now?", chrono_tz::Europe::Berlin);
        assert_eq!(e, "[Thu 2026-01-01 01:00] Ann (replying to)\n> earlier words\nand now?");
        let private = InMessage {
            chat_type: "private".into(),
            date: 1_767_225_600,
            ..Default::default()
        };
        assert_eq!(envelope(&private, "hi", chrono_tz::UTC), "[Thu 2026-01-01 00:00]\nhi");
    }
}
