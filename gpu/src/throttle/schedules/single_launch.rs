//! `org` and `org_r`: one launch over the arrays as given, or over the
//! plan's sorted layout in the remapped numbering, under the launch's own
//! options or those `auto` kept.

use crate::config::LaunchConfig;
use crate::driver::cuda_device::CudaDevice;
use crate::launch::cuda_launch::CudaLaunch;
use crate::spec::{IndexEncoding, KernelSpec};
use crate::throttle::device_layouts::{DeviceLayout, Space};
use crate::throttle::handle::{Runs, Schedule, Throttled};
use std::sync::Arc;
use warpfit_runtime::schedule::ThrottlePolicy;
use warpfit_runtime::{Result, Tasks};

impl Throttled {
    /// The kernel as launches over `layout` compile it: reading the index
    /// array in the layout's encoding.
    pub(in crate::throttle) fn spec_for(&self, layout: Option<&DeviceLayout>) -> KernelSpec {
        KernelSpec {
            index_encoding: layout.map_or(IndexEncoding::Plain, |l| l.index_encoding()),
            ..*self.spec
        }
    }

    /// One launch over all tasks: the arrays as given (`layout` `None`,
    /// `org`) or a sorted layout (`org_r`).
    pub(in crate::throttle) fn single(
        &self,
        dev: &CudaDevice,
        policy: ThrottlePolicy,
        layout: Option<Arc<DeviceLayout>>,
    ) -> Result<Schedule> {
        let config = self
            .kept_configs
            .iter()
            .find(|(p, _)| *p == policy)
            .map_or(self.config, |(_, c)| *c);
        self.single_with(dev, policy, layout, &config)
    }

    /// As [`single`](Self::single), under launch options `config`.
    pub(in crate::throttle) fn single_with(
        &self,
        dev: &CudaDevice,
        policy: ThrottlePolicy,
        layout: Option<Arc<DeviceLayout>>,
        config: &LaunchConfig,
    ) -> Result<Schedule> {
        let space = layout.as_ref().map_or(Space::Original, |l| l.space);
        let args = self.args(layout.as_deref().map(|l| (l, 0)), space)?;
        let spec = self.spec_for(layout.as_deref());
        let config = self.launch_config(config);
        let tasks = Tasks::All(self.launch_tasks());
        let p = CudaLaunch::new_borrowing(dev, &spec, &config, tasks, &args)?;
        drop(args);
        Ok(Schedule {
            policy,
            space,
            runs: Runs::Single(Box::new(p)),
            layouts: layout.into_iter().collect(),
        })
    }
}
