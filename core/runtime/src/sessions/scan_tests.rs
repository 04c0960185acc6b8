#![allow(clippy::unwrap_used)]

use super::file_store::Span;
use super::scan::{LineInfo, Tail, index_line, scan};
use pretty_assertions::assert_eq;
use std::borrow::Cow;
use std::fs::{self, File};
use std::path::Path;
use volcanic_abstractions::sessions::{RoleTag, SessionStoreError};

const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-15T09:00:00.000Z","cwd":"/w"}"#;

fn line(id: &str, parent: Option<&str>) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-15T09:00:01.000Z","message":{{"role":"user","content":"hi {id}","timestamp":1}}}}"#
    )
}

fn scan_str(dir: &Path, content: &str) -> Result<super::scan::Scanned, SessionStoreError> {
    let path = dir.join("s.jsonl");
    fs::write(&path, content).unwrap();
    scan(&File::open(&path).unwrap(), &path)
}

fn info<'a>(tag: &'a str, id: &'a str, parent: Option<&'a str>, role: Option<RoleTag>) -> LineInfo<'a> {
    LineInfo {
        tag_name: Cow::Borrowed(tag),
        id: Cow::Borrowed(id),
        parent_id: parent.map(Cow::Borrowed),
        role,
    }
}

#[test]
fn index_line_reads_pis_prefix_and_falls_back_for_other_orders() {
    let msg = line("a1", Some("a0"));
    assert_eq!(
        index_line(msg.as_bytes()),
        Some(info("message", "a1", Some("a0"), Some(RoleTag::User)))
    );
    let custom = r#"{"type":"custom","customType":"x","data":{"id":"no"},"id":"c1","parentId":null,"timestamp":"t"}"#;
    assert_eq!(index_line(custom.as_bytes()), Some(info("custom", "c1", None, None)));
    let escaped = r#"{"type":"label","id":"q\"1","parentId":"a\u0031","timestamp":"t","targetId":"a1"}"#;
    assert_eq!(
        index_line(escaped.as_bytes()).map(|i| (i.id.into_owned(), i.parent_id.map(Cow::into_owned))),
        Some(("q\"1".to_owned(), Some("a1".to_owned())))
    );
    let role_later =
        r#"{"type":"message","id":"m1","parentId":"a1","timestamp":"t","message":{"content":"x","role":"assistant"}}"#;
    assert_eq!(
        index_line(role_later.as_bytes()),
        Some(info("message", "m1", Some("a1"), Some(RoleTag::Assistant)))
    );
    let no_role = r#"{"type":"message","id":"m2","parentId":"a1","timestamp":"t"}"#;
    assert_eq!(
        index_line(no_role.as_bytes()),
        Some(info("message", "m2", Some("a1"), Some(RoleTag::Other)))
    );
    for bad in [
        "garbage",
        r#"{"type":"custom","id":"x""#,
        r#"{"type":"custom","customType":"x"}"#,
        r#"{"type":"x","id":5}"#,
    ] {
        assert_eq!(index_line(bad.as_bytes()), None, "{bad}");
    }
}

#[test]
fn scan_indexes_lines_skipping_blank_bad_and_extra_header_lines() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        HEADER.to_owned(),
        line("a1", None),
        String::new(),
        "{not json}".to_owned(),
        HEADER.to_owned(),
        line("a2", Some("a1")),
        "   ".to_owned(),
        line("a3", Some("a2")),
    ];
    let content = lines.join("\n") + "\n";
    let s = scan_str(dir.path(), &content).unwrap();
    assert_eq!(s.header.id, "s1");
    assert_eq!(s.tail, Tail::Clean);
    assert_eq!(s.len, content.len() as u64);
    assert_eq!(s.index.len(), 3);
    assert_eq!(s.index.path_to(2), vec![0, 1, 2]);
    for (pos, span) in s.spans.iter().enumerate() {
        let text = &content[span.offset as usize..span.end() as usize];
        assert_eq!(
            text,
            line(
                s.index.id(pos as u32),
                s.index.parent(pos as u32).map(|p| s.index.id(p))
            )
        );
    }
}

