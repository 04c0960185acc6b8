//! Scheduled prompts and watcher scripts per chat (DESIGN.md "Feature extensions"; spec:
//! architecture.md "Scheduler").
//!
//! - [`JobScheduler`]: process-wide; jobs of every workspace in memory, one timer for the earliest
//!   due job ([`Clock`] injectable), `<workspace>/.volcanic/scheduler/jobs.json` written atomically
//!   before a run starts and after it ends, runs handed to the host's [`JobDelivery`].
//! - [`SchedulerExtension`]: per session, bound to its chat: the `schedule` tool and `/jobs`.
//!
//! Rules (each tested in `tests/`): DST as Vixie cron ([`timing`]); missed runs coalesce into at
//! most one late run inside a grace window, min(period / 2, 1 h) for recurring jobs and 24 h for
//! one-shots ([`slots`]); a slot is recorded before its run starts and never started again after
//! a recorded success; a run cut off by a crash or a shutdown follows the bot's message rule: it
//! is started again once if no tool of it had started (the first tool's start is on disk before
//! the tool runs, [`ToolStarted`]), else recorded `interrupted` and the chat told; a run aborted
//! after a tool started is never `ok`, and a failed one is not retried; a job never overlaps
//! itself; a failed run is retried within its slot (30 s → 1 m → 5 m → 15 m → 60 m) until the
//! next slot is due; after
//! [`slots::MAX_CONSECUTIVE_FAILURES`] failed slots in a row the job is disabled; cron jobs firing
//! more often than every 30 s are refused; finished one-shots stay listed for
//! [`KEEP_FINISHED_DAYS`] days, at most the [`KEEP_FINISHED`] newest per workspace, then are
//! dropped (after each run and on load, in `jobs.json` too).

pub mod clock;
mod engine;
pub mod envelope;
pub mod job;
mod jobs_command;
pub mod slots;
pub mod store;
pub mod timing;
pub mod tool;
pub mod watcher;

pub use clock::{Clock, ManualClock, SystemClock};
pub use engine::{
    Answered, CaughtUp, DeliveryError, JobDelivery, JobScheduler, JobView, KEEP_FINISHED, KEEP_FINISHED_DAYS,
    LoadReport, NewJob, OwnerOfWorkspace, ScheduledRun, SchedulerConfig, SchedulerError, ToolStarted, WorkspaceOwner,
};
pub use job::{Job, JobKind, JobOrigin, JobTarget, RunRecord, RunStatus, ScheduleSpec};
pub use slots::MAX_CONSECUTIVE_FAILURES;
pub use tool::{JobMaker, ScheduleArgs, ScheduleTool, SchedulerExtension};
