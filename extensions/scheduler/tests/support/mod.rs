//! A scheduler on a manual clock with a recording delivery, for clock-driven tests.

#![allow(dead_code)]

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::processes::{
    ProcessGroup, ProcessSpawnContext, ProcessSpawnError, ProcessSpawnPolicy, ProcessSpawnRequest, SecretRedactor,
};
use volcanic_scheduler::{
    Answered, CaughtUp, DeliveryError, Job, JobDelivery, JobScheduler, JobTarget, ManualClock, ScheduledRun,
    SchedulerConfig, WorkspaceOwner,
};

pub const CHAT: JobTarget = JobTarget {
    chat_id: 42,
    topic: None,
};

/// Whose a test workspace is: `42` the chat 42's; `a2a-NAME` the caller NAME's, acting for
/// chat 42 (`a2a-lost`: for none), with `bash` only when NAME is `bash`.
pub fn owner_of_workspace(p: &Path) -> Option<WorkspaceOwner> {
    let name = p.file_name()?.to_str()?;
    match name.strip_prefix("a2a-") {
        Some(caller) => Some(WorkspaceOwner::Caller {
            name: caller.to_owned(),
            chat: (caller != "lost").then_some(CHAT.chat_id),
            bash: caller == "bash",
        }),
        None => name.parse().ok().map(WorkspaceOwner::Chat),
    }
}

pub fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .map(|d| d.with_timezone(&Utc))
        .unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// Records every run and note; can fail runs or hold them until released.
#[derive(Default)]
pub struct Delivery {
    pub runs: Mutex<Vec<ScheduledRun>>,
    pub notes: Mutex<Vec<(JobTarget, String)>>,
    count: tokio::sync::watch::Sender<usize>,
    pub fail: std::sync::atomic::AtomicBool,
    /// While set, runs wait for it to be cancelled.
    pub hold: Mutex<Option<CancellationToken>>,
    /// Runs start a tool (reported through `tool_started`) before anything else.
    pub tool: std::sync::atomic::AtomicBool,
    /// How runs end instead of `Ok` (a shutdown's cut, a `/stop`), when set.
    pub end: Mutex<Option<DeliveryError>>,
    /// Notices are not delivered while set.
    pub notify_fails: std::sync::atomic::AtomicBool,
    /// Quiet runs answer `NOTHING` while set.
    pub quiet: std::sync::atomic::AtomicBool,
    /// While set, start-up's catch-up goes to a "while I was down" report, kept here (each
    /// hand-over in order).
    pub reports: Option<Mutex<Vec<Vec<CaughtUp>>>>,
}

impl Delivery {
    /// The `i`-th run handed over.
    pub fn nth_run(&self, i: usize) -> ScheduledRun {
        self.runs.lock().map(|r| r[i].clone()).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn run_count(&self) -> usize {
        self.runs.lock().map(|r| r.len()).unwrap_or(0)
    }

    pub fn slots(&self) -> Vec<DateTime<Utc>> {
        self.runs
            .lock()
            .map(|r| r.iter().map(|x| x.slot).collect())
            .unwrap_or_default()
    }

    pub fn notes(&self) -> Vec<String> {
        self.notes
            .lock()
            .map(|n| n.iter().map(|(_, t)| t.clone()).collect())
            .unwrap_or_default()
    }

    /// Waits (at most 5 s of real time) until `n` runs were handed over.
    pub async fn wait_runs(&self, n: usize) {
        let mut rx = self.count.subscribe();
        let r = tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|c| *c >= n)).await;
        assert!(r.is_ok(), "expected {n} runs, got {}", self.run_count());
    }

    /// Waits (at most 5 s of real time) for a note containing `part`.
    pub async fn wait_note(&self, part: &str) -> String {
        for _ in 0..1000 {
            if let Some(n) = self.notes().into_iter().find(|n| n.contains(part)) {
                return n;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("no note with {part:?}; notes: {:?}", self.notes());
    }

    pub fn hold_runs(&self) -> CancellationToken {
        let t = CancellationToken::new();
        if let Ok(mut h) = self.hold.lock() {
            *h = Some(t.clone());
        }
        t
    }
}

#[async_trait]
impl JobDelivery for Delivery {
    async fn run_prompt(&self, run: ScheduledRun) -> Result<Answered, DeliveryError> {
        if self.tool.load(std::sync::atomic::Ordering::SeqCst) {
            run.tool_started.record().unwrap_or_else(|e| panic!("{e}"));
        }
        let quiet = run.quiet;
        if let Ok(mut r) = self.runs.lock() {
            r.push(run);
        }
        self.count.send_modify(|c| *c += 1);
        let hold = self.hold.lock().ok().and_then(|h| h.clone());
        if let Some(h) = hold {
            h.cancelled().await;
        }
        if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(DeliveryError::Failed("provider failed: 529 overloaded".into()));
        }
        if let Some(end) = self.end.lock().ok().and_then(|e| e.clone()) {
            return Err(end);
        }
        if quiet && self.quiet.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(Answered::Quiet);
        }
        Ok(Answered::Sent("sent".into()))
    }

    async fn while_down(&self, caught: &[CaughtUp]) -> Result<(), DeliveryError> {
        match &self.reports {
            Some(r) => {
                if let Ok(mut r) = r.lock() {
                    r.push(caught.to_vec());
                }
                Ok(())
            }
            None => Err(DeliveryError::Failed("no report in this test".into())),
        }
    }

    async fn notify(&self, target: JobTarget, text: String) -> Result<(), DeliveryError> {
        if self.notify_fails.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(DeliveryError::Failed("Telegram refused the notice".into()));
        }
        if let Ok(mut n) = self.notes.lock() {
            n.push((target, text));
        }
        Ok(())
    }
}

