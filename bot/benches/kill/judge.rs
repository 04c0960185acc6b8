//! The verdict on one message from its events, and a self-check of the rules on made-up
//! histories (run by the smoke version too, so the detector of each bad count is itself tested).
//!
//! A pressed Retry starts a new segment of its message: one answer and one tool run are allowed
//! per segment, and a notice is right only if the message's tool ran in its segment, or its
//! tool call was kept in the transcript before the notice (the kill fell between the bot's
//! durable `tool` mark, written as the tool starts, and the tool's visible effect: the bot
//! cannot know the tool did nothing, so telling the user is right).

use crate::script::Kind;

/// Unix time in milliseconds.
pub type Ms = i64;

/// A message's events, in unix ms.
#[derive(Debug, Clone)]
pub struct Seen {
    pub kind: Kind,
    /// `ANSWER` messages naming its marker.
    pub answers: Vec<Ms>,
    /// Messages with its `retry:<update_id>` button.
    pub notices: Vec<Ms>,
    /// Its Retry presses.
    pub presses: Vec<Ms>,
    /// Its tool runs: `bash` for a command (the tool-run log), the job's creation for a reminder.
    pub tools: Vec<Ms>,
    /// Its tool calls kept in the session transcript (the model asked, the bot recorded it).
    pub asked: Vec<Ms>,
}

impl Seen {
    pub fn new(kind: Kind) -> Seen {
        Seen {
            kind,
            answers: Vec::new(),
            notices: Vec::new(),
            presses: Vec::new(),
            tools: Vec::new(),
            asked: Vec::new(),
        }
    }
}

/// What one message's events add up to.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Neither an answer nor a notice.
    pub lost: bool,
    /// Pressed, and neither an answer nor a notice since the last press.
    pub retry_lost: bool,
    /// More than one answer in a segment.
    pub twice: bool,
    /// More than one tool run in a segment.
    pub rerun: bool,
    /// Notices with neither a tool run nor a kept tool call in their segment before them.
    pub wrong_notices: usize,
    /// Segments after a press that have an answer.
    pub retries_answered: usize,
    /// A notice after an answer in the same segment (information: the notice offers to redo
    /// what was answered).
    pub notice_after_answer: bool,
}

/// How many of `times` fall in each segment cut by `presses` (a time equal to a press belongs
/// after it).
fn per_segment(times: &[Ms], presses: &[Ms]) -> Vec<usize> {
    let mut counts = vec![0; presses.len() + 1];
    for t in times {
        counts[presses.iter().filter(|p| *p <= t).count()] += 1;
    }
    counts
}

/// The start of the segment `t` falls in (the last press at or before it).
fn segment_start(t: Ms, presses: &[Ms]) -> Ms {
    presses.iter().copied().filter(|p| *p <= t).max().unwrap_or(Ms::MIN)
}

pub fn judge(s: &Seen) -> Verdict {
    let answers = per_segment(&s.answers, &s.presses);
    let in_segment = |times: &[Ms], t: Ms| {
        let from = segment_start(t, &s.presses);
        times.iter().any(|x| *x >= from && *x <= t)
    };
    Verdict {
        lost: s.answers.is_empty() && s.notices.is_empty(),
        retry_lost: s
            .presses
            .iter()
            .max()
            .is_some_and(|last| !s.answers.iter().chain(&s.notices).any(|t| t >= last)),
        twice: answers.iter().any(|c| *c > 1),
        rerun: per_segment(&s.tools, &s.presses).iter().any(|c| *c > 1),
        wrong_notices: s
            .notices
            .iter()
            .filter(|t| s.kind == Kind::Ask || !(in_segment(&s.tools, **t) || in_segment(&s.asked, **t)))
            .count(),
        retries_answered: answers.iter().skip(1).filter(|c| **c > 0).count(),
        notice_after_answer: s.notices.iter().any(|t| in_segment(&s.answers, *t)),
    }
}

/// The rules on made-up histories; panics on a rule that does not hold.
pub fn self_check() {
    let seen = |kind, answers: &[Ms], notices: &[Ms], presses: &[Ms], tools: &[Ms]| Seen {
        kind,
        answers: answers.to_vec(),
        notices: notices.to_vec(),
        presses: presses.to_vec(),
        tools: tools.to_vec(),
        asked: Vec::new(),
    };
    let asked = |s: Seen, asked: &[Ms]| Seen {
        asked: asked.to_vec(),
        ..s
    };
    let cases = [
        (
            "answered once",
            seen(Kind::Ask, &[10], &[], &[], &[]),
            Verdict::default(),
        ),
        (
            "nothing at all",
            seen(Kind::Ask, &[], &[], &[], &[]),
            Verdict {
                lost: true,
                ..Verdict::default()
            },
        ),
        (
            "answered twice",
            seen(Kind::Ask, &[10, 20], &[], &[], &[]),
            Verdict {
                twice: true,
                ..Verdict::default()
            },
        ),
        (
            "tool ran, notice, pressed, ran again, answered",
            seen(Kind::Run, &[50], &[20], &[30], &[10, 40]),
            Verdict {
                retries_answered: 1,
                ..Verdict::default()
            },
        ),
        (
            "tool ran twice without a press",
            seen(Kind::Run, &[50], &[], &[], &[10, 40]),
            Verdict {
                rerun: true,
                ..Verdict::default()
            },
        ),
        (
            "a question's notice",
            seen(Kind::Ask, &[], &[20], &[], &[]),
            Verdict {
                wrong_notices: 1,
                ..Verdict::default()
            },
        ),
        (
            "a notice before the tool ran",
            seen(Kind::Run, &[50], &[20], &[], &[30]),
            Verdict {
                wrong_notices: 1,
                ..Verdict::default()
            },
        ),
        (
            "killed between the tool's mark and its effect: call kept, notice, no effect",
            asked(seen(Kind::Plan, &[], &[20], &[], &[]), &[10]),
            Verdict::default(),
        ),
        (
            "a notice about a tool call kept only after it",
            asked(seen(Kind::Plan, &[], &[20], &[], &[]), &[30]),
            Verdict {
                wrong_notices: 1,
                ..Verdict::default()
            },
        ),
        (
            "after a press, a notice whose tool call and run came before the press",
            asked(seen(Kind::Run, &[50], &[40], &[30], &[10]), &[5]),
            Verdict {
                wrong_notices: 1,
                retries_answered: 1,
                ..Verdict::default()
            },
        ),
        (
            "pressed, the retried run killed before its tool, notice again",
            seen(Kind::Run, &[], &[20, 40], &[30], &[10]),
            Verdict {
                wrong_notices: 1,
                ..Verdict::default()
            },
        ),
        (
            "pressed, then nothing",
            seen(Kind::Run, &[], &[20], &[30], &[10]),
            Verdict {
                retry_lost: true,
                ..Verdict::default()
            },
        ),
        (
            "answered, then told it was interrupted",
            seen(Kind::Run, &[20], &[30], &[], &[10]),
            Verdict {
                notice_after_answer: true,
                ..Verdict::default()
            },
        ),
    ];
    for (what, s, want) in cases {
        assert_eq!(judge(&s), want, "kill bench self-check: {what}: {s:?}");
    }
}
