//! The host's name services behind Unix sockets (systemd-resolved, nscd, the system D-Bus) are
//! hidden from a chat's processes under every network policy but `"on"`, through the real
//! binary. This machine runs none of them, so the test adds a folder of its own to the masked
//! list (`VOLCANIC_SANDBOX_TEST_MASK`, debug builds) with a listening Unix socket in it: under
//! `"on"` the chat's Python connects to it (the control), under `"off"` and the allow-list it
//! cannot.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::sandbox_support::*;
use crate::support::OWNER;
use std::os::unix::net::UnixListener;

/// A Python connecting to the Unix socket at `path`; prints `CONNECTED` when it got through.
fn connect_unix(name: &'static str, path: &str) -> Attempt {
    shell(
        name,
        format!(
            "/usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.settimeout(5); \
             s.connect(\"{path}\"); print(\"CONNECTED\")' 2>&1"
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_name_services_are_hidden_from_every_policy_but_on() {
    let folder = tempfile::tempdir().unwrap();
    let socket = folder.path().join("resolver-socket");
    // A listening socket accepts connections into its backlog: nobody needs to accept them.
    let _listener = UnixListener::bind(&socket).unwrap();
    let path = socket.to_str().unwrap().to_owned();
    let rig = Rig::start(
        "mode = \"required\"\nnetwork = \"off\"",
        &[("VOLCANIC_SANDBOX_TEST_MASK", folder.path().to_str().unwrap())],
    )
    .await;
    let attempt = |name| [connect_unix(name, &path)];
    // Off (the bot's default): the folder is empty in the child's view.
    let out = rig.run(&attempt("unix_socket_off"), 1).await.remove(0);
    assert!(
        !out.contains("CONNECTED") && out.contains("FileNotFoundError"),
        "off: the host's socket was reachable:\n{out}"
    );
    // On: the control, the same socket connects.
    network(&rig, OWNER, "on", "on").await;
    let out = rig.run(&attempt("unix_socket_on"), 1).await.remove(0);
    assert!(out.contains("CONNECTED"), "on: the control did not connect:\n{out}");
    // The allow-list: hidden again.
    network(&rig, OWNER, "allow allowed.test", "allow-list: allowed.test").await;
    let out = rig.run(&attempt("unix_socket_allow_list"), 1).await.remove(0);
    assert!(
        !out.contains("CONNECTED") && out.contains("FileNotFoundError"),
        "allow-list: the host's socket was reachable:\n{out}"
    );
    rig.assert_no_secret_anywhere();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_user_namespaces_off_on_a_host_with_name_services_fails_closed_saying_why() {
    let folder = tempfile::tempdir().unwrap();
    let rig = Rig::start(
        "mode = \"required\"\nnetwork = \"off\"",
        &[
            ("VOLCANIC_SANDBOX_TEST_MASK", folder.path().to_str().unwrap()),
            ("VOLCANIC_SANDBOX_SIMULATE", "no-userns"),
        ],
    )
    .await;
    let out = rig
        .run(&[bash("bash_off_without_user_namespaces", "echo started")], 1)
        .await
        .remove(0);
    assert!(
        out.contains(
            "hiding this host's name services (systemd-resolved, nscd, D-Bus) needs unprivileged user namespaces"
        ) && !out.contains("started"),
        "{out}"
    );
}
