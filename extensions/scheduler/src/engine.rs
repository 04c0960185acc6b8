//! The process-wide [`JobScheduler`]: every workspace's jobs in memory, one timer for the earliest
//! due job (a `BTreeSet` ordered by due time; no polling), runs in their own tasks, and each
//! workspace's `jobs.json` written (coalesced) before a run starts and after it ends.

use crate::clock::Clock;
use crate::job::{Job, JobKind, JobOrigin, JobTarget, ScheduleSpec};
use crate::slots::{self, Due, Outcome};
use crate::store::StoreError;
use crate::timing::Compiled;
use crate::watcher::{self, WatchResult};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::processes::ProcessSpawnPolicy;

/// A scheduled prompt handed to the host.
#[derive(Debug, Clone)]
pub struct ScheduledRun {
    /// The chat (and topic).
    pub target: JobTarget,
    /// Who made the job: a caller's prompt runs with the caller's tools, not in the chat's
    /// session.
    pub origin: JobOrigin,
    /// The job.
    pub job_id: String,
    /// The slot this run belongs to.
    pub slot: DateTime<Utc>,
    /// The prompt with its envelope (`[Scheduled job …]`), as the model should see it.
    pub prompt: String,
    /// A quiet check-in: an answer of exactly `NOTHING` ([`crate::envelope::is_nothing`]) is
    /// not sent, and the run ends [`Answered::Quiet`].
    pub quiet: bool,
    /// Call [`ToolStarted::record`] when the first tool of this prompt's run starts, before the
    /// tool runs: a run cut off after it is never started again by itself.
    pub tool_started: ToolStarted,
}

/// How a scheduled run that did not end well ended, as the host saw it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DeliveryError {
    /// The provider failed after its own retries, or the answer could not be sent to the chat:
    /// retried within the slot unless a tool had started.
    #[error("{0}")]
    Failed(String),
    /// Cut off by the host's shutdown: the slot stays `running` on disk and the next start
    /// resolves it as after a crash (re-run once if no tool had started, else the chat is told).
    #[error("{0}")]
    CutOff(String),
    /// Stopped in the chat (`/stop`): recorded `interrupted`, never retried.
    #[error("{0}")]
    Stopped(String),
    /// Not run: the host refused it before any model request (the chat's spending allowance is
    /// spent, `docs/costs.md`); recorded `skipped` with the host's sentence, never retried.
    #[error("{0}")]
    Skipped(String),
}

/// How a scheduled prompt that ended well ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// Its answer went to the chat; what was delivered (e.g. `sent`).
    Sent(String),
    /// A quiet check-in's model had nothing to say (`NOTHING`): nothing was sent.
    Quiet,
}

/// What the host does for the scheduler.
#[async_trait]
pub trait JobDelivery: Send + Sync {
    /// Runs `run.prompt` in the target's session, queued behind any run in progress, and returns
    /// once its answer went to the chat: `Ok` with what was delivered (e.g. `sent`), or, for a
    /// quiet run whose model answered `NOTHING`, [`Answered::Quiet`] with nothing sent. The first
    /// tool the prompt's run starts is reported through `run.tool_started` before it runs. A run
    /// that ended by an abort after a tool started is never `Ok`.
    async fn run_prompt(&self, run: ScheduledRun) -> Result<Answered, DeliveryError>;
    /// Tells the chat something, without the model (missed runs, a disabled job, a run cut off),
    /// and returns once the chat has it: `Err` when it could not be delivered.
    async fn notify(&self, target: JobTarget, text: String) -> Result<(), DeliveryError>;
    /// Takes what start-up's catch-up did ([`CaughtUp`], every chat's, possibly none; once per
    /// start) into the host's "while I was down" reports, and returns once they hold it
    /// durably. `Err` (the default: no report): each is told by its own note instead.
    async fn while_down(&self, caught: &[CaughtUp]) -> Result<(), DeliveryError> {
        let _ = caught;
        Err(DeliveryError::Failed("no \"while I was down\" report".into()))
    }
}

