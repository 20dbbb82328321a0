//! What cache-fit throttling did in an iterative app's run (`pagerank`,
//! `cg`), the throttled SpMV handles CG chooses between by scalar type, and
//! the numbering an app moves its run to when its throttled kernel's
//! schedule renumbers (`pagerank`, `cfd`).

use crate::gpu::levels::DeviceLevelOrder;
use crate::{Device, DeviceVec, Error, Result, ThrottleReport, ThrottleStatus};

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
    /// Whether the run moved to the schedule's numbering after its first
    /// iteration (a remapped schedule chosen by a plan made on the device):
    /// its vectors renumbered once, the pulls run in plan order, the result
    /// numbered back. CG says so in its own result (`CgResult::renumbered`).
    pub renumbered: bool,
    /// Where the first iteration ran apart (its launch runs the plan, see
    /// `renumbered`): its steps' wall times, each waited for (the shares,
    /// the pull that decides, the renumbering). Empty otherwise.
    pub first_steps: Vec<(&'static str, std::time::Duration)>,
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

/// A throttled `y = A·x` handle of CG's scalar type (`spmv::f32::Throttle`
/// and `spmv::f64::Throttle`), used through one interface.
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
    /// The caller's renumbered launch ran slower than `org`'s timed run.
    fn reject_level_order(&mut self) -> Result<()>;
}

macro_rules! spmv_throttle {
    ($t:ident) => {
        impl SpmvThrottle<$t> for super::kernels::spmv::$t::Throttle {
            fn enqueue(&mut self, x: &DeviceVec<$t>, y: &DeviceVec<$t>) -> Result<()> {
                super::kernels::spmv::$t::Throttle::enqueue(self, x, y)
            }
            fn check(&self) -> Result<()> {
                super::kernels::spmv::$t::Throttle::check(self)
            }
            fn report(&self) -> &ThrottleReport {
                super::kernels::spmv::$t::Throttle::report(self)
            }
            fn status(&self) -> ThrottleStatus {
                super::kernels::spmv::$t::Throttle::status(self)
            }
            fn wait_for_plan(&mut self) -> Result<()> {
                super::kernels::spmv::$t::Throttle::wait_for_plan(self)
            }
            fn device_level_order(&self) -> Result<Option<crate::gpu::levels::DeviceLevelOrder>> {
                super::kernels::spmv::$t::Throttle::device_level_order(self)
            }
            fn reject_level_order(&mut self) -> Result<()> {
                super::kernels::spmv::$t::Throttle::reject_level_order(self)
            }
        }
    };
}

spmv_throttle!(f32);
spmv_throttle!(f64);

/// The numbering of a remapped throttled schedule on the device, as an
/// iterative app moves its run to it: `order[new] = old` and
/// `position[old] = new`. `level` is the handle's
/// `device_level_order()` (a plan made on the device, copied there); else
/// `host` its `plan_order().tasks`, uploaded with its inverse. `None` for a
/// schedule in the kernel's own numbering.
///
/// # Errors
/// An order that is not a permutation of `0..n`; device errors.
pub(super) fn plan_numbering(
    device: &Device,
    level: Option<DeviceLevelOrder>,
    host: impl FnOnce() -> Option<Vec<u32>>,
) -> Result<Option<(DeviceVec<u32>, DeviceVec<u32>)>> {
    if let Some(o) = level {
        return Ok(Some((o.order, o.position)));
    }
    let Some(order) = host() else {
        return Ok(None);
    };
    let mut position = vec![u32::MAX; order.len()];
    for (new, &old) in order.iter().enumerate() {
        match position.get_mut(old as usize) {
            Some(slot) if *slot == u32::MAX => *slot = new as u32,
            _ => {
                return Err(Error::invalid(format!(
                    "the plan's order is not a permutation of 0..{}: {old} at {new}",
                    order.len()
                )))
            }
        }
    }
    Ok(Some((device.upload(&order)?, device.upload(&position)?)))
}
