//! The per-session `schedule` tool (flat arguments, DESIGN.md "Feature extensions") and `/jobs`,
//! bound to one chat (and topic) by [`SchedulerExtension`].

use crate::engine::JobView;
use crate::engine::{JobScheduler, NewJob, SchedulerError};
use crate::envelope::{describe, local, what};
use crate::job::{JobKind, JobOrigin, JobTarget, RunStatus, ScheduleSpec};
use crate::timing;
use async_trait::async_trait;
use chrono_tz::Tz;
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::{BoxError, CommandDefinition, Extension, ExtensionApi, ExtensionFactory};
use volcanic_abstractions::tools::{ToolError, ToolInvocation, ToolResult, TypedTool, typed};

/// Default watcher timeout, seconds.
pub const DEFAULT_WATCHER_TIMEOUT_SECS: u64 = 60;
/// Longest watcher timeout, seconds.
pub const MAX_WATCHER_TIMEOUT_SECS: u64 = 600;

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Add a job (needs `text` or `script`, and one of `cron`, `at`, `in`, `every`).
    Add,
    /// List this chat's jobs.
    List,
    /// Delete job `id`.
    Remove,
    /// Pause job `id`.
    Pause,
    /// Resume job `id`.
    Resume,
    /// Run job `id` once now.
    RunNow,
}

/// Prompt or watcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// At each slot, `text` is run as a prompt in this chat and the answer is sent here.
    #[default]
    Prompt,
    /// At each slot, `sh script` runs in the workspace; only when it prints something does the
    /// output come to you as a prompt (with `text` as instructions).
    Watcher,
}

/// Arguments of `schedule`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleArgs {
    /// add | list | remove | pause | resume | run_now
    pub action: Action,
    /// The job id (remove, pause, resume, run_now).
    #[serde(default)]
    pub id: Option<String>,
    /// prompt (default) or watcher.
    #[serde(default)]
    pub kind: Option<Kind>,
    /// The prompt to run at each slot, written as an instruction to yourself (e.g. "Remind the
    /// user to check the deploy"); for a watcher, what to do with its output.
    #[serde(default)]
    pub text: Option<String>,
    /// Watcher: a script path inside the workspace, run with `sh`. Print nothing when there is
    /// nothing to report.
    #[serde(default)]
    pub script: Option<String>,
    /// Crontab expression, 5 fields (`0 9 * * 1-5`) or 6 with seconds first. Day-of-month and
    /// day-of-week together match either (crontab's OR rule).
    #[serde(default)]
    pub cron: Option<String>,
    /// Once at this time: RFC 3339, or local `2026-12-01 09:00` / `09:00` in `time_zone`.
    #[serde(default)]
    pub at: Option<String>,
    /// Once after this delay: `90s`, `10m`, `2h`, `1d`.
    #[serde(default, rename = "in")]
    pub in_: Option<String>,
    /// Repeatedly with this period (≥ 30s): `10m`, `1h`.
    #[serde(default)]
    pub every: Option<String>,
    /// IANA zone for `cron` and a local `at` (default: the chat's zone).
    #[serde(default)]
    pub time_zone: Option<String>,
    /// Watcher timeout (default 60s, at most 10m).
    #[serde(default)]
    pub timeout: Option<String>,
    /// Prompt jobs: a quiet check-in ("tell me only if something's urgent"). At each run you
    /// may answer exactly NOTHING, and then nothing is sent to the chat.
    #[serde(default)]
    pub quiet: Option<bool>,
}

/// Why a watcher cannot be made quiet.
pub const QUIET_WATCHER: &str =
    "only prompt jobs can be quiet: a watcher is quiet already (nothing happens when its script prints nothing)";

/// The `schedule` tool of one chat.
#[derive(Debug, Clone)]
pub struct ScheduleTool {
    scheduler: JobScheduler,
    target: JobTarget,
    maker: JobMaker,
}

/// Who makes the jobs of a session's `schedule` tool, and whether it may add watchers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobMaker {
    /// Recorded in each job it adds.
    pub origin: JobOrigin,
    /// Whether it may add watcher jobs (a script runs): only a maker that may run commands
    /// itself (a chat's agent; a caller whose tools include `bash`).
    pub watchers: bool,
}

