//! Scheduler metrics from a wrapper around the host's [`JobDelivery`]: every scheduled prompt
//! run passes through `run_prompt`, so its outcome and how late it started after its slot are
//! seen there without touching the scheduler (`volcanic_scheduler_runs_total{outcome}`,
//! `volcanic_scheduler_lateness_seconds`). Notices (`notify`) and the
//! catch-up's report (`while_down`) are passed through uncounted.

use async_trait::async_trait;
use volcanic_scheduler::{Answered, CaughtUp, DeliveryError, JobDelivery, JobTarget, ScheduledRun};

/// `inner`, with each prompt run counted.
#[derive(Debug)]
pub struct Metered<D>(pub D);

#[async_trait]
impl<D: JobDelivery> JobDelivery for Metered<D> {
    async fn run_prompt(&self, run: ScheduledRun) -> Result<Answered, DeliveryError> {
        let late = (chrono::Utc::now() - run.slot).to_std().unwrap_or_default();
        let result = self.0.run_prompt(run).await;
        let outcome = match &result {
            Ok(Answered::Sent(_)) => "ok",
            Ok(Answered::Quiet) => "quiet",
            Err(DeliveryError::Failed(_)) => "failed",
            Err(DeliveryError::CutOff(_)) => "cut_off",
            Err(DeliveryError::Stopped(_)) => "stopped",
            Err(DeliveryError::Skipped(_)) => "skipped",
        };
        super::metrics::scheduler_run(outcome, late);
        result
    }

    async fn notify(&self, target: JobTarget, text: String) -> Result<(), DeliveryError> {
        self.0.notify(target, text).await
    }

    async fn while_down(&self, caught: &[CaughtUp]) -> Result<(), DeliveryError> {
        self.0.while_down(caught).await
    }
}