#[test]
fn tail_states() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!("{HEADER}\n{}\n", line("a1", None));
    let cases: Vec<(String, Tail)> = vec![
        (body.clone(), Tail::Clean),
        (format!("{body}\n\n"), Tail::Clean),
        (format!("{body}{}", line("a2", Some("a1"))), Tail::MissingNewline),
        (
            format!("{body}{{\"type\":\"message\",\"id\":\"a2\",\"parentId\":\"a1\",\"times"),
            Tail::Torn {
                from: body.len() as u64,
            },
        ),
        (
            format!("{body}{{\"type\":\"broken\n"),
            Tail::Torn {
                from: body.len() as u64,
            },
        ),
        (
            format!("{body}\0\0\0\0"),
            Tail::Torn {
                from: body.len() as u64,
            },
        ),
        (
            format!("{body}   "),
            Tail::Torn {
                from: body.len() as u64,
            },
        ),
        (format!("{HEADER}\n"), Tail::Clean),
        (HEADER.to_owned(), Tail::MissingNewline),
    ];
    for (content, tail) in cases {
        let s = scan_str(dir.path(), &content).unwrap();
        assert_eq!(s.tail, tail, "{content:?}");
        let expected_entries = match tail {
            Tail::MissingNewline if content != HEADER => 2,
            _ if content.starts_with(&body) => 1,
            _ => 0,
        };
        assert_eq!(s.index.len(), expected_entries, "{content:?}");
    }
}

#[test]
fn a_last_line_longer_than_the_tail_window_is_checked_whole() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(300 * 1024);
    let long = format!(
        r#"{{"type":"message","id":"a2","parentId":"a1","timestamp":"t","message":{{"role":"user","content":"{big}","timestamp":1}}}}"#
    );
    let body = format!("{HEADER}\n{}\n", line("a1", None));
    let s = scan_str(dir.path(), &format!("{body}{long}\n")).unwrap();
    assert_eq!((s.tail, s.index.len()), (Tail::Clean, 2));
    assert_eq!(
        s.spans[1],
        Span {
            offset: body.len() as u64,
            len: long.len() as u32
        }
    );
    let torn = &long[..long.len() - 10];
    let s = scan_str(dir.path(), &format!("{body}{torn}")).unwrap();
    assert_eq!(
        (s.tail, s.index.len()),
        (
            Tail::Torn {
                from: body.len() as u64
            },
            1
        )
    );
}

#[test]
fn headers_that_cannot_be_read() {
    let dir = tempfile::tempdir().unwrap();
    for content in ["", "\n\n", "{\"type\":\"session\"", &line("a1", None), "[]\n"] {
        let err = scan_str(dir.path(), content).unwrap_err();
        assert!(
            matches!(err, SessionStoreError::BadHeader { .. }),
            "{content:?}: {err:?}"
        );
        assert!(err.to_string().contains("s.jsonl"), "{err}");
    }
    let v1 = r#"{"type":"session","id":"s","timestamp":"t","cwd":"/"}"#;
    assert!(matches!(
        scan_str(dir.path(), v1),
        Err(SessionStoreError::UnsupportedVersion { version: 1, .. })
    ));
    let s = scan_str(dir.path(), &format!("\n\n{HEADER}\n{}\n", line("a1", None))).unwrap();
    assert_eq!(s.index.len(), 1, "blank lines before the header are skipped");
}

#[test]
fn a_large_file_is_indexed_in_parts_exactly_as_line_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut content = format!("{HEADER}\n");
    let mut expected = Vec::new();
    let mut parent: Option<String> = None;
    let pad = "y".repeat(400);
    for i in 0..15_000u32 {
        let id = format!("{i:08x}");
        let p = parent.as_deref().map_or("null".to_owned(), |p| format!("\"{p}\""));
        let offset = content.len() as u64;
        let l = if i % 97 == 0 {
            format!(r#"{{"type":"custom","customType":"c","data":"{pad}","id":"{id}","parentId":{p},"timestamp":"t"}}"#)
        } else {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":{p},"timestamp":"t","message":{{"role":"assistant","content":"{pad}"}}}}"#
            )
        };
        expected.push((
            id.clone(),
            parent.clone(),
            Span {
                offset,
                len: l.len() as u32,
            },
        ));
        content.push_str(&l);
        content.push('\n');
        parent = Some(id);
    }
    assert!(content.len() > 4 << 20, "big enough to be split");
    let s = scan_str(dir.path(), &content).unwrap();
    assert_eq!(s.index.len(), expected.len());
    for (pos, (id, parent, span)) in expected.iter().enumerate() {
        let pos = pos as u32;
        assert_eq!(s.index.id(pos), id);
        assert_eq!(s.index.parent(pos).map(|p| s.index.id(p).to_owned()), *parent);
        assert_eq!(s.spans[pos as usize], *span);
    }
}