/// What the scheduler needs.
pub struct SchedulerConfig {
    /// Time and timer.
    pub clock: Arc<dyn Clock>,
    /// The host side.
    pub delivery: Arc<dyn JobDelivery>,
    /// The process policy watchers start through.
    pub processes: Arc<dyn ProcessSpawnPolicy>,
    /// Folder whose sub-folders are workspaces (scanned by [`JobScheduler::load_all`]).
    pub workspaces_root: PathBuf,
    /// Whose a workspace folder is. Loaded jobs are bound to it: a hand-edited or planted file
    /// cannot aim a job at another chat (a migrated group's jobs follow it), nor pass a caller's
    /// job off as the chat's own.
    pub owner_of_workspace: Option<OwnerOfWorkspace>,
}

/// Maps a workspace folder to its owner (`None`: unknown, jobs keep their target and origin).
pub type OwnerOfWorkspace = Arc<dyn Fn(&Path) -> Option<WorkspaceOwner> + Send + Sync>;

/// Whose a workspace is ([`SchedulerConfig::owner_of_workspace`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkspaceOwner {
    /// The chat with this id: its jobs are aimed at it, their origin as written.
    Chat(i64),
    /// An A2A caller: every job in it is the caller's, aimed at the chat it acts for (`None`:
    /// none, or no longer configured: its jobs are kept and never run); its watchers run only
    /// when its tools include `bash`.
    Caller {
        /// Its name.
        name: String,
        /// The chat it acts for.
        chat: Option<i64>,
        /// Whether its tools include `bash`.
        bash: bool,
    },
}

/// Errors of the scheduler's actions; the text is shown to the model or user.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    /// No job with that id in this chat.
    #[error("no job `{0}` in this chat; `list` shows the chat's jobs")]
    NotFound(String),
    /// The jobs file could not be written.
    #[error("cannot save the jobs: {0}")]
    Store(#[from] StoreError),
    /// Bad schedule.
    #[error("{0}")]
    Timing(#[from] crate::timing::TimingError),
    /// Anything else the caller got wrong.
    #[error("{0}")]
    Invalid(String),
    /// The job is running now.
    #[error("job `{0}` is running right now; try again when it is done")]
    Busy(String),
}

/// What [`JobScheduler::load_all`] found.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// Workspaces with a jobs file.
    pub workspaces: usize,
    /// Jobs loaded.
    pub jobs: usize,
    /// Corrupt files set aside: (new path, what was wrong).
    pub set_aside: Vec<(PathBuf, String)>,
    /// Files that could not be read.
    pub errors: Vec<String>,
}

/// A job's place: workspace index and index in its job table. Small and `Copy`: 100,000 timers
/// cost no allocations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Key {
    ws: u32,
    index: u32,
}

/// A job in memory. Its schedule is compiled when needed (firing, listing), not kept: a parsed
/// cron expression holds a 5,000-entry year table, ~5 KB a job.
struct Entry {
    job: Job,
    /// Its schedule cannot be read by this build: kept, never timed.
    broken: bool,
    due: Option<DateTime<Utc>>,
    /// A run task of this job is in flight.
    active: bool,
}

struct Workspace {
    path: Arc<Path>,
    /// Job table; a removed job leaves `None` (its place is reused).
    jobs: Vec<Option<Entry>>,
    /// A corrupt file set aside at load.
    set_aside: Option<(PathBuf, String)>,
    /// Bumped by every change; compared with what was written.
    generation: u64,
    /// Serialises writes of its file.
    writes: Arc<persist::Writes>,
}

impl Workspace {
    fn find(&self, id: &str) -> Option<u32> {
        self.jobs
            .iter()
            .position(|e| e.as_ref().is_some_and(|e| e.job.id == id))
            .and_then(|i| u32::try_from(i).ok())
    }

    fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.jobs.iter().flatten()
    }

    /// Puts `entry` in a free place (or a new one); returns its index.
    fn insert(&mut self, entry: Entry) -> u32 {
        let i = match self.jobs.iter().position(Option::is_none) {
            Some(i) => {
                self.jobs[i] = Some(entry);
                i
            }
            None => {
                self.jobs.push(Some(entry));
                self.jobs.len() - 1
            }
        };
        u32::try_from(i).unwrap_or(u32::MAX)
    }
}

#[derive(Default)]
struct State {
    workspaces: Vec<Workspace>,
    by_path: HashMap<Arc<Path>, u32>,
    timers: BTreeSet<(DateTime<Utc>, Key)>,
}

