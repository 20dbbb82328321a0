//! The CPU executor: runs a [`NestedKernel`] over [`Tasks`] with rayon.

use super::{Fault, NestedKernel, TaskList, Tasks};
use crate::Result;
use rayon::prelude::*;

/// Tasks handed to one rayon job at a time: large enough that scheduling
/// overhead vanishes next to a short row, small enough to balance power-law rows.
const GRAIN: usize = 512;

/// Runs `kernel` over `tasks` on the CPU. Tasks run in parallel; the first
/// fault stops the launch and is returned with the task it happened in.
pub fn run<K: NestedKernel>(kernel: &K, tasks: Tasks<'_>) -> Result<()> {
    match tasks {
        Tasks::All(n) => run_all(kernel, n),
        Tasks::List(list) => run_list(kernel, list),
    }
}

fn run_all<K: NestedKernel>(kernel: &K, n: usize) -> Result<()> {
    (0..n)
        .into_par_iter()
        .with_min_len(GRAIN)
        .try_for_each(|t| kernel.run_task(t).map_err(|f| f.into_error(K::NAME, t)))
}

/// Fine-task range of `task`, checked against the segment `lo..hi`.
#[inline]
fn segment_ctx<K: NestedKernel>(
    kernel: &K,
    task: usize,
    lo: usize,
    hi: usize,
) -> Result<K::Ctx, Fault> {
    let (ctx, task_lo, task_hi) = kernel.prologue(task)?;
    if lo < task_lo || hi > task_hi.max(task_lo) {
        return Err(Fault::SegmentOutOfRange {
            lo: lo as u64,
            hi: hi as u64,
            task_lo: task_lo as u64,
            task_hi: task_hi as u64,
        });
    }
    Ok(ctx)
}

fn run_list<K: NestedKernel>(kernel: &K, list: &TaskList) -> Result<()> {
    let segs = list.segments();
    // Phase 1: whole tasks run to completion; split segments leave a partial.
    // `None` is an empty segment: the reduce operator has no known identity.
    let partials: Vec<Option<K::Acc>> = segs
        .par_iter()
        .enumerate()
        .with_min_len(GRAIN / 4)
        .map(|(i, s)| {
            let (task, lo, hi) = (s.task as usize, s.lo as usize, s.hi as usize);
            let step = || -> Result<Option<K::Acc>, Fault> {
                let ctx = segment_ctx(kernel, task, lo, hi)?;
                if list.is_whole(i) {
                    let init = kernel.init(task, &ctx)?;
                    let acc = kernel.fold_range(task, &ctx, lo, hi, init)?;
                    kernel.epilogue(task, &ctx, acc)?;
                    return Ok(None);
                }
                if lo >= hi {
                    return Ok(None);
                }
                let first = kernel.map(task, &ctx, lo)?;
                kernel.fold_range(task, &ctx, lo + 1, hi, first).map(Some)
            };
            step().map_err(|f| f.into_error(K::NAME, task))
        })
        .collect::<Result<_>>()?;
    // Phase 2: fold each split task's partials in list order, then its epilogue.
    let order = list.split_segments();
    list.split_tasks().par_iter().try_for_each(|st| {
        let task = st.task as usize;
        let merge = || -> Result<(), Fault> {
            let (ctx, _, _) = kernel.prologue(task)?;
            let mut acc = kernel.init(task, &ctx)?;
            let group = &order[st.first as usize..(st.first + st.count) as usize];
            for &i in group {
                if let Some(p) = partials[i as usize] {
                    acc = kernel.reduce(acc, p)?;
                }
            }
            kernel.epilogue(task, &ctx, acc)
        };
        merge().map_err(|f| f.into_error(K::NAME, task))
    })
}
