//! A job as stored in `.volcanic/scheduler/jobs.json` (schema [`SCHEMA_VERSION`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The version of `jobs.json` this build writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// Runs kept in [`Job::history`] (oldest dropped first).
pub const HISTORY_LEN: usize = 20;

/// Where a job's runs go: a chat, and a forum topic in forums (Bot API `message_thread_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct JobTarget {
    /// Telegram chat id (negative for groups).
    pub chat_id: i64,
    /// Forum topic, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<i64>,
}

/// Who made a job: the chat's own agent, or an A2A caller acting for the chat. A caller's job
/// runs with the caller's tools and is framed as its words, never the owner's; a file written
/// before jobs recorded their origin holds the chat's own.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum JobOrigin {
    /// The chat's own agent (or its user through it).
    #[default]
    Chat,
    /// The A2A caller `name` (`[[a2a.server.callers]] name`).
    Caller {
        /// Its name.
        name: String,
    },
}

/// What a job does when it fires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum JobKind {
    /// Runs `text` as a prompt in the chat's session.
    Prompt {
        /// The prompt.
        text: String,
    },
    /// Runs `sh <script>` in the workspace; non-empty output becomes a prompt.
    Watcher {
        /// Path relative to the workspace.
        script: String,
        /// Seconds before the script's process group is killed.
        timeout_secs: u64,
        /// What to tell the agent along with the output (optional).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
}

/// When a job fires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ScheduleSpec {
    /// A crontab expression (5 fields, or 6 with seconds first) read in `time_zone`.
    Cron {
        /// The expression.
        expr: String,
        /// IANA zone name.
        time_zone: String,
    },
    /// Once, at an instant.
    At {
        /// The instant.
        at: DateTime<Utc>,
        /// The zone it was given in (for display).
        time_zone: String,
    },
    /// Every `every_secs` seconds (≥ 30) from `anchor`.
    Every {
        /// Period, seconds.
        every_secs: u64,
        /// The first slot; later slots are `anchor + k·every`.
        anchor: DateTime<Utc>,
        /// The chat's zone at creation (the `TZ` of a watcher, and for display).
        #[serde(default = "utc")]
        time_zone: String,
    },
}

/// The outcome of a run (`running` while it goes; a crash leaves it and the next start makes it
/// `interrupted`, a shutdown makes it `interrupted` at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Started, not finished.
    Running,
    /// Finished: the prompt ran and its answer reached the chat, or the watcher had nothing to say.
    Ok,
    /// Failed (the provider after its retries, delivery to Telegram, or a watcher's exit or timeout).
    Error,
    /// Not run: the previous run was still going, a missed slot outside the grace window, or
    /// the host refused it before any model request (the chat's allowance is spent).
    Skipped,
    /// Cut off by a crash or a shutdown after a tool had started (or after its one re-run), or
    /// stopped in the chat (`/stop`); not started again by itself.
    Interrupted,
    /// Finished with nothing to say: a quiet job's model answered exactly `NOTHING`
    /// (`docs/scheduling.md`, "Quiet check-ins"), so nothing was sent to the chat.
    Quiet,
}

/// One slot's run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The scheduled instant this run belongs to.
    pub slot: DateTime<Utc>,
    /// When the (latest) attempt started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<DateTime<Utc>>,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<DateTime<Utc>>,
    /// Outcome.
    pub status: RunStatus,
    /// Attempts made within the slot (1 + retries).
    #[serde(default)]
    pub attempts: u32,
    /// Why it failed or was skipped (a watcher's stderr, the provider's error, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What happened to the output: `sent`, `nothing to send`, or the delivery error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<String>,
    /// When the first tool of the latest attempt started (a watcher's script counts as one),
    /// written to disk before the tool ran. A run cut off after it is never started again by
    /// itself (`docs/exactly-once.md`: a message whose prompt led to a tool is not re-run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_started: Option<DateTime<Utc>>,
    /// The slot was already started again once after a crash or shutdown cut it off before any
    /// tool (re-run at most once).
    #[serde(default, skip_serializing_if = "is_false")]
    pub rerun: bool,
    /// Recorded `interrupted` at start-up and the chat not told yet: set before the notice is
    /// sent, cleared once it reached the chat (a crash in between tells it again).
    #[serde(default, skip_serializing_if = "is_false")]
    pub untold: bool,
    /// Recorded `interrupted` by the bot's shutdown, which cut it off: the next start resolves
    /// it as a run a crash left `running` (re-run once, or the chat told; [`crate::slots::on_load`]).
    #[serde(default, skip_serializing_if = "is_false")]
    pub shutdown: bool,
}