impl State {
    fn ws(&self, ws: u32) -> Option<&Workspace> {
        self.workspaces.get(ws as usize)
    }

    fn ws_mut(&mut self, ws: u32) -> Option<&mut Workspace> {
        self.workspaces.get_mut(ws as usize)
    }

    fn entry_mut(&mut self, key: Key) -> Option<&mut Entry> {
        self.ws_mut(key.ws)?.jobs.get_mut(key.index as usize)?.as_mut()
    }

    /// The key of job `id` of workspace `ws`, if that job belongs to `chat`.
    fn key_in_chat(&self, ws: u32, id: &str, chat: i64) -> Option<Key> {
        let w = self.ws(ws)?;
        let index = w.find(id)?;
        let e = w.jobs.get(index as usize)?.as_ref()?;
        (e.job.target.chat_id == chat).then_some(Key { ws, index })
    }

    /// Re-files `key`'s timer after its job changed.
    fn retime(&mut self, key: Key) {
        let Some(entry) = self.entry_mut(key) else {
            return;
        };
        let due = if !entry.broken { slots::due_at(&entry.job) } else { None };
        let old = std::mem::replace(&mut entry.due, due);
        if let Some(t) = old {
            self.timers.remove(&(t, key));
        }
        if let Some(t) = due {
            self.timers.insert((t, key));
        }
    }

    fn touch(&mut self, ws: u32) {
        if let Some(w) = self.ws_mut(ws) {
            w.generation += 1;
        }
    }
}

/// The process-wide scheduler. Cheap to clone.
#[derive(Clone)]
pub struct JobScheduler {
    inner: Arc<Inner>,
}

struct Inner {
    config: SchedulerConfig,
    state: Mutex<State>,
    wake: tokio::sync::Notify,
    /// Held while a jobs file is read and put in the state: start-up's load and a chat's first
    /// use must not both read (and both try to set aside) the same corrupt file.
    loading: tokio::sync::Mutex<()>,
    /// Runs whose outcome is not on disk yet (an entry stops being `active` just before its
    /// outcome is written): shutdown waits for both.
    recording: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for JobScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobScheduler").finish_non_exhaustive()
    }
}

/// A new job, as the `schedule` tool validated it.
#[derive(Debug, Clone)]
pub struct NewJob {
    /// The chat.
    pub target: JobTarget,
    /// Who makes it.
    pub origin: JobOrigin,
    /// Prompt or watcher.
    pub kind: JobKind,
    /// When.
    pub schedule: ScheduleSpec,
    /// A quiet check-in ([`Job::quiet`]).
    pub quiet: bool,
}

