//! The handle's layouts of its shape arrays beyond the originals
//! ([`Layouts`]) and a remapped plan's permutations on the device
//! ([`RemapTables`]): what the layout cache holds.

use crate::driver::buffer::DeviceBuffer;
use crate::engines::gather_layouts::DeviceGather;
use crate::throttle::device_layouts::DeviceLayout;
use std::sync::Arc;

/// The handle's layouts of the shape arrays beyond the originals, each
/// shared with the schedules that read it.
#[derive(Default)]
pub(in crate::throttle) struct Layouts {
    /// The plan's order in the original numbering.
    pub(in crate::throttle) sorted: Option<Arc<DeviceLayout>>,
    /// The plan's order in the remapped numbering.
    pub(in crate::throttle) remapped: Option<Arc<DeviceLayout>>,
    /// Every partition alone (part-major), by numbering.
    pub(in crate::throttle) leaves: Option<Arc<DeviceLayout>>,
    pub(in crate::throttle) leaves_r: Option<Arc<DeviceLayout>>,
    /// The chosen SJ cover's layout (`sj`), kept for preparing again.
    pub(in crate::throttle) sj: Option<Arc<DeviceLayout>>,
    /// The layout of the plan made on the device (`device_plan`).
    pub(in crate::throttle) device: Option<Arc<DeviceLayout>>,
    /// The task and gathered-element permutations (`new -> old`).
    pub(in crate::throttle) tables: Option<RemapTables>,
    /// The level order `auto` chose and left to the caller to renumber by
    /// (`ThrottleOptions::caller_renumbers`): no layout of the handle's is
    /// in it, and the schedule is `org`'s.
    pub(in crate::throttle) caller_order: Option<LevelOrderBuffers>,
}

/// A level order on the device: `order[new] = old` and its inverse
/// `position[old] = new`.
pub(in crate::throttle) struct LevelOrderBuffers {
    pub(in crate::throttle) order: DeviceBuffer<u32>,
    pub(in crate::throttle) position: DeviceBuffer<u32>,
}

impl Layouts {
    /// The level order the handle holds: its remapped plan's permutations,
    /// or the order left to the caller.
    pub(in crate::throttle) fn level_order(
        &self,
    ) -> Option<(&DeviceBuffer<u32>, &DeviceBuffer<u32>)> {
        match (&self.tables, &self.caller_order) {
            (
                Some(RemapTables {
                    task_perm: DeviceGather::Direct(order),
                    task_inv: DeviceGather::Direct(position),
                    ..
                }),
                _,
            ) => Some((order, position)),
            (_, Some(o)) => Some((&o.order, &o.position)),
            _ => None,
        }
    }
}

/// A remapped plan's permutations on the device, as gathers. One whose
/// source is larger than half the cache the plan fits runs staged (two
/// gathers through cache-sized blocks of the source) when that timed faster
/// on the device: a random permutation of a vector larger than L2 otherwise
/// moves a 32-byte sector per element (BENCHMARKS.md, "Permutations in two
/// passes").
pub(in crate::throttle) struct RemapTables {
    /// `r[new] = a[task_perm[new]]`.
    pub(in crate::throttle) task_perm: DeviceGather,
    /// `task_inv[old] = new`: outputs go back by a gather through it
    /// (random reads, writes in order) rather than a scatter through
    /// `task_perm` (random 4- or 8-byte writes, each a partial sector).
    pub(in crate::throttle) task_inv: DeviceGather,
    /// `x_r[new] = x[gathered_perm[new]]`.
    pub(in crate::throttle) gathered_perm: DeviceGather,
    /// The staged gathers' scratch, sized for the arrays staged.
    pub(in crate::throttle) scratch: Option<DeviceBuffer<u8>>,
}
