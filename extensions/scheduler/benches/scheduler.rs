//! The scheduler at scale (issue goals on the 2-core machine): 100,000 jobs over 1,000
//! workspaces. Measures
//! - load: `load_all` of every `jobs.json` (page cache warm: the files were just written), goal
//!   ≤ 1 s; RSS after loading (VmRSS) and its peak (VmHWM), goal ≤ 100 MB;
//! - fire lateness: 2,000 one-shots due over 30 s, from the slot to the moment the delivery is
//!   called, which is after the slot was recorded durably (fsync'd jobs.json), goal p99 ≤ 100 ms;
//! - idle CPU: process CPU time over 10 s with no job due (the other 98,000 are ≥ 2 h away),
//!   goal ≈ 0: one timer sleeps until the earliest job; nothing polls.
//!
//! `cargo bench -p volcanic-scheduler --bench scheduler`. Knobs: `SCHED_BENCH_WORKSPACES`
//! (1000), `SCHED_BENCH_JOBS` (per workspace, 100), `SCHED_BENCH_HOT` (2000),
//! `SCHED_BENCH_WINDOW_SECS` (30), `SCHED_BENCH_DIR` (a temp dir).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use async_trait::async_trait;
use chrono::{DateTime, Duration, Timelike, Utc};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use volcanic_abstractions::processes::{
    ProcessGroup, ProcessSpawnContext, ProcessSpawnError, ProcessSpawnPolicy, ProcessSpawnRequest, SecretRedactor,
};
use volcanic_scheduler::job::{Job, JobKind, JobsFile, SCHEMA_VERSION, ScheduleSpec};
use volcanic_scheduler::{
    Answered, DeliveryError, JobDelivery, JobScheduler, JobTarget, ScheduledRun, SchedulerConfig, SystemClock,
};

const ZONES: [&str; 6] = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Asia/Tokyo",
    "Asia/Kathmandu",
    "Australia/Sydney",
];

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// xorshift64*, deterministic.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Default)]
struct Lateness {
    ms: Mutex<Vec<f64>>,
}

#[async_trait]
impl JobDelivery for Lateness {
    async fn run_prompt(&self, run: ScheduledRun) -> Result<Answered, DeliveryError> {
        let late = (Utc::now() - run.slot).num_microseconds().unwrap_or(i64::MAX) as f64 / 1000.0;
        self.ms.lock().unwrap().push(late);
        Ok(Answered::Sent("sent".into()))
    }
    async fn notify(&self, _target: JobTarget, _text: String) -> Result<(), DeliveryError> {
        Ok(())
    }
}

struct NoProcesses;
struct NoSecrets;
impl SecretRedactor for NoSecrets {
    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
    fn add_secret(&self, _value: &str) {}
}
impl ProcessSpawnPolicy for NoProcesses {
    fn prepare(&self, _r: &ProcessSpawnRequest) -> Result<ProcessSpawnContext, ProcessSpawnError> {
        Err(ProcessSpawnError("no processes in this benchmark".into()))
    }
    fn redactor(&self) -> Arc<dyn SecretRedactor> {
        Arc::new(NoSecrets)
    }
    fn process_group(&self, _pid: u32) -> Box<dyn ProcessGroup> {
        Box::new(NoGroup)
    }
}

/// Never used: nothing is started.
#[derive(Debug)]
struct NoGroup;
impl ProcessGroup for NoGroup {
    fn kill(&self) {}
    fn disarm(self: Box<Self>) {}
}

fn job(id: String, chat: i64, schedule: ScheduleSpec, created: DateTime<Utc>, next_run: DateTime<Utc>) -> Job {
    Job {
        id,
        target: JobTarget {
            chat_id: chat,
            topic: None,
        },
        origin: volcanic_scheduler::JobOrigin::Chat,
        kind: JobKind::Prompt {
            text: "Check the deploy dashboard and tell me if anything is red.".into(),
        },
        schedule,
        enabled: true,
        quiet: false,
        created,
        next_run: Some(next_run),
        last_run: None,
        retry_at: None,
        consecutive_failures: 0,
        missed: 0,
        history: Vec::new(),
    }
}

