//! `[sandbox] network` through the real binary: a chat's `bash` connects (curl, a Python socket)
//! to a loopback listener this test opens and to the bot's own `[http] listen`. Under `"on"`
//! every connection goes through; under `"off"` every one is refused (no inet socket at all,
//! loopback included). Every connection goes to a loopback address.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::sandbox_support::*;
use crate::support::{free_port, http_section};

/// The attempts against the test's listener on `port` and the bot's on `bot_port`, with what
/// each prints when it got through.
fn attempts(port: u16, bot_port: u16) -> Vec<(Attempt, &'static str)> {
    vec![
        (
            bash(
                "curl_loopback_listener",
                format!("curl -sS --max-time 5 http://127.0.0.1:{port}/"),
            ),
            ANSWER,
        ),
        (
            bash(
                "curl_localhost_listener",
                format!("curl -sS --max-time 5 http://localhost:{port}/"),
            ),
            ANSWER,
        ),
        (
            python_connect("python_socket_loopback_listener", "AF_INET", "127.0.0.1", port),
            "CONNECTED",
        ),
        (
            bash(
                "curl_bot_listener",
                format!(
                    "code=$(curl -sS --max-time 5 -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{bot_port}/); \
                     [ \"$code\" != 000 ] && echo status=$code"
                ),
            ),
            "status=",
        ),
        (
            python_connect("python_socket_bot_listener", "AF_INET", "127.0.0.1", bot_port),
            "CONNECTED",
        ),
    ]
}

/// Runs the attempts under `network`; returns (name, output) of each.
async fn run(network: &str) -> (Rig, Vec<(&'static str, &'static str, String)>) {
    let port = listener().await;
    let bot_port = free_port();
    // The A2A server's routes make the bot listen on `[http] listen`.
    let sections = format!(
        "{}[a2a.server]\nname = \"Test assistant\"\n[[a2a.server.callers]]\nname = \"alice\"\ntoken_env = \"E2E_ALICE\"\n",
        http_section(bot_port)
    );
    let sandbox = format!("mode = \"required\"\nnetwork = \"{network}\"");
    let rig = Rig::start_on(
        "anthropic/claude-sonnet-4-5",
        &sections,
        &sandbox,
        &[("E2E_ALICE", "alice-token-0123456789abcdef")],
    )
    .await;
    // The bot's own listener is up (the test reaches it from outside the sandbox).
    wait_listening(bot_port, &rig.bot).await;
    let (attempts, got_through): (Vec<Attempt>, Vec<&'static str>) = attempts(port, bot_port).into_iter().unzip();
    let outputs = rig.run(&attempts, 5).await;
    let results = attempts
        .iter()
        .zip(got_through)
        .zip(outputs)
        .map(|((a, through), out)| (a.name, through, out))
        .collect();
    (rig, results)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_network_on_a_chat_reaches_loopback_listeners() {
    let (rig, results) = run("on").await;
    for (name, through, out) in &results {
        assert!(
            out.contains(through) && out.contains(ESCAPED),
            "{name} did not get through under network = \"on\":\n{out}"
        );
    }
    rig.assert_no_secret_anywhere();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_network_off_every_connection_is_refused_loopback_included() {
    let (rig, results) = run("off").await;
    for (name, through, out) in &results {
        assert!(
            !out.contains(through) && !out.contains(ESCAPED),
            "{name} got through under network = \"off\":\n{out}"
        );
        assert!(
            out.contains("ot permitted") || out.contains("PermissionError") || out.contains("Couldn't connect"),
            "{name}: not refused by the policy:\n{out}"
        );
    }
    rig.assert_no_secret_anywhere();
}
