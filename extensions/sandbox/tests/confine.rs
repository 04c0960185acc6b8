//! The backend on this kernel: a confined `sh` reaches its workspace and the system, and
//! nothing of the host's folders, processes or kernel.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use volcanic_abstractions::processes::{ProcessPurpose, ProcessSandbox, ProcessSpawnContext, ProcessSpawnRequest};
use volcanic_sandbox::{KernelSupport, LandlockSandbox, NetworkPolicy, SandboxMode, SandboxSettings};

struct Place {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Place {
    fn new() -> Place {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for sub in ["state", "workspaces/chat1", "workspaces/chat2"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("state/secret"), "SECRET-STATE").unwrap();
        std::fs::write(root.join("workspaces/chat2/other"), "SECRET-OTHER").unwrap();
        Place { _dir: dir, root }
    }

    fn sandbox(&self, network: NetworkPolicy) -> LandlockSandbox {
        let settings = SandboxSettings {
            mode: SandboxMode::Required,
            network,
            workspaces_root: Some(self.root.join("workspaces")),
            protected: vec![self.root.join("state")],
            temp_root: self.root.join("state/sandbox"),
            ..SandboxSettings::default()
        };
        LandlockSandbox::new(settings, KernelSupport::probe()).unwrap().unwrap()
    }

    /// Runs `script` confined in chat1's workspace: (exit code, stdout + stderr).
    fn run(&self, sandbox: &LandlockSandbox, script: &str) -> (i32, String) {
        self.run_with(sandbox, script, Vec::new())
    }

    /// [`run`](Self::run) with the request granting `write_paths`.
    fn run_with(&self, sandbox: &LandlockSandbox, script: &str, write_paths: Vec<PathBuf>) -> (i32, String) {
        let cwd = self.root.join("workspaces/chat1");
        let mut request = ProcessSpawnRequest::new(ProcessPurpose::Bash, "sh", &cwd);
        request.args = vec!["-c".into(), script.into()];
        request.write_paths = write_paths;
        let path = std::env::var("PATH").unwrap_or_default();
        let mut context = ProcessSpawnContext {
            command: "sh".into(),
            args: request.args.clone(),
            cwd,
            env: BTreeMap::from([("PATH".into(), path)]),
            confinement: None,
        };
        sandbox.confine(&request, &mut context).unwrap();
        let out = context.to_std_command().output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }
}

fn refused(place: &Place, sandbox: &LandlockSandbox, script: &str) {
    let (code, out) = place.run(sandbox, script);
    assert_ne!(code, 0, "`{script}` succeeded: {out}");
    assert!(!out.contains("SECRET"), "`{script}` leaked: {out}");
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn a_confined_child_works_in_its_workspace_and_reaches_nothing_else() {
    let place = Place::new();
    let sandbox = place.sandbox(NetworkPolicy::On);
    let (code, out) = place.run(&sandbox, "echo hi > f && cat f && echo t > \"$TMPDIR/x\" && cat /etc/hostname >/dev/null && grep -c . /proc/self/status >/dev/null && echo ok");
    assert_eq!((code, out.trim_end()), (0, "hi\nok"), "{out}");
    let state = path(&place.root.join("state/secret"));
    let other = path(&place.root.join("workspaces/chat2/other"));
    refused(&place, &sandbox, &format!("cat {state}"));
    refused(&place, &sandbox, &format!("cat {other}"));
    refused(&place, &sandbox, "cat ../chat2/other");
    refused(&place, &sandbox, &format!("cat /proc/self/root{state}"));
    refused(&place, &sandbox, &format!("ln -s {state} l && cat l"));
    refused(&place, &sandbox, &format!("ln {state} h && cat h"));
    refused(
        &place,
        &sandbox,
        &format!("echo x > {}/new", path(&place.root.join("state"))),
    );
    refused(&place, &sandbox, "cat /etc/shadow");
    refused(&place, &sandbox, &format!("cat /proc/{}/environ", std::process::id()));
    refused(&place, &sandbox, &format!("kill -0 {}", std::process::id()));
    refused(
        &place,
        &sandbox,
        "grep -q '^CapEff:\\s*0*$' /proc/self/status && exit 1 || exit 0",
    );
    refused(
        &place,
        &sandbox,
        "grep -q '^NoNewPrivs:\\s*1$' /proc/self/status && exit 1 || exit 0",
    );
    refused(&place, &sandbox, "unshare -Ur true");
}

#[test]
fn a_path_the_request_grants_is_writable_and_nothing_else_opens() {
    let place = Place::new();
    let sandbox = place.sandbox(NetworkPolicy::On);
    let grant = place.root.join("state/claude");
    std::fs::create_dir_all(&grant).unwrap();
    let script = format!("echo kept > {0}/login && cat {0}/login", path(&grant));
    let (code, out) = place.run_with(&sandbox, &script, vec![grant.clone()]);
    assert_eq!((code, out.trim_end()), (0, "kept"), "{out}");
    // Without the grant, and beside it, the protected folder stays closed.
    refused(&place, &sandbox, &format!("cat {}/login", path(&grant)));
    let state = path(&place.root.join("state/secret"));
    let (code, out) = place.run_with(&sandbox, &format!("cat {state}"), vec![grant]);
    assert!(code != 0 && !out.contains("SECRET"), "{out}");
}
