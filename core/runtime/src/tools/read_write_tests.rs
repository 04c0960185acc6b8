#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::test_support::{TestContext, details_of, run, text_of};
use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use volcanic_abstractions::messages::UserContent;
use volcanic_abstractions::tools::ExecutionMode;

fn write_lines(dir: &std::path::Path, name: &str, n: usize) {
    let text = (1..=n).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
    std::fs::write(dir.join(name), text).unwrap();
}

#[tokio::test]
async fn read_with_offset_and_limit_says_how_to_continue() {
    let dir = tempfile::tempdir().unwrap();
    write_lines(dir.path(), "f.txt", 10);
    let out = run(
        &*typed(ReadTool),
        TestContext::new(dir.path()),
        json!({"path": "f.txt", "offset": 3, "limit": 2}),
    )
    .await;
    assert_eq!(
        text_of(&out),
        "line 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]"
    );
    let out = run(
        &*typed(ReadTool),
        TestContext::new(dir.path()),
        json!({"path": "f.txt", "offset": 9}),
    )
    .await;
    assert_eq!(text_of(&out), "line 9\nline 10");
}

#[tokio::test]
async fn read_truncates_long_files_with_a_continuation_notice() {
    let dir = tempfile::tempdir().unwrap();
    write_lines(dir.path(), "big.txt", 2500);
    let out = run(
        &*typed(ReadTool),
        TestContext::new(dir.path()),
        json!({"path": "big.txt"}),
    )
    .await;
    let text = text_of(&out);
    assert!(
        text.ends_with("line 2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]"),
        "{text}"
    );
    assert_eq!(details_of(&out).unwrap()["truncation"]["truncatedBy"], "lines");
    let out = run(
        &*typed(ReadTool),
        TestContext::new(dir.path()),
        json!({"path": "big.txt", "offset": 2001}),
    )
    .await;
    assert!(text_of(&out).starts_with("line 2001\n"));
}

#[tokio::test]
async fn read_past_the_end_and_missing_files_are_errors_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    write_lines(dir.path(), "f.txt", 3);
    let out = run(
        &*typed(ReadTool),
        TestContext::new(dir.path()),
        json!({"path": "f.txt", "offset": 9}),
    )
    .await;
    assert_eq!(
        out.unwrap_err().to_string(),
        "Offset 9 is beyond the end of f.txt (3 lines in total)"
    );
    let out = run(
        &*typed(ReadTool),
        TestContext::new(dir.path()),
        json!({"path": "nope/missing.txt"}),
    )
    .await;
    assert_eq!(out.unwrap_err().to_string(), "File not found: nope/missing.txt");
}

#[tokio::test]
async fn read_returns_images_as_image_content() {
    let dir = tempfile::tempdir().unwrap();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    std::fs::write(dir.path().join("pic.png"), png).unwrap();
    let out = run(
        &*typed(ReadTool),
        TestContext::new(dir.path()),
        json!({"path": "pic.png"}),
    )
    .await
    .unwrap();
    assert_eq!(out.text_content(), "Read image file [image/png]");
    let image = out.content.iter().find_map(|c| match c {
        UserContent::Image(image) => Some(image.clone()),
        UserContent::Text(_) => None,
    });
    let image = image.expect("an image block");
    assert_eq!(image.mime_type, "image/png");
    use base64::Engine;
    assert_eq!(
        base64::engine::general_purpose::STANDARD.decode(image.data).unwrap(),
        png
    );
}

#[tokio::test]
async fn paths_resolve_against_cwd_and_home() {
    let cwd = std::path::Path::new("/work/x");
    assert_eq!(resolve_path(cwd, "a/b.txt"), cwd.join("a/b.txt"));
    assert_eq!(resolve_path(cwd, "/etc/hosts"), std::path::PathBuf::from("/etc/hosts"));
    assert_eq!(resolve_path(cwd, "@src/main.rs"), cwd.join("src/main.rs"));
    if let Some(home) = std::env::var_os("HOME") {
        assert_eq!(
            resolve_path(cwd, "~/notes.md"),
            std::path::PathBuf::from(home).join("notes.md")
        );
    }
}

#[tokio::test]
async fn write_creates_parent_directories_and_reports_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &*typed(WriteTool),
        TestContext::new(dir.path()),
        json!({"path": "a/b/c.txt", "content": "héllo"}),
    )
    .await;
    assert_eq!(text_of(&out), "Successfully wrote 6 bytes to a/b/c.txt");
    assert_eq!(std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(), "héllo");
    assert_eq!(typed(WriteTool).execution_mode(), ExecutionMode::Sequential);
}
