//! User-visible strings in one place (tests compare against these), and the prompt envelope.

use crate::telegram::inbound::update::InMessage;
use chrono::TimeZone;
use volcanic_abstractions::shortage::Lack;

/// The one short reply a stranger gets (at most once per hour).
pub fn stranger(user_id: i64) -> String {
    format!(
        "Sorry, this is a private assistant. Your Telegram user id is {user_id}. \
         To be allowed, ask the bot's owner to add it to allowed_users (or to send /allow {user_id})."
    )
}

/// The first paragraph of `/start` and `/help` (the commands' lines follow, from their table).
pub const HELP_INTRO: &str = "I am an AI agent with my own workspace for this chat: I can run commands, \
read and write files, and answer questions. Just write to me.";

/// Told after a restart when a message's run was cut off after tools had run, or after part of
/// a live answer was shown (not retried automatically: the tools may have had effects, and a new
/// answer would repeat what was shown).
pub fn interrupted(quoted: &str) -> String {
    format!(
        "⚠️ I was restarted while working on your message:\n> {quoted}\n\nTools had already run or part of \
         my answer was shown, so I did not start over on my own. Press Retry to run it again."
    )
}

/// Told after a restart when a message's run was cut off twice before any tool ran (it was run
/// again once automatically; not again, in case the message itself stops the bot).
pub fn interrupted_twice(quoted: &str) -> String {
    format!(
        "⚠️ I was restarted twice while working on your message:\n> {quoted}\n\nNo tool had run. \
         Press Retry to run it again."
    )
}

/// What the chat of an unreadable message is told.
pub const COULD_NOT_READ: &str = "⚠️ I could not read that message (Telegram delivered it in a form I do not \
understand), so nothing was done with it. Please send it again, in other words if it was text.";

/// The Retry button of a message that was already retried (or whose copy is gone).
pub const RETRY_GONE: &str = "That message was already retried (or is no longer kept).";

/// The toast of a button press the access rules refuse (a stranger, a chat not allowed, or a
/// button of a message in no chat); nothing else happens.
pub const PRESS_REFUSED: &str = "This button does not work here.";

/// The toast of a press on a question asked for someone else: `for_whom` is the name of the
/// person whose message led to it, `None` when only an owner may answer.
pub fn question_for(for_whom: Option<&str>) -> String {
    format!("This question is for {}.", for_whom.unwrap_or("an owner of the bot"))
}

/// The toast of a press on a question from another chat or topic than the question's.
pub const QUESTION_ELSEWHERE: &str = "This question was asked in another topic.";

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
        let quoted = scrub_sign_in(quoted);
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

/// What replaces a sign-in address in a quote.
pub const SIGN_IN_REMOVED: &str = "[sign-in address removed]";

