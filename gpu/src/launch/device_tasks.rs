//! A task list on the device: its segments, the split tasks' merge order,
//! the scratch their partials go to, and the packed CTE warp groups.

use crate::abi::LaunchArgs;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::launch::launch_steps::{self, Items};
use warpfit_runtime::{Result, TaskList};

/// CTE warps packed by work: each group's first segment (then the end) and
/// its first task when it holds whole consecutive tasks only
/// ([`launch_steps::pack_warps`], [`launch_steps::whole_runs`]).
struct PackedWarps {
    first: DeviceBuffer<u32>,
    task: DeviceBuffer<u32>,
}

/// A task list in device memory, with its split-task scratch.
pub(crate) struct DeviceTaskList {
    list: TaskList,
    segments: DeviceBuffer<u32>,
    whole: DeviceBuffer<u8>,
    split: DeviceBuffer<u32>,
    split_segments: DeviceBuffer<u32>,
    scratch: DeviceBuffer<u64>,
    present: DeviceBuffer<u8>,
    wide_merge: bool,
    packed: Option<PackedWarps>,
}

impl DeviceTaskList {
    /// Uploads `list`; scratch holds one accumulator of `acc_bytes` per
    /// segment. With `pack_budget`, CTE warps take groups of segments
    /// bounded by that much work instead of 32 segments each.
    pub(crate) fn upload(
        dev: &CudaDevice,
        list: TaskList,
        acc_bytes: usize,
        pack_budget: Option<u32>,
    ) -> Result<Self> {
        Self::upload_as(dev, list, acc_bytes, pack_budget, false)
    }

    /// [`DeviceTaskList::upload`] of a list whose positions the host laid
    /// out itself (`trusted`: not the tasks' own ranges), so that no group
    /// is loaded by task (`whole_runs` reads each task's own range).
    pub(crate) fn upload_as(
        dev: &CudaDevice,
        list: TaskList,
        acc_bytes: usize,
        pack_budget: Option<u32>,
        trusted: bool,
    ) -> Result<Self> {
        let split: Vec<u32> = list
            .split_tasks()
            .iter()
            .flat_map(|s| [s.task, s.first, s.count])
            .collect();
        let has_split = !list.split_segments().is_empty();
        // Scratch is indexed by segment id; only split segments write it.
        let scratch_words = if has_split {
            (list.len() * acc_bytes).div_ceil(8)
        } else {
            0
        };
        let packed = match pack_budget {
            Some(budget) => {
                let first = launch_steps::pack_warps(list.segments(), budget);
                let task = if trusted {
                    vec![u32::MAX; first.len().saturating_sub(1)]
                } else {
                    launch_steps::whole_runs(&list, &first)
                };
                Some(PackedWarps {
                    task: DeviceBuffer::upload(dev, &task)?,
                    first: DeviceBuffer::upload(dev, &first)?,
                })
            }
            None => None,
        };
        Ok(DeviceTaskList {
            segments: DeviceBuffer::upload(dev, list.segment_words())?,
            whole: DeviceBuffer::upload(dev, list.whole_bytes())?,
            split: DeviceBuffer::upload(dev, &split)?,
            split_segments: DeviceBuffer::upload(dev, list.split_segments())?,
            scratch: DeviceBuffer::zeros(dev, scratch_words)?,
            present: DeviceBuffer::zeros(dev, if has_split { list.len() } else { 0 })?,
            wide_merge: launch_steps::needs_wide_merge(&list),
            packed,
            list,
        })
    }

    /// Merges split tasks with the wide merge whatever their piece counts
    /// (`split_policy::SplitDecision::small`).
    pub(crate) fn merge_wide(&mut self) {
        self.wide_merge = true;
    }

    /// The host copy.
    pub(crate) fn list(&self) -> &TaskList {
        &self.list
    }

    /// The host copy, the device buffers released.
    pub(crate) fn into_list(self) -> TaskList {
        self.list
    }

    /// The list as launch planning sees it.
    pub(crate) fn items(&self) -> Items {
        Items::List {
            segments: self.list.len() as u64,
            packed_warps: self.packed.as_ref().map(|p| p.first.len() as u32 - 1),
            split_tasks: self.list.split_tasks().len() as u64,
            wide_merge: self.wide_merge,
        }
    }

    /// `args` (of a launch over the whole list, unpacked) narrowed to the
    /// segments `range`: every per-segment pointer (segments, whole flags,
    /// scratch slots of `acc_bytes`, presence flags) moved to its first
    /// segment, so that a kernel's item `i` is segment `range.start + i`
    /// and its partial lands in that segment's slot, where the merge after
    /// the last range finds it. A fault the kernel attributes to a segment
    /// names it relative to `range.start`.
    pub(crate) fn range_args(
        &self,
        range: std::ops::Range<usize>,
        acc_bytes: usize,
        args: LaunchArgs,
    ) -> LaunchArgs {
        let at = |ptr: u64, bytes: usize| {
            if ptr == 0 {
                0
            } else {
                ptr + (range.start * bytes) as u64
            }
        };
        LaunchArgs {
            n_items: range.len() as u64,
            segments: at(args.segments, 3 * std::mem::size_of::<u32>()),
            whole: at(args.whole, 1),
            scratch: at(args.scratch, acc_bytes),
            present: at(args.present, 1),
            n_warps: 0,
            warp_first: 0,
            warp_task: 0,
            ..args
        }
    }

    /// `LaunchArgs` with this list's buffers, and the packed warp groups
    /// when the plan runs them.
    pub(crate) fn launch_args(
        &self,
        dev: &CudaDevice,
        packed_warps: bool,
        base: LaunchArgs,
    ) -> LaunchArgs {
        let (n_warps, warp_first, warp_task) = match &self.packed {
            Some(p) if packed_warps => (
                p.first.len() as u32 - 1,
                p.first.device_ptr(dev),
                p.task.device_ptr(dev),
            ),
            _ => (0, 0, 0),
        };
        LaunchArgs {
            n_items: self.list.len() as u64,
            segments: self.segments.device_ptr(dev),
            whole: self.whole.device_ptr(dev),
            scratch: self.scratch.device_ptr(dev),
            present: self.present.device_ptr(dev),
            split: self.split.device_ptr(dev),
            split_segments: self.split_segments.device_ptr(dev),
            n_warps,
            warp_first,
            warp_task,
            ..base
        }
    }
}