impl JobScheduler {
    /// A scheduler; nothing runs until [`JobScheduler::start`].
    pub fn new(config: SchedulerConfig) -> Self {
        JobScheduler {
            inner: Arc::new(Inner {
                config,
                state: Mutex::new(State::default()),
                wake: tokio::sync::Notify::new(),
                loading: tokio::sync::Mutex::new(()),
                recording: std::sync::atomic::AtomicUsize::new(0),
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Now, by the scheduler's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.inner.config.clock.now()
    }

    /// Starts the timer task; it ends when `shutdown` is cancelled.
    pub fn start(&self, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move { me.timer_loop(shutdown).await })
    }

    async fn timer_loop(&self, shutdown: CancellationToken) {
        let clock = self.inner.config.clock.clone();
        loop {
            let next = self.state().timers.first().map(|(t, _)| *t);
            let sleep = async {
                match next {
                    Some(t) => clock.sleep_until(t).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = shutdown.cancelled() => return,
                () = self.inner.wake.notified() => {}
                () = sleep => {
                    // A bug in one job's arithmetic must not stop every chat's schedule.
                    let fired = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.fire_due(None)));
                    if fired.is_err() {
                        tracing::error!("the scheduler's timer caught a panic; jobs due now may be late");
                    }
                }
            }
        }
    }

    /// Starts every job due by now. With `caught` (start-up's catch-up), the slots found missed
    /// are put there for the host's report instead of told one by one.
    fn fire_due(&self, mut caught: Option<&mut Vec<CaughtUp>>) {
        let now = self.now();
        let mut starts = Vec::new();
        let mut notes = Vec::new();
        let mut changed: BTreeSet<u32> = BTreeSet::new();
        {
            let mut st = self.state();
            while let Some((t, key)) = st.timers.first().copied() {
                if t > now {
                    break;
                }
                st.timers.remove(&(t, key));
                let Some(entry) = st.entry_mut(key) else {
                    continue;
                };
                entry.due = None;
                let Some(compiled) = compile(entry) else {
                    continue;
                };
                let mut said = Vec::new();
                let mut missed = None;
                let due = slots::on_due(&mut entry.job, &compiled, now, entry.active, &mut said, &mut missed);
                if let Some(m) = missed {
                    match caught.as_deref_mut() {
                        Some(c) => c.push(CaughtUp::missed(&entry.job, &m)),
                        None => said.extend(m.note),
                    }
                }
                if let Due::Start { slot, late } = due {
                    entry.active = true;
                    starts.push((key, entry.job.clone(), slot, late));
                }
                for text in said {
                    notes.push((entry.job.target, text));
                }
                st.touch(key.ws);
                st.retime(key);
                changed.insert(key.ws);
            }
        }
        let mut running: BTreeSet<u32> = BTreeSet::new();
        for (key, job, slot, late) in starts {
            running.insert(key.ws);
            let me = self.clone();
            tokio::spawn(async move { me.run(key, job, slot, late).await });
        }
        // Workspaces whose jobs changed without a run (skipped slots) are written here; a run
        // writes its own before it starts.
        changed.retain(|ws| !running.contains(ws));
        if changed.is_empty() && notes.is_empty() {
            return;
        }
        let me = self.clone();
        tokio::spawn(async move {
            for ws in changed {
                me.persist_logged(ws).await;
            }
            for (target, text) in notes {
                let _ = me.inner.config.delivery.notify(target, text).await;
            }
        });
    }

    /// One attempt: record the slot durably, run, record the outcome.
    async fn run(&self, key: Key, job: Job, slot: DateTime<Utc>, late: Option<chrono::Duration>) {
        use std::sync::atomic::Ordering::SeqCst;
        self.inner.recording.fetch_add(1, SeqCst);
        let tool = ToolStarted::new(self.clone(), key, &job.id, slot);
        let outcome = match self.persist(key.ws).await {
            Err(e) => Outcome::Failed {
                error: format!(
                    "could not record the run before starting it: {}",
                    volcanic_abstractions::shortage::plain(&e)
                ),
                delivery: None,
                after_tool: false,
            },
            Ok(path) => self.execute(&path, &job, slot, late, &tool).await,
        };
        let now = self.now();
        let mut notes = Vec::new();
        {
            let mut st = self.state();
            // The job may have been removed meanwhile (and its table place reused).
            if let Some(entry) = st.entry_mut(key).filter(|e| e.job.id == job.id) {
                entry.active = false;
                if let Some(compiled) = compile(entry) {
                    slots::finish(&mut entry.job, &compiled, slot, outcome, now, &mut notes);
                }
                st.touch(key.ws);
                st.retime(key);
            }
            // Finished one-shots past their retention go (with this one's write).
            st.drop_finished(key.ws, now);
        }
        self.persist_logged(key.ws).await;
        self.inner.recording.fetch_sub(1, SeqCst);
        self.inner.wake.notify_one();
        for text in notes {
            let _ = self.inner.config.delivery.notify(job.target, text).await;
        }
    }

    async fn execute(
        &self,
        ws: &Path,
        job: &Job,
        slot: DateTime<Utc>,
        late: Option<chrono::Duration>,
        tool: &ToolStarted,
    ) -> Outcome {
        let zone = zone_of(&job.schedule);
        let heading = crate::envelope::heading(job, slot, late);
        let prompt = match &job.kind {
            JobKind::Prompt { text } if job.quiet => format!("{heading}\n{}\n{text}", crate::envelope::QUIET_NOTE),
            JobKind::Prompt { text } => format!("{heading}\n{text}"),
            JobKind::Watcher {
                script,
                timeout_secs,
                text,
            } => {
                if let Some(why) = self.watcher_refused(ws, job) {
                    return Outcome::Failed {
                        error: why,
                        delivery: None,
                        after_tool: false,
                    };
                }
                // The script is the watcher's first tool: its start is on disk before it runs, so
                // a crash from here on is told, not replayed (its output could be lost unseen).
                if let Err(e) = tool.record_script().await {
                    return Outcome::Failed {
                        error: format!(
                            "could not record the watcher's start before running it: {}",
                            volcanic_abstractions::shortage::plain(&e)
                        ),
                        delivery: None,
                        after_tool: false,
                    };
                }
                // Clamped: the file may have been edited.
                let secs = (*timeout_secs).clamp(1, crate::tool::MAX_WATCHER_TIMEOUT_SECS);
                let timeout = std::time::Duration::from_secs(secs);
                match watcher::run(&*self.inner.config.processes, ws, script, zone, timeout).await {
                    WatchResult::Failed(error) => {
                        return Outcome::Failed {
                            error,
                            delivery: None,
                            after_tool: false,
                        };
                    }
                    WatchResult::Output(out) if out.trim().is_empty() => {
                        return Outcome::Ok {
                            delivery: "nothing to send (no output)".into(),
                        };
                    }
                    WatchResult::Output(out) => {
                        crate::envelope::watcher_prompt(&heading, script, text.as_deref(), &out)
                    }
                }
            }
        };
        let run = ScheduledRun {
            target: job.target,
            origin: job.origin.clone(),
            job_id: job.id.clone(),
            slot,
            prompt,
            quiet: job.quiet && matches!(job.kind, JobKind::Prompt { .. }),
            tool_started: tool.clone(),
        };
        match self.inner.config.delivery.run_prompt(run).await {
            Ok(Answered::Sent(delivery)) => Outcome::Ok { delivery },
            Ok(Answered::Quiet) => Outcome::Quiet,
            Err(DeliveryError::Failed(error)) => Outcome::Failed {
                error,
                delivery: Some("not delivered".into()),
                after_tool: tool.was_recorded(),
            },
            Err(DeliveryError::CutOff(_)) => Outcome::CutOff,
            Err(DeliveryError::Stopped(error)) => Outcome::Stopped { error },
            Err(DeliveryError::Skipped(why)) => Outcome::Skipped { why },
        }
    }
}

impl JobScheduler {
    /// The owner of workspace `ws`, if the host says.
    fn owner(&self, ws: &Path) -> Option<WorkspaceOwner> {
        self.inner.config.owner_of_workspace.as_ref().and_then(|f| f(ws))
    }

