//! A cover's layout: where every task's share of each launch of a schedule
//! lies in the plan's order and where it goes when the launches' data are
//! laid out one after another.
//!
//! A schedule launches a cover of the partitions by consecutive ranges
//! (CF: every partition alone; SJ: the chosen SJ-tree nodes; one launch of
//! everything). The plan keeps each task's fine tasks sorted by partition
//! ([`CacheFitPlan::fine_perm`]), so a range of partitions' share of a task
//! is one contiguous range of the plan's positions. Laying the cover out
//! launch by launch, each launch's shares of all tasks contiguous (the
//! part-major layout of [`PartMajor`](super::PartMajor) when the cover is
//! the partitions), gives every launch a CSR range array of its own, and
//! the kernel runs unchanged on it; the data moves by one copy of each
//! task's range ([`CoverLayout::src`] → [`CoverLayout::dst`]), which a
//! device does in place of a host permutation.

use super::plan::CacheFitPlan;
use crate::error::to_u32;
use crate::exec::{Segment, SharedOut, TaskList};
use crate::mem;
use crate::{Error, Result};
use rayon::prelude::*;
use std::ops::Range;

/// The layout of a cover of a [`CacheFitPlan`]'s partitions (see the
/// module docs).
///
/// ```
/// use warpfit_runtime::partition::{column_blocks, WorkGraph};
/// use warpfit_runtime::schedule::{CacheFitPlan, CoverLayout, PartMajor};
/// use warpfit_runtime::Csr;
///
/// let a = Csr::new(3, 6, vec![0, 4, 4, 6], vec![0, 5, 1, 4, 5, 0], vec![1.0f32; 6])?;
/// let graph = WorkGraph::from_csr(&a)?;
/// let plan = CacheFitPlan::new(&graph, &column_blocks(&graph, 3)?)?;
/// // Every partition alone: the part-major layout.
/// let leaves = CoverLayout::new(&plan, &plan.cf_launches())?;
/// let pm = PartMajor::new(&plan)?;
/// assert_eq!(leaves.dst(0), pm.part_ptr(0));
/// assert_eq!(leaves.dst(1), pm.part_ptr(1));
/// // Row 0's share of partition 1 starts at position 2 of the plan's order.
/// assert_eq!(leaves.src(1)[0], 2);
/// // One launch of everything: the plan's own order.
/// let one = CoverLayout::new(&plan, &plan.single_launch())?;
/// assert_eq!(one.dst(0), [0, 4, 4, 6]);
/// # Ok::<(), warpfit_runtime::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoverLayout {
    n_tasks: usize,
    launches: Vec<Range<usize>>,
    /// Launch `j`'s range array is `dst[j * (n + 1)..][..n + 1]`, in
    /// positions of the whole layout (launch `j`'s data start where launch
    /// `j - 1`'s end).
    dst: Vec<u32>,
    /// Launch `j`'s shares start at `src[j * n + t]` in the plan's order
    /// (0 for a task with no share).
    src: Vec<u32>,
}

impl CoverLayout {
    /// The layout of `launches` (ranges of partitions covering the plan's
    /// partitions once, in order, as [`CacheFitPlan::check_launches`]
    /// accepts).
    ///
    /// # Errors
    /// Launches that do not cover the partitions; arrays over the memory
    /// limit.
    pub fn new(plan: &CacheFitPlan, launches: &[Range<usize>]) -> Result<Self> {
        plan.check_launches(launches)?;
        let n = plan.n_tasks();
        let k = launches.len();
        let words = n
            .checked_add(1)
            .and_then(|w| w.checked_mul(k))
            .and_then(|w| w.checked_add(n.checked_mul(k)?))
            .ok_or_else(|| Error::invalid("cover layout: array sizes overflow"))?;
        mem::check(
            &format!("the layout of {k} launches over {n} tasks"),
            mem::bytes_of::<u32>("cover layout arrays", words)?,
        )?;
        let mut dst = vec![0u32; (n + 1) * k];
        let mut src = vec![0u32; n * k];
        let mut base = 0u64;
        for (j, r) in launches.iter().enumerate() {
            let (lo, hi) = (
                &mut src[j * n..(j + 1) * n],
                &mut dst[j * (n + 1)..][..n + 1],
            );
            // Each task's share: from its first segment's start to its last
            // segment's end among the launch's partitions (contiguous in the
            // plan's order, which sorts a task's fine tasks by partition).
            // `hi[t + 1]` holds the share's end until the scan below.
            hi.fill(0);
            lo.fill(u32::MAX);
            {
                // A partition names each task at most once: its segments
                // update distinct tasks, in parallel.
                let (lo_c, hi_c) = (SharedOut::new(lo), SharedOut::new(&mut hi[1..]));
                for p in r.clone() {
                    plan.part(p)?.par_iter().for_each(|s| {
                        let t = s.task as usize;
                        // SAFETY: one segment per task within a partition;
                        // partitions run one after another.
                        unsafe {
                            if let (Ok(l), Ok(h)) = (lo_c.get(t, "lo"), hi_c.get(t, "hi")) {
                                let _ = lo_c.set(t, l.min(s.lo), "lo");
                                let _ = hi_c.set(t, h.max(s.hi), "hi");
                            }
                        }
                    });
                }
            }
            // Lengths, then the exclusive scan from `base`.
            lo.par_iter_mut()
                .zip(hi[1..].par_iter_mut())
                .for_each(|(l, h)| {
                    if *l == u32::MAX {
                        *l = 0;
                        *h = 0;
                    } else {
                        *h -= *l;
                    }
                });
            hi[0] = to_u32("cover layout position", base as usize)?;
            for t in 0..n {
                let end = u64::from(hi[t]) + u64::from(hi[t + 1]);
                hi[t + 1] = to_u32("cover layout position", end as usize)?;
            }
            base = u64::from(hi[n]);
        }
        if base as usize != plan.n_fine() {
            return Err(Error::invalid(format!(
                "cover layout: the launches hold {base} fine tasks, the plan {}",
                plan.n_fine()
            )));
        }
        Ok(CoverLayout {
            n_tasks: n,
            launches: launches.to_vec(),
            dst,
            src,
        })
    }

