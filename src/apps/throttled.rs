//! What cache-fit throttling did in an iterative app's run (`pagerank`,
//! `cg`), and the throttled SpMV handles CG chooses between by scalar type.

use crate::{DeviceVec, Result, ThrottleReport, ThrottleStatus};

/// What pipelined throttling did over an app's iterations: the handle's
/// report (planning time, launches before the plan, the schedule chosen and
/// `auto`'s profile), its phase at the end, and the first iteration that ran
/// after the plan was in.
#[derive(Debug, Clone)]
pub struct ThrottledRun {
    /// The handle's report at the end of the run.
    pub report: ThrottleReport,
    /// The handle's phase at the end of the run.
    pub status: ThrottleStatus,
    /// The first iteration (counted from 0) that ran after the plan was in;
    /// `None` while it never was. Every later one ran it too: a handle
    /// does not go back to planning.
    pub planned_from: Option<usize>,
}

impl ThrottledRun {
    /// Notes that iteration `index` (from 0) ran after the plan was in when
    /// `planned`: the first such index is kept.
    pub fn note(planned_from: &mut Option<usize>, index: usize, planned: bool) {
        if planned && planned_from.is_none() {
            *planned_from = Some(index);
        }
    }
}

/// A throttled `y = A·x` handle of CG's scalar type (`spmv::Throttle` for
/// f32, `spmv_f64::Throttle` for f64), used through one interface.
#[doc(hidden)]
pub trait SpmvThrottle<T: crate::Scalar> {
    /// Enqueues `y = A·x` without waiting.
    fn enqueue(&mut self, x: &DeviceVec<T>, y: &DeviceVec<T>) -> Result<()>;
    /// Waits and reports the first fault.
    fn check(&self) -> Result<()>;
    /// The handle's report.
    fn report(&self) -> &ThrottleReport;
    /// The handle's phase.
    fn status(&self) -> ThrottleStatus;
    /// Waits until the plan is in.
    fn wait_for_plan(&mut self) -> Result<()>;
    /// The level order `auto` chose on the device, copied.
    fn device_level_order(&self) -> Result<Option<crate::gpu::levels::DeviceLevelOrder>>;
}

macro_rules! spmv_throttle {
    ($t:ty, $kernel:ident) => {
        impl SpmvThrottle<$t> for super::kernels::$kernel::Throttle {
            fn enqueue(&mut self, x: &DeviceVec<$t>, y: &DeviceVec<$t>) -> Result<()> {
                super::kernels::$kernel::Throttle::enqueue(self, x, y)
            }
            fn check(&self) -> Result<()> {
                super::kernels::$kernel::Throttle::check(self)
            }
            fn report(&self) -> &ThrottleReport {
                super::kernels::$kernel::Throttle::report(self)
            }
            fn status(&self) -> ThrottleStatus {
                super::kernels::$kernel::Throttle::status(self)
            }
            fn wait_for_plan(&mut self) -> Result<()> {
                super::kernels::$kernel::Throttle::wait_for_plan(self)
            }
            fn device_level_order(&self) -> Result<Option<crate::gpu::levels::DeviceLevelOrder>> {
                super::kernels::$kernel::Throttle::device_level_order(self)
            }
        }
    };
}

spmv_throttle!(f32, spmv);
spmv_throttle!(f64, spmv_f64);