impl JobMaker {
    /// The chat's own agent: its jobs are the chat's, watchers allowed.
    pub fn chat() -> JobMaker {
        JobMaker {
            origin: JobOrigin::Chat,
            watchers: true,
        }
    }
}

#[async_trait]
impl TypedTool for ScheduleTool {
    type Args = ScheduleArgs;
    fn name(&self) -> &str {
        "schedule"
    }
    fn description(&self) -> &str {
        "Schedule prompts and watcher scripts for this chat: reminders and recurring tasks (prompt), \
         or a script run periodically that wakes you only when it prints something (watcher). \
         Actions: add, list, remove, pause, resume, run_now. For add give exactly one of cron, at, \
         in, every. Times are in the chat's time zone unless time_zone is given."
    }
    fn prompt_snippet(&self) -> Option<String> {
        Some("schedule reminders, recurring prompts and watcher scripts for this chat".into())
    }
    fn prompt_guidelines(&self) -> Vec<String> {
        vec![
            "When the user asks to be reminded or for something to happen later or repeatedly, use schedule (not sleep or at/cron in bash).".into(),
            "After schedule add, tell the user the next run times it reported.".into(),
            "For a check-in that should speak only when something needs the user (\"tell me only if something's urgent\"), add it with quiet: true.".into(),
        ]
    }
    async fn run(
        &self,
        args: ScheduleArgs,
        inv: ToolInvocation,
        _cancel: CancellationToken,
    ) -> Result<ToolResult, ToolError> {
        let ws = inv.ctx.cwd();
        let chat_zone = inv
            .ctx
            .time_zone()
            .and_then(|z| z.parse::<Tz>().ok())
            .unwrap_or(Tz::UTC);
        let need_id = || {
            args.id.clone().filter(|i| !i.trim().is_empty()).ok_or_else(|| {
                ToolError::msg(format!("`{:?}` needs `id`; `list` shows the ids", args.action).to_lowercase())
            })
        };
        let s = &self.scheduler;
        let t = self.target;
        let result = match args.action {
            Action::Add => {
                if args.kind == Some(Kind::Watcher) && !self.maker.watchers {
                    return Err(ToolError::msg(
                        "watcher jobs run a script, and this session may not run commands (its A2A caller's \
                         tools do not include `bash`); schedule a prompt instead",
                    ));
                }
                let mut new = build_job(&args, &ws, chat_zone, self.scheduler.now(), self.target)?;
                new.origin = self.maker.origin.clone();
                let view = s.add(&ws, new).await.map_err(err)?;
                let text = format!("Added job `{}`: {}", view.job.id, line(&view, chat_zone));
                return Ok(ToolResult::text(text).with_details(details(&view)));
            }
            Action::List => {
                let jobs = s.list(&ws, t).await.map_err(err)?;
                let mut text = if jobs.is_empty() {
                    "No scheduled jobs in this chat.".to_owned()
                } else {
                    jobs.iter()
                        .map(|v| format!("- `{}`: {}", v.job.id, line(v, chat_zone)))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                if let Some((aside, reason)) = s.set_aside(&ws).await {
                    text.push_str(&set_aside_note(&aside, &reason));
                }
                return Ok(ToolResult::text(text));
            }
            Action::Remove => {
                let job = s.remove(&ws, t, &need_id()?).await.map_err(err)?;
                format!("Removed job `{}` ({}).", job.id, what(&job.kind))
            }
            Action::Pause => {
                let v = s.set_enabled(&ws, t, &need_id()?, false).await.map_err(err)?;
                format!("Paused job `{}`.", v.job.id)
            }
            Action::Resume => {
                let v = s.set_enabled(&ws, t, &need_id()?, true).await.map_err(err)?;
                format!("Resumed job `{}`: {}", v.job.id, line(&v, chat_zone))
            }
            Action::RunNow => {
                let v = s.run_now(&ws, t, &need_id()?).await.map_err(err)?;
                format!(
                    "Job `{}` started now; its answer comes as a separate message.",
                    v.job.id
                )
            }
        };
        Ok(ToolResult::text(result))
    }
}

/// What `list` and `/jobs` add when the chat's jobs file was unreadable and set aside at load
/// (`aside`: where it now is; `reason`: what was wrong), after two line breaks.
pub fn set_aside_note(aside: &std::path::Path, reason: &str) -> String {
    format!(
        "\n\nNote: the jobs file was unreadable ({reason}) and was set aside as {}; its jobs are not scheduled.",
        aside.display()
    )
}

fn err(e: SchedulerError) -> ToolError {
    ToolError::msg(e.to_string())
}

/// The job `add` asks for, validated: exactly one of `cron` / `at` / `in` / `every`, a known
/// zone (default `chat_zone`), a cron that fires at most every 30 s, a prompt's `text`, a
/// watcher's `script` inside `ws` that exists, a timeout of 1 s to 10 min. Errors say what to
/// give instead; they become the tool's error result.
pub fn build_job(
    a: &ScheduleArgs,
    ws: &std::path::Path,
    chat_zone: Tz,
    now: chrono::DateTime<chrono::Utc>,
    target: JobTarget,
) -> Result<NewJob, ToolError> {
    {
        let zone_name = a.time_zone.clone().unwrap_or_else(|| chat_zone.name().to_owned());
        let zone = timing::parse_zone(&zone_name).map_err(|e| ToolError::msg(e.to_string()))?;
        let given: Vec<&str> = [("cron", &a.cron), ("at", &a.at), ("in", &a.in_), ("every", &a.every)]
            .iter()
            .filter(|(_, v)| v.as_deref().is_some_and(|s| !s.trim().is_empty()))
            .map(|(k, _)| *k)
            .collect();
        if given.len() != 1 {
            return Err(ToolError::msg(format!(
                "add needs exactly one of `cron`, `at`, `in`, `every` (got {})",
                if given.is_empty() {
                    "none".to_owned()
                } else {
                    given.join(", ")
                }
            )));
        }
        let bad = |e: timing::TimingError| ToolError::msg(e.to_string());
        let schedule = if let Some(expr) = a.cron.as_deref().filter(|s| !s.trim().is_empty()) {
            timing::check_new_cron(expr, zone, now).map_err(bad)?;
            ScheduleSpec::Cron {
                expr: expr.trim().to_owned(),
                time_zone: zone.name().to_owned(),
            }
        } else if let Some(at) = a.at.as_deref().filter(|s| !s.trim().is_empty()) {
            ScheduleSpec::At {
                at: timing::parse_at(at, zone, now).map_err(bad)?,
                time_zone: zone.name().to_owned(),
            }
        } else if let Some(delay) = a.in_.as_deref().filter(|s| !s.trim().is_empty()) {
            ScheduleSpec::At {
                at: timing::ahead(now, timing::parse_duration(delay).map_err(bad)?, delay).map_err(bad)?,
                time_zone: zone.name().to_owned(),
            }
        } else {
            let text = a.every.as_deref().unwrap_or_default();
            let every = timing::parse_every(text).map_err(bad)?;
            ScheduleSpec::Every {
                every_secs: u64::try_from(every.num_seconds()).unwrap_or(u64::MAX),
                anchor: timing::ahead(now, every, text).map_err(bad)?,
                time_zone: zone.name().to_owned(),
            }
        };
        let text = a.text.clone().filter(|t| !t.trim().is_empty());
        let kind = match a.kind.unwrap_or_default() {
            Kind::Prompt => JobKind::Prompt {
                text: text
                    .ok_or_else(|| ToolError::msg("a prompt job needs `text`: the prompt to run at each slot"))?,
            },
            Kind::Watcher => {
                let script = a
                    .script
                    .clone()
                    .filter(|s| !s.trim().is_empty())
                    .ok_or_else(|| ToolError::msg("a watcher job needs `script`: a path inside the workspace"))?;
                let path = crate::watcher::script_path(ws, &script).map_err(ToolError::msg)?;
                if !path.is_file() {
                    return Err(ToolError::msg(format!(
                        "the script `{script}` does not exist in the workspace; write it first"
                    )));
                }
                let timeout = match a.timeout.as_deref() {
                    Some(t) => u64::try_from(timing::parse_duration(t).map_err(bad)?.num_seconds()).unwrap_or(0),
                    None => DEFAULT_WATCHER_TIMEOUT_SECS,
                };
                if !(1..=MAX_WATCHER_TIMEOUT_SECS).contains(&timeout) {
                    return Err(ToolError::msg(format!(
                        "`timeout` must be between 1s and {MAX_WATCHER_TIMEOUT_SECS}s"
                    )));
                }
                JobKind::Watcher {
                    script: script.trim().to_owned(),
                    timeout_secs: timeout,
                    text,
                }
            }
        };
        let quiet = a.quiet.unwrap_or(false);
        if quiet && !matches!(kind, JobKind::Prompt { .. }) {
            return Err(ToolError::msg(QUIET_WATCHER));
        }
        Ok(NewJob {
            target,
            origin: JobOrigin::Chat,
            kind,
            schedule,
            quiet,
        })
    }
}

/// One job in a line: what, when, next slots in the chat's zone, its state.
pub fn line(v: &JobView, chat_zone: Tz) -> String {
    let job = &v.job;
    let next = if v.upcoming.is_empty() {
        String::new()
    } else {
        let times: Vec<String> = v.upcoming.iter().map(|t| local(*t, chat_zone)).collect();
        format!(" Next: {}.", times.join("; "))
    };
    let quiet = if job.quiet {
        " (quiet: tells only what needs you)"
    } else {
        ""
    };
    let state = if job.enabled {
        String::new()
    } else if job.next_run.is_none() {
        " (done)".to_owned()
    } else {
        " (paused)".to_owned()
    };
    let last = job.last_run.as_ref().map_or(String::new(), |r| {
        let status = match r.status {
            RunStatus::Running => "running",
            RunStatus::Ok => "ok",
            RunStatus::Error => "error",
            RunStatus::Skipped => "skipped",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Quiet => "quiet (nothing to say)",
        };
        let error = r
            .error
            .as_deref()
            .map_or(String::new(), |e| format!(": {}", crate::envelope::clip(e, 120)));
        format!(" Last run: {status}{error}.")
    });
    format!(
        "{}, {}{quiet}{state}.{next}{last}",
        what(&job.kind),
        describe(&job.schedule)
    )
}

fn details(v: &JobView) -> serde_json::Value {
    serde_json::json!({
        "job": v.job,
        "upcoming": v.upcoming,
    })
}

/// The scheduler's extension for one chat: the `schedule` tool and `/jobs` (the chat's jobs
/// with Pause / Resume / Remove buttons).
#[derive(Debug, Clone)]
pub struct SchedulerExtension {
    scheduler: JobScheduler,
    target: JobTarget,
    maker: JobMaker,
}

impl SchedulerExtension {
    /// A factory making the extension for `target`'s sessions, whose jobs `maker` makes.
    pub fn factory(scheduler: JobScheduler, target: JobTarget, maker: JobMaker) -> ExtensionFactory {
        Arc::new(move || {
            Box::new(SchedulerExtension {
                scheduler: scheduler.clone(),
                target,
                maker: maker.clone(),
            })
        })
    }
}

#[async_trait]
impl Extension for SchedulerExtension {
    fn name(&self) -> &str {
        "scheduler"
    }

    async fn activate(&self, api: Arc<dyn ExtensionApi>) -> Result<(), BoxError> {
        api.register_tool(typed(ScheduleTool {
            scheduler: self.scheduler.clone(),
            target: self.target,
            maker: self.maker.clone(),
        }));
        let scheduler = self.scheduler.clone();
        let target = self.target;
        api.register_command(
            "jobs",
            CommandDefinition {
                description: "List this chat's scheduled jobs (pause, resume, remove)".into(),
                handler: Arc::new(move |_args, ctx, cancel| {
                    let scheduler = scheduler.clone();
                    Box::pin(async move { crate::jobs_command::run(&scheduler, target, ctx, cancel).await })
                }),
            },
        );
        Ok(())
    }
}
