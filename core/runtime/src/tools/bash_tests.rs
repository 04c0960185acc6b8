#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::test_support::{TestContext, details_of, invocation, run, text_of};
use super::*;
use crate::processes::ProcessEnvironmentOptions;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::processes::ProcessSpawnHook;
use volcanic_abstractions::tools::ToolError;

fn ctx(dir: &std::path::Path) -> TestContext {
    TestContext::with_policy(
        dir,
        TestContext::policy_with_env(ProcessEnvironmentOptions::default(), &[]),
    )
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

async fn wait_gone(pid: u32) -> bool {
    for _ in 0..50 {
        if process_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn stdout_and_stderr_arrive_merged_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &*typed(BashTool),
        ctx(dir.path()),
        json!({"command": "echo one; echo two >&2; echo three; pwd"}),
    )
    .await;
    let cwd = dir.path().canonicalize().unwrap();
    assert_eq!(text_of(&out), format!("one\ntwo\nthree\n{}", cwd.display()));
    assert!(out.is_ok());
    let out = run(&*typed(BashTool), ctx(dir.path()), json!({"command": "true"})).await;
    assert_eq!(text_of(&out), "(no output)");
}

#[tokio::test]
async fn a_non_zero_exit_is_an_error_result_ending_with_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &*typed(BashTool),
        ctx(dir.path()),
        json!({"command": "echo partial; exit 3"}),
    )
    .await;
    assert!(matches!(out, Err(ToolError::WithResult(_))));
    assert_eq!(text_of(&out), "partial\n\nCommand exited with code 3");
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = run(
        &*typed(BashTool),
        ctx(dir.path()),
        json!({"command": "sleep 30 & echo $!; sleep 30", "timeout": 1}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    let text = text_of(&out);
    assert!(text.ends_with("\n\nCommand timed out after 1 seconds"), "{text}");
    let background: u32 = text.lines().next().unwrap().trim().parse().unwrap();
    assert!(
        wait_gone(background).await,
        "background sleep {background} survived the timeout"
    );
}

#[tokio::test]
async fn abort_kills_the_command_and_keeps_partial_output() {
    let dir = tempfile::tempdir().unwrap();
    let (invocation, updates) = invocation(ctx(dir.path()));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let out = typed(BashTool)
        .execute(
            json!({"command": "echo started; sleep 30 & echo $!; wait"}),
            invocation,
            cancel,
        )
        .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    let text = text_of(&out);
    assert!(text.starts_with("started\n"), "{text}");
    assert!(text.ends_with("\n\nCommand aborted"), "{text}");
    let background: u32 = text.lines().nth(1).unwrap().trim().parse().unwrap();
    assert!(wait_gone(background).await);
    let updates = updates.lock().unwrap();
    assert!(
        updates.iter().any(|u| u.text_content().starts_with("started")),
        "no progress update"
    );
}

#[tokio::test]
async fn the_child_environment_has_tz_and_lacks_denied_variables() {
    let dir = tempfile::tempdir().unwrap();
    let policy = TestContext::policy_with_env(
        ProcessEnvironmentOptions::default(),
        &[("OPENAI_API_KEY", "sk-test-0123456789"), ("VISIBLE_SETTING", "on")],
    );
    let mut context = TestContext::with_policy(dir.path(), policy);
    context.time_zone = Some("Europe/Berlin".to_owned());
    let out = run(&*typed(BashTool), context, json!({"command": "env"})).await;
    let text = text_of(&out);
    assert!(text.lines().any(|l| l == "TZ=Europe/Berlin"), "{text}");
    assert!(text.lines().any(|l| l == "VISIBLE_SETTING=on"), "{text}");
    assert!(!text.contains("OPENAI_API_KEY"), "{text}");
    assert!(!text.contains("sk-test-0123456789"), "{text}");
}

#[tokio::test]
async fn a_failing_environment_hook_fails_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let hook: ProcessSpawnHook = Arc::new(|_req, _ctx| Err("vetoed by host".to_owned()));
    let options = ProcessEnvironmentOptions {
        hooks: vec![hook],
        ..ProcessEnvironmentOptions::default()
    };
    let context = TestContext::with_policy(dir.path(), TestContext::policy_with_env(options, &[]));
    let out = run(&*typed(BashTool), context, json!({"command": "echo never"})).await;
    assert_eq!(
        out.unwrap_err().to_string(),
        "process environment hook failed: vetoed by host"
    );
}

