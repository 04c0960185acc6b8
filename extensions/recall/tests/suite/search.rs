use super::State;
use crate::transcript::{self, assistant, header, user};
use pretty_assertions::assert_eq;

const DAY: i64 = 86_400_000;
const T0: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

#[test]
fn a_word_said_sessions_ago_is_found_with_its_date_session_and_sender() {
    let s = State::new();
    s.write(
        "g5/main/a.jsonl",
        &(header("s-one", T0) + &user("e1", None, T0, "the quokka budget is settled", Some("Ann Lee"))),
    );
    s.write(
        "g5/main/b.jsonl",
        &transcript::session("s-two", T0 + DAY, 4, |i| format!("nothing here {i}")),
    );
    s.write(
        "g5/77/c.jsonl",
        &(header("s-three", T0 + 2 * DAY) + &assistant("e9", None, T0 + 2 * DAY, "Quokka budget: approved.")),
    );
    let hits = s.search("g5", "quokka budget");
    let got: Vec<(i64, &str, &str, &str, &str)> = hits
        .iter()
        .map(|h| {
            (
                h.at_ms,
                h.session.as_str(),
                h.entry.as_str(),
                h.who.as_str(),
                h.snippet.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                T0 + 2 * DAY,
                "s-three",
                "e9",
                "assistant",
                "**Quokka** **budget**: approved"
            ),
            (
                T0,
                "s-one",
                "e1",
                "user Ann Lee",
                "the **quokka** **budget** is settled"
            ),
        ]
    );
}

#[test]
fn an_entry_with_more_of_the_words_ranks_first_and_any_word_matches() {
    let s = State::new();
    // The entry with both words is neither the first nor the last written (FTS5's own `rank`
    // scored every entry 0 in this index, which gave the first written first).
    let texts = [
        "the garden needs water",
        "garden party on friday",
        "the cat sleeps",
        "friday",
    ];
    s.write(
        "1/main/a.jsonl",
        &transcript::session("s", T0, 4, |i| texts[i].to_owned()),
    );
    let ranked: Vec<String> = s.search("1", "garden friday").into_iter().map(|h| h.entry).collect();
    assert_eq!(ranked.first().map(String::as_str), Some("00000001"), "{ranked:?}");
    let mut rest = ranked[1..].to_vec();
    rest.sort();
    assert_eq!(rest, vec!["00000000", "00000003"]);
}

#[test]
fn the_run_being_answered_is_left_out() {
    let s = State::new();
    s.write("1/main/a.jsonl", &transcript::session("s", T0, 3, |_| "okapi".into()));
    let query = volcanic_recall::Query {
        terms: volcanic_recall::Terms::parse("okapi").unwrap_or_else(|e| panic!("{e}")),
        since_ms: None,
        until_ms: None,
        limit: 2,
        skip: Some(("s".into(), vec!["00000002".into()])),
    };
    let hits = s
        .recall
        .search(&super::key("1"), &query)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut ids: Vec<String> = hits.into_iter().map(|h| h.entry).collect();
    ids.sort();
    assert_eq!(ids, vec!["00000000", "00000001"]);
}

#[test]
fn since_and_until_keep_to_their_window() {
    let s = State::new();
    let mut text = header("s", T0);
    for d in 0..5 {
        text.push_str(&user(&format!("d{d}"), None, T0 + d * DAY, "invoice", None));
    }
    s.write("1/main/a.jsonl", &text);
    let mut days: Vec<String> = s
        .search_in("1", "invoice", Some(T0 + DAY), Some(T0 + 3 * DAY))
        .into_iter()
        .map(|h| h.entry)
        .collect();
    days.sort();
    assert_eq!(days, vec!["d1", "d2"]);
}

#[test]
fn a_chat_never_sees_another_chats_words() {
    let s = State::new();
    s.write(
        "1/main/a.jsonl",
        &transcript::session("s1", T0, 2, |_| "zanzibarword here".into()),
    );
    s.write(
        "2/main/a.jsonl",
        &transcript::session("s2", T0, 2, |_| "other words".into()),
    );
    s.write(
        "g3/9/a.jsonl",
        &transcript::session("s3", T0, 2, |_| "other words".into()),
    );
    s.write(
        "a2a-bob/ctx/a.jsonl",
        &transcript::session("s4", T0, 2, |_| "other words".into()),
    );
    assert_eq!(s.search("1", "zanzibarword").len(), 2);
    for other in ["2", "g3", "a2a-bob", "9"] {
        assert_eq!(s.search(other, "zanzibarword"), vec![], "found from {other}");
    }
}

#[test]
fn a_hit_whose_session_file_was_deleted_says_so_and_the_others_keep_their_snippets() {
    let s = State::new();
    s.write(
        "1/main/a.jsonl",
        &transcript::session("s-a", T0, 2, |i| format!("okapi one {i}")),
    );
    let gone = s.write(
        "1/main/b.jsonl",
        &transcript::session("s-b", T0 + DAY, 2, |i| format!("okapi two {i}")),
    );
    assert_eq!(s.search("1", "okapi").len(), 4);
    std::fs::remove_file(&gone).unwrap_or_else(|e| panic!("{e}"));
    let mut got: Vec<(String, String)> = s
        .search("1", "okapi")
        .into_iter()
        .map(|h| (h.session, h.snippet))
        .collect();
    got.sort();
    let note = "(its session file no longer has this entry)";
    assert_eq!(
        got,
        [
            ("s-a", "**okapi** one 0"),
            ("s-a", "**okapi** one 1"),
            ("s-b", note),
            ("s-b", note)
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
}
