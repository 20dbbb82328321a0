//! A task list on the device: its segments, the split tasks' merge order,
//! the scratch their partials go to, and the packed CTE warp groups. The
//! list is uploaded from the host, or cut on the device (`device_cut`),
//! where no host copy is kept: a fault's segment is then read back alone.

use crate::abi::LaunchArgs;
use crate::driver::buffer::DeviceBuffer;
use crate::driver::cuda_device::CudaDevice;
use crate::launch::launch_steps::{self, Items, MergeWidth};
use warpfit_runtime::{Result, Segment, TaskList};

/// CTE warps packed by work: each group's first segment (then the end) and
/// its first task when it holds whole consecutive tasks only
/// ([`launch_steps::pack_warps`], [`launch_steps::whole_runs`]).
struct PackedWarps {
    first: DeviceBuffer<u32>,
    task: DeviceBuffer<u32>,
}

/// A task list cut on the device (`device_cut::cut_on_device`): its
/// buffers and counts, in [`DeviceTaskList`]'s layout.
pub(crate) struct CutOnDevice {
    pub segments: DeviceBuffer<u32>,
    pub whole: DeviceBuffer<u8>,
    pub split: DeviceBuffer<u32>,
    pub split_segments: DeviceBuffer<u32>,
    pub len: usize,
    pub split_count: usize,
    /// The most segments of one task.
    pub most_pieces: u32,
    /// Each packed group's first segment (then the end), and its first
    /// task or `u32::MAX`.
    pub packed: Option<(DeviceBuffer<u32>, DeviceBuffer<u32>)>,
    /// A 2-D kernel's rows: the columns each segment runs over (1: a 1-D
    /// list), and each split segment's position among the split segments.
    pub columns: u64,
    pub column_slot: Option<DeviceBuffer<u32>>,
    /// The split tasks' segments in all.
    pub split_total: usize,
}

/// A task list's device arrays read back, as the kernels read them
/// (the tests compare a list cut on the device with the host's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskListWords {
    /// `task, lo, hi` per segment.
    pub segments: Vec<u32>,
    pub whole: Vec<u8>,
    /// `task, first, count` per split task.
    pub split: Vec<u32>,
    pub split_segments: Vec<u32>,
    /// Packed groups' first segments (then the end), and each group's
    /// first task or `u32::MAX`.
    pub packed: Option<(Vec<u32>, Vec<u32>)>,
    /// The merge gives a split task more than `wf_merge`'s 8 lanes (a warp
    /// or a block).
    pub wide_merge: bool,
}

