#![allow(clippy::unwrap_used)]

use super::*;

fn line(key: &str, text: &str, retry: Option<i64>) -> Line {
    Line {
        key: key.into(),
        text: text.into(),
        retry,
    }
}

#[test]
fn a_line_reported_before_is_never_reported_again() {
    let mut r = Record::default();
    assert!(r.gather(vec![line("u1:tool", "“a” — not run again.", Some(1))]));
    assert!(
        !r.gather(vec![line("u1:tool", "“a” — not run again.", Some(1))]),
        "gathered twice"
    );
    // Sent (or on the wire when the bot died): its keys are reported.
    r.state = Stage::Sending;
    r.message_id = Some(7);
    assert!(!r.gather(vec![line("u1:tool", "again", Some(1))]));
    assert_eq!(r.state, Stage::Gathering, "a new report is gathered");
    assert!(r.lines.is_empty() && r.message_id.is_none());
    // What happened to the same message next time is news.
    assert!(r.gather(vec![line("u1:twice", "“a” — cut off twice.", Some(1))]));
    assert_eq!(r.reported, vec!["u1:tool".to_owned()]);
}

#[test]
fn lines_that_come_while_a_report_is_on_its_way_wait_for_the_next_report() {
    let mut r = Record::default();
    r.gather(vec![line("u1:tool", "“a” — not run again.", Some(1))]);
    // On its way (its text is made): a new line waits, a known one is dropped.
    assert!(r.hold(vec![line("u2:again", "“b” — run again now.", None)]));
    assert!(!r.hold(vec![line("u1:tool", "again", Some(1)), line("u2:again", "again", None)]));
    assert_eq!(r.lines.len(), 1, "not in the report on its way");
    assert!(!r.text().contains("“b”"));
    // Refused: they join the report, sent after the restart.
    let mut refused = r.clone();
    assert!(refused.gather(Vec::new()));
    assert_eq!(refused.lines.len(), 2);
    assert!(refused.later.is_empty());
    // Taken: the sent lines are reported, the waiting ones are the next report.
    r.state = Stage::Sent;
    assert!(has_news(&r), "lines kept for a next report are news");
    assert!(r.gather(Vec::new()));
    assert_eq!(r.state, Stage::Gathering);
    assert_eq!(r.reported, vec!["u1:tool".to_owned()]);
    assert_eq!(r.lines, vec![line("u2:again", "“b” — run again now.", None)]);
    assert!(r.later.is_empty());
    r.state = Stage::Sent;
    assert!(!has_news(&r), "a sent report with nothing waiting");
}

#[test]
fn the_report_lists_its_lines_with_a_retry_button_each_until_pressed() {
    let mut r = Record::default();
    r.gather(vec![
        line("u1:answered", "“hello” — answered now.", None),
        line(
            "u2:tool",
            "“deploy the site” — not run again: a tool had started.",
            Some(2),
        ),
        line("jabc@t:skipped", "Job abc: skipped.", None),
    ]);
    let text = r.text();
    assert!(text.starts_with(HEADING), "{text}");
    assert_eq!(text.matches("\n• ").count(), 3, "{text}");
    let markup = r.markup().unwrap();
    assert_eq!(markup.inline_keyboard.len(), 1);
    let button = &markup.inline_keyboard[0][0];
    assert_eq!(button.text, "Retry “deploy the site”");
    r.pressed.push(2);
    assert!(r.markup().is_none());
    assert!(r.text().contains("a tool had started. — 🔁 Retrying."), "{}", r.text());
}

#[test]
fn quotes_are_one_short_line() {
    assert_eq!(quote("  hello\n  there "), "“hello there”");
    assert_eq!(quote(""), "(a message without text)");
    let long = "x".repeat(100);
    assert_eq!(quote(&long).chars().count(), 63);
    assert_eq!(
        retry_label(&format!("{} — not run again.", quote(&long)))
            .chars()
            .count(),
        30
    );
}