/// The ids on the path from the root to the last entry.
fn path_ids(s: &super::scan::Scanned) -> Vec<String> {
    let last = s.index.last().unwrap();
    s.index
        .path_to(last)
        .into_iter()
        .map(|p| s.index.id(p).to_owned())
        .collect()
}

#[test]
fn an_entry_whose_parent_line_is_unreadable_continues_from_the_entry_before_that_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = |lines: &[String]| format!("{HEADER}\n{}\n", lines.join("\n"));
    let garbage = || "\u{0}\u{0}garbage, once a3".to_owned();
    // (lines, expected path to the last entry)
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        // a3 lost: a4 continues from a2.
        (
            vec![
                line("a1", None),
                line("a2", Some("a1")),
                garbage(),
                line("a4", Some("a3")),
                line("a5", Some("a4")),
            ],
            vec!["a1", "a2", "a4", "a5"],
        ),
        // Two lines lost in a row: from the entry before both.
        (
            vec![line("a1", None), garbage(), garbage(), line("a4", Some("a3"))],
            vec!["a1", "a4"],
        ),
        // A branch written after the loss is not taken for the lost parent.
        (
            vec![
                line("a1", None),
                line("a2", Some("a1")),
                garbage(),
                line("b3", Some("a2")),
                line("a4", Some("a3")),
            ],
            vec!["a1", "a2", "a4"],
        ),
        // The first entry lost: its child starts the context.
        (
            vec![garbage(), line("a2", Some("a1")), line("a3", Some("a2"))],
            vec!["a2", "a3"],
        ),
        // An inserted garbage line loses nothing: links stay as written.
        (
            vec![
                line("a1", None),
                line("a2", Some("a1")),
                garbage(),
                line("a3", Some("a2")),
            ],
            vec!["a1", "a2", "a3"],
        ),
        // A parent written later (hand-made files) is still found.
        (
            vec![
                line("a1", None),
                garbage(),
                line("b", Some("c")),
                line("c", Some("a1")),
                line("d", Some("b")),
            ],
            vec!["a1", "c", "b", "d"],
        ),
    ];
    for (lines, expected) in cases {
        let content = file(&lines);
        let s = scan_str(dir.path(), &content).unwrap();
        assert_eq!(path_ids(&s), expected, "{content}");
        assert_eq!(s.tail, Tail::Clean);
    }
}

#[test]
fn without_an_unreadable_line_a_missing_parent_leaves_a_root() {
    let dir = tempfile::tempdir().unwrap();
    let content = format!(
        "{HEADER}\n{}\n{}\n{}\n",
        line("a1", None),
        line("a2", Some("a1")),
        line("a3", Some("gone"))
    );
    let s = scan_str(dir.path(), &content).unwrap();
    assert_eq!(path_ids(&s), ["a3"], "pi's reading: the walk stops there");
}

#[test]
fn a_lost_entry_in_a_large_file_indexed_in_parts_is_passed_over_too() {
    let dir = tempfile::tempdir().unwrap();
    let pad = "y".repeat(400);
    let entry = |i: u32| {
        let parent = i.checked_sub(1).map_or("null".to_owned(), |p| format!("\"{p:08x}\""));
        format!(
            r#"{{"type":"message","id":"{i:08x}","parentId":{parent},"timestamp":"t","message":{{"role":"assistant","content":"{pad}"}}}}"#
        )
    };
    let n = 15_000u32;
    // Entries 4999 and 10001 are lost (parts are split by bytes, so at least one part boundary
    // lies between the two losses).
    let lines: Vec<String> = (0..n)
        .map(|i| {
            if i == 4_999 || i == 10_001 {
                "#".repeat(300)
            } else {
                entry(i)
            }
        })
        .collect();
    let content = format!("{HEADER}\n{}\n", lines.join("\n"));
    assert!(content.len() > 4 << 20, "big enough to be split");
    let s = scan_str(dir.path(), &content).unwrap();
    assert_eq!(s.index.len(), n as usize - 2);
    let path = path_ids(&s);
    assert_eq!(path.len(), n as usize - 2, "the walk passes over both losses");
    assert_eq!(path[4_998..5_000], [format!("{:08x}", 4_998), format!("{:08x}", 5_000)]);
}