    /// Why `job`'s watcher script in `ws` may not run, if it may not: a caller's script runs only
    /// when the caller's tools include `bash` (else a caller could run what it only wrote, or
    /// sent as a file).
    fn watcher_refused(&self, ws: &Path, job: &Job) -> Option<String> {
        let caller = match (self.owner(ws), &job.origin) {
            (Some(WorkspaceOwner::Caller { bash: true, .. }), _) => return None,
            (Some(WorkspaceOwner::Caller { name, .. }), _) => name,
            (_, JobOrigin::Caller { name }) => name.clone(),
            (Some(WorkspaceOwner::Chat(_)) | None, JobOrigin::Chat) => return None,
        };
        Some(format!(
            "the watcher of the A2A caller `{caller}` was not run: a caller's scripts run only when its \
             tools include `bash` (`[[a2a.server.callers]] tools`)"
        ))
    }
}

/// The entry's schedule, compiled; a schedule this build cannot read marks the entry broken.
fn compile(entry: &mut Entry) -> Option<Compiled> {
    match Compiled::compile(&entry.job.schedule) {
        Ok(c) => Some(c),
        Err(e) => {
            if !entry.broken {
                tracing::error!(job = %entry.job.id, "job kept but not scheduled: {e}");
            }
            entry.broken = true;
            None
        }
    }
}

/// The zone a job's processes get as `TZ`.
pub(crate) fn zone_of(spec: &ScheduleSpec) -> Option<String> {
    match spec {
        ScheduleSpec::Cron { time_zone, .. }
        | ScheduleSpec::At { time_zone, .. }
        | ScheduleSpec::Every { time_zone, .. } => Some(time_zone.clone()),
    }
}

mod actions;
mod catch_up;
mod loading;
mod persist;
mod retention;
pub use actions::JobView;
pub use catch_up::CaughtUp;
pub use persist::ToolStarted;
pub use retention::{KEEP_FINISHED, KEEP_FINISHED_DAYS};
