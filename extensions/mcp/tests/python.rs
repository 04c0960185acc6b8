//! The client against the Python SDK's server (`mcp==2.3.0` in the test venv,
//! `tests/peers/mcp_lifecycle.py`) over stdio: without anyone to ask, a server's question is
//! declined (and elicitation is not offered); `list_changed` reaches the handler and a new
//! `tools/list` has the added tool.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::processes::{
    ProcessGroup, ProcessSpawnContext, ProcessSpawnError, ProcessSpawnPolicy, ProcessSpawnRequest, SecretRedactor,
};
use volcanic_mcp::client::Handler;
use volcanic_mcp::config::{DEFAULT_CALL_TIMEOUT, ServerSpec, Transport};
use volcanic_mcp::server::{Connection, Launch};
use volcanic_testkit::testdeps;

/// Kills a process group (what the host's policy does).
#[derive(Debug)]
struct Group(i32);
impl ProcessGroup for Group {
    fn kill(&self) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(self.0), nix::sys::signal::Signal::SIGKILL);
    }
    fn disarm(self: Box<Self>) {}
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

#[tokio::test]
async fn questions_are_declined_without_a_ui_and_list_changed_reaches_the_handler() {
    let python = testdeps::python().unwrap_or_else(|e| panic!("{e}"));
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = repo.join("tests/peers/mcp_lifecycle.py").display().to_string();
    let command = python.display().to_string();
    let spec = ServerSpec {
        name: "py".into(),
        transport: Transport::Stdio {
            command: command.clone(),
            args: vec![script.clone()],
            env: BTreeMap::new(),
        },
        include_tools: Vec::new(),
        exclude_tools: Vec::new(),
        call_timeout: DEFAULT_CALL_TIMEOUT,
    };
    let launch = Launch {
        process: ProcessSpawnContext {
            command,
            args: vec![script],
            cwd: repo,
            env: BTreeMap::new(),
            confinement: None,
        },
        policy: Arc::new(Policy),
    };
    let changed = Arc::new(AtomicUsize::new(0));
    let seen = changed.clone();
    let handler = Handler::new(
        "py",
        None,
        Some(Arc::new(move || {
            seen.fetch_add(1, Ordering::SeqCst);
        })),
    );
    let (conn, tools) = Connection::start(&spec, Some(launch), Arc::new(NoRedaction), handler)
        .await
        .unwrap_or_else(|e| panic!("the Python server did not start: {e}"));
    assert!(!tools.iter().any(|t| t.name == "greet"));

    let call = |tool: &'static str| {
        conn.call(
            tool,
            serde_json::json!({}),
            Duration::from_secs(20),
            CancellationToken::new(),
        )
    };
    let asked = call("ask").await.map(|r| r.text_content()).map_err(|e| e.to_string());
    assert!(
        matches!(&asked, Ok(t) if t.starts_with("the user did not answer: decline")),
        "{asked:?}"
    );

    let added = call("add_tool")
        .await
        .map(|r| r.text_content())
        .map_err(|e| e.to_string());
    assert!(matches!(&added, Ok(t) if t.starts_with("added greet")), "{added:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while changed.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "no list_changed reached the handler");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let tools = conn.list_tools().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(tools.iter().any(|t| t.name == "greet"), "{tools:?}");
    conn.stop();
}