/// A task list in device memory, with its split-task scratch.
pub(crate) struct DeviceTaskList {
    /// The host copy, when the host made the list.
    host: Option<TaskList>,
    len: usize,
    split_count: usize,
    segments: DeviceBuffer<u32>,
    whole: DeviceBuffer<u8>,
    split: DeviceBuffer<u32>,
    split_segments: DeviceBuffer<u32>,
    scratch: DeviceBuffer<u64>,
    present: DeviceBuffer<u8>,
    merge: MergeWidth,
    packed: Option<PackedWarps>,
    /// A 2-D kernel's column list: its column count (1 otherwise) and each
    /// split segment's scratch position (`ColumnList` in task_source.cuh).
    columns: u64,
    column_slot: Option<DeviceBuffer<u32>>,
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
            len: list.len(),
            split_count: list.split_tasks().len(),
            segments: DeviceBuffer::upload(dev, list.segment_words())?,
            whole: DeviceBuffer::upload(dev, list.whole_bytes())?,
            split: DeviceBuffer::upload(dev, &split)?,
            split_segments: DeviceBuffer::upload(dev, list.split_segments())?,
            scratch: DeviceBuffer::zeros(dev, scratch_words)?,
            present: DeviceBuffer::zeros(dev, if has_split { list.len() } else { 0 })?,
            merge: MergeWidth::of_list(&list),
            packed,
            host: Some(list),
            columns: 1,
            column_slot: None,
        })
    }

    /// A list cut on the device, with its scratch of `acc_bytes` per
    /// segment when some task is split (a column list: per split segment
    /// and column).
    pub(crate) fn from_device(
        dev: &CudaDevice,
        cut: CutOnDevice,
        acc_bytes: usize,
    ) -> Result<Self> {
        let has_split = cut.split_count > 0;
        let slots = if cut.columns > 1 {
            cut.split_total.saturating_mul(cut.columns as usize)
        } else {
            cut.len
        };
        let (scratch_words, present) = if has_split {
            (slots.saturating_mul(acc_bytes).div_ceil(8), slots)
        } else {
            (0, 0)
        };
        Ok(DeviceTaskList {
            host: None,
            len: cut.len,
            split_count: cut.split_count,
            segments: cut.segments,
            whole: cut.whole,
            split: cut.split,
            split_segments: cut.split_segments,
            scratch: DeviceBuffer::zeros(dev, scratch_words)?,
            present: DeviceBuffer::zeros(dev, present)?,
            merge: if has_split {
                MergeWidth::for_pieces(cut.most_pieces)
            } else {
                MergeWidth::Narrow
            },
            packed: cut.packed.map(|(first, task)| PackedWarps { first, task }),
            columns: cut.columns.max(1),
            column_slot: cut.column_slot,
        })
    }

    /// Merges split tasks with a warp per task at least, whatever their
    /// piece counts (`split_policy::SplitDecision::small`).
    pub(crate) fn merge_wide(&mut self) {
        self.merge = self.merge.max(MergeWidth::Wide);
    }

    /// The list on the host: its copy, or the segments read back (the
    /// split tasks found again from them, as the host groups them).
    pub(crate) fn to_list(&self, dev: &CudaDevice) -> Result<TaskList> {
        match &self.host {
            Some(l) => Ok(l.clone()),
            None => {
                let words = self.segments.read_at(dev, 0..3 * self.len)?;
                TaskList::new(
                    words
                        .chunks_exact(3)
                        .map(|w| Segment::new(w[0], w[1], w[2]))
                        .collect(),
                )
            }
        }
    }

    /// The device arrays read back as the kernels read them.
    pub fn words(&self, dev: &CudaDevice) -> Result<TaskListWords> {
        let packed = match &self.packed {
            Some(p) => Some((p.first.to_vec(dev)?, p.task.to_vec(dev)?)),
            None => None,
        };
        Ok(TaskListWords {
            segments: self.segments.read_at(dev, 0..3 * self.len)?,
            whole: self.whole.read_at(dev, 0..self.len)?,
            split: self.split.read_at(dev, 0..3 * self.split_count)?,
            split_segments: self.split_segments.to_vec(dev)?,
            packed,
            wide_merge: self.merge > MergeWidth::Narrow,
        })
    }

    /// Segment `i`, for naming a fault's task (read from the device when
    /// the host has no copy); `None` past the end or when it cannot be read.
    pub(crate) fn segment(&self, dev: &CudaDevice, i: usize) -> Option<Segment> {
        match &self.host {
            Some(l) => l.segments().get(i).copied(),
            None => read_segment(dev, &self.segments, self.len, i),
        }
    }

    /// What a later fault check needs of the list: its segments.
    pub(crate) fn into_fault_segments(self) -> FaultSegments {
        match self.host {
            Some(l) => FaultSegments::Host(l.segments().to_vec()),
            None => FaultSegments::Device {
                words: self.segments,
                len: self.len,
            },
        }
    }

    /// The list as launch planning sees it.
    pub(crate) fn items(&self) -> Items {
        if self.columns > 1 {
            return Items::Columns {
                segments: self.len as u64,
                columns: self.columns,
                split_tasks: self.split_count as u64,
            };
        }
        Items::List {
            segments: self.len as u64,
            packed_warps: self.packed.as_ref().map(|p| p.first.len() as u32 - 1),
            split_tasks: self.split_count as u64,
            merge: self.merge,
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
            n_items: self.len as u64,
            segments: self.segments.device_ptr(dev),
            whole: self.whole.device_ptr(dev),
            scratch: self.scratch.device_ptr(dev),
            present: self.present.device_ptr(dev),
            split: self.split.device_ptr(dev),
            split_segments: self.split_segments.device_ptr(dev),
            n_warps,
            warp_first,
            warp_task,
            columns: self.columns,
            column_slot: self.column_slot.as_ref().map_or(0, |c| c.device_ptr(dev)),
            ..base
        }
    }
}

/// Segment `i` of the `len` segments whose words are `words` on the device.
fn read_segment(
    dev: &CudaDevice,
    words: &DeviceBuffer<u32>,
    len: usize,
    i: usize,
) -> Option<Segment> {
    if i >= len {
        return None;
    }
    let w = words.read_at(dev, 3 * i..3 * i + 3).ok()?;
    Some(Segment::new(w[0], w[1], w[2]))
}

/// A launch's segments as a fault check after it returned reads them.
pub(crate) enum FaultSegments {
    /// A launch without a task list.
    None,
    Host(Vec<Segment>),
    /// A list cut on the device: read one segment at a time.
    Device {
        words: DeviceBuffer<u32>,
        len: usize,
    },
    /// A list other launches still run (a launch rebound from this one).
    Shared(std::sync::Arc<DeviceTaskList>),
}

impl FaultSegments {
    /// Segment `i`, if there is one and it can be read.
    pub(crate) fn get(&self, dev: &CudaDevice, i: usize) -> Option<Segment> {
        match self {
            FaultSegments::None => None,
            FaultSegments::Host(s) => s.get(i).copied(),
            FaultSegments::Device { words, len } => read_segment(dev, words, *len, i),
            FaultSegments::Shared(l) => l.segment(dev, i),
        }
    }
}
