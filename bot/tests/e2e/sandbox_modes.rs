//! `[sandbox] mode` on a kernel without Landlock (simulated with `VOLCANIC_SANDBOX_SIMULATE`):
//! `auto` warns and runs confined by what is left, `required` refuses to start saying why, and
//! `doctor` says which.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::sandbox_support::*;
use std::time::Duration;

const NO_LANDLOCK: (&str, &str) = ("VOLCANIC_SANDBOX_SIMULATE", "no-landlock");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_without_landlock_warns_and_runs_with_seccomp_and_no_capabilities() {
    let rig = Rig::start("mode = \"auto\"", &[NO_LANDLOCK]).await;
    let outputs = rig
        .run(
            &[
                Attempt {
                    name: "works",
                    tool: "bash",
                    args: serde_json::json!({"command": "echo fine > f && cat f"}),
                },
                bash("unshare_user_namespace", "unshare -Ur id"),
                bash(
                    "keeps_a_capability",
                    "! grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status",
                ),
            ],
            3,
        )
        .await;
    assert_eq!(outputs[0].trim_end(), "fine");
    for out in &outputs[1..] {
        assert!(
            !out.contains(ESCAPED) && out.contains("Command exited with code"),
            "{out}"
        );
    }
    let log = rig.bot.log();
    assert!(
        log.contains("Landlock is not available (simulated by VOLCANIC_SANDBOX_SIMULATE=no-landlock)")
            && log.contains("agent processes run with what the kernel offers"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_without_landlock_refuses_to_start_saying_what_is_missing() {
    let mut rig = Rig::start("mode = \"required\"", &[NO_LANDLOCK]).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = rig.bot.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the bot kept running:\n{}",
            rig.bot.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(status.code(), Some(2));
    let log = rig.bot.log();
    assert!(
        log.contains("config key `sandbox.mode`")
            && log.contains("mode = \"required\", but Landlock is not available (simulated"),
        "{log}"
    );
    assert!(rig.tg.calls("getUpdates").is_empty(), "it polled Telegram");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_says_what_the_kernel_offers_and_what_each_mode_does() {
    let cases = [
        ("mode = \"auto\"", None, "[ok]", "Landlock ABI"),
        ("mode = \"auto\"", Some(NO_LANDLOCK), "[note]", "Landlock missing"),
        ("mode = \"required\"", Some(NO_LANDLOCK), "[FAIL]", "refuses to start"),
        ("mode = \"off\"", None, "[FAIL]", "run unconfined"),
        (
            "allow_hosts = [\"api.github.com\"]",
            None,
            "[ok]",
            "the allow-list (allow_hosts, /network allow) can work",
        ),
        (
            "allow_hosts = [\"api.github.com\"]",
            Some(("VOLCANIC_SANDBOX_SIMULATE", "no-userns")),
            "[FAIL]",
            "allow_hosts needs unprivileged user namespaces",
        ),
    ];
    for (sandbox, var, mark, needle) in cases {
        let out = doctor(sandbox, var.as_slice()).await;
        let line = out
            .lines()
            .find(|l| l.contains(" sandbox "))
            .unwrap_or_else(|| panic!("no sandbox line:\n{out}"));
        assert!(
            line.starts_with(mark) && line.contains(needle),
            "{sandbox} {var:?}: {line}"
        );
    }
}