    /// Number of launches.
    pub fn len(&self) -> usize {
        self.launches.len()
    }

    /// Whether the cover has no launch (never, for a checked cover).
    pub fn is_empty(&self) -> bool {
        self.launches.is_empty()
    }

    /// The launches (partition ranges), in order.
    pub fn launches(&self) -> &[Range<usize>] {
        &self.launches
    }

    /// Launch `j`'s range array (`n_tasks + 1` entries) over the whole
    /// layout: task `t`'s share of it is `dst(j)[t]..dst(j)[t + 1]`. Panics
    /// past the last launch, like slice indexing.
    pub fn dst(&self, j: usize) -> &[u32] {
        &self.dst[j * (self.n_tasks + 1)..(j + 1) * (self.n_tasks + 1)]
    }

    /// Where launch `j`'s share of each task starts in the plan's order
    /// (`n_tasks` entries). Panics past the last launch.
    pub fn src(&self, j: usize) -> &[u32] {
        &self.src[j * self.n_tasks..(j + 1) * self.n_tasks]
    }

    /// The segments of partitions `parts` in this layout's positions,
    /// partition by partition, tasks ascending within a partition: a task
    /// list over the laid-out arrays (whose positions are not the tasks'
    /// own ranges). A partition's piece of a task lies inside its launch's
    /// share at the same offset as in the plan's order, so any layout
    /// serves; the cover of every partition alone keeps each partition's
    /// pieces dense. With `every_task`, an empty segment
    /// follows for each task none of those partitions works on, so that a
    /// launch of the list folds every task from `init` and runs every
    /// epilogue (the first and last launch of a carried sequence, or a
    /// single launch).
    ///
    /// # Errors
    /// `parts` reaches past the plan's partitions; the list is over the
    /// memory limit or its ids over `u32`.
    pub fn segments(
        &self,
        plan: &CacheFitPlan,
        parts: Range<usize>,
        every_task: bool,
    ) -> Result<TaskList> {
        if parts.start > parts.end || parts.end > plan.len() {
            return Err(Error::invalid(format!(
                "partitions {}..{}: the plan has {}",
                parts.start,
                parts.end,
                plan.len()
            )));
        }
        let n = self.n_tasks;
        let mut count = parts
            .clone()
            .map(|p| plan.part(p).map(<[Segment]>::len))
            .sum::<Result<usize>>()?;
        let mut touched = Vec::new();
        if every_task {
            count = count.saturating_add(n);
            touched = vec![false; n];
        }
        mem::check_elems::<Segment>("a cover layout's task list", count)?;
        let mut segs = Vec::with_capacity(count);
        for p in parts {
            // The partition's launch and where its shares begin there.
            let lj = self
                .launches
                .iter()
                .position(|r| r.contains(&p))
                .ok_or_else(|| Error::out_of_range("partition", p, plan.len()))?;
            let (dst, src) = (self.dst(lj), self.src(lj));
            for s in plan.part(p)? {
                let t = s.task as usize;
                // The share of the launch starts at `src[t]` in the plan's
                // order and at `dst[t]` here; this partition's piece of it
                // is `s.lo - src[t]` further on.
                let lo = dst[t] + (s.lo - src[t]);
                segs.push(Segment::new(s.task, lo, lo + s.len()));
                if every_task {
                    touched[t] = true;
                }
            }
        }
        if every_task {
            for (t, _) in touched.iter().enumerate().filter(|(_, &w)| !w) {
                let t = to_u32("task id", t)?;
                segs.push(Segment::new(t, 0, 0));
            }
        }
        TaskList::new(segs)
    }
}