/// Writes the workspaces; returns the hot slots' window end.
fn generate(root: &std::path::Path, workspaces: u64, per: u64, hot: u64, window: i64, t0: DateTime<Utc>) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let total = workspaces * per;
    let hot_every = (total / hot.max(1)).max(1);
    for w in 0..workspaces {
        let mut jobs = Vec::with_capacity(per as usize);
        for j in 0..per {
            let i = w * per + j;
            let id = format!("j{i:07}");
            let zone = ZONES[rng.below(ZONES.len() as u64) as usize];
            if i.is_multiple_of(hot_every) {
                let at = t0 + Duration::seconds(10) + Duration::milliseconds(rng.below((window * 1000) as u64) as i64);
                let spec = ScheduleSpec::At {
                    at,
                    time_zone: zone.into(),
                };
                jobs.push(job(id, w as i64 + 1, spec, t0, at));
            } else if i.is_multiple_of(3) {
                let period = 2 * 3600 + rng.below(46 * 3600) as i64;
                let anchor = t0 + Duration::hours(2) + Duration::seconds(rng.below(3600) as i64);
                let spec = ScheduleSpec::Every {
                    every_secs: period as u64,
                    anchor,
                    time_zone: zone.into(),
                };
                jobs.push(job(id, w as i64 + 1, spec, t0, anchor));
            } else {
                // A daily job at a local time 2-22 h from now.
                let tz: chrono_tz::Tz = zone.parse().unwrap();
                let fire = (t0 + Duration::hours(2) + Duration::minutes(rng.below(20 * 60) as i64)).with_timezone(&tz);
                let expr = format!(
                    "{} {} * * {}",
                    fire.minute(),
                    fire.hour(),
                    if i.is_multiple_of(2) { "*" } else { "1-5" }
                );
                let spec = ScheduleSpec::Cron {
                    expr,
                    time_zone: zone.into(),
                };
                let compiled = volcanic_scheduler::timing::Compiled::compile(&spec).unwrap();
                let next = compiled.next_after(t0).unwrap();
                jobs.push(job(id, w as i64 + 1, spec, t0, next));
            }
        }
        let path = volcanic_scheduler::store::jobs_path(&root.join(format!("{}", w + 1)));
        volcanic_scheduler::store::save(
            &path,
            &JobsFile {
                version: SCHEMA_VERSION,
                jobs,
            },
        )
        .unwrap();
    }
}

fn status_kb(key: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix(key)
                .map(|v| v.trim().trim_end_matches(" kB").trim().to_owned())
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

/// utime + stime of this process, ms (from /proc/self/stat, clock ticks of 10 ms).
fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    ticks * 10.0
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() {
    let workspaces = env("SCHED_BENCH_WORKSPACES", 1000);
    let per = env("SCHED_BENCH_JOBS", 100);
    let hot = env("SCHED_BENCH_HOT", 2000);
    let window = env("SCHED_BENCH_WINDOW_SECS", 30) as i64;
    let tmp = tempfile::tempdir().unwrap();
    let root = std::env::var("SCHED_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| tmp.path().to_owned());
    std::fs::create_dir_all(&root).unwrap();
    let t0 = Utc::now();
    let gen_start = std::time::Instant::now();
    generate(&root, workspaces, per, hot, window, t0);
    let gen_s = gen_start.elapsed().as_secs_f64();
    let rss_before = status_kb("VmRSS:") / 1024.0;

    let lateness = Arc::new(Lateness::default());
    let scheduler = JobScheduler::new(SchedulerConfig {
        clock: Arc::new(SystemClock),
        delivery: lateness.clone(),
        processes: Arc::new(NoProcesses),
        workspaces_root: root.clone(),
        owner_of_workspace: Some(Arc::new(|p: &std::path::Path| {
            p.file_name()?
                .to_str()?
                .parse()
                .ok()
                .map(volcanic_scheduler::WorkspaceOwner::Chat)
        })),
    });
    let load_start = std::time::Instant::now();
    let report = scheduler.load_all().await;
    let load_s = load_start.elapsed().as_secs_f64();
    let rss_loaded = status_kb("VmRSS:") / 1024.0;
    let shutdown = tokio_util::sync::CancellationToken::new();
    scheduler.start(shutdown.clone());
    assert_eq!(report.jobs as u64, workspaces * per, "{report:?}");

    // Fire: wait until the window has passed and the hot jobs ran.
    let end = t0 + Duration::seconds(10 + window) + Duration::seconds(2);
    let wait = (end - Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(wait).await;
    let fired = lateness.ms.lock().unwrap().len();
    // Idle: nothing is due for ≥ 1.5 h.
    let cpu0 = cpu_ms();
    tokio::time::sleep(std::time::Duration::from_secs(10)).await;
    let idle_cpu = cpu_ms() - cpu0;
    let peak = status_kb("VmHWM:") / 1024.0;
    let rss_end = status_kb("VmRSS:") / 1024.0;
    shutdown.cancel();

    let mut ms = lateness.ms.lock().unwrap().clone();
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mut table = BTreeMap::new();
    table.insert(
        "1 jobs / workspaces",
        format!("{} / {}", report.jobs, report.workspaces),
    );
    table.insert("2 generate (not measured)", format!("{gen_s:.2} s"));
    table.insert("3 load_all", format!("{load_s:.3} s (goal ≤ 1 s)"));
    table.insert(
        "4 RSS before / after load / end / peak",
        format!("{rss_before:.1} / {rss_loaded:.1} / {rss_end:.1} / {peak:.1} MiB (goal ≤ 100 MB)"),
    );
    table.insert("5 fired", format!("{fired} of {hot} due within {window} s"));
    table.insert(
        "6 lateness p50 / p99 / max",
        format!(
            "{:.1} / {:.1} / {:.1} ms (goal p99 ≤ 100 ms)",
            pct(&ms, 0.5),
            pct(&ms, 0.99),
            ms.last().copied().unwrap_or(f64::NAN)
        ),
    );
    table.insert("7 idle CPU over 10 s", format!("{idle_cpu:.0} ms (goal ≈ 0)"));
    println!("scheduler benchmark ({} workspaces × {} jobs)", workspaces, per);
    for (k, v) in table {
        println!("  {:<40} {v}", &k[2..]);
    }
}
