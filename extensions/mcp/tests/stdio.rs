//! The MCP client against real servers over stdio: the pinned `server-everything`
//! (`.testdeps`, installed by `./scripts/test.sh`) and a tiny script server for the failures.

use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::messages::UserContent;
use volcanic_abstractions::processes::{
    ProcessGroup, ProcessSpawnContext, ProcessSpawnError, ProcessSpawnPolicy, ProcessSpawnRequest, SecretRedactor,
};
use volcanic_abstractions::tools::ToolError;
use volcanic_mcp::client::Handler;
use volcanic_mcp::config::{DEFAULT_CALL_TIMEOUT, ServerSpec, Transport};
use volcanic_mcp::server::{Connection, Launch};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `server-everything`'s entry point; fails with what to do when it is not installed.
fn everything() -> PathBuf {
    volcanic_testkit::testdeps::server_everything()
}

/// Kills a process group (what the host's policy does).
#[derive(Debug)]
struct Group(i32);
impl ProcessGroup for Group {
    fn kill(&self) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(self.0), nix::sys::signal::Signal::SIGKILL);
    }
    fn disarm(self: Box<Self>) {}
}
impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

struct NoRedaction;
impl SecretRedactor for NoRedaction {
    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
    fn add_secret(&self, _: &str) {}
}

struct Policy;
impl ProcessSpawnPolicy for Policy {
    fn prepare(&self, _: &ProcessSpawnRequest) -> Result<ProcessSpawnContext, ProcessSpawnError> {
        Err(ProcessSpawnError("not used".into()))
    }
    fn redactor(&self) -> Arc<dyn SecretRedactor> {
        Arc::new(NoRedaction)
    }
    fn process_group(&self, pid: u32) -> Box<dyn ProcessGroup> {
        Box::new(Group(i32::try_from(pid).unwrap_or(i32::MAX)))
    }
}

/// Starts `node script args` with exactly `PATH` and `env` (what a prepared process gets).
async fn start(name: &str, script: &Path, args: &[&str], env: &[(&str, &str)]) -> (Connection, Vec<String>) {
    let mut full: BTreeMap<String, String> = env.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
    full.insert("PATH".into(), std::env::var("PATH").unwrap_or_default());
    let mut argv = vec![script.display().to_string()];
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    let spec = ServerSpec {
        name: name.into(),
        transport: Transport::Stdio {
            command: "node".into(),
            args: argv.clone(),
            env: BTreeMap::new(),
        },
        include_tools: Vec::new(),
        exclude_tools: Vec::new(),
        call_timeout: DEFAULT_CALL_TIMEOUT,
    };
    let launch = Launch {
        process: ProcessSpawnContext {
            command: "node".into(),
            args: argv,
            cwd: repo(),
            env: full,
            confinement: None,
        },
        policy: Arc::new(Policy),
    };
    match Connection::start(&spec, Some(launch), Arc::new(NoRedaction), Handler::default()).await {
        Ok((conn, tools)) => (conn, tools.iter().map(|t| t.name.to_string()).collect()),
        Err(e) => panic!("{name} did not start: {e}"),
    }
}

async fn call(conn: &Connection, tool: &str, args: serde_json::Value, secs: u64) -> Result<String, String> {
    conn.call(tool, args, Duration::from_secs(secs), CancellationToken::new())
        .await
        .map(|r| r.text_content())
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn everything_lists_and_calls_tools_with_images_errors_and_only_its_environment() {
    let (conn, tools) = start(
        "everything",
        &everything(),
        &["stdio"],
        &[("MCP_TEST_TOKEN", "passed-secret-42")],
    )
    .await;
    for t in ["echo", "get-sum", "get-env", "get-tiny-image"] {
        assert!(tools.iter().any(|n| n == t), "{t} not in {tools:?}");
    }
    assert_eq!(
        call(&conn, "get-sum", json!({"a": 2, "b": 40}), 30)
            .await
            .as_deref()
            .map(|s| s.contains("42")),
        Ok(true)
    );
    assert_eq!(
        call(&conn, "echo", json!({"message": "hello mcp"}), 30)
            .await
            .map(|s| s.contains("hello mcp")),
        Ok(true)
    );

    let image = conn
        .call(
            "get-tiny-image",
            json!({}),
            Duration::from_secs(30),
            CancellationToken::new(),
        )
        .await;
    let Ok(image) = image else {
        panic!("get-tiny-image: {image:?}")
    };
    assert!(
        image
            .content
            .iter()
            .any(|c| matches!(c, UserContent::Image(i) if i.mime_type == "image/png" && !i.data.is_empty())),
        "no image in {image:?}"
    );

    // A tool error is an error result the model reads.
    let bad = conn
        .call(
            "get-sum",
            json!({"a": "two"}),
            Duration::from_secs(30),
            CancellationToken::new(),
        )
        .await;
    assert!(
        matches!(&bad, Err(ToolError::WithResult(r)) if r.text_content().contains("a")),
        "{bad:?}"
    );

    // The server sees exactly its prepared environment: the secret given to it, nothing of ours.
    let env = call(&conn, "get-env", json!({}), 30)
        .await
        .unwrap_or_else(|e| panic!("get-env: {e}"));
    assert!(env.contains("passed-secret-42"), "{env}");
    assert!(
        !env.contains("CARGO_MANIFEST_DIR"),
        "the test's own environment leaked: {env}"
    );
    conn.stop();
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_and_one_that_dies_is_a_clear_error() {
    let script = repo().join("extensions/mcp/tests/fixtures/stuck_server.js");
    let (conn, tools) = start("stuck", &script, &[], &[]).await;
    assert_eq!(tools, ["hang", "die"]);
    let hang = call(&conn, "hang", json!({}), 1).await;
    assert!(
        matches!(&hang, Err(e) if e.contains("did not answer `hang` within 1 s")),
        "{hang:?}"
    );

    let died = call(&conn, "die", json!({}), 30).await;
    assert!(
        matches!(&died, Err(e) if e.contains("stopped during the call of `die`")),
        "{died:?}"
    );
    assert!(conn.is_closed());
    let after = call(&conn, "hang", json!({}), 5).await;
    assert!(after.is_err(), "{after:?}");
}
