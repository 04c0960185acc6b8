//! Spawn overhead of the sandbox (issue 26's goal on the 2-core machine): `bash -c true` started
//! and waited for, confined minus unconfined, goal p50 ≤ 2 ms and p99 ≤ 5 ms. Confined includes
//! everything a spawn pays: `LandlockSandbox::confine` in the host (the workspace found, its
//! private folders checked, the Landlock ruleset built: one descriptor per rule path) and, in the
//! child, dropping capabilities, `no_new_privs`, `landlock_restrict_self` and the two seccomp
//! filters. The Landlock ruleset is made once per workspace and reused (the first spawn pays
//! it). A third kind runs under an allow-list (`allow_hosts`): the child also makes its own user
//! and network namespace, brings `lo` up, listens for the proxy and starts its bridge process.
//! The kinds alternate, so drift in the machine's load hits them alike. The host's share
//! (`confine` alone) is reported apart.
//!
//! `cargo bench -p volcanic-sandbox --bench spawn` (1,000 of each). Without `--bench` (as
//! `cargo test --all-targets` runs it): 20 of each, checking every kind runs. Knob:
//! `SANDBOX_BENCH_SPAWNS`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use volcanic_abstractions::processes::{ProcessPurpose, ProcessSandbox, ProcessSpawnContext, ProcessSpawnRequest};
use volcanic_sandbox::{AllowList, KernelSupport, LandlockSandbox, NetworkPolicy, SandboxMode, SandboxSettings};

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
    let sandbox_for = |network| {
        LandlockSandbox::new(
            SandboxSettings {
                mode: SandboxMode::Required,
                network,
                workspaces_root: Some(root.join("workspaces")),
                protected: vec![root.join("state")],
                temp_root: root.join("state/sandbox"),
                ..SandboxSettings::default()
            },
            support,
        )
        .unwrap()
        .unwrap()
    };
    let sandbox = sandbox_for(NetworkPolicy::On);
    let allow_list = sandbox_for(NetworkPolicy::AllowList(AllowList::parse(&["example.com"]).unwrap()));
    // The allow-list's proxy lives on the host's runtime.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _entered = runtime.enter();
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

    let (mut plain, mut confined, mut host, mut listed) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..spawns {
        plain.push(run(&context));
        let (total, in_host) = run_confined(&sandbox, &request, &context);
        confined.push(total);
        host.push(in_host);
        listed.push(run_confined(&allow_list, &request, &context).0);
    }
    let (p, c, h, a) = (
        percentiles(&mut plain),
        percentiles(&mut confined),
        percentiles(&mut host),
        percentiles(&mut listed),
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
    println!("  allow-list        p50 {:>7.3} ms  p99 {:>7.3} ms", a.0, a.1);
    println!(
        "  overhead          p50 {:>7.3} ms  p99 {:>7.3} ms  (allow-list, over unconfined)",
        a.0 - p.0,
        a.1 - p.1
    );
}

/// Confines `context` with `sandbox`, starts it and waits for it: (how long in all, how long
/// `confine` took in the host).
fn run_confined(
    sandbox: &LandlockSandbox,
    request: &ProcessSpawnRequest,
    context: &ProcessSpawnContext,
) -> (Duration, Duration) {
    let start = Instant::now();
    let mut c = context.clone();
    sandbox.confine(request, &mut c).unwrap();
    let in_host = start.elapsed();
    let status = c.to_std_command().status().unwrap();
    assert!(status.success(), "confined bash -c true: {status}");
    (start.elapsed(), in_host)
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