/// `text` with every word that may carry an OAuth sign-in (a `code=` or `state=` parameter, or a
/// loopback address) replaced by [`SIGN_IN_REMOVED`]: a reply to a pasted address that could
/// not be deleted must not bring its code to the model.
pub fn scrub_sign_in(text: &str) -> String {
    let risky = |w: &str| {
        let w = w.to_ascii_lowercase();
        ["code=", "state=", "127.0.0.1", "localhost", "[::1]"]
            .iter()
            .any(|n| w.contains(n))
    };
    text.lines()
        .map(|line| {
            line.split(' ')
                .map(|w| if risky(w) { SIGN_IN_REMOVED } else { w })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A byte count for people: `512 B`, `12.3 KB`, `4.0 MB` (binary units).
pub fn human_size(bytes: u64) -> String {
    const KB: f64 = 1024.0;
    // Precision loss is irrelevant for a display size.
    #[allow(clippy::cast_precision_loss)]
    let b = bytes as f64;
    if b < KB {
        format!("{bytes} B")
    } else if b < KB * KB {
        format!("{:.1} KB", b / KB)
    } else {
        format!("{:.1} MB", b / (KB * KB))
    }
}

/// A file over the Bot API's download limit: nothing was downloaded.
pub fn file_too_large(name: &str, size: Option<u64>, limit: u64) -> String {
    let size = size.map(|s| format!(" ({})", human_size(s))).unwrap_or_default();
    format!(
        "⚠️ `{name}`{size} is too large: bots can download files of at most {} from Telegram, so I did not receive it. \
         Send a smaller file, or put it somewhere I can fetch it.",
        human_size(limit)
    )
}

/// Photos the current model cannot see were saved instead (`paths` relative to the workspace).
pub fn cannot_see_images(paths: &[String]) -> String {
    match paths {
        [one] => format!("This model can't see images; the photo was saved to `{one}`."),
        many => {
            let list: Vec<String> = many.iter().map(|p| format!("`{p}`")).collect();
            format!(
                "This model can't see images; the photos were saved to {}.",
                list.join(", ")
            )
        }
    }
}

/// A photo too large to show the model was saved instead.
pub fn image_too_large(path: &str, size: u64, limit: u64) -> String {
    format!(
        "The photo is {}, more than the {} the model accepts, so it was saved to `{path}` instead of being shown.",
        human_size(size),
        human_size(limit)
    )
}

/// A file could not be fetched from Telegram (or saved).
pub fn file_not_received(name: &str, error: &str) -> String {
    format!("⚠️ I could not receive `{name}`: {error}")
}

/// For the model: a file the user sent, saved in the workspace (`what` is "file", "photo",
/// "voice note", ...; `detail` is e.g. the duration).
pub fn saved_note(what: &str, path: &str, size: u64, detail: Option<&str>) -> String {
    match detail {
        Some(d) => format!("[{what} saved: {path} ({}, {d})]", human_size(size)),
        None => format!("[{what} saved: {path} ({})]", human_size(size)),
    }
}

/// Told once when an answer (or a part of it) could not be delivered: Telegram refused it for
/// another reason than flood control, even as plain text (`why` is what it said).
pub fn answer_undelivered(why: &str) -> String {
    format!("⚠️ A part of my answer could not be delivered (Telegram said: {why}). Ask me to repeat it if you need it.")
}

/// The disk holding the session files is full (or over quota): the prompt was not answered.
pub fn disk_full(file: &str) -> String {
    format!(
        "⚠️ The bot's disk is full, so I could not save our conversation ({file}) and did not answer. \
         Free some space on the bot's machine, then send your message again."
    )
}

/// The machine was short of `lack` when the chat asked for something, so it was not done (no
/// OS text: [`shortage`](crate::telegram::inbound::shortage) says why).
pub fn short_of(lack: Lack) -> String {
    let (what, owner) = match lack {
        Lack::Descriptors => (
            "open files",
            "raise the bot's open-file limit (LimitNOFILE in its unit) or find what holds so many",
        ),
        Lack::Memory => ("memory", "find what uses the machine's memory or give it more"),
        Lack::Disk => (
            "disk space",
            "free some space on the disk that holds the bot's state folder",
        ),
    };
    format!(
        "⚠️ The bot's machine is short of {what} right now, so I could not do that. Try again in a \
         minute; if it keeps happening, the bot's owner should {owner}."
    )
}

/// Told once to a chat whose message meets a full disk (or quota): the message waits.
pub const DISK_FULL_WAITING: &str = "⚠️ The bot's disk is full. I keep your messages and answer them \
    once there is space again. The bot's owner should free some space on the disk that holds the \
    bot's state folder (or raise the bot user's disk quota).";

/// A session file cannot be read as a session (its first line is damaged); such a file is never
/// rewritten (and a chat's newest one is passed over when the chat's session is opened).
pub fn session_file_damaged(file: &str, reason: &str) -> String {
    format!(
        "⚠️ The conversation file {file} is damaged ({reason}), so I cannot use it. I left it as it is \
         (look into it if you like); send /new to go on in a new conversation."
    )
}

/// Another program changed the session file while the session had it open: nothing more is
/// written to it, lest the two writers damage it.
pub fn session_file_changed(file: &str) -> String {
    format!(
        "⚠️ Another program changed this chat's conversation file while I had it open ({file}), so I \
         stopped writing to it rather than damage it, and did not answer. Send /new to go on in a new \
         conversation (that file stays as it is)."
    )
}

/// A message met the chat's session closed again and again ([`SessionError::Closed`](volcanic_core::agent::SessionError::Closed)
/// after every fresh one): it was not taken.
pub const SESSION_CLOSED: &str = "⚠️ This chat's conversation was closed each time I handed your message to it, so I \
     did not answer it. Please send it again.";

/// The session file or its folder may not be written (permissions, a read-only file system).
pub fn session_file_unwritable(file: &str, why: &str) -> String {
    format!(
        "⚠️ I may not write this chat's conversation file ({why}): {file}. On the bot's machine, let the \
         bot's user write it and its folder, then send your message again."
    )
}

/// The model provider refused the credentials or the account (HTTP 401, 402, 403).
pub fn provider_unauthorized(detail: &str) -> String {
    format!(
        "⚠️ The model provider refused this bot's credentials ({detail}). The bot's owner should check the \
         provider's API key and account (billing, permissions) in the bot's configuration; then send your \
         message again."
    )
}

/// The model provider did not accept the request (another HTTP 4xx).
pub fn provider_rejected(detail: &str) -> String {
    format!(
        "⚠️ The model provider did not accept my request ({detail}). Send your message again in other \
         words, pick another model with /model, or start afresh with /new."
    )
}

/// The model declined to answer (a refusal or content-filter stop).
pub fn model_refused(detail: &str) -> String {
    format!("⚠️ The model declined to answer ({detail}). Rephrase your message, or start afresh with /new.")
}

/// The provider is overloaded, rate-limited or failing, still after retries.
pub fn provider_unavailable(detail: &str) -> String {
    format!(
        "⚠️ The model provider is busy or failing right now ({detail}), even after retrying. Wait a minute, \
         then send your message again."
    )
}

/// The provider could not be reached or stopped answering.
pub fn provider_unreachable(detail: &str) -> String {
    format!(
        "⚠️ I could not reach the model provider ({detail}). Send your message again in a moment; if this \
         keeps happening, the bot's owner should check the machine's network and the provider's address."
    )
}

/// The progress line's step when a fallback model takes over the turn (failover).
pub fn fallback_step(to: &str) -> String {
    format!("↪ {to}")
}

/// The footer of an answer a fallback model wrote because `from`'s provider failed (Markdown).
pub fn answered_by_fallback(to: &str, from: &str) -> String {
    format!("_↪ answered by `{to}`: `{from}` is unavailable right now_")
}

/// Any other failure, as its own text says.
pub fn failed(detail: &str) -> String {
    format!("⚠️ {detail}")
}

/// Ends a question shortened to fit one message; the whole question went just before it, as a
/// file named [`QUESTION_FILE`].
pub const QUESTION_SHORTENED: &str = "… (shortened: the whole question is in question.txt above)";

/// File name of the whole text of a question too long for one message.
pub const QUESTION_FILE: &str = "question.txt";

/// Caption of [`QUESTION_FILE`].
pub const QUESTION_FILE_CAPTION: &str = "The whole question (too long for one message)";

/// Told in the chat when a question could not be shown to the user and the asking code cannot
/// hear why (it gets no answer).
pub fn could_not_ask(why: &str) -> String {
    format!("⚠️ I could not ask you a question here: {why}")
}

/// A notice shortened to fit one message ends with this.
pub const SHORTENED: &str = "… (shortened)";

/// For the model: a sticker (its emoji, when it has one).
pub fn sticker(emoji: Option<&str>) -> String {
    match emoji {
        Some(e) => format!("[sticker {e}]"),
        None => "[sticker]".to_owned(),
    }
}

/// For the model: a shared location (degrees).
pub fn location(latitude: f64, longitude: f64) -> String {
    format!("[location {latitude}, {longitude}]")
}

/// For the model: a shared venue.
pub fn venue(title: &str, address: &str, latitude: f64, longitude: f64) -> String {
    format!("[venue: {title}, {address} ({latitude}, {longitude})]")
}

/// For the model: a shared contact.
pub fn contact(name: &str, phone: &str) -> String {
    format!("[contact: {name}, {phone}]")
}

/// For the model: a poll, its question and options.
pub fn poll(question: &str, options: &[&str]) -> String {
    format!("[poll: {question} Options: {}]", options.join(" / "))
}

/// For the model: a dice roll (the emoji thrown and the value it showed).
pub fn dice(emoji: &str, value: i64) -> String {
    format!("[dice {emoji} {value}]")
}

/// For the model: a message of none of the kinds the bot reads (`fields` are its own fields).
pub fn unknown_message(fields: &[&str]) -> String {
    if fields.is_empty() {
        "[an empty message]".to_owned()
    } else {
        format!("[a message of a kind I cannot read: {}]", fields.join(", "))
    }
}

/// The "while I was down" report's words (docs/exactly-once.md, "While I was down"): its frame
/// here, what crash recovery did with each message below; the scheduler's lines about jobs come
/// from the scheduler extension.
pub mod down {
    /// The report's first line.
    pub const HEADING: &str = "🔌 While I was down";

    /// What follows the heading.
    pub const INTRO: &str = "The bot stopped (a crash or a restart) with work unfinished or jobs due. What happened:";

    /// The mark a line gets once its Retry was pressed.
    pub const RETRYING: &str = " — 🔁 Retrying.";

    /// The label of a line's Retry button: `quoted` is its message's first words, in quotes.
    pub fn retry_button(quoted: &str) -> String {
        format!("Retry {quoted}")
    }

    /// Stands for a message's words when it has none.
    pub const NO_TEXT: &str = "(a message without text)";

    /// A line about a message: its first words (`quoted`), then `what` happened to it.
    pub fn line(quoted: &str, what: &str) -> String {
        format!("{quoted} — {what}")
    }

    /// Its prompt never reached the session: handled at start-up as if it just arrived.
    pub const ANSWERED: &str = "it had not reached me yet: answered now.";

    /// Cut off before any tool ran: run again once.
    pub const RERUN: &str = "cut off before any tool ran: run again now.";

    /// Its answer was in the transcript, not sent: sent now.
    pub const HELD: &str = "my answer was written but not sent: sent now.";

    /// Part of its answer was sent: the rest sent now.
    pub const REST: &str = "my answer was cut off: the rest was sent now.";

    /// Cut off after a tool started: not run again (the tool may have had effects).
    pub const AFTER_TOOL: &str = "I was restarted while working on your message, after a tool had started (it may \
have had effects): not run again on my own. Retry runs it again.";

    /// Cut off in its one automatic re-run too: not run again (the message may stop the bot).
    pub const TWICE: &str = "I was restarted twice while working on your message (no tool had run): not run \
again on my own. Retry runs it again.";
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

    #[test]
    fn a_quoted_sign_in_address_is_scrubbed() {
        let m = InMessage {
            chat_type: "private".into(),
            date: 1_767_225_600,
            reply_to: Some((
                1,
                "here: 127.0.0.1:53682/volcanic/oauth?state=abc&code=4/0secret ok\nand\tcode=4/0x".into(),
            )),
            ..Default::default()
        };
        let e = envelope(&m, "why?", chrono_tz::UTC);
        assert!(!e.contains("4/0"), "{e}");
        assert!(
            e.contains("> here: [sign-in address removed] ok\n> [sign-in address removed]"),
            "{e}"
        );
    }

    #[test]
    fn sizes_and_media_notices_read_well() {
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(12_595), "12.3 KB");
        assert_eq!(human_size(20 * 1024 * 1024), "20.0 MB");
        assert_eq!(
            saved_note("file", "inbox/report.pdf", 12_595, None),
            "[file saved: inbox/report.pdf (12.3 KB)]"
        );
        assert_eq!(
            saved_note("voice note", "inbox/v.ogg", 2048, Some("0:07")),
            "[voice note saved: inbox/v.ogg (2.0 KB, 0:07)]"
        );
        assert_eq!(
            cannot_see_images(&["inbox/a.jpg".into()]),
            "This model can't see images; the photo was saved to `inbox/a.jpg`."
        );
        assert!(
            file_too_large("big.zip", Some(25 * 1024 * 1024), 20 * 1024 * 1024)
                .starts_with("⚠️ `big.zip` (25.0 MB) is too large: bots can download files of at most 20.0 MB")
        );
    }
}