impl RunRecord {
    /// A record of `slot` with `status`, nothing else known yet.
    pub fn new(slot: DateTime<Utc>, status: RunStatus) -> Self {
        RunRecord {
            slot,
            started: None,
            finished: None,
            status,
            attempts: 0,
            error: None,
            delivery: None,
            tool_started: None,
            rerun: false,
            untold: false,
            shutdown: false,
        }
    }

    /// Whether the run was left unfinished by a crash (still `running`) or cut off by a
    /// shutdown, for the next start to resolve.
    pub fn left_unfinished(&self) -> bool {
        self.status == RunStatus::Running || self.shutdown
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_false(b: &bool) -> bool {
    !*b
}

/// A scheduled prompt or watcher of one chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// Short id, unique in its workspace (`[a-z0-9]{6}`).
    pub id: String,
    /// The chat (and topic) it belongs to.
    pub target: JobTarget,
    /// Who made it (absent in older files: the chat).
    #[serde(default)]
    pub origin: JobOrigin,
    /// Prompt or watcher.
    pub kind: JobKind,
    /// When.
    pub schedule: ScheduleSpec,
    /// Paused jobs and finished one-shots are not enabled.
    pub enabled: bool,
    /// A quiet check-in (prompt jobs): the model may answer exactly `NOTHING`, and then nothing
    /// is sent to the chat and the run is recorded [`RunStatus::Quiet`]. Absent in older files:
    /// not quiet.
    #[serde(default, skip_serializing_if = "is_false")]
    pub quiet: bool,
    /// Creation instant.
    pub created: DateTime<Utc>,
    /// The next slot (UTC); `None` when none is left.
    #[serde(default)]
    pub next_run: Option<DateTime<Utc>>,
    /// The newest run (boxed: most jobs in memory have none yet, and 100,000 jobs must fit in
    /// 100 MB).
    #[serde(default)]
    pub last_run: Option<Box<RunRecord>>,
    /// When the failed newest run is tried again (within its slot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<DateTime<Utc>>,
    /// Failed slots in a row; at [`crate::MAX_CONSECUTIVE_FAILURES`] the job is disabled.
    #[serde(default)]
    pub consecutive_failures: u32,
    /// Slots not run because the bot was down (or the machine asleep).
    #[serde(default)]
    pub missed: u64,
    /// Earlier runs, newest last, at most [`HISTORY_LEN`].
    #[serde(default)]
    pub history: Vec<RunRecord>,
}

impl Job {
    /// Makes `record` the newest run, moving the previous newest into the history.
    pub fn push_run(&mut self, record: RunRecord) {
        if let Some(prev) = self.last_run.take() {
            self.history.push(*prev);
            if self.history.len() > HISTORY_LEN {
                let extra = self.history.len() - HISTORY_LEN;
                self.history.drain(..extra);
            }
        }
        self.last_run = Some(Box::new(record));
    }

    /// Files `record` in the history without touching the newest run (a slot skipped while that
    /// run still goes).
    pub fn record_aside(&mut self, record: RunRecord) {
        self.history.push(record);
        if self.history.len() > HISTORY_LEN {
            let extra = self.history.len() - HISTORY_LEN;
            self.history.drain(..extra);
        }
    }

    /// The record of the attempt of `slot` that is going (the newest run, or one in the history).
    pub fn running_record(&mut self, slot: DateTime<Utc>) -> Option<&mut RunRecord> {
        if self.last_run.as_ref().is_some_and(|r| r.slot == slot) {
            return self.last_run.as_deref_mut();
        }
        self.history
            .iter_mut()
            .rev()
            .find(|r| r.slot == slot && r.status == RunStatus::Running)
    }

    /// Whether a run of this job is recorded as going.
    pub fn is_running(&self) -> bool {
        self.last_run.as_ref().is_some_and(|r| r.status == RunStatus::Running)
    }
}

/// The whole file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct JobsFile {
    /// [`SCHEMA_VERSION`].
    pub version: u32,
    /// The workspace's jobs.
    pub jobs: Vec<Job>,
}

fn utc() -> String {
    "UTC".into()
}
