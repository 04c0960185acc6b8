//! The scheduler feature (Telegram only): one process-wide [`JobScheduler`] whose jobs live in
//! the workspaces; per chat session the scheduler's extension (the `schedule` tool and `/jobs`)
//! bound to its chat; scheduled runs delivered into the chat's session ([`delivery`]). A job an
//! A2A caller made (in its session acting for a chat) records the caller as its origin, runs in a
//! session of the caller's own with the caller's tools, its answer told to the chat; its
//! watchers run only when the caller's tools include `bash` (docs/security.md). After
//! polling has begun it starts the timer and loads every workspace's jobs (the scan grows with
//! the chats); at shutdown it waits for the timer and for the runs cut short to record their
//! outcome.

mod delivery;

use super::a2a_server::pool::CallerPolicy;
use super::{HostFeature, Services, SessionPlace};
use async_trait::async_trait;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use volcanic_abstractions::extensions::ExtensionFactory;
use volcanic_scheduler::{
    JobMaker, JobOrigin, JobScheduler, SchedulerConfig, SchedulerExtension, SystemClock, WorkspaceOwner,
};

/// How long shutdown waits for runs cut short to record their outcome.
const RECORD_BOUND: Duration = Duration::from_secs(5);

/// The feature.
#[derive(Debug)]
pub struct Scheduler {
    scheduler: JobScheduler,
    shutdown: CancellationToken,
    timer: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// Builds it in the Telegram host (a job's run is delivered into its chat).
pub fn build(services: &Services) -> anyhow::Result<Option<Arc<dyn HostFeature>>> {
    let Some(chats) = &services.chats else {
        return Ok(None);
    };
    // A caller's jobs run with its policy: the callers are read as the A2A server reads them.
    let callers: Arc<HashMap<String, CallerPolicy>> = Arc::new(
        super::a2a_server::configured(services)?
            .map(|c| c.policies.into_iter().collect())
            .unwrap_or_default(),
    );
    let delivery = Arc::new(crate::ops::scheduler::Metered(delivery::ChatJobDelivery::new(
        chats.clone(),
        services.shutdown.clone(),
        callers.clone(),
        services.workspaces_root.clone(),
    )));
    let owners = callers.clone();
    let scheduler = JobScheduler::new(SchedulerConfig {
        clock: Arc::new(SystemClock),
        delivery,
        processes: services.processes.clone(),
        workspaces_root: services.workspaces_root.clone(),
        owner_of_workspace: Some(Arc::new(move |path: &Path| owner_of_workspace(&owners, path))),
    });
    Ok(Some(Arc::new(Scheduler {
        scheduler,
        shutdown: services.shutdown.clone(),
        timer: Mutex::new(None),
    })))
}

/// Whose the workspace `path` is: a chat's, or a caller's (a caller no longer configured acts
/// for no chat, so its jobs never run); `None` for any other folder.
fn owner_of_workspace(callers: &HashMap<String, CallerPolicy>, path: &Path) -> Option<WorkspaceOwner> {
    if let Some(chat) = super::port::chat_of_workspace(path) {
        return Some(WorkspaceOwner::Chat(chat));
    }
    let name = super::a2a_server::caller_of_workspace(path)?;
    let policy = callers.get(name);
    Some(WorkspaceOwner::Caller {
        name: name.to_owned(),
        chat: policy.and_then(|p| p.acts_for).map(|t| t.chat_id),
        bash: policy.is_some_and(|p| p.tools.allows("bash")),
    })
}

#[async_trait]
impl HostFeature for Scheduler {
    fn name(&self) -> &'static str {
        "scheduler"
    }

    fn session_extensions(&self, place: &SessionPlace<'_>) -> Vec<ExtensionFactory> {
        let maker = match place.caller {
            None => JobMaker::chat(),
            Some(c) => JobMaker {
                origin: JobOrigin::Caller { name: c.name.clone() },
                watchers: c.bash,
            },
        };
        place
            .chat
            .map(|chat| SchedulerExtension::factory(self.scheduler.clone(), delivery::job_target(chat), maker))
            .into_iter()
            .collect()
    }

    fn help(&self) -> &[&'static str] {
        &["/jobs - this chat's scheduled jobs (pause, resume, remove)"]
    }

    fn start(&self) {
        let timer = self.scheduler.start(self.shutdown.clone());
        *self.timer.lock().unwrap_or_else(|e| e.into_inner()) = Some(timer);
        let scheduler = self.scheduler.clone();
        tokio::spawn(async move {
            let report = scheduler.load_all().await;
            for (aside, reason) in &report.set_aside {
                tracing::warn!(file = %aside.display(), "a jobs.json was unreadable ({reason}) and was set aside");
            }
            for e in &report.errors {
                tracing::error!("cannot read scheduled jobs: {e}");
            }
            tracing::info!(
                workspaces = report.workspaces,
                jobs = report.jobs,
                "scheduled jobs loaded"
            );
        });
    }

    async fn stop(&self) {
        // Runs cut short record their outcome before the sessions go.
        let timer = self.timer.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(timer) = timer {
            let _ = timer.await;
        }
        self.scheduler.wait_runs_recorded(RECORD_BOUND).await;
    }
}
