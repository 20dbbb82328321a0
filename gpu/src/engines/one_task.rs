//! One long task on the whole device: a global reduction (a dot product,
//! a norm) written as a one-task kernel whose fold covers the whole array,
//! run as a task list that splits the task into segments, with the
//! deterministic merge of split tasks folding the partials in list order.
//!
//! ```text
//! #[nested_reduce]
//! fn dot(t: usize, n: u32, x: &[f64], y: &[f64], out: &mut [f64]) {
//!     out[t] = (0..n as usize).map(|i| x[i] * y[i]).fold(0.0, |a, b| a + b);
//! }
//! let split = warpfit::split_one_task(&device, 0, 0..n)?;
//! dot::launch_with(&device, &split.config, &split.tasks, n as u32, &x, &y, &mut out)?;
//! ```
//!
//! The segment count trades the main pass against the merge: on CUDA each
//! segment is a warp (`SubWarp(32)`: lanes read consecutive elements, so
//! every load is coalesced), and the one split task's partials are folded
//! by the merge after the main pass: from 513 pieces (a million elements
//! and more) by one block (`wf_merge_block`, 256 lanes, each a chain of
//! `pieces / 256` loads), below that by a warp or 8 lanes. More segments keep
//! more loads in flight in the main pass (a lane has 4 or so outstanding);
//! fewer keep the merge short. See the constants.

use crate::config::{Decomposition, LaunchConfig, Split};
use crate::driver::device::Device;
use std::ops::Range;
use warpfit_runtime::{Error, Result, TaskList};

/// The most segments a task is split into on CUDA. The main pass wants
/// many: a segment is a warp with about 4 loads in flight per lane, and the
/// segments together must keep as many bytes in flight as the memory needs
/// to stream near its bandwidth. The merge wants few: each of its block's
/// 256 lanes folds `pieces / 256` partials, a chain of dependent loads that
/// must stay short beside the main pass. On an H200, 16M elements: a dot
/// product of f64 in 86.7 µs at 2048 segments, 72.3 at 4096, 82.7 at 8192
/// (BENCHMARKS.md, "Global reductions merged by a block").
pub(crate) const CUDA_MAX_PIECES: u32 = 4096;

/// The shortest segment on CUDA: 64 elements per lane of its warp, so that
/// a warp's set-up (prologue, the partial's store) stays a small part of
/// its time. 1M elements make 512 segments, 4M 2048, 8M and more 4096.
pub(crate) const CUDA_MIN_SEGMENT: u64 = 2048;

/// The segment length on the CPU. The twin runs a task list's segments in
/// parallel in jobs of at least 128 segments and folds the partials
/// serially afterwards (a few microseconds for thousands): 4M elements make
/// 4096 segments, 32 jobs for rayon to balance.
pub(crate) const CPU_SEGMENT: u64 = 1024;

/// A task list running one task split over a device, and the launch
/// options it is meant for.
#[derive(Debug, Clone)]
pub struct OneTaskSplit {
    /// Task `task` in consecutive segments covering its range, in order.
    pub tasks: TaskList,
    /// `SubWarp(32)` (a warp per segment) on CUDA; the default on the CPU,
    /// which ignores it.
    pub config: LaunchConfig,
}

/// Splits task `task`, whose fine tasks are `range`, into segments for
/// `device` (see the module's documentation for how many), so that one
/// long fold — a dot product, a norm, any global reduction written as a
/// one-task kernel — runs on the whole device. Launch the kernel with
/// `launch_with(&device, &split.config, &split.tasks, ..)`: the segments'
/// partials are folded in list order with the kernel's own reduce operator,
/// `init` once in front, then the epilogue runs once.
///
/// Deterministic: a given device gives the same bits on every run. The
/// fold order is fixed (segments in order; on CUDA each segment's 32 lanes
/// stride it and join in a fixed tree, and the merge joins 32 chunks of
/// partials in a fixed tree), so integer sums and `min`/`max` equal the
/// CPU's exactly, while float sums differ from the CPU's, and between GPUs
/// with different segment counts, by rounding only.
///
/// # Errors
/// `range` is reversed, or reaches past `u32::MAX` (task lists address
/// fine tasks with u32), or `task` does not fit u32.
pub fn split_one_task(device: &Device, task: usize, range: Range<usize>) -> Result<OneTaskSplit> {
    let to_u32 = |what: &'static str, v: usize| warpfit_runtime::error::to_u32(what, v);
    let (task, lo, hi) = (
        to_u32("task index", task)?,
        to_u32("fine-task index", range.start)?,
        to_u32("fine-task index", range.end)?,
    );
    if lo > hi {
        return Err(Error::InvalidTaskList(format!(
            "task {task}: range {lo}..{hi} is reversed"
        )));
    }
    let cuda = device.cuda().is_some();
    let pieces = pieces(u64::from(hi - lo), cuda);
    let config = if cuda {
        LaunchConfig {
            decomposition: Decomposition::SubWarp(32),
            split: Split::Never,
            ..LaunchConfig::default()
        }
    } else {
        LaunchConfig::default()
    };
    Ok(OneTaskSplit {
        tasks: TaskList::split_evenly(task, lo, hi, pieces)?,
        config,
    })
}

/// Segments for a range of `len` fine tasks on CUDA or the CPU.
pub(crate) fn pieces(len: u64, cuda: bool) -> u32 {
    let p = if cuda {
        (len / CUDA_MIN_SEGMENT).min(u64::from(CUDA_MAX_PIECES))
    } else {
        len / CPU_SEGMENT
    };
    // At most u32::MAX / 1024 on the CPU: the cast is exact.
    p.max(1) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_counts_follow_the_device() {
        // CUDA: segments of at least 2048, at most 4096 of them.
        assert_eq!(pieces(0, true), 1);
        assert_eq!(pieces(4095, true), 1);
        assert_eq!(pieces(4096, true), 2);
        assert_eq!(pieces(1 << 20, true), 512);
        assert_eq!(pieces(4 << 20, true), 2048);
        assert_eq!(pieces(8 << 20, true), 4096);
        assert_eq!(pieces(16 << 20, true), 4096);
        // CPU: segments of 1024.
        assert_eq!(pieces(100, false), 1);
        assert_eq!(pieces(4 << 20, false), 4096);
        assert_eq!(pieces(u64::from(u32::MAX), false), u32::MAX / 1024);
    }

    #[test]
    fn the_cpu_split_covers_the_range_in_order() {
        let s = split_one_task(&Device::cpu(), 3, 10..10_000).unwrap();
        let segs = s.tasks.segments();
        assert_eq!(segs.len(), 9);
        assert_eq!((segs[0].lo, segs[8].hi), (10, 10_000));
        assert!(segs
            .windows(2)
            .all(|w| w[0].hi == w[1].lo && w[0].task == 3));
        assert_eq!(s.config, LaunchConfig::default());
        let empty = split_one_task(&Device::cpu(), 0, 5..5).unwrap();
        assert_eq!(empty.tasks.len(), 1);
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = split_one_task(&Device::cpu(), 0, 6..5).unwrap_err();
        assert!(reversed.to_string().contains("reversed"), "{reversed}");
        let e = split_one_task(&Device::cpu(), 0, 0..(u32::MAX as usize + 1)).unwrap_err();
        assert!(e.to_string().contains("fine-task index"), "{e}");
    }
}
