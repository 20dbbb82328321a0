//! `cfq` and `sjq`: every part of a cover as one task list whose warps take
//! work from a device queue in partition order, split tasks merged in that
//! order after.

use crate::driver::cuda_device::CudaDevice;
use crate::engines::carried_launch::{CarriedPart, CarriedRun};
use crate::launch::cuda_launch::PlanList;
use crate::throttle::device_layouts::DeviceLayout;
use crate::throttle::handle::LIST_BUDGET;
use crate::throttle::handle::{Runs, Schedule, Throttled};
use std::ops::Range;
use std::sync::Arc;
use warpfit_runtime::schedule::ThrottlePolicy;
use warpfit_runtime::{Error, Result};

impl Throttled {
    /// One queued task list per launch of `launches` over the part-major
    /// layout `leaves` (`cfq`: one launch of everything; `sjq`: the chosen
    /// nodes), carried between them.
    pub(in crate::throttle) fn queued(
        &self,
        dev: &CudaDevice,
        policy: ThrottlePolicy,
        leaves: Arc<DeviceLayout>,
        launches: &[Range<usize>],
    ) -> Result<Schedule> {
        let cover = leaves
            .cover
            .as_ref()
            .ok_or_else(|| Error::invalid("a queued schedule needs the part-major layout"))?;
        let plan = self.plan_in(leaves.space)?;
        let how = PlanList {
            budget: LIST_BUDGET,
            queue_chunk: Some(self.options.chunk.div_ceil(LIST_BUDGET).max(1)),
        };
        let last = launches.len().saturating_sub(1);
        let lists = launches
            .iter()
            .enumerate()
            .map(|(j, r)| cover.segments(plan, r.clone(), j == 0 || j == last))
            .collect::<Result<Vec<_>>>()?;
        // The prologue reads the range array for its context only (the
        // list's positions are the layout's): any of the layout's serves.
        let args = self.args(Some((&leaves, 0)), leaves.space)?;
        let parts = lists
            .into_iter()
            .map(|l| CarriedPart::List(l, how, &args))
            .collect();
        let spec = self.spec_for(Some(&leaves));
        let config = self.launch_config(&self.config);
        let runs = CarriedRun::of_parts(dev, &spec, &config, self.launch_tasks(), parts)?;
        drop(args);
        Ok(Schedule {
            policy,
            space: leaves.space,
            runs: Runs::Carried(runs),
            layouts: vec![leaves],
        })
    }
}