#[tokio::test]
async fn big_output_is_tail_truncated_and_saved_in_full() {
    let dir = tempfile::tempdir().unwrap();
    // 100 000 lines, about 575 KiB: spills to the file while running.
    let out = run(&*typed(BashTool), ctx(dir.path()), json!({"command": "seq 1 100000"})).await;
    let text = text_of(&out);
    let details = details_of(&out).unwrap();
    let path = details["fullOutputPath"].as_str().unwrap().to_owned();
    assert!(text.starts_with("98001\n"), "{}", &text[..20]);
    assert!(
        text.ends_with(&format!(
            "100000\n\n[Showing last 2000 lines of 100000. Full output: {path}]"
        )),
        "{}",
        &text[text.len() - 200..]
    );
    assert_eq!(details["truncation"]["totalLines"], 100_000);
    let saved = std::fs::read_to_string(&path).unwrap();
    let expected: String = (1..=100_000).map(|i| format!("{i}\n")).collect();
    assert!(saved == expected, "the saved output differs");
    std::fs::remove_file(&path).unwrap();

    // 3000 short lines stay in memory and are saved at the end.
    let out = run(&*typed(BashTool), ctx(dir.path()), json!({"command": "seq 1 3000"})).await;
    let path = details_of(&out).unwrap()["fullOutputPath"].as_str().unwrap().to_owned();
    assert!(text_of(&out).ends_with(&format!("[Showing last 2000 lines of 3000. Full output: {path}]")));
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 3000);
    std::fs::remove_file(&path).unwrap();
}

#[tokio::test]
async fn one_huge_line_keeps_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &*typed(BashTool),
        ctx(dir.path()),
        json!({"command": "head -c 60000 /dev/zero | tr '\\0' a; echo; echo -n"}),
    )
    .await;
    let text = text_of(&out);
    let details = details_of(&out).unwrap();
    assert_eq!(details["truncation"]["lastLinePartial"], true);
    assert!(
        text.starts_with(&"a".repeat(DEFAULT_MAX_BYTES)),
        "kept {} bytes",
        text.len()
    );
    assert!(
        text.contains("[Showing the last 50.0KB of line 1. Full output: "),
        "{}",
        &text[DEFAULT_MAX_BYTES..]
    );
    let path = details["fullOutputPath"].as_str().unwrap();
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn a_missing_working_directory_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("gone");
    let out = run(&*typed(BashTool), ctx(&missing), json!({"command": "true"})).await;
    assert!(
        out.unwrap_err()
            .to_string()
            .starts_with("Working directory does not exist: ")
    );
}

#[tokio::test]
async fn dropping_a_running_call_kills_its_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let (invocation, updates) = invocation(ctx(dir.path()));
    let call = tokio::spawn(async move {
        typed(BashTool)
            .execute(
                json!({"command": "sleep 30 & echo $!; wait"}),
                invocation,
                CancellationToken::new(),
            )
            .await
    });
    let mut background = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let first = updates.lock().unwrap().first().map(|u| u.text_content());
        if let Some(pid) = first.and_then(|t| t.trim().parse::<u32>().ok()) {
            background = Some(pid);
            break;
        }
    }
    let background = background.expect("the command reported its background pid");
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    assert!(
        wait_gone(background).await,
        "background sleep {background} survived the drop"
    );
}
