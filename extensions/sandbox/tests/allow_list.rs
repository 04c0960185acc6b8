//! The allow-list on this kernel: a confined `sh` reaches a listed name through the proxy and
//! nothing else (unlisted names, direct connections, DNS). The listed name is mapped to a
//! loopback server by the test-only `VOLCANIC_SANDBOX_TEST_RESOLVE` (debug builds).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use tokio::io::AsyncWriteExt;
use volcanic_abstractions::processes::{ProcessPurpose, ProcessSandbox, ProcessSpawnContext, ProcessSpawnRequest};
use volcanic_sandbox::{AllowList, KernelSupport, LandlockSandbox, NetworkPolicy, SandboxMode, SandboxSettings};

const ANSWER: &str = "allowed-server-answer";

/// A loopback server answering every connection with [`ANSWER`]; its port.
async fn server() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut head = [0u8; 1024];
            let _ = tokio::io::AsyncReadExt::read(&mut stream, &mut head).await;
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{ANSWER}",
                ANSWER.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_name_is_reached_through_the_proxy_and_nothing_else() {
    if !cfg!(debug_assertions) {
        panic!("this test needs a debug build (the test-only name map)");
    }
    let port = server().await;
    // SAFETY: the only test of this binary, before the sandbox reads the variable.
    #[allow(unsafe_code)]
    unsafe {
        std::env::set_var(
            volcanic_sandbox::TEST_RESOLVE_ENV,
            format!("allowed.test=127.0.0.1:{port}"),
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let cwd = root.join("workspaces/chat1");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(root.join("state")).unwrap();
    let allow = AllowList::parse(&["allowed.test", "localhost"]).unwrap();
    let sandbox = LandlockSandbox::new(
        SandboxSettings {
            mode: SandboxMode::Required,
            network: NetworkPolicy::AllowList(allow),
            workspaces_root: Some(root.join("workspaces")),
            protected: vec![root.join("state")],
            temp_root: root.join("state/sandbox"),
            ..SandboxSettings::default()
        },
        KernelSupport::probe(),
    )
    .unwrap()
    .unwrap();
    let run = |script: String| {
        let mut request = ProcessSpawnRequest::new(ProcessPurpose::Bash, "sh", &cwd);
        request.args = vec!["-c".into(), script];
        request.scope = Some("chat1".into());
        let mut context = ProcessSpawnContext {
            command: "sh".into(),
            args: request.args.clone(),
            cwd: cwd.clone(),
            env: BTreeMap::from([("PATH".into(), std::env::var("PATH").unwrap_or_default())]),
            confinement: None,
        };
        sandbox.confine(&request, &mut context).unwrap();
        let command = context.to_std_command();
        async move {
            let mut command = command;
            let out = tokio::task::spawn_blocking(move || command.output().unwrap())
                .await
                .unwrap();
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        }
    };
    let out = run("curl -sS --max-time 5 http://allowed.test/".into()).await;
    assert!(out.contains(ANSWER), "the listed name was not reached: {out}");
    let out = run("curl -sS --max-time 5 http://unlisted.test/".into()).await;
    assert!(
        out.contains("network policy refused unlisted.test") && !out.contains(ANSWER),
        "an unlisted name: {out}"
    );
    // Listed, but loopback: the address check refuses it.
    let out = run("curl -sS --max-time 5 http://localhost/".into()).await;
    assert!(out.contains("refused localhost"), "a listed loopback name: {out}");
    for (name, script) in [
        (
            "direct_loopback",
            format!("curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:{port}/"),
        ),
        (
            "direct_numeric",
            "curl -sS --noproxy '*' --max-time 5 http://1.1.1.1/".to_owned(),
        ),
        ("dns", "getent hosts example.com || echo DNS-FAILED".to_owned()),
    ] {
        let out = run(format!("{script}; echo done")).await;
        assert!(
            !out.contains(ANSWER) && out.contains("done"),
            "{name} got through: {out}"
        );
        if name == "dns" {
            assert!(out.contains("DNS-FAILED"), "{name}: {out}");
        } else {
            assert!(out.contains("curl: ("), "{name} was not refused by curl: {out}");
        }
    }
}
