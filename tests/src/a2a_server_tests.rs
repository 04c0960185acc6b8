//! The Python `a2a-sdk` client (pinned in `.testdeps/venv`) drives the server in A2A 1.0 and
//! 0.3 through `tests/peers/a2a_server_client.py`: blocking and streaming send, get, list,
//! cancel, resubscribe, push to a local receiver, two callers isolated, a wrong token refused, and
//! a push config to 127.0.0.1 refused by a server without the loopback switch.

use std::net::SocketAddr;
use std::time::Duration;

use volcanic_a2a_server::{Caller, ServerConfig};

use super::serve;
use crate::testdeps;

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";

/// Starts a server with both callers on its own thread and runtime; returns its base URL.
fn start(allow_loopback_push: bool) -> String {
    let config = ServerConfig {
        callers: vec![
            Caller {
                name: "alice".into(),
                token: ALICE.into(),
            },
            Caller {
                name: "bob".into(),
                token: BOB.into(),
            },
        ],
        allow_loopback_push,
        ..ServerConfig::default()
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        let addr = SocketAddr::from(([127, 0, 0, 1], 0));
        let result = rt.block_on(serve(config, None, addr, |a| {
            let _ = tx.send(a);
        }));
        if let Err(e) = result {
            panic!("A2A server stopped: {e}");
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("the A2A server did not start: {e}"));
    format!("http://{addr}")
}

fn drive(dialect: &str) {
    let python = testdeps::python().unwrap_or_else(|e| panic!("{e}"));
    let script = testdeps::repo_root().join("tests/peers/a2a_server_client.py");
    let (open, strict) = (start(true), start(false));
    let out = std::process::Command::new(python)
        .arg(&script)
        .args([open.as_str(), ALICE, BOB, dialect, strict.as_str()])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "a2a-sdk client ({dialect}) failed:\n{stdout}\n{stderr}"
    );
    let mut steps = vec![
        "blocking send",
        "streaming send",
        "get",
        "resubscribe",
        "cancel",
        "push",
        "isolation",
        "wrong token",
        "loopback refused",
    ];
    if dialect == "1.0" {
        steps.push("list");
    }
    for step in steps {
        assert!(
            stdout.lines().any(|l| l == format!("ok {step}")),
            "step {step:?} missing:\n{stdout}"
        );
    }
}

#[test]
fn the_python_a2a_sdk_client_drives_the_server_in_1_0() {
    drive("1.0");
}

#[test]
fn the_python_a2a_sdk_client_drives_the_server_in_0_3() {
    drive("0.3");
}
