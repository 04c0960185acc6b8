#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::test_support::{RecordingChannel, Sent, TestContext, run, text_of};
use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::sync::Arc;

fn ctx_with_channel(dir: &std::path::Path) -> (TestContext, Arc<RecordingChannel>) {
    let channel = Arc::new(RecordingChannel::default());
    let mut ctx = TestContext::new(dir);
    ctx.channel = Some(channel.clone());
    (ctx, channel)
}

#[tokio::test]
async fn images_go_as_photos_and_other_files_as_documents() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("chart.PNG"), b"png").unwrap();
    std::fs::write(dir.path().join("report.pdf"), b"pdf").unwrap();
    let (ctx, channel) = ctx_with_channel(dir.path());
    let out = run(&*typed(SendTool), ctx, json!({"path": "chart.PNG", "caption": "Sales"})).await;
    assert_eq!(text_of(&out), "Sent photo chart.PNG");
    let (ctx, _) = ctx_with_channel(dir.path());
    let ctx = TestContext {
        channel: Some(channel.clone()),
        ..ctx
    };
    let out = run(&*typed(SendTool), ctx, json!({"path": "report.pdf"})).await;
    assert_eq!(text_of(&out), "Sent file report.pdf");
    assert_eq!(
        *channel.sent.lock().unwrap(),
        vec![
            Sent::File {
                name: "chart.PNG".into(),
                content: b"png".to_vec(),
                caption: Some("Sales".into()),
                as_photo: true
            },
            Sent::File {
                name: "report.pdf".into(),
                content: b"pdf".to_vec(),
                caption: None,
                as_photo: false
            },
        ]
    );
}

#[tokio::test]
async fn text_is_sent_as_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, channel) = ctx_with_channel(dir.path());
    let out = run(&*typed(SendTool), ctx, json!({"text": "Done: *3* files"})).await;
    assert_eq!(text_of(&out), "Sent message (15 characters)");
    assert_eq!(
        *channel.sent.lock().unwrap(),
        vec![Sent::Text("Done: *3* files".into())]
    );
}

#[tokio::test]
async fn exactly_one_of_path_or_text_and_the_file_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, channel) = ctx_with_channel(dir.path());
    let out = run(&*typed(SendTool), ctx, json!({"text": "a", "path": "b"})).await;
    assert!(text_of(&out).starts_with("Give exactly one of path"));
    let (ctx, _) = ctx_with_channel(dir.path());
    let out = run(&*typed(SendTool), ctx, json!({})).await;
    assert!(out.is_err());
    let (ctx, _) = ctx_with_channel(dir.path());
    let out = run(&*typed(SendTool), ctx, json!({"path": "missing.jpg"})).await;
    assert_eq!(out.unwrap_err().to_string(), "File not found: missing.jpg");
    assert!(channel.sent.lock().unwrap().is_empty());
}

#[tokio::test]
async fn without_a_channel_send_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&*typed(SendTool), TestContext::new(dir.path()), json!({"text": "hi"})).await;
    assert!(out.is_err());
}

#[tokio::test]
async fn the_file_sent_is_the_one_opened_when_the_path_is_swapped_before_the_send() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("report.txt"), b"checked").unwrap();
    std::fs::write(dir.path().join("decoy"), b"swapped in").unwrap();
    let channel = Arc::new(RecordingChannel {
        swap: Some((dir.path().join("decoy"), dir.path().join("report.txt"))),
        ..RecordingChannel::default()
    });
    let mut ctx = TestContext::new(dir.path());
    ctx.channel = Some(channel.clone());
    run(&*typed(SendTool), ctx, json!({"path": "report.txt"}))
        .await
        .unwrap();
    assert_eq!(
        *channel.sent.lock().unwrap(),
        vec![Sent::File {
            name: "report.txt".into(),
            content: b"checked".to_vec(),
            caption: None,
            as_photo: false
        }]
    );
}
