//! `/jobs`: the chat's jobs, with a button per action (Pause / Resume / Remove), through the
//! session's `UserInterface` (inline buttons on Telegram, a menu in the console).

use crate::engine::JobScheduler;
use crate::job::JobTarget;
use chrono_tz::Tz;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::{BoxError, ExtensionCommandContext};
use volcanic_abstractions::ui::NotifyLevel;

/// The button that closes the menu.
const DONE: &str = "Done";

/// The actions of a job's buttons, before its id: `Quiet <id>` makes a prompt job a quiet
/// check-in, `Chatty <id>` makes it answer every run again.
const QUIET: &str = "Quiet";
const CHATTY: &str = "Chatty";

/// Shows the chat's jobs and applies the chosen action.
pub async fn run(
    scheduler: &JobScheduler,
    target: JobTarget,
    ctx: Arc<dyn ExtensionCommandContext>,
    cancel: CancellationToken,
) -> Result<(), BoxError> {
    let ws = ctx.cwd();
    let zone = ctx.time_zone().and_then(|z| z.parse::<Tz>().ok()).unwrap_or(Tz::UTC);
    let jobs = scheduler.list(&ws, target).await?;
    let Some(ui) = ctx.ui() else {
        return Err("/jobs needs a chat with buttons; ask the agent to list the jobs instead".into());
    };
    // A corrupt file set aside at load is reported as the `schedule` tool's `list` reports it.
    let aside = scheduler
        .set_aside(&ws)
        .await
        .map(|(path, reason)| crate::tool::set_aside_note(&path, &reason));
    if jobs.is_empty() {
        let text = format!(
            "No scheduled jobs in this chat. Ask me to remind you of something, or to watch a script.{}",
            aside.as_deref().unwrap_or_default()
        );
        let level = if aside.is_some() {
            NotifyLevel::Warning
        } else {
            NotifyLevel::Info
        };
        ui.notify(&text, level).await;
        return Ok(());
    }
    let mut title = jobs
        .iter()
        .map(|v| format!("• {}: {}", v.job.id, crate::tool::line(v, zone)))
        .collect::<Vec<_>>()
        .join("\n");
    title.push_str(aside.as_deref().unwrap_or_default());
    let mut options = Vec::new();
    for v in &jobs {
        if v.job.enabled {
            options.push(format!("Pause {}", v.job.id));
        } else if v.job.next_run.is_some() {
            options.push(format!("Resume {}", v.job.id));
        }
        if v.job.quiet {
            options.push(format!("{CHATTY} {}", v.job.id));
        } else if matches!(v.job.kind, crate::job::JobKind::Prompt { .. }) {
            options.push(format!("{QUIET} {}", v.job.id));
        }
        options.push(format!("Remove {}", v.job.id));
    }
    options.push(DONE.to_owned());
    let Some(choice) = ui.select(&format!("Scheduled jobs\n{title}"), &options, cancel).await else {
        return Ok(());
    };
    let Some((action, id)) = choice.split_once(' ') else {
        return Ok(());
    };
    let said = match action {
        "Pause" => scheduler
            .set_enabled(&ws, target, id, false)
            .await
            .map(|_| format!("Paused job {id}.")),
        "Resume" => scheduler
            .set_enabled(&ws, target, id, true)
            .await
            .map(|v| format!("Resumed job {id}: {}", crate::tool::line(&v, zone))),
        QUIET | CHATTY => scheduler
            .set_quiet(&ws, target, id, action == QUIET)
            .await
            .map(|v| format!("Job {id}: {}", crate::tool::line(&v, zone))),
        "Remove" => scheduler
            .remove(&ws, target, id)
            .await
            .map(|_| format!("Removed job {id}.")),
        _ => return Ok(()),
    };
    match said {
        Ok(text) => ui.notify(&text, NotifyLevel::Info).await,
        Err(e) => ui.notify(&e.to_string(), NotifyLevel::Error).await,
    }
    Ok(())
}
