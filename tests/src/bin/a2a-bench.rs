//! The A2A server benchmark: our server (the `a2a-tck-server` bin beside this one, scripted
//! executor) against the Python `a2a-sdk` 1.3.0 server (`tests/peers/a2a_server_bench_peer.py`,
//! the same script: working, one artifact, completed), same machine, same load: TASKS tasks from
//! CLIENTS concurrent clients, blocking (`SendMessage`) then streaming (`SendStreamingMessage`,
//! read to the end). Prints throughput, p50/p99 latency and the server's peak RSS.
//!
//! `a2a-bench [TASKS] [CLIENTS]` (default 1000, 50). Build with `--release` for real figures.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

fn say(line: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stdout(), format!("{line}\n").as_bytes());
}

fn fail(why: &str) -> ! {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("a2a-bench: {why}\n").as_bytes());
    std::process::exit(1)
}

/// Starts `cmd` and waits for its `listening on URL` line.
fn start(mut cmd: Command) -> (Child, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| fail(&format!("cannot start {cmd:?}: {e}")));
    let out = child.stdout.take().unwrap_or_else(|| fail("no stdout"));
    let mut line = String::new();
    let _ = BufReader::new(out).read_line(&mut line);
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| fail(&format!("{cmd:?} said {line:?}")))
        .to_owned();
    (child, url)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| fail(&format!("no free port: {e}")))
}

/// Peak and current RSS of `pid`, kB (`/proc/<pid>/status`).
fn rss(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

struct Run {
    per_sec: f64,
    p50: Duration,
    p99: Duration,
    errors: usize,
}

async fn one(client: &reqwest::Client, url: &str, stream: bool, n: usize) -> bool {
    let method = if stream { "SendStreamingMessage" } else { "SendMessage" };
    let body = json!({"jsonrpc": "2.0", "id": n, "method": method, "params": {"message": {
        "role": "ROLE_USER", "messageId": format!("tck-stream-001-{n}"), "parts": [{"text": "bench"}]}}});
    let Ok(resp) = client.post(url).header("A2A-Version", "1.0").json(&body).send().await else {
        return false;
    };
    let Ok(text) = resp.text().await else { return false };
    text.contains("TASK_STATE_COMPLETED") && !text.contains("\"error\"")
}

async fn load(url: &str, stream: bool, tasks: usize, clients: usize) -> Run {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .tcp_nodelay(true)
        .build()
        .unwrap_or_else(|e| fail(&format!("client: {e}")));
    for n in 0..20 {
        one(&client, url, stream, 1_000_000 + n).await;
    }
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut handles = Vec::new();
    for _ in 0..clients {
        let (client, url, next) = (client.clone(), url.to_owned(), next.clone());
        handles.push(tokio::spawn(async move {
            let mut out = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= tasks {
                    return out;
                }
                let t = Instant::now();
                let ok = one(&client, &url, stream, n).await;
                out.push((t.elapsed(), ok));
            }
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.unwrap_or_default());
    }
    let wall = started.elapsed();
    let errors = all.iter().filter(|(_, ok)| !ok).count();
    let mut lat: Vec<Duration> = all.into_iter().map(|(d, _)| d).collect();
    lat.sort();
    let pick = |q: f64| {
        lat.get(((lat.len() as f64 * q) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Run {
        per_sec: tasks as f64 / wall.as_secs_f64(),
        p50: pick(0.50),
        p99: pick(0.99),
        errors,
    }
}

/// Waits until the server answers its card (uvicorn prints before it listens).
async fn ready(base: &str) {
    let card = format!("{base}/.well-known/agent-card.json");
    for _ in 0..200 {
        if reqwest::get(&card).await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    fail(&format!("{card} did not answer within 10 s"));
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut args = std::env::args().skip(1);
    let tasks: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let clients: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    let exe = std::env::current_exe().unwrap_or_else(|e| fail(&format!("{e}")));
    let sut = exe.with_file_name("a2a-tck-server");
    let python = volcanic_testkit::testdeps::python().unwrap_or_else(|e| fail(&e));
    let peer = volcanic_testkit::testdeps::repo_root().join("tests/peers/a2a_server_bench_peer.py");

    let mut ours = Command::new(&sut);
    ours.args(["--anonymous", "bench", "--max-concurrent", &clients.to_string()]);
    let mut theirs = Command::new(&python);
    theirs.arg(&peer).arg(free_port().to_string());

    say(&format!(
        "{tasks} tasks, {clients} concurrent clients; latency = request sent to last byte"
    ));
    say("server          mode       tasks/s    p50 ms    p99 ms  errors  peak RSS MB");
    for (name, cmd, path) in [("volcanic", ours, "/a2a"), ("a2a-sdk 1.3.0", theirs, "/")] {
        let (mut child, base) = start(cmd);
        let url = format!("{base}{path}");
        ready(&base).await;
        let (idle, _) = rss(child.id());
        for stream in [false, true] {
            let r = load(&url, stream, tasks, clients).await;
            let (peak, _) = rss(child.id());
            say(&format!(
                "{name:<15} {:<9} {:>8.0} {:>9.2} {:>9.2} {:>7} {:>12.1}",
                if stream { "streaming" } else { "blocking" },
                r.per_sec,
                r.p50.as_secs_f64() * 1e3,
                r.p99.as_secs_f64() * 1e3,
                r.errors,
                peak as f64 / 1024.0
            ));
        }
        say(&format!("{name:<15} RSS at start {:.1} MB", idle as f64 / 1024.0));
        let _ = child.kill();
        let _ = child.wait();
    }
}
