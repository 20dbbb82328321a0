//! The handle's side of the plan thread: where the plan is
//! ([`Throttled::status`]), a finished plan taken in before a launch, or
//! waited for, and installed for the next launch to lay out.

use crate::throttle::handle::{ThrottleStatus, Throttled};
use crate::throttle::host_plan::{HostPlan, PendingPlan};
use warpfit_runtime::schedule::ThrottlePolicy;
use warpfit_runtime::{Error, Result};

impl Throttled {
    /// Where the plan is.
    pub fn status(&self) -> ThrottleStatus {
        match (&self.pending, &self.schedule) {
            (Some(_), _) => ThrottleStatus::Planning,
            (None, Some(s)) => ThrottleStatus::Running(s.policy),
            (None, None) if self.report.chosen == ThrottlePolicy::Org => {
                ThrottleStatus::Running(ThrottlePolicy::Org)
            }
            (None, None) => ThrottleStatus::Profiling,
        }
    }

    /// Takes a plan in: the next launch lays it out and runs the asked
    /// schedule (profiling first where the policy does).
    pub(in crate::throttle) fn install(&mut self, plan: HostPlan) {
        self.report
            .record_plan(plan.partitions, plan.planning, plan.detail.is_some());
        self.plan = Some(plan);
        self.schedule = None;
        self.spare = None;
        self.kept_configs.clear();
    }

    /// Takes a finished plan in (before a launch).
    pub(in crate::throttle) fn take_finished_plan(&mut self) -> Result<()> {
        if self.pending.as_ref().is_some_and(PendingPlan::is_finished) {
            self.wait_for_plan()?;
        }
        Ok(())
    }

    /// Waits for a pipelined plan and takes it in, so that the next launch
    /// runs the planned schedule.
    ///
    /// # Errors
    /// The planner's errors.
    pub fn wait_for_plan(&mut self) -> Result<()> {
        if let Some(handle) = self.pending.take() {
            let plan = handle.join().map_err(|_| Error::Unavailable {
                what: format!("the plan of kernel `{}`", self.spec.name),
                reason: "the planning thread panicked".into(),
            })??;
            self.install(plan);
        }
        Ok(())
    }
}
