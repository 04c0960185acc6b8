//! Spawn overhead of the sandbox (issue 26's goal on the 2-core machine): `bash -c true` started
//! and waited for, confined minus unconfined, goal p50 ≤ 2 ms and p99 ≤ 5 ms. Confined includes
//! everything a spawn pays: `LandlockSandbox::confine` in the host (the workspace found, its
//! private folders checked, the Landlock ruleset built: one descriptor per rule path) and, in the
//! child, dropping capabilities, `no_new_privs`, `landlock_restrict_self` and the two seccomp
//! filters. The two kinds alternate, so drift in the machine's load hits both alike. The host's
//! share (`confine` alone) is reported apart.
//!
//! `cargo bench -p volcanic-sandbox --bench spawn` (1,000 of each). Without `--bench` (as
//! `cargo test --all-targets` runs it): 20 of each, checking both kinds run. Knob:
//! `SANDBOX_BENCH_SPAWNS`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use volcanic_abstractions::processes::{ProcessPurpose, ProcessSandbox, ProcessSpawnContext, ProcessSpawnRequest};
use volcanic_sandbox::{KernelSupport, LandlockSandbox, NetworkPolicy, SandboxMode, SandboxSettings};

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let spawns: usize = std::env::var("SANDBOX_BENCH_SPAWNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if bench { 1000 } else { 20 });
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let cwd = root.join("workspaces/chat1");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(root.join("state")).unwrap();
    let support = KernelSupport::probe();
    assert!(
        support.missing().is_none(),
        "the spawn benchmark needs Landlock and seccomp: {:?}",
        support.missing()
    );
    let sandbox = LandlockSandbox::new(
        SandboxSettings {
            mode: SandboxMode::Required,
            network: NetworkPolicy::On,
            workspaces_root: Some(root.join("workspaces")),
            protected: vec![root.join("state")],
            temp_root: root.join("state/sandbox"),
            ..SandboxSettings::default()
        },
        support,
    )
    .unwrap()
    .unwrap();
    let bash = ["/usr/bin/bash", "/bin/bash"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect("bash in /usr/bin or /bin");
    let context = ProcessSpawnContext {
        command: bash.display().to_string(),
        args: vec!["-c".into(), "true".into()],
        cwd: cwd.clone(),
        env: BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]),
        confinement: None,
    };
    let mut request = ProcessSpawnRequest::new(ProcessPurpose::Bash, &context.command, &cwd);
    request.args = context.args.clone();

    let (mut plain, mut confined, mut host) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..spawns {
        plain.push(run(&context));
        let start = Instant::now();
        let mut c = context.clone();
        sandbox.confine(&request, &mut c).unwrap();
        host.push(start.elapsed());
        let status = c.to_std_command().status().unwrap();
        assert!(status.success(), "confined bash -c true: {status}");
        confined.push(start.elapsed());
    }
    let (p, c, h) = (
        percentiles(&mut plain),
        percentiles(&mut confined),
        percentiles(&mut host),
    );
    println!(
        "spawn overhead, bash -c true, {spawns} of each (Landlock ABI {:?})",
        support.landlock_abi
    );
    println!("  unconfined        p50 {:>7.3} ms  p99 {:>7.3} ms", p.0, p.1);
    println!("  confined          p50 {:>7.3} ms  p99 {:>7.3} ms", c.0, c.1);
    println!("  confine() in host p50 {:>7.3} ms  p99 {:>7.3} ms", h.0, h.1);
    println!(
        "  overhead          p50 {:>7.3} ms  p99 {:>7.3} ms  (goal ≤ 2 / ≤ 5 ms)",
        c.0 - p.0,
        c.1 - p.1
    );
}

/// Starts `context` unconfined and waits for it: how long it took.
fn run(context: &ProcessSpawnContext) -> Duration {
    let start = Instant::now();
    let status = context.to_std_command().status().unwrap();
    assert!(status.success(), "bash -c true: {status}");
    start.elapsed()
}

/// (p50, p99) in milliseconds.
fn percentiles(samples: &mut [Duration]) -> (f64, f64) {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[i].as_secs_f64() * 1000.0
    };
    (at(0.50), at(0.99))
}
