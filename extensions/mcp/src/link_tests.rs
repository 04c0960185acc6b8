//! A shared link against the pinned `server-everything` over stdio (`.testdeps`): one process
//! for every session, left running when a session lets go, restarted after it is killed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::config::DEFAULT_CALL_TIMEOUT;
use crate::session_server::ServerState;
use std::collections::BTreeMap;
use volcanic_abstractions::processes::{
    ProcessGroup, ProcessSpawnContext, ProcessSpawnError, ProcessSpawnRequest, SecretRedactor,
};

#[test]
fn backoff_doubles_up_to_thirty_seconds() {
    let waits: Vec<u64> = (1..=8).map(|a| backoff(a).as_secs()).collect();
    assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
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

struct NoRedaction;
impl SecretRedactor for NoRedaction {
    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
    fn add_secret(&self, _: &str) {}
}

/// A policy giving the child only `PATH`, and noting every process it started.
#[derive(Default)]
struct Policy {
    pids: Mutex<Vec<u32>>,
}
impl ProcessSpawnPolicy for Policy {
    fn prepare(&self, r: &ProcessSpawnRequest) -> Result<ProcessSpawnContext, ProcessSpawnError> {
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        env.insert("PATH".into(), std::env::var("PATH").unwrap_or_default());
        Ok(ProcessSpawnContext {
            command: r.command.clone(),
            args: r.args.clone(),
            cwd: r.cwd.clone(),
            env,
            confinement: None,
        })
    }
    fn redactor(&self) -> Arc<dyn SecretRedactor> {
        Arc::new(NoRedaction)
    }
    fn process_group(&self, pid: u32) -> Box<dyn ProcessGroup> {
        lock(&self.pids).push(pid);
        Box::new(Group(i32::try_from(pid).unwrap_or(i32::MAX)))
    }
}

fn everything_spec() -> ServerSpec {
    let script = volcanic_testkit::testdeps::server_everything();
    ServerSpec {
        name: "everything".into(),
        transport: Transport::Stdio {
            command: "node".into(),
            args: vec![script.display().to_string(), "stdio".into()],
            env: BTreeMap::new(),
        },
        include_tools: Vec::new(),
        exclude_tools: Vec::new(),
        call_timeout: DEFAULT_CALL_TIMEOUT,
    }
}

async fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_link_starts_once_outlives_a_session_and_is_restarted_after_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let policy = Arc::new(Policy::default());
    let launcher = Arc::new(HostLauncher::new(Some(policy.clone()), dir.path().join("shared")));
    let link = Link::new(everything_spec(), launcher);

    // Two sessions start it at once: one process, both see it up with its tools.
    let (a, b) = (
        SessionServer::new(link.clone(), true),
        SessionServer::new(link.clone(), true),
    );
    tokio::join!(link.start_once(), link.start_once());
    assert_eq!(lock(&policy.pids).len(), 1, "started more than once");
    assert_eq!(link.state(), LinkState::Up);
    assert!(link.listed().iter().any(|t| t.name == "get-sum"), "{:?}", link.listed());
    assert!(dir.path().join("shared").is_dir(), "its folder was not made");

    // A session letting go leaves the shared server running for the other.
    a.stop();
    assert_eq!(a.state(), ServerState::Stopped);
    assert_eq!(link.state(), LinkState::Up);
    assert!(matches!(b.state(), ServerState::Starting | ServerState::Ready { .. }));
    let conn = link.connection().unwrap();
    let sum = conn
        .call(
            "get-sum",
            serde_json::json!({"a": 2, "b": 3}),
            DEFAULT_CALL_TIMEOUT,
            Default::default(),
        )
        .await
        .unwrap();
    assert!(format!("{sum:?}").contains("The sum of 2 and 3 is 5"), "{sum:?}");

    // Killed: restarted with backoff (1 s), a second process.
    let first = lock(&policy.pids)[0];
    Group(i32::try_from(first).unwrap()).kill();
    wait_until("the restart", || link.restarts() == 1 && link.state() == LinkState::Up).await;
    assert_eq!(lock(&policy.pids).len(), 2);

    // Stopped for good: no restart after.
    link.stop();
    assert_eq!(link.state(), LinkState::Stopped);
    assert!(link.connection().is_none());
    assert!(!link.restart_now(), "a stopped link restarted");
}

#[tokio::test]
async fn a_sessions_own_link_stops_with_its_session_server() {
    let launcher = Arc::new(HostLauncher::new(None, ".".into()));
    let link = Link::new(everything_spec(), launcher);
    let server = SessionServer::new(link.clone(), false);
    // Without a policy a stdio server cannot start, and says why.
    link.start_once().await;
    assert!(
        matches!(link.state(), LinkState::Failed(ref why) if why.contains("needs the host's process policy")),
        "{:?}",
        link.state()
    );
    server.stop();
    assert!(link.is_stopped());
}
