//! `cf` and `sj`: one launch per part of a cover (every partition, or the
//! SJ cover's nodes) over its layout, each task's fold carried between
//! launches on the device.

use crate::driver::cuda_device::CudaDevice;
use crate::engines::carried_launch::{CarriedPart, CarriedRun};
use crate::throttle::device_layouts::DeviceLayout;
use crate::throttle::handle::{Runs, Schedule, Throttled};
use std::sync::Arc;
use warpfit_runtime::schedule::ThrottlePolicy;
use warpfit_runtime::Result;

impl Throttled {
    /// One carried launch per launch of `layout` (`cf`, `sj`).
    pub(in crate::throttle) fn carried(
        &self,
        dev: &CudaDevice,
        policy: ThrottlePolicy,
        layout: Arc<DeviceLayout>,
    ) -> Result<Schedule> {
        let args = (0..layout.ptrs.len())
            .map(|j| self.args(Some((&layout, j)), layout.space))
            .collect::<Result<Vec<_>>>()?;
        let parts = args.iter().map(|a| CarriedPart::All(a)).collect();
        let spec = self.spec_for(Some(&layout));
        let config = self.launch_config(&self.config);
        let runs = CarriedRun::of_parts(dev, &spec, &config, self.launch_tasks(), parts)?;
        drop(args);
        Ok(Schedule {
            policy,
            space: layout.space,
            runs: Runs::Carried(runs),
            layouts: vec![layout],
        })
    }
}