/// Runs processes as asked, with PATH and the job's TZ only.
pub struct Policy;

struct NoSecrets;

impl SecretRedactor for NoSecrets {
    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
    fn add_secret(&self, _value: &str) {}
}

impl ProcessSpawnPolicy for Policy {
    fn prepare(&self, r: &ProcessSpawnRequest) -> Result<ProcessSpawnContext, ProcessSpawnError> {
        let mut env = BTreeMap::new();
        env.insert("PATH".to_owned(), std::env::var("PATH").unwrap_or_default());
        if let Some(tz) = &r.time_zone {
            env.insert("TZ".to_owned(), tz.clone());
        }
        Ok(ProcessSpawnContext {
            command: r.command.clone(),
            args: r.args.clone(),
            cwd: r.cwd.clone(),
            env,
            confinement: None,
        })
    }
    fn redactor(&self) -> Arc<dyn SecretRedactor> {
        Arc::new(NoSecrets)
    }
    fn process_group(&self, pid: u32) -> Box<dyn ProcessGroup> {
        Box::new(Group(i32::try_from(pid).ok().map(nix::unistd::Pid::from_raw)))
    }
}

/// A child's process group, killed on request or when dropped armed (as the runtime's policy does).
#[derive(Debug)]
struct Group(Option<nix::unistd::Pid>);

impl ProcessGroup for Group {
    fn kill(&self) {
        if let Some(pgid) = self.0 {
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        }
    }
    fn disarm(mut self: Box<Self>) {
        self.0 = None;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        ProcessGroup::kill(self);
    }
}

/// A running scheduler over `root` (one workspace `root/42`).
pub struct Harness {
    pub root: PathBuf,
    pub ws: PathBuf,
    pub clock: ManualClock,
    pub delivery: Arc<Delivery>,
    pub scheduler: JobScheduler,
    pub report: volcanic_scheduler::LoadReport,
    shutdown: CancellationToken,
}

impl Harness {
    pub async fn start(root: &Path, clock: ManualClock) -> Harness {
        Harness::start_with(root, clock, |_| {}).await
    }

    /// [`Harness::start`] with `prepare` applied to the delivery before the jobs are loaded
    /// (start-up tells its catch-up while loading).
    pub async fn start_with(root: &Path, clock: ManualClock, prepare: impl FnOnce(&mut Delivery)) -> Harness {
        let ws = root.join("42");
        std::fs::create_dir_all(&ws).unwrap_or_else(|e| panic!("{e}"));
        let mut delivery = Delivery::default();
        prepare(&mut delivery);
        let (scheduler, delivery) = Harness::unloaded_with(root, &clock, Arc::new(delivery));
        let report = scheduler.load_all().await;
        let shutdown = CancellationToken::new();
        scheduler.start(shutdown.clone());
        Harness {
            root: root.to_owned(),
            ws,
            clock,
            delivery,
            scheduler,
            report,
            shutdown,
        }
    }

    /// A scheduler over `root` that has loaded nothing and runs no timer yet.
    pub fn unloaded(root: &Path, clock: &ManualClock) -> (JobScheduler, Arc<Delivery>) {
        Harness::unloaded_with(root, clock, Arc::new(Delivery::default()))
    }

    /// [`Harness::unloaded`] delivering through `delivery`.
    pub fn unloaded_with(root: &Path, clock: &ManualClock, delivery: Arc<Delivery>) -> (JobScheduler, Arc<Delivery>) {
        let scheduler = JobScheduler::new(SchedulerConfig {
            clock: Arc::new(clock.clone()),
            delivery: delivery.clone(),
            processes: Arc::new(Policy),
            workspaces_root: root.to_owned(),
            owner_of_workspace: Some(Arc::new(owner_of_workspace)),
        });
        (scheduler, delivery)
    }

    /// Stops the timer (as a crash would: runs in flight are left as they are).
    pub fn stop(&self) {
        self.shutdown.cancel();
    }

    pub async fn jobs(&self) -> Vec<Job> {
        self.scheduler
            .list(&self.ws, CHAT)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .into_iter()
            .map(|v| v.job)
            .collect()
    }

    /// Waits (at most 5 s of real time) until the first job satisfies `f`.
    pub async fn wait_job(&self, what: &str, f: impl Fn(&Job) -> bool) -> Job {
        for _ in 0..1000 {
            if let Some(j) = self.jobs().await.into_iter().next()
                && f(&j)
            {
                return j;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("job never got to: {what}; now {:#?}", self.jobs().await);
    }

    /// Waits (at most 5 s of real time) until the stored file satisfies `f`.
    pub async fn wait_stored(&self, what: &str, f: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        for _ in 0..1000 {
            let v = self.stored();
            if f(&v) {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("stored jobs never got to: {what}; now {:#}", self.stored());
    }

    /// The jobs file as stored.
    pub fn stored(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(volcanic_scheduler::store::jobs_path(&self.ws)).unwrap_or_default();
        serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
    }
}
