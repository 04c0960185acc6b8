//! `[sandbox] allow_hosts` through the real binary: a chat's `bash` reaches a listed name through
//! the bot's proxy (plain HTTP and a `CONNECT` tunnel, curl and Python) and nothing else: not an
//! unlisted name, not a listed name or literal that is loopback, not the bot's own listener, not
//! the metadata address, no direct connection, no DNS. The listed name `allowed.test` is mapped to
//! the test's loopback listener by the test-only `VOLCANIC_SANDBOX_TEST_RESOLVE` (debug builds);
//! every connection goes to a loopback address.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::sandbox_support::*;
use crate::support::{FRIEND, OWNER, free_port, http_section, wait_text};
use volcanic_testkit::bot_api::updates;

/// The attempts: (attempt, text its output must hold, text it must not hold).
fn attempts(port: u16, bot_port: u16) -> Vec<(Attempt, String, &'static str)> {
    let curl = "curl -sS --max-time 5";
    let direct = "curl -sS --noproxy '*' --max-time 5";
    let python_get = |url: &str| {
        format!(
            "/usr/bin/python3 -c 'import urllib.request; \
             print(urllib.request.urlopen(\"{url}\", timeout=5).read().decode())' 2>&1 | tail -1"
        )
    };
    vec![
        // Allowed: the listed name, through the proxy.
        (
            shell("curl_allowed_name", format!("{curl} http://allowed.test/")),
            ANSWER.into(),
            "refused",
        ),
        (
            shell(
                "curl_allowed_name_connect_tunnel",
                format!("{curl} --proxytunnel http://allowed.test/"),
            ),
            ANSWER.into(),
            "refused",
        ),
        (
            shell("python_allowed_name", python_get("http://allowed.test/")),
            ANSWER.into(),
            "refused",
        ),
        // Refused by the proxy, with its one-line answer.
        (
            shell("curl_unlisted_name", format!("{curl} http://unlisted.test/")),
            "the network policy refused unlisted.test: it is not on this chat's allow-list".into(),
            ANSWER,
        ),
        (
            shell(
                "curl_unlisted_name_connect_tunnel",
                format!("{curl} -p https://unlisted.test/"),
            ),
            "403".into(),
            ANSWER,
        ),
        (
            shell("python_unlisted_name", python_get("http://unlisted.test/")),
            "403".into(),
            ANSWER,
        ),
        (
            shell(
                "curl_listed_name_resolving_to_loopback",
                format!("{curl} http://localhost/"),
            ),
            "refused localhost: it resolves only to loopback".into(),
            ANSWER,
        ),
        (
            shell("curl_listed_loopback_literal", format!("{curl} http://127.0.0.1/")),
            "refused 127.0.0.1: it resolves only to loopback".into(),
            ANSWER,
        ),
        (
            shell(
                "curl_bot_listener_through_proxy",
                format!("{curl} http://127.0.0.1:{bot_port}/"),
            ),
            format!("refused 127.0.0.1:{bot_port}"),
            "status",
        ),
        (
            shell(
                "curl_metadata_through_proxy",
                format!("{curl} http://169.254.169.254/latest/meta-data/"),
            ),
            "refused 169.254.169.254".into(),
            ANSWER,
        ),
        // Direct connections: no route but loopback, where nothing of the host listens.
        (
            shell(
                "curl_direct_loopback_listener",
                format!("{direct} http://127.0.0.1:{port}/"),
            ),
            "Couldn't connect".into(),
            ANSWER,
        ),
        (
            shell(
                "curl_direct_bot_listener",
                format!("{direct} http://127.0.0.1:{bot_port}/"),
            ),
            "Couldn't connect".into(),
            ANSWER,
        ),
        (
            shell(
                "curl_direct_other_loopback_address",
                format!("{direct} http://127.0.0.2:{port}/"),
            ),
            "Couldn't connect".into(),
            ANSWER,
        ),
        (
            python_connect("python_socket_direct_loopback_listener", "AF_INET", "127.0.0.1", port),
            "Connection refused".into(),
            "CONNECTED",
        ),
        (
            python_connect("python_socket_direct_bot_listener", "AF_INET6", "::1", bot_port),
            "Error".into(),
            "CONNECTED",
        ),
        // DNS: no server to ask.
        (
            shell(
                "dns_getent_unlisted_name",
                "getent hosts unlisted.test || echo dns-failed",
            ),
            "dns-failed".into(),
            "unlisted.test",
        ),
        (
            shell(
                "dns_python_getaddrinfo",
                "/usr/bin/python3 -c 'import socket; print(socket.getaddrinfo(\"allowed.test\", 80))' 2>&1 | tail -1",
            ),
            "gaierror".into(),
            "127.0.0.1",
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_an_allow_list_a_chat_reaches_listed_names_through_the_proxy_and_nothing_else() {
    let port = listener().await;
    let bot_port = free_port();
    let sections = format!(
        "{}[a2a.server]\nname = \"Test assistant\"\n[[a2a.server.callers]]\nname = \"alice\"\ntoken_env = \"E2E_ALICE\"\n",
        http_section(bot_port)
    );
    let sandbox = "mode = \"required\"\nallow_hosts = [\"allowed.test\", \"localhost\", \"127.0.0.1\"]";
    let resolve = format!("allowed.test=127.0.0.1:{port}");
    let rig = Rig::start_on(
        "anthropic/claude-sonnet-4-5",
        &sections,
        sandbox,
        &[
            ("E2E_ALICE", "alice-token-0123456789abcdef"),
            ("VOLCANIC_SANDBOX_TEST_RESOLVE", &resolve),
        ],
    )
    .await;
    wait_listening(bot_port, &rig.bot).await;
    let (attempts, checks): (Vec<Attempt>, Vec<(String, &str)>) = attempts(port, bot_port)
        .into_iter()
        .map(|(a, has, lacks)| (a, (has, lacks)))
        .unzip();
    let outputs = rig.run(&attempts, 6).await;
    for ((attempt, (has, lacks)), out) in attempts.iter().zip(checks).zip(outputs) {
        assert!(
            out.contains(&has) && !out.contains(lacks),
            "{}: expected {has:?} and not {lacks:?}:\n{out}",
            attempt.name
        );
    }
    assert_no_orphaned_bridge();
    let log = rig.bot.log();
    assert!(
        log.lines()
            .any(|l| l.contains("refused unlisted.test") && l.contains(&OWNER.to_string())),
        "the refusal was not logged with the chat and host:\n{log}"
    );
    rig.assert_no_secret_anywhere();
}

/// Sends `/network <args>` as `from` in its private chat and waits for an answer holding `needle`.
async fn network(rig: &Rig, from: i64, args: &str, needle: &str) {
    rig.tg
        .push_update(updates::text_message(from, from, &format!("/network {args}")));
    wait_text(&rig.tg, from, needle, &rig.bot).await;
}

/// One `curl` to `name` through the proxy and one Python socket to the test listener: what
/// came back.
async fn reach(rig: &Rig, name: &'static str, port: u16) -> (String, String) {
    let attempts = [
        shell(
            name,
            "curl -sS --max-time 5 http://allowed.test/; curl -sS --max-time 5 http://other.test/",
        ),
        python_connect("python_socket_direct", "AF_INET", "127.0.0.1", port),
    ];
    let mut out = rig.run(&attempts, 2).await.into_iter();
    (out.next().unwrap(), out.next().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_set_a_chats_network_policy_with_the_network_command_for_its_next_command() {
    let port = listener().await;
    let sandbox = "mode = \"required\"\nallow_hosts = [\"allowed.test\"]";
    let resolve = format!("allowed.test=127.0.0.1:{port},other.test=127.0.0.1:{port}");
    let rig = Rig::start(sandbox, &[("VOLCANIC_SANDBOX_TEST_RESOLVE", &resolve)]).await;
    let refused_other = "refused other.test: it is not on this chat's allow-list";
    // The bot's default: allowed.test only.
    let (curl, _) = reach(&rig, "default_allow_list", port).await;
    assert!(
        curl.contains(ANSWER) && curl.contains(refused_other),
        "default allow-list:\n{curl}"
    );
    // A non-owner sees the policy and cannot change it.
    network(&rig, FRIEND, "on", "Only an owner can change").await;
    let file = rig.env.dir.path().join("data/network");
    assert!(!file.join(FRIEND.to_string()).exists(), "a non-owner's change was kept");
    // The owner's own list replaces the default from the next command.
    network(&rig, OWNER, "allow other.test", "allow-list: other.test").await;
    let (curl, _) = reach(&rig, "chat_allow_list", port).await;
    assert!(
        curl.contains(ANSWER) && curl.contains("refused allowed.test: it is not on this chat's allow-list"),
        "the chat's own list:\n{curl}"
    );
    // Off: no network at all.
    network(&rig, OWNER, "off", "off: no network at all").await;
    let (curl, python) = reach(&rig, "chat_off", port).await;
    assert!(
        !curl.contains(ANSWER) && !curl.contains("refused"),
        "off, curl:\n{curl}"
    );
    assert!(
        python.contains("PermissionError") && !python.contains("CONNECTED"),
        "off, socket:\n{python}"
    );
    // On: direct connections go through.
    network(&rig, OWNER, "on", "on: any host").await;
    let (_, python) = reach(&rig, "chat_on", port).await;
    assert!(python.contains("CONNECTED"), "on, socket:\n{python}");
    // Back to the bot's default.
    network(&rig, OWNER, "default", "the bot's default").await;
    assert!(!file.join(OWNER.to_string()).exists(), "the chat's file stayed");
    let (curl, python) = reach(&rig, "back_to_default", port).await;
    assert!(
        curl.contains(ANSWER) && curl.contains(refused_other),
        "default again:\n{curl}"
    );
    assert!(!python.contains("CONNECTED"), "default again, socket:\n{python}");
    rig.assert_no_secret_anywhere();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_user_namespaces_the_allow_list_fails_closed_saying_why() {
    let rig = Rig::start(
        "mode = \"required\"\nallow_hosts = [\"allowed.test\"]",
        &[("VOLCANIC_SANDBOX_SIMULATE", "no-userns")],
    )
    .await;
    let out = rig
        .run(&[bash("bash_without_user_namespaces", "echo started")], 1)
        .await;
    assert!(
        out[0].contains("the allow-list needs unprivileged user namespaces") && !out[0].contains("started"),
        "{}",
        out[0]
    );
}

/// Every `sandbox-bridge` process still running belongs to a running command: none was left
/// running by a command that ended (it would be re-parented to pid 1 or to this test). A dead
/// one waiting to be reaped by pid 1 (a zombie) is not running.
fn assert_no_orphaned_bridge() {
    let field = |status: &str, name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_owned())
            .unwrap_or_default()
    };
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        if field(&status, "Name:") == "sandbox-bridge" && !field(&status, "State:").starts_with('Z') {
            let parent: u32 = field(&status, "PPid:").parse().unwrap_or(0);
            assert!(
                parent != 1 && parent != std::process::id(),
                "an orphaned bridge: {status}"
            );
        }
    }
}
