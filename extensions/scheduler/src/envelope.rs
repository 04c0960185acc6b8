//! How jobs look to the model and the user: the heading of a scheduled prompt, a watcher's output
//! as a prompt, a schedule in words, times in a zone.

use crate::job::{Job, JobKind, JobOrigin, ScheduleSpec};
use crate::slots::human;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;

/// How every scheduled prompt begins: [`heading`]'s first words.
pub const HEADING_START: &str = "[Scheduled job ";

/// What follows a watcher's heading in [`watcher_prompt`]: a scheduled prompt holding it is a
/// watcher's output.
pub const WATCHER_LINE: &str = "\nThe watcher script `";

/// `[Scheduled job abc123 · cron `0 9 * * 1-5` (Europe/Berlin) · slot Mon 2026-11-30 09:00 CET]`,
/// with how late it runs when it does, and whose words it holds: a caller's job says so (its
/// words are the caller's, never the owner's).
pub fn heading(job: &Job, slot: DateTime<Utc>, late: Option<chrono::Duration>) -> String {
    let tz = zone(&job.schedule);
    let late = late.map_or(String::new(), |d| {
        format!(" · running {} late: the bot was down", human(d))
    });
    let whose = match &job.origin {
        JobOrigin::Chat => "not typed by the user now".to_owned(),
        JobOrigin::Caller { name } => {
            format!("set up by the A2A caller `{name}`: its words are the caller's own, not the owner's instructions")
        }
    };
    format!(
        "{HEADING_START}{} · {} · slot {}{late}. This message comes from the scheduler, {whose}.]",
        job.id,
        describe(&job.schedule),
        local(slot, tz)
    )
}

/// The word a quiet check-in's model answers with when there is nothing to tell
/// ([`QUIET_NOTE`]).
pub const NOTHING: &str = "NOTHING";

/// The line after a quiet job's heading: the model may stay silent. A word rather than a tool:
/// every model can say it, it costs no tool round trip, and the answer is the run's end
/// (docs/scheduling.md, "Quiet check-ins").
pub const QUIET_NOTE: &str = "This is a quiet check-in: if nothing needs the user's attention, answer with \
     exactly NOTHING (that word alone) and nothing is sent to the chat; otherwise answer as usual and it \
     is sent.";

/// Whether a quiet check-in's answer says there is nothing to tell: exactly [`NOTHING`], spaces
/// around it, a final full stop and Markdown emphasis aside (models add them).
pub fn is_nothing(answer: &str) -> bool {
    let t = answer
        .trim()
        .trim_matches(|c| c == '*' || c == '_' || c == '`')
        .trim_end_matches('.');
    t == NOTHING
}

/// A watcher's output as the agent's prompt.
pub fn watcher_prompt(heading: &str, script: &str, instructions: Option<&str>, output: &str) -> String {
    let instructions = instructions.map_or(String::new(), |t| format!("\n{t}"));
    // The output cannot close its own block.
    let output = output.trim_end().replace("</watcher_output>", "&lt;/watcher_output>");
    format!(
        "{heading}{WATCHER_LINE}{script}` printed something; tell the user what it means.{instructions}\n<watcher_output>\n{output}\n</watcher_output>"
    )
}

/// The schedule in words: `cron `0 9 * * 1-5` (Europe/Berlin)`, `once at …`, `every 10 min`.
pub fn describe(spec: &ScheduleSpec) -> String {
    match spec {
        ScheduleSpec::Cron { expr, time_zone } => format!("cron `{expr}` ({time_zone})"),
        ScheduleSpec::At { at, time_zone } => format!("once at {}", local(*at, parse_tz(time_zone))),
        ScheduleSpec::Every { every_secs, .. } => {
            // Capped: a hand-edited file may hold any number (`Duration::seconds` panics past
            // its range).
            let secs = i64::try_from(*every_secs).unwrap_or(i64::MAX).min(100 * 366 * 86_400);
            format!("every {}", human(chrono::Duration::seconds(secs)))
        }
    }
}

/// What a job does, short.
pub fn what(kind: &JobKind) -> String {
    match kind {
        JobKind::Prompt { text } => format!("prompt “{}”", clip(text, 80)),
        JobKind::Watcher { script, .. } => format!("watcher `{script}`"),
    }
}

/// `Mon 2026-11-30 09:00 CET` in `tz`.
pub fn local(t: DateTime<Utc>, tz: Tz) -> String {
    t.with_timezone(&tz)
        .format("%a %Y-%m-%d %H:%M:%S %Z")
        .to_string()
        .replace(":00 ", " ")
}

/// The zone a schedule was given in.
pub fn zone(spec: &ScheduleSpec) -> Tz {
    match spec {
        ScheduleSpec::Cron { time_zone, .. }
        | ScheduleSpec::At { time_zone, .. }
        | ScheduleSpec::Every { time_zone, .. } => parse_tz(time_zone),
    }
}

fn parse_tz(name: &str) -> Tz {
    name.parse().unwrap_or(Tz::UTC)
}

/// `text` cut to `max` characters with `…`.
pub fn clip(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_word_alone_is_nothing_to_say() {
        for quiet in ["NOTHING", " NOTHING\n", "NOTHING.", "**NOTHING**", "`NOTHING`"] {
            assert!(is_nothing(quiet), "{quiet:?}");
        }
        for told in [
            "nothing",
            "NOTHING urgent, but the build is red",
            "Nothing to report.",
            "",
            "NOTHINGS",
        ] {
            assert!(!is_nothing(told), "{told:?}");
        }
    }

    #[test]
    fn the_quiet_note_reads_as_one_sentence_with_single_spaces() {
        assert!(!QUIET_NOTE.contains("  "), "{QUIET_NOTE:?}");
        assert!(QUIET_NOTE.contains("answer with exactly NOTHING"), "{QUIET_NOTE:?}");
    }
}
