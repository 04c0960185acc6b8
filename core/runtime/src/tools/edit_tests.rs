#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::test_support::{TestContext, details_of, run, text_of};
use super::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use volcanic_abstractions::tools::ExecutionMode;

const ORIGINAL: &str = "fn main() {\n    let a = 1;\n    let b = 2;\n    println!(\"{}\", a + b);\n}\n";

async fn edit(
    edits: Value,
) -> (
    Result<volcanic_abstractions::tools::ToolResult, volcanic_abstractions::tools::ToolError>,
    String,
) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.rs"), ORIGINAL).unwrap();
    let out = run(
        &*typed(EditTool),
        TestContext::new(dir.path()),
        json!({"path": "main.rs", "edits": edits}),
    )
    .await;
    let after = std::fs::read_to_string(dir.path().join("main.rs")).unwrap();
    (out, after)
}

#[tokio::test]
async fn several_edits_apply_against_the_original_with_a_diff() {
    let (out, after) = edit(json!([
        {"oldText": "let b = 2;", "newText": "let b = 3;"},
        {"oldText": "let a = 1;", "newText": "let a = 10;"}
    ]))
    .await;
    assert_eq!(text_of(&out), "Successfully replaced 2 block(s) in main.rs.");
    assert_eq!(
        after,
        ORIGINAL
            .replace("let a = 1;", "let a = 10;")
            .replace("let b = 2;", "let b = 3;")
    );
    let details = details_of(&out).unwrap();
    assert_eq!(details["firstChangedLine"], 2);
    let diff = details["diff"].as_str().unwrap();
    assert!(diff.contains("-2     let a = 1;"), "{diff}");
    assert!(diff.contains("+2     let a = 10;"), "{diff}");
    assert!(diff.contains(" 1 fn main() {"), "{diff}");
    assert_eq!(typed(EditTool).execution_mode(), ExecutionMode::Sequential);
}

#[tokio::test]
async fn an_edit_matching_nothing_names_its_index_and_writes_nothing() {
    let (out, after) = edit(json!([
        {"oldText": "let a = 1;", "newText": "let a = 5;"},
        {"oldText": "let c = 3;", "newText": "x"}
    ]))
    .await;
    let message = out.unwrap_err().to_string();
    assert!(
        message.starts_with("Edit 2 of 2: oldText matched 0 times in main.rs."),
        "{message}"
    );
    assert!(message.ends_with("Nothing was changed in main.rs."), "{message}");
    assert_eq!(after, ORIGINAL);
}

#[tokio::test]
async fn an_edit_matching_twice_names_its_index_and_count() {
    let (out, after) = edit(json!([{"oldText": "let ", "newText": "const "}])).await;
    let message = out.unwrap_err().to_string();
    assert!(
        message.starts_with("Edit 1 of 1: oldText matched 2 times in main.rs;"),
        "{message}"
    );
    assert_eq!(after, ORIGINAL);
}

#[tokio::test]
async fn overlapping_edits_are_refused() {
    let (out, after) = edit(json!([
        {"oldText": "let a = 1;\n    let b", "newText": "x"},
        {"oldText": "let b = 2;", "newText": "y"}
    ]))
    .await;
    let message = out.unwrap_err().to_string();
    assert!(message.starts_with("Edits 1 and 2 overlap in main.rs"), "{message}");
    assert_eq!(after, ORIGINAL);
}

#[tokio::test]
async fn crlf_and_bom_are_preserved() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.txt"), "\u{feff}one\r\ntwo\r\nthree\r\n").unwrap();
    let out = run(
        &*typed(EditTool),
        TestContext::new(dir.path()),
        json!({"path": "w.txt", "edits": [{"oldText": "one\ntwo", "newText": "uno\ndos"}]}),
    )
    .await;
    assert!(out.is_ok(), "{}", text_of(&out));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("w.txt")).unwrap(),
        "\u{feff}uno\r\ndos\r\nthree\r\n"
    );
}

#[tokio::test]
async fn a_missing_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &*typed(EditTool),
        TestContext::new(dir.path()),
        json!({"path": "gone.txt", "edits": [{"oldText": "a", "newText": "b"}]}),
    )
    .await;
    assert_eq!(out.unwrap_err().to_string(), "File not found: gone.txt");
}

#[test]
fn diff_shows_context_and_skips_far_lines() {
    let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
    let new = old.replace("l10\n", "ten\n");
    let diff = line_diff(&old, &new);
    assert_eq!(diff.first_changed_line, Some(10));
    let expected = [
        "  6 l6", "  7 l7", "  8 l8", "  9 l9", "-10 l10", "+10 ten", " 11 l11", " 12 l12", " 13 l13", " 14 l14",
    ]
    .join("\n");
    assert_eq!(diff.diff, expected);
}
